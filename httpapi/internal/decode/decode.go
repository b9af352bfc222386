// Package decode reads the JSON bodies of the HTTP API's requests into
// the params of the services (payments, refunds, stores), for httpapi.
//
// A decoder judges a body's shape only: unknown keys first, then the
// documented fields in the documented order (docs/api.md), each of its
// JSON type and, when required, present. The values are judged by the
// params' Validate, which the service runs, in the same order and with
// what the decoder learnt: a field of the wrong type fails in its place,
// after a bad value of an earlier field, and a field sent empty is judged
// as sent.
//
// What the decoder learnt reaches Validate through the params' Form
// field, of the internal type *wire.Form: the decoders live outside the
// services' packages, so the field is exported, and its type keeps it
// keelpay's own. An embedder that calls a service directly builds the
// params in Go, cannot obtain a Form, and leaves it nil: Validate then
// judges the Go values, an empty field being an absent one. A card's form
// (a reference of the provider's element, or the card's own fields)
// follows from the keys the body had (wire.Form.Present), which Validate
// reads from the same Form.
package decode

import (
	"encoding/json"
	"strings"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/internal/check"
	"github.com/keelpay/keelpay/internal/wire"
	"github.com/keelpay/keelpay/payments"
	"github.com/keelpay/keelpay/refunds"
	"github.com/keelpay/keelpay/stores"
)

// CardSession decodes the body of a card session request.
func CardSession(body []byte) (payments.CardSessionParams, error) {
	var p payments.CardSessionParams
	o, err := wire.Parse(body, false)
	if err == nil {
		err = o.CheckUnknown("customer", "page_origins")
	}
	if err != nil {
		return p, err
	}
	d := o.Decoder()
	decodeCustomer(d, &p.Customer)
	d.Strings("page_origins", true, &p.PageOrigins, check.InvalidPageOrigins)
	p.Form = d.Form()
	return p, nil
}

// Capture decodes the body of a card capture: client_secret and
// either the reference of the provider's element (payment_method) or the
// new card's fields, never both.
func Capture(body []byte) (payments.CaptureParams, error) {
	var p payments.CaptureParams
	o, err := wire.Parse(body, false)
	if err == nil {
		err = o.CheckUnknown("client_secret", "payment_method", "number", "exp_month", "exp_year", "cvc", "name")
	}
	if err != nil {
		return p, err
	}
	d := o.Decoder()
	d.Str("client_secret", true, &p.ClientSecret)
	if _, ref := d.Raw("payment_method"); ref {
		decodeReference(d, &p.Card)
	} else {
		decodeCard(d, &p.Card)
	}
	p.Form = d.Form()
	return p, nil
}

// Intent decodes the body of a payment intent request.
func Intent(body []byte) (payments.IntentParams, error) {
	var p payments.IntentParams
	o, err := wire.Parse(body, false)
	if err == nil {
		err = o.CheckUnknown("amount", "currency", "customer", "description", "reference", "metadata",
			"billing", "page_origins", "payment_method")
	}
	if err != nil {
		return p, err
	}
	d := o.Decoder()
	d.Integer("amount", true, &p.Amount, nil)
	d.Str("currency", true, &p.Currency)
	decodeCustomer(d, &p.Customer)
	d.Str("description", false, &p.Description)
	d.Str("reference", false, &p.Reference)
	d.StringMap("metadata", &p.Metadata, check.InvalidMetadata)
	decodeBilling(d, &p.Billing)
	d.Strings("page_origins", false, &p.PageOrigins, check.InvalidPageOrigins)
	d.Str("payment_method", false, &p.PaymentMethod)
	p.Form = d.Form()
	return p, nil
}

// Confirm decodes the body of a confirm (an empty body is {}).
// From the store's server (browser false) it may give payment_method and
// billing; from the hosted card field (browser true) client_secret and
// either a saved card (payment_method, a card_ id), a new card captured by
// the provider's element (payment_method, the provider's reference) or a
// new card's fields, never two of them, and billing.
func Confirm(body []byte, browser bool) (payments.ConfirmParams, error) {
	var p payments.ConfirmParams
	o, err := wire.Parse(body, true)
	if err == nil {
		if browser {
			err = o.CheckUnknown("client_secret", "number", "exp_month", "exp_year", "cvc", "name", "payment_method", "billing")
		} else {
			err = o.CheckUnknown("payment_method", "billing")
		}
	}
	if err != nil {
		return p, err
	}
	d := o.Decoder()
	if browser {
		d.Str("client_secret", true, &p.ClientSecret)
		if raw, ok := d.Raw("payment_method"); ok && !savedCardRef(raw) {
			// A reference of the provider's element: a new card.
			p.Card = &payments.NewCard{}
			decodeReference(d, p.Card)
		} else if ok {
			savedCardOnly(d)
			d.Str("payment_method", true, &p.PaymentMethod)
		} else {
			p.Card = &payments.NewCard{}
			decodeCard(d, p.Card)
		}
	} else {
		d.Str("payment_method", false, &p.PaymentMethod)
	}
	decodeBilling(d, &p.Billing)
	p.Form = d.Form()
	return p, nil
}

// Refund decodes the body of a refund request as the HTTP API
// receives it (nil when empty). It judges the body's shape only: unknown
// keys first (amount is not one: a refund is always of the whole amount),
// then payment_intent, reason and metadata, each of its JSON type. The
// values are judged by Validate, which Send runs, in the same order.
func Refund(body []byte) (refunds.Params, error) {
	var p refunds.Params
	o, err := wire.Parse(body, false)
	if err == nil {
		err = o.CheckUnknown("payment_intent", "reason", "metadata")
	}
	if err != nil {
		return p, err
	}
	d := o.Decoder()
	d.Str("payment_intent", true, &p.PaymentIntent)
	d.Str("reason", false, &p.Reason)
	d.StringMap("metadata", &p.Metadata, check.InvalidMetadata)
	p.Form = d.Form()
	return p, nil
}

// Setup decodes the body of a setup request as the HTTP API
// receives it (nil when empty): client_id, client_secret, webhook_url,
// rotate_webhook_secret and rotate_secret_key. It judges the body's shape
// only (unknown keys first, then each field's JSON type and presence, in
// that order); the values are judged by Validate, which Setup runs. The
// caller sets StoreID, ClientAddr and Idempotency.
func Setup(body []byte) (stores.SetupParams, error) {
	var p stores.SetupParams
	o, err := wire.Parse(body, false)
	if err == nil {
		err = o.CheckUnknown("client_id", "client_secret", "webhook_url", "rotate_webhook_secret", "rotate_secret_key")
	}
	if err != nil {
		return p, err
	}
	d := o.Decoder()
	d.Str("client_id", true, &p.ClientID)
	d.Str("client_secret", true, &p.ClientSecret)
	d.Str("webhook_url", true, &p.WebhookURL)
	d.Boolean("rotate_webhook_secret", &p.RotateWebhookSecret)
	d.Boolean("rotate_secret_key", &p.RotateSecretKey)
	p.Form = d.Form()
	return p, nil
}

// decodeCustomer decodes the customer object: its own unknown keys (as
// customer.<key>), then id, name, email and phone, all required.
func decodeCustomer(d *wire.Decoder, dst *keelpay.Customer) {
	d.Nested("customer", true, []string{"id", "name", "email", "phone"}, func(g *wire.Decoder) {
		g.Str("id", true, &dst.ID)
		g.Str("name", true, &dst.Name)
		g.Str("email", true, &dst.Email)
		g.Str("phone", true, &dst.Phone)
	})
}

// decodeBilling decodes the optional billing object: country (required),
// state, postal_code.
func decodeBilling(d *wire.Decoder, dst **keelpay.Billing) {
	b := new(keelpay.Billing)
	if d.Nested("billing", false, []string{"country", "state", "postal_code"}, func(g *wire.Decoder) {
		g.Str("country", true, &b.Country)
		g.Str("state", false, &b.State)
		g.Str("postal_code", false, &b.PostalCode)
	}) {
		*dst = b
	}
}

// decodeCard decodes a new card's flat fields: number, exp_month,
// exp_year, cvc, name (the cardholder name, optional). exp_month and
// exp_year are required integers whose every failure but absence is
// invalid_expiry (docs/api.md, card capture).
func decodeCard(d *wire.Decoder, dst *payments.NewCard) {
	d.Str("number", true, &dst.Number)
	d.Integer("exp_month", true, &dst.ExpMonth, check.InvalidExpiry)
	d.Integer("exp_year", true, &dst.ExpYear, check.InvalidExpiry)
	d.Str("cvc", true, &dst.CVC)
	d.Str("name", false, &dst.Name)
}

// savedCardRef reports whether a browser confirm's payment_method names a
// saved card: a string that starts with card_ (judged as a card id), or
// anything that is not a string (judged, and failed, in that place).
func savedCardRef(raw []byte) bool {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return true
	}
	return s == "" || strings.HasPrefix(s, keelpay.PrefixCard)
}

// decodeReference decodes a new card given as the reference of the
// provider's element: payment_method, alone (a card's own fields with it
// are invalid_payment_method; the element took the cardholder name too).
// Validate judges the card as a reference because the body had
// payment_method, whatever its value.
func decodeReference(d *wire.Decoder, dst *payments.NewCard) {
	savedCardOnly(d)
	d.Str("payment_method", true, &dst.PaymentMethod)
}

// savedCardOnly fails a request that names a card by payment_method (a
// saved card, or the provider's reference) and also carries a new card's
// fields: it is one or the other.
func savedCardOnly(d *wire.Decoder) {
	for _, name := range []string{"number", "exp_month", "exp_year", "cvc", "name"} {
		if _, ok := d.Raw(name); ok {
			d.Fail("payment_method", keelpay.InvalidRequest("payment_method", "invalid_payment_method",
				"Give either payment_method or a new card's fields, not both."))
			return
		}
	}
}
