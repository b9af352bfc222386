package httpapi

import (
	"net/http"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/httpapi/internal/decode"
	"github.com/keelpay/keelpay/internal/check"
	"github.com/keelpay/keelpay/internal/render"
	"github.com/keelpay/keelpay/payments"
	"github.com/keelpay/keelpay/stores"
)

// The handlers of card sessions, cards and payment intents. Objects are
// shown with personal data (customer name, email, phone, billing,
// client_secret) only to the secret key; the browser's publishable key
// sees the same objects without it.

func (a *api) createCardSession(w http.ResponseWriter, r *http.Request, c caller) {
	body, err := readBody(w, r)
	var p payments.CardSessionParams
	if err == nil {
		p, err = decode.CardSession(body)
	}
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	p.Idempotency = c.key
	cs, err := a.cfg.Payments.CreateCardSession(r.Context(), c.store, p)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	a.writeObject(w, r, http.StatusCreated, cs, true)
}

func (a *api) getCardSession(w http.ResponseWriter, r *http.Request, c caller) {
	cs, err := a.cfg.Payments.GetCardSession(r.Context(), c.store, r.PathValue("id"))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeRaw(w, http.StatusOK, render.CardSession(cs, true))
}

func (a *api) captureCard(w http.ResponseWriter, r *http.Request, c caller) {
	body, err := readBody(w, r)
	var p payments.CaptureParams
	if err == nil {
		p, err = decode.Capture(body)
	}
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	card, err := a.cfg.Payments.CaptureCard(r.Context(), c.store, r.PathValue("id"), p)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeRaw(w, http.StatusCreated, render.Card(card))
}

func (a *api) getCard(w http.ResponseWriter, r *http.Request, c caller) {
	card, err := a.cfg.Payments.GetCard(r.Context(), c.store, r.PathValue("id"))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeRaw(w, http.StatusOK, render.Card(card))
}

func (a *api) createIntent(w http.ResponseWriter, r *http.Request, c caller) {
	body, err := readBody(w, r)
	var p payments.IntentParams
	if err == nil {
		p, err = decode.Intent(body)
	}
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	p.Idempotency = c.key
	pi, err := a.cfg.Payments.CreateIntent(r.Context(), c.store, p)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	a.writeObject(w, r, http.StatusCreated, pi, true)
}

func (a *api) listIntents(w http.ResponseWriter, r *http.Request, c caller) {
	q, err := parseQuery(r.URL.RawQuery, "limit", "starting_after", "ending_before",
		"customer", "status", "reference", "created[gte]", "created[lt]")
	var p payments.IntentListParams
	if err == nil {
		p.ListParams, err = queryPage(q, check.InvalidCursor)
	}
	if err == nil {
		p.CreatedGTE, p.CreatedLT, err = queryCreated(q)
	}
	if err == nil {
		p.CustomerID, err = queryString(q, "customer", "invalid_customer", 64)
	}
	if err == nil {
		p.Reference, err = queryString(q, "reference", "invalid_reference", 100)
	}
	if v, ok := q["status"]; ok && err == nil {
		p.Status = keelpay.PaymentIntentStatus(v)
		if !payments.ValidIntentStatus(p.Status) {
			err = keelpay.InvalidRequest("status", "invalid_status", "status must be one of the payment intent statuses.")
		}
	}
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	intents, more, err := a.cfg.Payments.ListIntents(r.Context(), c.store, p)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeRaw(w, http.StatusOK, render.IntentList(intents, more, true))
}

// getIntent reads an intent. The browser (publishable key) reads it with
// its client_secret as the one query parameter, and sees it without
// personal data; a wrong client_secret is the same 404 as an intent that
// does not exist. Without a client_secret a publishable key is not a key
// for this call: 401 invalid_api_key, as for any other call made without
// a valid secret key. The secret key takes no query parameters.
func (a *api) getIntent(w http.ResponseWriter, r *http.Request, c caller) {
	var allowed []string
	if c.publishable {
		allowed = []string{"client_secret"}
	}
	q, err := parseQuery(r.URL.RawQuery, allowed...)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	if c.publishable && q["client_secret"] == "" {
		a.writeError(w, r, stores.ErrInvalidAPIKey())
		return
	}
	pi, err := a.cfg.Payments.GetIntent(r.Context(), c.store, r.PathValue("id"))
	if err == nil && c.publishable && !secretMatches(pi.ClientSecret, q["client_secret"]) {
		err = keelpay.NewError(keelpay.CodePaymentIntentNotFound, "The payment intent does not exist.")
	}
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	a.writeObject(w, r, http.StatusOK, pi, !c.publishable)
}

// confirmIntent charges a card: with the secret key a saved card
// (payment_method, or the intent's card); with the publishable key (the
// hosted card field) the intent's client_secret and either a new card or
// a saved card of the intent's customer (payment_method), never both.
// Both may give billing. A failed attempt is still 200: it is in
// last_error.
func (a *api) confirmIntent(w http.ResponseWriter, r *http.Request, c caller) {
	body, err := readBody(w, r)
	var p payments.ConfirmParams
	if err == nil {
		p, err = decode.Confirm(body, c.publishable)
	}
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	p.Idempotency = c.key
	pi, err := a.cfg.Payments.ConfirmIntent(r.Context(), c.store, r.PathValue("id"), p)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	a.writeObject(w, r, http.StatusOK, pi, !c.publishable)
}

func (a *api) cancelIntent(w http.ResponseWriter, r *http.Request, c caller) {
	obj, err := readObject(w, r, true)
	if err == nil {
		err = obj.CheckUnknown("cancellation_reason")
	}
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	// The service judges the reason, and takes an empty one for the
	// default; sent empty, it is judged here, as the value it is.
	var reason string
	f := obj.Decoder()
	f.Str("cancellation_reason", false, &reason)
	err = f.Err()
	if err == nil && reason == "" && f.Form().Sent("cancellation_reason") {
		err = check.CancellationReason(reason)
	}
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	pi, err := a.cfg.Payments.CancelIntent(r.Context(), c.store, r.PathValue("id"), reason, c.key)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	a.writeObject(w, r, http.StatusOK, pi, true)
}
