// The checkout page. Card details are typed into keelpay's card field (an
// iframe of keelpay's origin); this script only ever handles the ids and
// client secrets that the store's server gets from keelpay.
(function () {
  'use strict';

  var body = document.body;
  var publishableKey = body.dataset.publishableKey;
  var currency = body.dataset.currency;
  function $(id) { return document.getElementById(id); }

  var kp = null;
  var field = null;
  var mounting = 0;
  var busy = false;
  var BRANDS = {visa: 'Visa', mastercard: 'Mastercard', amex: 'American Express', discover: 'Discover'};

  function locale() { return $('locale').value; }
  function customerID() { return $('customer').value.trim(); }

  function request(method, path, data) {
    var init = {method: method, headers: {}};
    if (data) {
      init.headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(data);
    }
    return fetch(path, init).then(function (res) {
      return res.json().catch(function () { return null; }).then(function (json) {
        if (res.ok) return json;
        var e = new Error((json && json.error && json.error.message) || 'The request failed.');
        e.code = json && json.error && json.error.code;
        throw e;
      });
    });
  }

  // amountMinor reads the amount as minor units: "25", "25.5", "25,50".
  function amountMinor() {
    var m = /^(\d{1,7})(?:[.,](\d{1,2}))?$/.exec($('amount').value.trim());
    if (!m) return 0;
    return parseInt(m[1], 10) * 100 + parseInt(((m[2] || '') + '00').slice(0, 2), 10);
  }

  function money(minor, cur) {
    return (minor / 100).toFixed(2) + ' ' + (cur || currency);
  }

  function setMessage(text, code) {
    $('message').textContent = text || '';
    $('message').dataset.code = code || '';
  }

  function setResult(status, text) {
    $('result').textContent = text || '';
    $('result').dataset.status = status || '';
  }

  // mountField shows a card field for a fresh card session of the
  // customer: the field can save one card into it, and pay any intent.
  function mountField() {
    var generation = ++mounting;
    body.dataset.field = 'loading';
    return request('POST', '/api/card_sessions', {customer: customerID()}).then(function (session) {
      if (generation !== mounting) return;
      if (field) field.destroy();
      kp = Keelpay(publishableKey, {locale: locale()});
      field = kp.cardField('#card-field', {cardSession: {id: session.id, clientSecret: session.client_secret}}, {name: true});
      field.on('ready', function () { if (generation === mounting) body.dataset.field = 'ready'; });
    }).catch(function (e) {
      body.dataset.field = 'error';
      setMessage('The card field could not be prepared: ' + e.message, e.code);
    });
  }

  function renderCards(cards, select) {
    var list = $('saved-cards');
    var keep = select || list.value;
    list.textContent = '';
    if (!cards.length) {
      list.appendChild(new Option('No saved cards yet', ''));
    }
    cards.forEach(function (c) {
      var label = (BRANDS[c.brand] || c.brand) + ' •••• ' + c.last4 + '  ' + String(c.exp_month).padStart(2, '0') + '/' +
        String(c.exp_year).slice(-2);
      list.appendChild(new Option(label, c.id, false, c.id === keep));
    });
  }

  function loadCards() {
    return request('GET', '/api/cards?customer=' + encodeURIComponent(customerID())).then(function (r) { renderCards(r.cards); });
  }

  function showOutcome(res) {
    var pi = res.paymentIntent;
    $('result').dataset.intent = pi.id;
    if (res.status === 'succeeded') {
      // Whatever paid, no card details stay on the page afterwards.
      if (field) field.clear().catch(function () {});
      var pm = pi.payment_method || {};
      setMessage('');
      setResult('succeeded', 'Paid ' + money(pi.amount, pi.currency) + ' with ' + (BRANDS[pm.brand] || pm.brand) +
        ' •••• ' + pm.last4 + ' (' + pi.id + ').');
      return;
    }
    setResult(res.status, 'Payment ' + pi.id + ': ' + res.status.replace(/_/g, ' ') + '.');
    setMessage(Keelpay.message(pi.last_error, locale()), pi.last_error && pi.last_error.code);
  }

  function showError(e) {
    setResult('error', '');
    if (e instanceof KeelpayError) {
      setMessage(Keelpay.message(e, locale()), e.code || e.type);
    } else {
      setMessage(e.message, e.code);
    }
  }

  // run runs one action of the buttons at a time.
  function run(action) {
    if (busy) return;
    busy = true;
    body.dataset.busy = '1';
    ['save', 'pay', 'pay-saved'].forEach(function (id) { $(id).disabled = true; });
    setMessage('');
    setResult('working', '');
    Promise.resolve().then(action).catch(showError).finally(function () {
      busy = false;
      delete body.dataset.busy;
      ['save', 'pay', 'pay-saved'].forEach(function (id) { $(id).disabled = false; });
    });
  }

  function needField() {
    if (!field || body.dataset.field !== 'ready') {
      var e = new Error('The card field is still loading.');
      e.code = 'field_loading';
      throw e;
    }
  }

  function createPayment() {
    var amount = amountMinor();
    if (!amount) {
      var e = new Error('Enter an amount such as 25.00.');
      e.code = 'invalid_amount';
      return Promise.reject(e);
    }
    return request('POST', '/api/payments', {amount: amount, customer: customerID()}).then(function (pi) {
      return {id: pi.id, clientSecret: pi.client_secret};
    });
  }

  $('save').addEventListener('click', function () {
    run(function () {
      needField();
      return field.capture().then(function (card) {
        setResult('saved', 'Saved ' + (BRANDS[card.brand] || card.brand) + ' •••• ' + card.last4 + ' (' + card.id + ').');
        return request('POST', '/api/cards', {card: card.id}).then(function (r) {
          renderCards(r.cards, card.id);
          // The card session is complete: the next card needs another.
          return mountField();
        });
      });
    });
  });

  $('order').addEventListener('submit', function (ev) {
    ev.preventDefault();
    run(function () {
      needField();
      return createPayment().then(function (pi) {
        return kp.confirm({paymentIntent: pi, field: field});
      }).then(showOutcome);
    });
  });

  $('pay-saved').addEventListener('click', function () {
    run(function () {
      var card = $('saved-cards').value;
      if (!card) {
        var e = new Error('Save a card first.');
        e.code = 'no_saved_card';
        throw e;
      }
      return createPayment().then(function (pi) {
        return kp.confirm({paymentIntent: pi, paymentMethod: card});
      }).then(showOutcome);
    });
  });

  function updatePayLabel() {
    var amount = amountMinor();
    $('pay').textContent = amount ? 'Pay ' + money(amount) : 'Pay';
  }
  $('amount').addEventListener('input', updatePayLabel);
  $('locale').addEventListener('change', function () {
    document.documentElement.lang = locale();
    mountField();
  });
  $('customer').addEventListener('change', function () {
    mountField();
    loadCards();
  });

  // The webhooks the store's server received, polled from its own API.
  function renderEvents(events) {
    var list = $('events');
    list.textContent = '';
    events.forEach(function (e) {
      var li = document.createElement('li');
      li.dataset.type = e.type;
      li.dataset.object = e.object || '';
      var type = document.createElement('code');
      type.textContent = e.type;
      var detail = document.createElement('span');
      detail.className = 'detail';
      detail.textContent = [e.object, e.status, e.received_at.slice(11, 19)].filter(Boolean).join(' · ');
      li.appendChild(type);
      li.appendChild(detail);
      list.appendChild(li);
    });
  }
  function pollEvents() {
    request('GET', '/api/events').then(function (r) { renderEvents(r.events); }, function () {}).finally(function () {
      window.setTimeout(pollEvents, 1000);
    });
  }

  updatePayLabel();
  mountField();
  loadCards();
  pollEvents();
})();
