package stripe_test

// stripeJSStandIn is a local stand-in for Stripe.js, served by the fake at
// GET /v3/ (fakeStripe.jsURL) for offline browser tests. It implements the
// subset of Stripe.js keelpay's card field uses, with Stripe.js's shapes
// (docs.stripe.com/js):
//
//	const stripe = Stripe(publishableKey)
//	const card = stripe.elements().create('card', options)
//	card.mount('#card' or a node); card.on('change', fn); card.clear()
//	card.update({disabled}); card.focus(); card.blur(); card.unmount(); card.destroy()
//	stripe.createPaymentMethod({type: 'card', card, billing_details: {name}})
//	  -> Promise of {paymentMethod: {id, card: {brand, last4, exp_month, exp_year}}}
//	     or {error: {type, code, message}}
//
// createPaymentMethod posts form-encoded to the fake's /v1/payment_methods
// with the publishable key as the key parameter, as Stripe.js does. The
// element is three plain inputs (number, MM / YY, CVC) in the mounted node,
// named card-number, card-expiry and card-cvc; a change event carries
// {complete, empty, error}.
const stripeJSStandIn = `(function () {
  "use strict";
  var script = document.currentScript;
  var apiBase = script && script.src ? new URL(script.src).origin : "";

  function digits(s) { return String(s || "").replace(/\D/g, ""); }

  function parseExpiry(s) {
    var d = digits(s);
    if (d.length !== 4 && d.length !== 6) { return null; }
    var m = parseInt(d.slice(0, 2), 10), y = parseInt(d.slice(2), 10);
    if (y < 100) { y += 2000; }
    if (m < 1 || m > 12) { return null; }
    return { month: m, year: y };
  }

  function CardElement() {
    this._handlers = {};
    this._node = null;
    this._inputs = null;
  }
  CardElement.prototype.mount = function (target) {
    var node = typeof target === "string" ? document.querySelector(target) : target;
    if (!node) { throw new Error("Stripe stand-in: nothing to mount the card element on: " + target); }
    var self = this;
    var make = function (name, placeholder, mode) {
      var i = document.createElement("input");
      i.name = name; i.setAttribute("data-stripe-standin", name);
      i.placeholder = placeholder; i.autocomplete = "off"; i.inputMode = mode;
      i.addEventListener("input", function () { self._emit("change", self._state()); });
      node.appendChild(i);
      return i;
    };
    this._inputs = {
      number: make("card-number", "Card number", "numeric"),
      expiry: make("card-expiry", "MM / YY", "numeric"),
      cvc: make("card-cvc", "CVC", "numeric")
    };
    this._node = node;
    this._emit("ready", {});
  };
  CardElement.prototype._state = function () {
    var n = digits(this._inputs.number.value), e = this._inputs.expiry.value, c = digits(this._inputs.cvc.value);
    var empty = !n && !e && !c;
    var error;
    if (n && (n.length < 12 || n.length > 19)) { error = { type: "validation_error", code: "incomplete_number", message: "Your card number is incomplete." }; }
    else if (e && !parseExpiry(e)) { error = { type: "validation_error", code: "invalid_expiry_month", message: "Your card's expiration date is invalid." }; }
    return { elementType: "card", empty: empty, complete: !error && n.length >= 12 && !!parseExpiry(e) && c.length >= 3, error: error };
  };
  CardElement.prototype.on = function (ev, fn) {
    (this._handlers[ev] = this._handlers[ev] || []).push(fn);
    return this;
  };
  CardElement.prototype._emit = function (ev, payload) {
    (this._handlers[ev] || []).forEach(function (fn) { fn(payload); });
  };
  CardElement.prototype.clear = function () {
    if (!this._inputs) { return; }
    this._inputs.number.value = ""; this._inputs.expiry.value = ""; this._inputs.cvc.value = "";
    this._emit("change", this._state());
  };

  // update, focus, blur, unmount and destroy are the Element's methods of
  // docs.stripe.com/js/element; update takes {disabled} here.
  CardElement.prototype.update = function (opts) {
    if (!this._inputs || !opts) { return; }
    var self = this;
    if ("disabled" in opts) {
      Object.keys(this._inputs).forEach(function (k) { self._inputs[k].disabled = !!opts.disabled; });
    }
  };
  CardElement.prototype.focus = function () { if (this._inputs) { this._inputs.number.focus(); } };
  CardElement.prototype.blur = function () { if (document.activeElement) { document.activeElement.blur(); } };
  CardElement.prototype.unmount = function () {
    if (this._node) { while (this._node.firstChild) { this._node.removeChild(this._node.firstChild); } }
    this._inputs = null; this._node = null;
  };
  CardElement.prototype.destroy = CardElement.prototype.unmount;

  function Stripe(publishableKey) {
    if (!(this instanceof Stripe)) { return new Stripe(publishableKey); }
    if (!publishableKey || publishableKey.indexOf("pk_") !== 0) {
      throw new Error("Stripe stand-in: a publishable key (pk_...) is required");
    }
    this._key = publishableKey;
  }
  Stripe.prototype.elements = function () {
    return { create: function (type) {
      if (type !== "card") { throw new Error("Stripe stand-in: only the card element is supported"); }
      return new CardElement();
    } };
  };
  Stripe.prototype.createPaymentMethod = function (opts) {
    var el = opts && opts.card;
    if (!opts || opts.type !== "card" || !el || !el._inputs) {
      return Promise.resolve({ error: { type: "invalid_request_error", code: "parameter_missing", message: "A mounted card element is required." } });
    }
    var st = el._state();
    if (st.error) { return Promise.resolve({ error: st.error }); }
    var exp = parseExpiry(el._inputs.expiry.value);
    if (!exp) { return Promise.resolve({ error: { type: "validation_error", code: "incomplete_expiry", message: "Your card's expiration date is incomplete." } }); }
    var body = new URLSearchParams();
    body.set("key", this._key);
    body.set("type", "card");
    body.set("card[number]", digits(el._inputs.number.value));
    body.set("card[exp_month]", String(exp.month));
    body.set("card[exp_year]", String(exp.year));
    body.set("card[cvc]", digits(el._inputs.cvc.value));
    var name = opts.billing_details && opts.billing_details.name;
    if (name) { body.set("billing_details[name]", name); }
    return fetch(apiBase + "/v1/payment_methods", { method: "POST", body: body })
      .then(function (res) { return res.json(); })
      .then(function (v) {
        if (v.error) { return { error: { type: v.error.type, code: v.error.code, message: v.error.message } }; }
        return { paymentMethod: { id: v.id, type: v.type, card: {
          brand: v.card.brand, last4: v.card.last4, exp_month: v.card.exp_month, exp_year: v.card.exp_year } } };
      }, function (err) {
        return { error: { type: "api_connection_error", message: String(err) } };
      });
  };
  window.Stripe = Stripe;
})();
`
