/*
 * keelpay.js v1: the browser script of keelpay. No dependencies, no build step.
 *
 * Load it from the keelpay server and pin it with its integrity value, which
 * the server publishes at /js/v1/keelpay.js.integrity:
 *
 *   <script src="https://keelpay.example/js/v1/keelpay.js"
 *           integrity="sha384-…" crossorigin="anonymous"></script>
 *
 * The API is the origin the script was loaded from. The card number, expiry
 * and CVC are typed into the hosted card field, an iframe served by keelpay,
 * which makes every API call itself: they never exist in this page, and this
 * page talks to the field only with postMessage.
 *
 *   const kp = Keelpay('pk_…', {locale: 'fi'});       // en (default), fi, sv, de
 *
 *   // Mount the card field for a card session or a payment intent that the
 *   // store's server created, with this page's origin in its page_origins.
 *   const field = kp.cardField('#card', {cardSession: {id, clientSecret}}, {name: true});
 *   const field = kp.cardField(element, {paymentIntent: {id, clientSecret}});
 *   field.on('ready', () => …);
 *   field.on('change', ({complete, empty, brand, error}) => …);   // error: {field, message} or null
 *   field.focus(); field.clear(); field.destroy();
 *
 *   // Save the card into the card session (the field must be a card
 *   // session's): resolves with the card {id, brand, last4, exp_month, …}.
 *   const card = await field.capture();
 *
 *   // Pay: with the card typed into a field (of any card session or intent of
 *   // the store), or with a saved card of the intent's customer. Optional
 *   // billing: {country, state, postal_code}.
 *   const {status, paymentIntent} = await kp.confirm({paymentIntent: {id, clientSecret}, field});
 *   const {status, paymentIntent} = await kp.confirm({paymentIntent: {id, clientSecret}, paymentMethod: 'card_…'});
 *
 * confirm resolves once the payment has an outcome for the buyer. When 3D
 * Secure is needed it shows the bank's page in a modal frame on this page,
 * waits for its answer, and reads the intent again:
 *   succeeded                 paid
 *   requires_payment_method   the attempt failed: paymentIntent.last_error says why
 *   canceled                  the intent was canceled (or voided)
 *   processing                the outcome is unknown (last_error.code outcome_unknown):
 *                             do not charge again; the store's server learns it by webhook
 *   requires_action           the buyer closed the 3D Secure window, or its answer had
 *                             not arrived after a few seconds
 *
 *   Keelpay.message(paymentIntent.last_error, 'fi')   // a sentence for the buyer
 *   Keelpay.message(err, 'de')                         // also for a KeelpayError
 *
 * Keelpay.message covers every last_error.code (card_declined with decline_code
 * generic_decline or insufficient_funds, card_rejected, card_unavailable,
 * billing_required, invalid_request, authentication_failed,
 * authentication_expired, provider_error, outcome_unknown, currency_mismatch,
 * amount_mismatch) in en, fi, sv and de; another language falls back to
 * English, an unknown code to a general sentence.
 *
 * A failed payment is not an error. Errors of the browser are not API errors
 * either: promises reject with a KeelpayError {type, message, field, code,
 * status, details}, where type is
 *   validation_error  the card field's input is not valid; field is number, expiry,
 *                     cvc or name (the field shows the error itself)
 *   api_error         the API refused the call; code and status are the API's
 *                     (e.g. card_rejected 422 on capture, payment_intent_unexpected_state 409)
 *   network_error     the API could not be reached, or the card field did not load
 *                     (wrong key or client secret, or this origin not in page_origins)
 *   origin_error      this page's origin is not among the payment intent's page_origins,
 *                     or the 3D Secure address is not a web address
 *   state_error       the call does not fit: bad arguments, capture() on a field of an
 *                     intent, a second operation while the field is busy, a destroyed field
 * message is English for developers; show the buyer Keelpay.message(err, locale).
 */
(function () {
  'use strict';

  var script = document.currentScript;
  var BASE = script && script.src ? new URL(script.src, window.location.href).origin : '';

  // How long to wait for the card field to load, and how often to read an
  // intent after 3D Secure before returning what it is.
  var READY_TIMEOUT_MS = 20000;
  var SETTLE_DELAYS_MS = [150, 250, 400, 600, 800, 1000, 1000, 1500, 1500, 2000, 2000, 2000];

  class KeelpayError extends Error {
    constructor(type, message, extra) {
      super(message);
      extra = extra || {};
      this.name = 'KeelpayError';
      this.type = type;
      this.field = extra.field;
      this.code = extra.code;
      this.status = extra.status;
      this.details = extra.details;
    }
  }

  var mismatch = {
    en: 'The payment could not be completed and was cancelled. No money was taken. Please start the payment again.',
    fi: 'Maksua ei voitu suorittaa, ja se peruttiin. Rahaa ei veloitettu. Aloita maksu uudelleen.',
    sv: 'Betalningen kunde inte slutföras och avbröts. Inga pengar drogs. Starta betalningen igen.',
    de: 'Die Zahlung konnte nicht abgeschlossen werden und wurde storniert. Es wurde kein Geld abgebucht. Bitte starten Sie die Zahlung erneut.'
  };

  var MESSAGES = {
    en: {
      card_declined: 'Your card was declined. Please use another card.',
      generic_decline: 'Your bank declined the payment. Please use another card or contact your bank.',
      insufficient_funds: 'Your card has insufficient funds. Please use another card.',
      card_rejected: 'This card cannot be used. Please enter another card.',
      card_unavailable: 'This saved card can no longer be used. Please enter your card details again.',
      billing_required: 'Your card needs a billing address. Please add it and try again.',
      invalid_request: 'The payment could not be processed with this card. Please use another card.',
      authentication_failed: 'The card authentication was not completed. Please try again.',
      authentication_expired: 'The card authentication timed out. Please try again.',
      provider_error: 'The payment service had a problem. Please try again in a few minutes.',
      outcome_unknown: 'Your payment is still being processed. Please do not pay again; you will get a confirmation shortly.',
      currency_mismatch: mismatch.en,
      amount_mismatch: mismatch.en,
      network_error: 'The payment service cannot be reached. Check your connection and try again.',
      invalid_number: 'Your card number is not valid.',
      invalid_expiry: 'The expiry date is not valid.',
      invalid_cvc: 'The security code is not valid.',
      invalid_name: 'Enter the name on the card.',
      generic: 'The payment could not be completed. Please try again.',
      challenge: '3D Secure authentication',
      close: 'Close',
      field: 'Secure card payment input'
    },
    fi: {
      card_declined: 'Korttisi hylättiin. Käytä toista korttia.',
      generic_decline: 'Pankkisi hylkäsi maksun. Käytä toista korttia tai ota yhteyttä pankkiisi.',
      insufficient_funds: 'Kortilla ei ole riittävästi katetta. Käytä toista korttia.',
      card_rejected: 'Tätä korttia ei voi käyttää. Syötä toisen kortin tiedot.',
      card_unavailable: 'Tallennettua korttia ei voi enää käyttää. Syötä korttisi tiedot uudelleen.',
      billing_required: 'Kortti vaatii laskutusosoitteen. Lisää osoite ja yritä uudelleen.',
      invalid_request: 'Maksua ei voitu käsitellä tällä kortilla. Käytä toista korttia.',
      authentication_failed: 'Kortin tunnistautuminen jäi kesken. Yritä uudelleen.',
      authentication_expired: 'Kortin tunnistautumisen aika umpeutui. Yritä uudelleen.',
      provider_error: 'Maksupalvelussa oli häiriö. Yritä uudelleen muutaman minuutin kuluttua.',
      outcome_unknown: 'Maksuasi käsitellään vielä. Älä maksa uudelleen; saat vahvistuksen pian.',
      currency_mismatch: mismatch.fi,
      amount_mismatch: mismatch.fi,
      network_error: 'Maksupalveluun ei saada yhteyttä. Tarkista verkkoyhteys ja yritä uudelleen.',
      invalid_number: 'Kortin numero ei ole kelvollinen.',
      invalid_expiry: 'Voimassaoloaika ei ole kelvollinen.',
      invalid_cvc: 'Turvakoodi ei ole kelvollinen.',
      invalid_name: 'Syötä kortissa oleva nimi.',
      generic: 'Maksua ei voitu suorittaa. Yritä uudelleen.',
      challenge: '3D Secure -tunnistautuminen',
      close: 'Sulje',
      field: 'Suojattu kortinsyöttö'
    },
    sv: {
      card_declined: 'Ditt kort nekades. Använd ett annat kort.',
      generic_decline: 'Din bank nekade betalningen. Använd ett annat kort eller kontakta din bank.',
      insufficient_funds: 'Det finns inte tillräckligt med pengar på kortet. Använd ett annat kort.',
      card_rejected: 'Det här kortet kan inte användas. Ange ett annat kort.',
      card_unavailable: 'Det sparade kortet kan inte längre användas. Ange dina kortuppgifter igen.',
      billing_required: 'Kortet kräver en faktureringsadress. Lägg till den och försök igen.',
      invalid_request: 'Betalningen kunde inte genomföras med det här kortet. Använd ett annat kort.',
      authentication_failed: 'Kortverifieringen slutfördes inte. Försök igen.',
      authentication_expired: 'Tiden för kortverifieringen gick ut. Försök igen.',
      provider_error: 'Betaltjänsten har ett problem. Försök igen om några minuter.',
      outcome_unknown: 'Din betalning behandlas fortfarande. Betala inte igen; du får en bekräftelse snart.',
      currency_mismatch: mismatch.sv,
      amount_mismatch: mismatch.sv,
      network_error: 'Betaltjänsten kan inte nås. Kontrollera din anslutning och försök igen.',
      invalid_number: 'Kortnumret är inte giltigt.',
      invalid_expiry: 'Utgångsdatumet är inte giltigt.',
      invalid_cvc: 'Säkerhetskoden är inte giltig.',
      invalid_name: 'Ange namnet på kortet.',
      generic: 'Betalningen kunde inte genomföras. Försök igen.',
      challenge: '3D Secure-verifiering',
      close: 'Stäng',
      field: 'Säker inmatning av kortuppgifter'
    },
    de: {
      card_declined: 'Ihre Karte wurde abgelehnt. Bitte verwenden Sie eine andere Karte.',
      generic_decline: 'Ihre Bank hat die Zahlung abgelehnt. Bitte verwenden Sie eine andere Karte oder wenden Sie sich an Ihre Bank.',
      insufficient_funds: 'Ihre Karte ist nicht ausreichend gedeckt. Bitte verwenden Sie eine andere Karte.',
      card_rejected: 'Diese Karte kann nicht verwendet werden. Bitte geben Sie eine andere Karte ein.',
      card_unavailable: 'Die gespeicherte Karte kann nicht mehr verwendet werden. Bitte geben Sie Ihre Kartendaten erneut ein.',
      billing_required: 'Für diese Karte ist eine Rechnungsadresse erforderlich. Bitte ergänzen Sie sie und versuchen Sie es erneut.',
      invalid_request: 'Die Zahlung konnte mit dieser Karte nicht verarbeitet werden. Bitte verwenden Sie eine andere Karte.',
      authentication_failed: 'Die Kartenauthentifizierung wurde nicht abgeschlossen. Bitte versuchen Sie es erneut.',
      authentication_expired: 'Die Zeit für die Kartenauthentifizierung ist abgelaufen. Bitte versuchen Sie es erneut.',
      provider_error: 'Beim Zahlungsdienst ist ein Problem aufgetreten. Bitte versuchen Sie es in einigen Minuten erneut.',
      outcome_unknown: 'Ihre Zahlung wird noch bearbeitet. Bitte zahlen Sie nicht erneut; Sie erhalten in Kürze eine Bestätigung.',
      currency_mismatch: mismatch.de,
      amount_mismatch: mismatch.de,
      network_error: 'Der Zahlungsdienst ist nicht erreichbar. Bitte prüfen Sie Ihre Verbindung und versuchen Sie es erneut.',
      invalid_number: 'Die Kartennummer ist ungültig.',
      invalid_expiry: 'Das Ablaufdatum ist ungültig.',
      invalid_cvc: 'Der Sicherheitscode ist ungültig.',
      invalid_name: 'Bitte geben Sie den Namen auf der Karte ein.',
      generic: 'Die Zahlung konnte nicht abgeschlossen werden. Bitte versuchen Sie es erneut.',
      challenge: '3D-Secure-Authentifizierung',
      close: 'Schließen',
      field: 'Sichere Eingabe der Kartendaten'
    }
  };

  function locale(l) {
    l = String(l || '').toLowerCase().split(/[-_]/)[0];
    return Object.prototype.hasOwnProperty.call(MESSAGES, l) ? l : 'en';
  }

  // API codes that tell the buyer the same as a failed attempt would.
  var API_CODES = {
    card_rejected: 'card_rejected',
    card_unavailable: 'card_unavailable',
    provider_api_unavailable: 'provider_error',
    platform_access_pending: 'provider_error',
    rate_limited: 'provider_error',
    internal_error: 'provider_error'
  };

  function messageKey(err) {
    if (!err || typeof err !== 'object') return '';
    if (err instanceof KeelpayError) {
      switch (err.type) {
        case 'validation_error': return 'invalid_' + (err.field || 'number');
        case 'network_error': return 'network_error';
        case 'api_error': return API_CODES[err.code] || '';
      }
      return '';
    }
    // A last_error.
    if (err.code === 'card_declined' && Object.prototype.hasOwnProperty.call(MESSAGES.en, err.decline_code)) {
      return err.decline_code;
    }
    return typeof err.code === 'string' ? err.code : '';
  }

  // message returns a sentence for the buyer about a last_error or a
  // KeelpayError, in the locale (en, fi, sv or de), else in English; an
  // unknown code gets a general sentence.
  function message(err, loc) {
    var table = MESSAGES[locale(loc)];
    var key = messageKey(err);
    var has = function (t) { return key && Object.prototype.hasOwnProperty.call(t, key); };
    if (has(table)) return table[key];
    if (has(MESSAGES.en)) return MESSAGES.en[key];
    return table.generic;
  }

  function stateError(msg) { return new KeelpayError('state_error', msg); }

  function element(target) {
    var el = typeof target === 'string' ? document.querySelector(target) : target;
    if (!el || typeof el.appendChild !== 'function') throw stateError('The card field needs an element or a selector that finds one.');
    return el;
  }

  function objectRef(v, prefix, what) {
    if (!v || typeof v.id !== 'string' || v.id.indexOf(prefix) !== 0 || typeof v.clientSecret !== 'string' || !v.clientSecret) {
      throw stateError(what + ' needs {id, clientSecret} of an object the store\'s server created.');
    }
    return {id: v.id, clientSecret: v.clientSecret};
  }

  function delay(ms) { return new Promise(function (resolve) { window.setTimeout(resolve, ms); }); }

  // CardField is a mounted hosted card field: an iframe of keelpay's origin
  // that this page drives with messages.
  class CardField {
    constructor(client, target, binding, options) {
      options = options || {};
      var kind;
      var ref;
      if (binding && binding.cardSession) {
        kind = 'card_session';
        ref = objectRef(binding.cardSession, 'cs_', 'cardSession');
      } else if (binding && binding.paymentIntent) {
        kind = 'payment_intent';
        ref = objectRef(binding.paymentIntent, 'pi_', 'paymentIntent');
      } else {
        throw stateError('cardField needs {cardSession: {id, clientSecret}} or {paymentIntent: {id, clientSecret}}.');
      }
      var parent = element(target);
      this._client = client;
      this._kind = kind;
      this._handlers = {ready: [], change: []};
      this._pending = new Map();
      this._seq = 0;
      this._busy = false;
      this._ready = false;
      this._readyWaiters = [];

      var q = new URLSearchParams();
      q.set('key', client._key);
      q.set(kind, ref.id);
      q.set('client_secret', ref.clientSecret);
      q.set('origin', window.location.origin);
      q.set('locale', client._locale);
      if (options.name) q.set('name', '1');

      var frame = document.createElement('iframe');
      frame.title = MESSAGES[client._locale].field;
      frame.className = 'keelpay-card-field';
      frame.style.border = '0';
      frame.style.width = '100%';
      frame.style.display = options.hidden ? 'none' : 'block';
      frame.style.height = '150px';
      frame.style.colorScheme = 'normal';
      this._frame = frame;
      this._onMessage = this._receive.bind(this);
      window.addEventListener('message', this._onMessage);
      frame.src = BASE + '/elements/v1/card?' + q.toString();
      parent.appendChild(frame);
    }

    // on registers a handler of 'ready' or 'change'.
    on(event, fn) {
      if (!this._handlers[event] || typeof fn !== 'function') throw stateError('on() takes \'ready\' or \'change\' and a function.');
      this._handlers[event].push(fn);
      if (event === 'ready' && this._ready) fn();
      return this;
    }

    capture() {
      if (this._kind !== 'card_session') {
        return Promise.reject(stateError('capture() needs a card field mounted with a cardSession.'));
      }
      var self = this;
      return this._exclusive(function () { return self._request('capture', {}); });
    }

    clear() { return this._request('clear', {}).then(function () {}); }

    focus() { return this._request('focus', {}).then(function () {}); }

    destroy() {
      if (!this._frame) return;
      window.removeEventListener('message', this._onMessage);
      this._frame.remove();
      this._frame = null;
      var gone = stateError('The card field was destroyed.');
      this._pending.forEach(function (p) { p.reject(gone); });
      this._pending.clear();
      this._readyWaiters.forEach(function (w) { w.reject(gone); });
      this._readyWaiters = [];
    }

    _emit(event, arg) {
      this._handlers[event].forEach(function (fn) {
        try { fn(arg); } catch (e) { window.setTimeout(function () { throw e; }); }
      });
    }

    // _receive takes only messages of this field's own frame, from
    // keelpay's origin.
    _receive(ev) {
      if (!this._frame || ev.source !== this._frame.contentWindow || ev.origin !== BASE) return;
      var d = ev.data;
      if (!d || typeof d.type !== 'string') return;
      switch (d.type) {
        case 'keelpay:ready':
          if (!this._ready) {
            this._ready = true;
            this._readyWaiters.forEach(function (w) { w.resolve(); });
            this._readyWaiters = [];
            this._emit('ready');
          }
          break;
        case 'keelpay:resize':
          if (typeof d.height === 'number' && d.height > 0 && d.height < 2000) this._frame.style.height = Math.ceil(d.height) + 'px';
          break;
        case 'keelpay:change':
          this._emit('change', {complete: !!d.complete, empty: !!d.empty, brand: String(d.brand || ''), error: d.error || null});
          break;
        case 'keelpay:result': {
          var p = this._pending.get(d.id);
          if (!p) return;
          this._pending.delete(d.id);
          if (d.ok) p.resolve(d.value);
          else {
            var e = d.error || {};
            p.reject(new KeelpayError(e.type || 'state_error', e.message || 'The card field failed.', e));
          }
          break;
        }
      }
    }

    _whenReady() {
      if (!this._frame) return Promise.reject(stateError('The card field was destroyed.'));
      if (this._ready) return Promise.resolve();
      var self = this;
      return new Promise(function (resolve, reject) {
        var waiter = {resolve: resolve, reject: reject};
        self._readyWaiters.push(waiter);
        window.setTimeout(function () {
          var i = self._readyWaiters.indexOf(waiter);
          if (i < 0) return;
          self._readyWaiters.splice(i, 1);
          reject(new KeelpayError('network_error', 'The card field did not load: check the publishable key, the client secret, ' +
            'and that this page\'s origin is in the page_origins of the card session or payment intent.'));
        }, READY_TIMEOUT_MS);
      });
    }

    _request(command, payload) {
      var self = this;
      return this._whenReady().then(function () {
        if (!self._frame) throw stateError('The card field was destroyed.');
        return new Promise(function (resolve, reject) {
          var id = ++self._seq;
          self._pending.set(id, {resolve: resolve, reject: reject});
          self._frame.contentWindow.postMessage(Object.assign({type: 'keelpay:' + command, id: id}, payload), BASE);
        });
      });
    }

    // _exclusive runs one operation of the field at a time.
    _exclusive(fn) {
      if (this._busy) return Promise.reject(stateError('The card field is busy with another operation.'));
      var self = this;
      this._busy = true;
      return Promise.resolve().then(fn).finally(function () { self._busy = false; });
    }
  }

  class Client {
    constructor(key, options) {
      this._key = key;
      this._locale = locale(options && options.locale);
    }

    cardField(target, binding, options) {
      return new CardField(this, target, binding, options);
    }

    confirm(params) {
      var self = this;
      return Promise.resolve().then(function () {
        params = params || {};
        var pi = objectRef(params.paymentIntent, 'pi_', 'confirm: paymentIntent');
        var field = params.field;
        var saved = params.paymentMethod;
        if (!field === !saved) throw stateError('confirm needs either field or paymentMethod.');
        if (field && (!(field instanceof CardField) || field._client !== self)) {
          throw stateError('confirm: field must be a card field of this Keelpay instance.');
        }
        if (saved && (typeof saved !== 'string' || saved.indexOf('card_') !== 0)) {
          throw stateError('confirm: paymentMethod must be the id of a saved card (card_…).');
        }
        // A saved card needs no field on the page: a hidden one of the
        // intent makes the calls.
        var channel = field || new CardField(self, document.body, {paymentIntent: pi}, {hidden: true});
        var run = channel._exclusive(function () { return self._confirmWith(channel, pi, params); });
        return field ? run : run.finally(function () { channel.destroy(); });
      });
    }

    _confirmWith(channel, pi, params) {
      var self = this;
      var payload = {paymentIntent: pi, paymentMethod: params.paymentMethod || null, billing: params.billing || null};
      return channel._request('confirm', payload).then(function (intent) {
        var next = intent.next_action;
        if (intent.status !== 'requires_action' || !next || next.type !== 'three_d_secure' || !next.url) return intent;
        return self._challenge(next.url).then(function (answer) {
          return self._settle(channel, pi, answer === 'closed' ? 1 : SETTLE_DELAYS_MS.length);
        }).then(function (settled) {
          // Paid after 3D Secure: the typed card goes, as after a payment
          // without it (the field clears itself then).
          if (settled.status !== 'succeeded' || params.paymentMethod) return settled;
          return channel._request('clear', {}).then(function () { return settled; });
        });
      }).then(function (intent) {
        return {status: intent.status, paymentIntent: intent};
      });
    }

    // _settle reads the intent until it leaves requires_action and
    // processing, or tries times. An unknown outcome is final for the
    // buyer: it is resolved later, and reported by webhook.
    _settle(channel, pi, tries) {
      var read = function (i) {
        return channel._request('retrieve', {paymentIntent: pi}).then(function (intent) {
          var waiting = intent.status === 'requires_action' ||
            (intent.status === 'processing' && !(intent.last_error && intent.last_error.code === 'outcome_unknown'));
          if (!waiting || i + 1 >= tries) return intent;
          return delay(SETTLE_DELAYS_MS[i]).then(function () { return read(i + 1); });
        });
      };
      return read(0);
    }

    // _challenge shows the 3D Secure page in a modal frame and resolves
    // with its answer ("succeeded", "failed", "expired"), or "closed" when
    // the buyer closes it. Only a message of that frame, from the page's
    // own origin, counts; the outcome itself is read from keelpay.
    _challenge(url) {
      var origin;
      try {
        var u = new URL(url);
        if (u.protocol !== 'https:' && u.protocol !== 'http:') throw new Error('scheme');
        origin = u.origin;
      } catch (e) {
        return Promise.reject(new KeelpayError('origin_error', 'The 3D Secure address is not a web address.'));
      }
      var t = MESSAGES[this._locale];
      return new Promise(function (resolve) {
        var previous = document.activeElement;
        var overlay = document.createElement('div');
        overlay.className = 'keelpay-challenge';
        Object.assign(overlay.style, {
          position: 'fixed', inset: '0', zIndex: '2147483647', display: 'flex', alignItems: 'center',
          justifyContent: 'center', background: 'rgba(16, 20, 24, .55)'
        });
        var dialog = document.createElement('div');
        dialog.setAttribute('role', 'dialog');
        dialog.setAttribute('aria-modal', 'true');
        dialog.setAttribute('aria-label', t.challenge);
        Object.assign(dialog.style, {
          // The size of a 3-D Secure challenge window (EMV 3DS sizes 390 x
          // 400 and up): a bank's page fits without a half-empty frame.
          position: 'relative', width: 'min(440px, 94vw)', height: 'min(390px, 90vh)', background: '#fff',
          borderRadius: '10px', boxShadow: '0 12px 40px rgba(0, 0, 0, .35)', overflow: 'hidden'
        });
        var close = document.createElement('button');
        close.type = 'button';
        close.textContent = '×';
        close.setAttribute('aria-label', t.close);
        Object.assign(close.style, {
          position: 'absolute', top: '6px', right: '8px', width: '36px', height: '36px', border: '0',
          background: 'transparent', fontSize: '26px', lineHeight: '36px', cursor: 'pointer', color: '#303841'
        });
        var frame = document.createElement('iframe');
        frame.title = t.challenge;
        Object.assign(frame.style, {width: '100%', height: '100%', border: '0', display: 'block'});
        frame.src = url;
        dialog.appendChild(frame);
        dialog.appendChild(close);
        overlay.appendChild(dialog);

        var finish = function (answer) {
          window.removeEventListener('message', onMessage);
          document.removeEventListener('keydown', onKey, true);
          overlay.remove();
          if (previous && typeof previous.focus === 'function') previous.focus();
          resolve(answer);
        };
        var onMessage = function (ev) {
          if (ev.source !== frame.contentWindow || ev.origin !== origin) return;
          var d = ev.data;
          if (d && d.type === 'keelpay:3ds' && typeof d.status === 'string') finish(d.status);
        };
        var onKey = function (ev) {
          if (ev.key === 'Escape') finish('closed');
        };
        close.addEventListener('click', function () { finish('closed'); });
        window.addEventListener('message', onMessage);
        document.addEventListener('keydown', onKey, true);
        document.body.appendChild(overlay);
        frame.focus();
      });
    }
  }

  // Keelpay returns a client of the keelpay server this script came from,
  // for the store's publishable key.
  function Keelpay(publishableKey, options) {
    if (!BASE) throw stateError('keelpay.js must be loaded with a <script src> tag from the keelpay server.');
    if (typeof publishableKey !== 'string' || publishableKey.indexOf('pk_') !== 0) {
      throw stateError('Keelpay needs the store\'s publishable key (pk_…); a secret key never belongs in a page.');
    }
    return new Client(publishableKey, options);
  }
  Keelpay.message = message;
  Keelpay.KeelpayError = KeelpayError;

  window.Keelpay = Keelpay;
  window.KeelpayError = KeelpayError;
})();
