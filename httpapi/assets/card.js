// The hosted card field of keelpay: the page keelpay.js shows in an iframe
// on the store's page. It runs on keelpay's origin, so the card number,
// expiry and CVC exist only here, and go only to keelpay's API on this same
// origin. With a provider whose own element captures cards (Stripe.js, or
// the sandbox's element), the page mounts that element instead of its own
// inputs: the card goes from the element to the provider, and this script
// sends keelpay only the element's payment-method reference. The store's
// page drives it with postMessage; it answers only its parent window at
// the origin it was served for (one of the object's page_origins, checked
// by the server), and ignores every other message.
(function () {
  'use strict';

  var form = document.getElementById('kp');
  var cfg = form.dataset;
  var parentOrigin = cfg.origin;
  var withName = cfg.name === '1';
  // elementKind is the provider's element (stripe or sandbox), '' for the
  // field's own inputs.
  var elementKind = cfg.elementKind || '';

  var STRINGS = {
    en: {
      name: 'Name on card', number: 'Card number', expiry: 'Expiry date (MM / YY)', expiry_placeholder: 'MM / YY',
      cvc: 'Security code (CVC)',
      number_missing: 'Enter your card number.', number_incomplete: 'Your card number is incomplete.',
      number_invalid: 'Your card number is not valid.',
      expiry_missing: 'Enter the expiry date.', expiry_incomplete: 'The expiry date is incomplete.',
      expiry_invalid: 'The expiry date is not valid.', expiry_past: 'Your card has expired.',
      cvc_missing: 'Enter the security code.', cvc_incomplete: 'The security code is incomplete.',
      cvc_invalid: 'The security code is not valid.',
      name_missing: 'Enter the name on the card.', name_invalid: 'The name is not valid.',
      check: 'Check the card details.', saving: 'Saving the card…', saved: 'Card saved.', paying: 'Processing the payment…',
      card_unreachable: 'The card form could not be loaded. Try again shortly.'
    },
    fi: {
      name: 'Nimi kortissa', number: 'Kortin numero', expiry: 'Voimassa (KK / VV)', expiry_placeholder: 'KK / VV',
      cvc: 'Turvakoodi (CVC)',
      number_missing: 'Syötä kortin numero.', number_incomplete: 'Kortin numero on vajaa.',
      number_invalid: 'Kortin numero ei ole kelvollinen.',
      expiry_missing: 'Syötä voimassaoloaika.', expiry_incomplete: 'Voimassaoloaika on vajaa.',
      expiry_invalid: 'Voimassaoloaika ei ole kelvollinen.', expiry_past: 'Kortti on vanhentunut.',
      cvc_missing: 'Syötä turvakoodi.', cvc_incomplete: 'Turvakoodi on vajaa.',
      cvc_invalid: 'Turvakoodi ei ole kelvollinen.',
      name_missing: 'Syötä kortissa oleva nimi.', name_invalid: 'Nimi ei ole kelvollinen.',
      check: 'Tarkista kortin tiedot.', saving: 'Korttia tallennetaan…', saved: 'Kortti tallennettu.', paying: 'Maksua käsitellään…',
      card_unreachable: 'Korttilomaketta ei voitu ladata. Yritä hetken päästä uudelleen.'
    },
    sv: {
      name: 'Namn på kortet', number: 'Kortnummer', expiry: 'Giltigt till (MM / ÅÅ)', expiry_placeholder: 'MM / ÅÅ',
      cvc: 'Säkerhetskod (CVC)',
      number_missing: 'Ange kortnumret.', number_incomplete: 'Kortnumret är ofullständigt.',
      number_invalid: 'Kortnumret är inte giltigt.',
      expiry_missing: 'Ange utgångsdatumet.', expiry_incomplete: 'Utgångsdatumet är ofullständigt.',
      expiry_invalid: 'Utgångsdatumet är inte giltigt.', expiry_past: 'Kortet har gått ut.',
      cvc_missing: 'Ange säkerhetskoden.', cvc_incomplete: 'Säkerhetskoden är ofullständig.',
      cvc_invalid: 'Säkerhetskoden är inte giltig.',
      name_missing: 'Ange namnet på kortet.', name_invalid: 'Namnet är inte giltigt.',
      check: 'Kontrollera kortuppgifterna.', saving: 'Kortet sparas…', saved: 'Kortet har sparats.', paying: 'Betalningen behandlas…',
      card_unreachable: 'Kortformuläret kunde inte laddas. Försök igen om en stund.'
    },
    de: {
      name: 'Name auf der Karte', number: 'Kartennummer', expiry: 'Gültig bis (MM / JJ)', expiry_placeholder: 'MM / JJ',
      cvc: 'Sicherheitscode (CVC)',
      number_missing: 'Bitte geben Sie Ihre Kartennummer ein.', number_incomplete: 'Die Kartennummer ist unvollständig.',
      number_invalid: 'Die Kartennummer ist ungültig.',
      expiry_missing: 'Bitte geben Sie das Ablaufdatum ein.', expiry_incomplete: 'Das Ablaufdatum ist unvollständig.',
      expiry_invalid: 'Das Ablaufdatum ist ungültig.', expiry_past: 'Ihre Karte ist abgelaufen.',
      cvc_missing: 'Bitte geben Sie den Sicherheitscode ein.', cvc_incomplete: 'Der Sicherheitscode ist unvollständig.',
      cvc_invalid: 'Der Sicherheitscode ist ungültig.',
      name_missing: 'Bitte geben Sie den Namen auf der Karte ein.', name_invalid: 'Der Name ist ungültig.',
      check: 'Bitte prüfen Sie die Kartendaten.', saving: 'Die Karte wird gespeichert…', saved: 'Karte gespeichert.',
      paying: 'Die Zahlung wird verarbeitet…',
      card_unreachable: 'Das Kartenformular konnte nicht geladen werden. Bitte versuchen Sie es gleich noch einmal.'
    }
  };
  var T = STRINGS[cfg.locale] || STRINGS.en;
  var BRANDS = {visa: 'Visa', mastercard: 'Mastercard', amex: 'American Express', discover: 'Discover'};

  function $(id) { return document.getElementById(id); }
  // With the provider's element, the page's own inputs are the name only.
  var inputs = elementKind ? {name: $('name')} : {name: $('name'), number: $('number'), expiry: $('expiry'), cvc: $('cvc')};
  var order = elementKind ? (withName ? ['name'] : []) :
    withName ? ['name', 'number', 'expiry', 'cvc'] : ['number', 'expiry', 'cvc'];
  var touched = {};
  var busy = false;

  function post(msg) { window.parent.postMessage(msg, parentOrigin); }

  // The server allows only page_origins as frame-ancestors; a browser that
  // reports the embedding origin gets a second look, and a field inside any
  // other origin shows nothing and does nothing.
  var ancestors = window.location.ancestorOrigins;
  if (ancestors && ancestors.length > 0 && ancestors[0] !== parentOrigin) {
    form.remove();
    return;
  }

  // Card numbers: brand, grouping, Luhn.

  function digits(s) { return String(s).replace(/\D/g, ''); }

  function brandOf(d) {
    var p2 = d.length >= 2 ? +d.slice(0, 2) : -1;
    var p3 = d.length >= 3 ? +d.slice(0, 3) : -1;
    var p4 = d.length >= 4 ? +d.slice(0, 4) : -1;
    if (d.charAt(0) === '4') return 'visa';
    if ((p2 >= 51 && p2 <= 55) || (p4 >= 2221 && p4 <= 2720)) return 'mastercard';
    if (p2 === 34 || p2 === 37) return 'amex';
    if (p4 === 6011 || (p3 >= 644 && p3 <= 649) || p2 === 65) return 'discover';
    return '';
  }

  function luhn(d) {
    var sum = 0;
    var double = false;
    for (var i = d.length - 1; i >= 0; i--) {
      var n = d.charCodeAt(i) - 48;
      if (double && (n *= 2) > 9) n -= 9;
      sum += n;
      double = !double;
    }
    return sum % 10 === 0;
  }

  function formatNumber(d) {
    var sizes = brandOf(d) === 'amex' ? [4, 6, 5] : [4, 4, 4, 4, 3];
    var parts = [];
    for (var i = 0, k = 0; k < sizes.length && i < d.length; i += sizes[k++]) parts.push(d.slice(i, i + sizes[k]));
    return parts.join(' ');
  }

  function formatExpiry(d) {
    if (/^[2-9]/.test(d) || /^1[3-9]/.test(d)) d = '0' + d;
    d = d.slice(0, 4);
    return d.length > 2 ? d.slice(0, 2) + ' / ' + d.slice(2) : d;
  }

  var limits = {
    number: function (d) { return brandOf(d) === 'amex' ? 15 : 19; },
    expiry: function () { return 4; },
    cvc: function () { return brandOf(digits(inputs.number.value)) === 'amex' || !brandOf(digits(inputs.number.value)) ? 4 : 3; }
  };
  var formats = {number: formatNumber, expiry: formatExpiry, cvc: function (d) { return d; }};

  // reformat rewrites a numeric input as the buyer types, keeping the
  // caret after the same number of digits.
  function reformat(name) {
    var input = inputs[name];
    var value = input.value;
    var caret = input.selectionStart === null ? value.length : input.selectionStart;
    var before = digits(value.slice(0, caret)).length;
    var d = digits(value);
    d = d.slice(0, limits[name](d));
    var next = formats[name](d);
    if (next === value) return;
    input.value = next;
    if (document.activeElement !== input) return;
    var pos = 0;
    for (var seen = 0; pos < next.length && seen < before; pos++) {
      if (/\d/.test(next.charAt(pos))) seen++;
    }
    input.setSelectionRange(pos, pos);
  }

  // check returns the key of the input's error, or '' when it is valid.
  function check(name) {
    var value = inputs[name].value;
    var d = digits(value);
    var brand = inputs.number ? brandOf(digits(inputs.number.value)) : '';
    switch (name) {
      case 'number': {
        if (!d) return 'number_missing';
        var min = {amex: 15, visa: 13, mastercard: 16, discover: 16}[brandOf(d)] || 12;
        if (d.length < min) return 'number_incomplete';
        return luhn(d) ? '' : 'number_invalid';
      }
      case 'expiry': {
        if (!d) return 'expiry_missing';
        if (d.length < 4) return 'expiry_incomplete';
        var month = +d.slice(0, 2);
        var year = 2000 + +d.slice(2, 4);
        var now = new Date();
        if (month < 1 || month > 12 || year > now.getFullYear() + 20) return 'expiry_invalid';
        if (year < now.getFullYear() || (year === now.getFullYear() && month < now.getMonth() + 1)) return 'expiry_past';
        return '';
      }
      case 'cvc': {
        if (!d) return 'cvc_missing';
        if (d !== value) return 'cvc_invalid';
        var need = brand === 'amex' ? 4 : 3;
        return d.length < need ? 'cvc_incomplete' : '';
      }
      case 'name': {
        var v = value.trim();
        if (!v) return 'name_missing';
        return v.length > 200 || /[\u0000-\u001f\u007f]/.test(v) ? 'name_invalid' : '';
      }
    }
    return '';
  }

  function show(name, key) {
    $(name + '-error').textContent = key ? T[key] : '';
    inputs[name].setAttribute('aria-invalid', key ? 'true' : 'false');
  }

  var lastChange = '';
  function emitChange() {
    var error = null;
    var complete = true;
    order.forEach(function (name) {
      var key = check(name);
      if (!key) return;
      complete = false;
      if (!error && touched[name]) error = {field: name, message: T[key]};
    });
    var state = {
      complete: complete,
      empty: order.every(function (name) { return !inputs[name].value; }),
      brand: inputs.number ? brandOf(digits(inputs.number.value)) : '',
      error: error
    };
    if (elementKind) {
      state.complete = complete && element.state.complete;
      state.empty = state.empty && element.state.empty;
      state.brand = element.state.brand && element.state.brand !== 'unknown' ? element.state.brand : '';
      if (!error && element.state.error) state.error = elementError(element.state.error);
    }
    var key = JSON.stringify(state);
    if (key === lastChange) return;
    lastChange = key;
    post({type: 'keelpay:change', complete: state.complete, empty: state.empty, brand: state.brand, error: state.error});
  }

  function announce(text) {
    var status = $('status');
    status.textContent = '';
    window.setTimeout(function () { status.textContent = text; }, 50);
  }

  // validateAll shows every error and returns the first invalid input's
  // name, after moving the focus there.
  function validateAll() {
    var first = '';
    order.forEach(function (name) {
      touched[name] = true;
      var key = check(name);
      show(name, key);
      if (key && !first) first = name;
    });
    emitChange();
    if (first) {
      inputs[first].focus();
      announce(T.check);
    }
    return first;
  }

  Object.keys(inputs).forEach(function (name) {
    var input = inputs[name];
    input.addEventListener('input', function () {
      if (formats[name]) reformat(name);
      if (name === 'number') {
        $('number-brand').textContent = BRANDS[brandOf(digits(input.value))] || '';
        if (inputs.cvc.value) reformat('cvc');
      }
      if (touched[name]) show(name, check(name));
      emitChange();
    });
    input.addEventListener('blur', function () {
      if (input.value) touched[name] = true;
      if (touched[name]) show(name, check(name));
      emitChange();
    });
  });
  form.addEventListener('submit', function (ev) { ev.preventDefault(); });

  function clearCard() {
    order.forEach(function (name) {
      inputs[name].value = '';
      touched[name] = false;
      show(name, '');
    });
    if (elementKind) {
      if (element.card) element.card.clear();
    } else {
      $('number-brand').textContent = '';
    }
    emitChange();
  }

  function setBusy(b) {
    busy = b;
    form.setAttribute('aria-busy', b ? 'true' : 'false');
    order.forEach(function (name) { inputs[name].readOnly = b; });
    if (element && element.card) element.card.update({disabled: b});
  }

  // The provider's element (Stripe.js's subset: Stripe(key), elements(),
  // create('card'), mount, on('change'), createPaymentMethod). Its errors
  // carry Stripe's codes, which the field puts in the buyer's words.
  var ELEMENT_CODES = {
    incomplete_number: 'number_incomplete', invalid_number: 'number_invalid', incorrect_number: 'number_invalid',
    incomplete_expiry: 'expiry_incomplete', invalid_expiry: 'expiry_invalid', invalid_expiry_month: 'expiry_invalid',
    invalid_expiry_year: 'expiry_invalid', invalid_expiry_month_past: 'expiry_past', invalid_expiry_year_past: 'expiry_past',
    expired_card: 'expiry_past', incomplete_cvc: 'cvc_incomplete', invalid_cvc: 'cvc_invalid', incorrect_cvc: 'cvc_invalid'
  };
  var element = elementKind ? {provider: null, card: null, state: {complete: false, empty: true, brand: '', error: null}} : null;

  // elementError is an error of the element as the page gets it: in the
  // buyer's language when its code is known, with the input it is about.
  function elementError(e) {
    var key = ELEMENT_CODES[e.code];
    return {field: key ? key.split('_')[0] : 'number', message: key ? T[key] : (e.message || T.check)};
  }

  function showElementError(e) {
    $('card-error').textContent = e ? elementError(e).message : '';
  }

  function mountElement() {
    var make = elementKind === 'stripe' ? window.Stripe : elementKind === 'sandbox' ? window.KeelpaySandbox : null;
    if (typeof make !== 'function') {
      $('card-error').textContent = T.card_unreachable;
      return;
    }
    element.provider = make(cfg.elementKey);
    element.card = element.provider.elements({locale: cfg.locale}).create('card', {hidePostalCode: true});
    element.card.on('change', function (ev) {
      element.state = {complete: !!ev.complete, empty: !!ev.empty, brand: ev.brand || '', error: ev.error || null};
      showElementError(ev.error);
      emitChange();
    });
    element.card.mount($('card-element'));
  }

  // newCardBody is the new card as keelpay gets it: the element's
  // reference (the element takes the card and the name to the provider),
  // or the typed card.
  function newCardBody() {
    if (!elementKind) return Promise.resolve(cardBody());
    if (!element.card) return Promise.reject(failure('state_error', T.card_unreachable));
    var billing = {};
    if (withName) billing.name = inputs.name.value.trim();
    return element.provider.createPaymentMethod({type: 'card', card: element.card, billing_details: billing}).then(function (r) {
      if (r && r.paymentMethod && typeof r.paymentMethod.id === 'string') return {payment_method: r.paymentMethod.id};
      var e = (r && r.error) || {};
      showElementError(e);
      var err = elementError(e);
      // The card's own errors are validation errors, as the field's own
      // inputs report them; anything else is the provider's failure.
      if (e.type === 'validation_error' || e.type === 'card_error') {
        throw failure('validation_error', err.message, {field: err.field});
      }
      throw failure('api_error', err.message, {code: e.code || 'element_error'});
    }, function () {
      throw failure('network_error', T.card_unreachable);
    });
  }

  // Errors go to the parent as plain objects; keelpay.js makes them
  // KeelpayErrors.
  function failure(type, message, extra) {
    var e = new Error(message);
    e.keelpay = Object.assign({type: type, message: message}, extra || {});
    return e;
  }

  var cardFields = {number: 'number', exp_month: 'expiry', exp_year: 'expiry', cvc: 'cvc', name: 'name'};

  // api calls keelpay's API on this origin with the publishable key.
  function api(method, path, body) {
    var init = {
      method: method,
      headers: {Authorization: 'Bearer ' + cfg.key},
      credentials: 'omit',
      cache: 'no-store',
      referrerPolicy: 'no-referrer'
    };
    if (body) {
      init.headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    return fetch(path, init).then(function (res) {
      return res.json().catch(function () { return null; }).then(function (data) {
        if (res.ok && data) return data;
        var e = (data && data.error) || {};
        var details = e.details || {};
        var extra = {code: e.code || 'http_' + res.status, status: res.status, details: details};
        var field = cardFields[details.field];
        if (res.status === 400 && field && order.indexOf(field) >= 0) {
          touched[field] = true;
          show(field, field + '_invalid');
          inputs[field].focus();
          extra.field = field;
          throw failure('validation_error', T[field + '_invalid'], extra);
        }
        throw failure('api_error', e.message || 'The API answered ' + res.status + '.', extra);
      });
    }, function () {
      throw failure('network_error', 'The payment service could not be reached.');
    });
  }

  function cardBody() {
    var exp = digits(inputs.expiry.value);
    var body = {
      number: digits(inputs.number.value),
      exp_month: +exp.slice(0, 2),
      exp_year: 2000 + +exp.slice(2, 4),
      cvc: inputs.cvc.value
    };
    if (withName) body.name = inputs.name.value.trim();
    return body;
  }

  function intentRef(v) {
    if (!v || typeof v.id !== 'string' || !/^pi_[A-Za-z0-9]{1,64}$/.test(v.id) ||
        typeof v.clientSecret !== 'string' || !v.clientSecret) {
      throw failure('state_error', 'paymentIntent needs the id and the clientSecret of a payment intent.');
    }
    return v;
  }

  function boundTo(pi) { return cfg.kind === 'payment_intent' && cfg.object === pi.id; }

  // readIntent reads an intent with its client_secret. The field shows an
  // intent to its page only when the page's origin is one of the intent's
  // page_origins: for the intent it was served for, the server checked
  // that already.
  function readIntent(pi) {
    var path = '/v1/payment_intents/' + encodeURIComponent(pi.id) + '?client_secret=' + encodeURIComponent(pi.clientSecret);
    return api('GET', path).then(function (intent) {
      if (!boundTo(pi) && (intent.page_origins || []).indexOf(parentOrigin) < 0) {
        throw failure('origin_error', "This page's origin is not one of the payment intent's page_origins.");
      }
      return intent;
    });
  }

  function exclusive(fn) {
    if (busy) return Promise.reject(failure('state_error', 'The card field is busy with another operation.'));
    setBusy(true);
    return Promise.resolve().then(fn).finally(function () { setBusy(false); });
  }

  var commands = {
    'keelpay:capture': function () {
      if (cfg.kind !== 'card_session') {
        throw failure('state_error', 'capture() needs a card field mounted with a card session.');
      }
      return exclusive(function () {
        var invalid = validateAll();
        if (invalid) throw failure('validation_error', T[check(invalid)], {field: invalid});
        announce(T.saving);
        return newCardBody().then(function (card) {
          var body = Object.assign({client_secret: cfg.clientSecret}, card);
          return api('POST', '/v1/card_sessions/' + encodeURIComponent(cfg.object) + '/cards', body);
        }).then(function (card) {
          clearCard();
          announce(T.saved);
          return card;
        });
      });
    },
    'keelpay:confirm': function (d) {
      var pi = intentRef(d.paymentIntent);
      var saved = d.paymentMethod;
      if (saved !== null && saved !== undefined && (typeof saved !== 'string' || !/^card_[A-Za-z0-9]{1,64}$/.test(saved))) {
        throw failure('state_error', 'paymentMethod must be the id of a saved card.');
      }
      if (d.billing !== null && d.billing !== undefined && (typeof d.billing !== 'object' || Array.isArray(d.billing))) {
        throw failure('state_error', 'billing must be an object.');
      }
      return exclusive(function () {
        if (!saved) {
          var invalid = validateAll();
          if (invalid) throw failure('validation_error', T[check(invalid)], {field: invalid});
        }
        return (boundTo(pi) ? Promise.resolve() : readIntent(pi)).then(function () {
          announce(T.paying);
          return saved ? {payment_method: saved} : newCardBody();
        }).then(function (card) {
          var body = Object.assign({client_secret: pi.clientSecret}, card);
          if (d.billing) body.billing = d.billing;
          return api('POST', '/v1/payment_intents/' + encodeURIComponent(pi.id) + '/confirm', body);
        }).then(function (intent) {
          if (!saved && intent.status === 'succeeded') clearCard();
          return intent;
        });
      });
    },
    'keelpay:retrieve': function (d) { return readIntent(intentRef(d.paymentIntent)); },
    'keelpay:clear': function () { clearCard(); },
    'keelpay:focus': function () {
      if (order.length) inputs[order[0]].focus();
      else if (element && element.card) element.card.focus();
    }
  };

  window.addEventListener('message', function (ev) {
    var d = ev.data;
    var ours = d && typeof d.type === 'string' && d.type.indexOf('keelpay:') === 0;
    if (ev.source !== window.parent || ev.origin !== parentOrigin) {
      if (ours) console.warn('keelpay card field: ignored a message from ' + ev.origin + '; only its page at ' + parentOrigin + ' may send commands.');
      return;
    }
    if (!ours || typeof d.id !== 'number' || !commands.hasOwnProperty(d.type)) return;
    Promise.resolve(d).then(commands[d.type]).then(function (value) {
      post({type: 'keelpay:result', id: d.id, ok: true, value: value === undefined ? null : value});
    }, function (e) {
      var err = e && e.keelpay ? e.keelpay : {type: 'state_error', message: 'The card field failed unexpectedly.'};
      post({type: 'keelpay:result', id: d.id, ok: false, error: err});
    });
  });

  // Labels in the buyer's language, then tell the page the field is ready
  // and how tall it is.
  order.concat(withName ? [] : ['name']).forEach(function (name) { $(name + '-label').textContent = T[name]; });
  if (inputs.expiry) inputs.expiry.placeholder = T.expiry_placeholder;
  if (elementKind) mountElement();
  function reportHeight() {
    post({type: 'keelpay:resize', height: Math.ceil(form.getBoundingClientRect().height) + 4});
  }
  if (window.ResizeObserver) new ResizeObserver(reportHeight).observe(form);
  reportHeight();
  post({type: 'keelpay:ready'});
})();
