// The sandbox's browser element: the sandbox's stand-in for Stripe.js. It
// speaks the subset of Stripe.js that keelpay's hosted card field uses,
//
//   const p = KeelpaySandbox(publishableKey);
//   const card = p.elements({locale}).create('card', opts);
//   card.mount(node); card.on('change', fn);
//   const {paymentMethod, error} = await p.createPaymentMethod({type: 'card', card, billing_details: {name}});
//
// and posts the card to the sandbox's own route, never to keelpay: the card
// field sends keelpay only paymentMethod.id. Its inputs have stable ids
// (number, expiry, cvc) for tests to type into. Errors carry Stripe's codes
// (incomplete_number, invalid_number, invalid_expiry_year_past, ...), which
// the card field puts in the buyer's words.
(function () {
  'use strict';

  var script = document.currentScript;
  var base = script && script.src ? script.src.replace(/element\.js(\?.*)?$/, '') : '/sandbox/elements/v1/';
  var endpoint = base + 'payment_methods';

  var LABELS = {
    en: {number: 'Card number', expiry: 'Expiry date (MM / YY)', expiry_placeholder: 'MM / YY', cvc: 'Security code (CVC)'},
    fi: {number: 'Kortin numero', expiry: 'Voimassa (KK / VV)', expiry_placeholder: 'KK / VV', cvc: 'Turvakoodi (CVC)'},
    sv: {number: 'Kortnummer', expiry: 'Giltigt till (MM / ÅÅ)', expiry_placeholder: 'MM / ÅÅ', cvc: 'Säkerhetskod (CVC)'},
    de: {number: 'Kartennummer', expiry: 'Gültig bis (MM / JJ)', expiry_placeholder: 'MM / JJ', cvc: 'Sicherheitscode (CVC)'}
  };
  var MESSAGES = {
    incomplete_number: 'Your card number is incomplete.', invalid_number: 'Your card number is invalid.',
    incomplete_expiry: "Your card's expiration date is incomplete.", invalid_expiry_month: "Your card's expiration month is invalid.",
    invalid_expiry_year_past: "Your card's expiration year is in the past.", invalid_expiry_month_past: "Your card's expiration date is in the past.",
    incomplete_cvc: "Your card's security code is incomplete.", invalid_cvc: "Your card's security code is invalid."
  };
  var BRANDS = {visa: 'Visa', mastercard: 'Mastercard', amex: 'American Express', discover: 'Discover'};

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

  function make(tag, attrs) {
    var n = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { n.setAttribute(k, attrs[k]); });
    return n;
  }

  function CardElement(locale) {
    this.labels = LABELS[locale] || LABELS.en;
    this.handlers = {};
    this.touched = {};
    this.node = null;
    this.inputs = null;
    this.last = '';
  }

  CardElement.prototype.on = function (event, fn) {
    (this.handlers[event] = this.handlers[event] || []).push(fn);
    return this;
  };

  CardElement.prototype.emit = function (event, value) {
    (this.handlers[event] || []).forEach(function (fn) { fn(value); });
  };

  CardElement.prototype.mount = function (target) {
    var node = typeof target === 'string' ? document.querySelector(target) : target;
    var self = this;
    var L = this.labels;
    var root = make('div', {'class': 'kps-card'});
    function row(id, name, autocomplete, max, placeholder) {
      var r = make('div', {'class': 'row'});
      var label = make('label', {'for': id, id: id + '-label'});
      label.textContent = L[id];
      var input = make('input', {id: id, name: name, type: 'text', inputmode: 'numeric', autocomplete: autocomplete,
        autocorrect: 'off', spellcheck: 'false', maxlength: String(max), placeholder: placeholder, 'aria-invalid': 'false'});
      r.appendChild(label);
      return {row: r, input: input};
    }
    var number = row('number', 'cardnumber', 'cc-number', 23, '1234 1234 1234 1234');
    var wrap = make('div', {'class': 'with-brand'});
    var brand = make('span', {'class': 'brand', id: 'number-brand'});
    wrap.appendChild(number.input);
    wrap.appendChild(brand);
    number.row.appendChild(wrap);
    var expiry = row('expiry', 'ccexp', 'cc-exp', 7, L.expiry_placeholder);
    expiry.row.appendChild(expiry.input);
    var cvc = row('cvc', 'cvc', 'cc-csc', 4, '123');
    cvc.row.appendChild(cvc.input);
    var split = make('div', {'class': 'split'});
    split.appendChild(expiry.row);
    split.appendChild(cvc.row);
    root.appendChild(number.row);
    root.appendChild(split);
    node.appendChild(root);
    this.node = root;
    this.brandNode = brand;
    this.inputs = {number: number.input, expiry: expiry.input, cvc: cvc.input};
    Object.keys(this.inputs).forEach(function (name) {
      var input = self.inputs[name];
      input.addEventListener('input', function () {
        self.reformat(name);
        if (name === 'number') {
          brand.textContent = BRANDS[brandOf(digits(input.value))] || '';
          if (self.inputs.cvc.value) self.reformat('cvc');
        }
        self.changed();
      });
      input.addEventListener('blur', function () {
        if (input.value) self.touched[name] = true;
        self.changed();
      });
    });
    this.changed();
    this.emit('ready', {elementType: 'card'});
  };

  CardElement.prototype.reformat = function (name) {
    var input = this.inputs[name];
    var value = input.value;
    var caret = input.selectionStart === null ? value.length : input.selectionStart;
    var before = digits(value.slice(0, caret)).length;
    var d = digits(value);
    var numberBrand = brandOf(digits(this.inputs.number.value));
    var limit = {number: brandOf(d) === 'amex' ? 15 : 19, expiry: 4, cvc: numberBrand === 'amex' || !numberBrand ? 4 : 3}[name];
    d = d.slice(0, limit);
    var next = name === 'number' ? formatNumber(d) : name === 'expiry' ? formatExpiry(d) : d;
    if (next === value) return;
    input.value = next;
    if (document.activeElement !== input) return;
    var pos = 0;
    for (var seen = 0; pos < next.length && seen < before; pos++) {
      if (/\d/.test(next.charAt(pos))) seen++;
    }
    input.setSelectionRange(pos, pos);
  };

  // check returns the Stripe code of the input's error, or ''.
  CardElement.prototype.check = function (name) {
    var value = this.inputs[name].value;
    var d = digits(value);
    switch (name) {
      case 'number': {
        if (!d) return 'incomplete_number';
        var min = {amex: 15, visa: 13, mastercard: 16, discover: 16}[brandOf(d)] || 12;
        if (d.length < min) return 'incomplete_number';
        return luhn(d) ? '' : 'invalid_number';
      }
      case 'expiry': {
        if (d.length < 4) return 'incomplete_expiry';
        var month = +d.slice(0, 2);
        var year = 2000 + +d.slice(2, 4);
        var now = new Date();
        if (month < 1 || month > 12) return 'invalid_expiry_month';
        if (year < now.getFullYear()) return 'invalid_expiry_year_past';
        if (year === now.getFullYear() && month < now.getMonth() + 1) return 'invalid_expiry_month_past';
        return '';
      }
      case 'cvc': {
        if (d !== value) return 'invalid_cvc';
        var need = brandOf(digits(this.inputs.number.value)) === 'amex' ? 4 : 3;
        return d.length < need ? 'incomplete_cvc' : '';
      }
    }
    return '';
  };

  // state is the change event: the first error of a touched input, or of
  // any input when all is true (a submit).
  CardElement.prototype.state = function (all) {
    var self = this;
    var error;
    var complete = true;
    ['number', 'expiry', 'cvc'].forEach(function (name) {
      var code = self.check(name);
      var shown = code && (all || self.touched[name] || (code.indexOf('invalid_') === 0 && self.inputs[name].value));
      self.inputs[name].setAttribute('aria-invalid', shown ? 'true' : 'false');
      if (!code) return;
      complete = false;
      if (shown && !error) error = {type: 'validation_error', code: code, message: MESSAGES[code], field: name};
    });
    return {
      elementType: 'card',
      empty: !this.inputs.number.value && !this.inputs.expiry.value && !this.inputs.cvc.value,
      complete: complete,
      brand: brandOf(digits(this.inputs.number.value)) || 'unknown',
      error: error
    };
  };

  CardElement.prototype.changed = function () {
    var s = this.state(false);
    var key = JSON.stringify(s);
    if (key === this.last) return;
    this.last = key;
    this.emit('change', s);
  };

  CardElement.prototype.focus = function () { if (this.inputs) this.inputs.number.focus(); };
  CardElement.prototype.blur = function () { if (document.activeElement) document.activeElement.blur(); };

  CardElement.prototype.clear = function () {
    var self = this;
    if (!this.inputs) return;
    Object.keys(this.inputs).forEach(function (name) { self.inputs[name].value = ''; self.touched[name] = false; });
    this.brandNode.textContent = '';
    this.changed();
  };

  CardElement.prototype.update = function (opts) {
    var self = this;
    if (opts && 'disabled' in opts && this.inputs) {
      Object.keys(this.inputs).forEach(function (name) { self.inputs[name].readOnly = !!opts.disabled; });
    }
  };

  CardElement.prototype.unmount = function () {
    if (this.node && this.node.parentNode) this.node.parentNode.removeChild(this.node);
    this.node = null;
  };
  CardElement.prototype.destroy = CardElement.prototype.unmount;

  // focusFirstInvalid moves the focus to the first input with an error.
  CardElement.prototype.focusInvalid = function (field) {
    if (this.inputs && this.inputs[field]) this.inputs[field].focus();
  };

  function KeelpaySandbox(publishableKey) {
    if (!(this instanceof KeelpaySandbox)) return new KeelpaySandbox(publishableKey);
    this.key = publishableKey;
  }

  KeelpaySandbox.prototype.elements = function (opts) {
    var locale = (opts && opts.locale) || 'en';
    return {
      create: function (type) {
        if (type !== 'card') throw new Error('KeelpaySandbox: only the card element exists.');
        return new CardElement(locale);
      }
    };
  };

  KeelpaySandbox.prototype.createPaymentMethod = function (params) {
    var card = params && params.card;
    if (!params || params.type !== 'card' || !(card instanceof CardElement) || !card.inputs) {
      return Promise.resolve({error: {type: 'invalid_request_error', code: 'parameter_missing', message: 'A mounted card element is required.'}});
    }
    ['number', 'expiry', 'cvc'].forEach(function (name) { card.touched[name] = true; });
    var s = card.state(true);
    card.last = JSON.stringify(s);
    card.emit('change', s);
    if (s.error) {
      card.focusInvalid(s.error.field);
      return Promise.resolve({error: s.error});
    }
    var exp = digits(card.inputs.expiry.value);
    var billing = params.billing_details || {};
    var body = {
      key: this.key,
      number: digits(card.inputs.number.value),
      exp_month: +exp.slice(0, 2),
      exp_year: 2000 + +exp.slice(2, 4),
      cvc: card.inputs.cvc.value,
      name: billing.name || ''
    };
    return fetch(endpoint, {
      method: 'POST', headers: {'Content-Type': 'application/json'}, body: JSON.stringify(body),
      credentials: 'omit', cache: 'no-store', referrerPolicy: 'no-referrer'
    }).then(function (res) {
      return res.json().then(function (data) {
        if (res.ok && data && data.id) {
          return {paymentMethod: {id: data.id, type: 'card', card: data.card, billing_details: {name: body.name || null}}};
        }
        var e = (data && data.error) || {};
        return {error: {type: res.status === 402 ? 'card_error' : 'api_error', code: e.code || 'http_' + res.status, message: e.message || 'The card was not accepted.'}};
      });
    }, function () {
      return {error: {type: 'api_connection_error', code: 'network', message: 'The payment provider could not be reached.'}};
    });
  };

  window.KeelpaySandbox = KeelpaySandbox;
})();
