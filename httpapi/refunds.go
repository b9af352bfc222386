package httpapi

import (
	"encoding/json"
	"net/http"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/httpapi/internal/decode"
	"github.com/keelpay/keelpay/internal/render"
	"github.com/keelpay/keelpay/payments"
	"github.com/keelpay/keelpay/refunds"
)

// refundRoutes are the routes of refunds.
func (a *api) refundRoutes() []route {
	return []route{
		{"POST", "/v1/refunds", authSecret, keyed, a.sendRefund},
		{"GET", "/v1/refunds", authSecret, noKey, a.listRefunds},
		{"GET", "/v1/refunds/{id}", authSecret, noKey, a.getRefund},
	}
}

func (a *api) sendRefund(w http.ResponseWriter, r *http.Request, c caller) {
	body, err := readBody(w, r)
	var p refunds.Params
	if err == nil {
		p, err = decode.Refund(body)
	}
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	p.Idempotency = c.key
	res, err := a.cfg.Refunds.Send(r.Context(), c.store, p)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	a.writeRefund(w, r, res.Refund)
}

// writeRefund writes the answer to a send of refund ref: the answer its
// service stores with an idempotency key.
func (a *api) writeRefund(w http.ResponseWriter, r *http.Request, ref *keelpay.Refund) {
	a.writeObject(w, r, outcomeStatus(refunds.SendOutcome(ref)), ref, true)
}

func (a *api) getRefund(w http.ResponseWriter, r *http.Request, c caller) {
	ref, err := a.cfg.Refunds.Get(r.Context(), c.store, r.PathValue("id"))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeRaw(w, http.StatusOK, render.Refund(ref))
}

func (a *api) listRefunds(w http.ResponseWriter, r *http.Request, c caller) {
	q, err := parseQuery(r.URL.RawQuery, "limit", "starting_after", "ending_before",
		"payment_intent", "status", "created[gte]", "created[lt]")
	var p refunds.ListParams
	if err == nil {
		var page payments.ListParams
		page, err = queryPage(q, refunds.InvalidCursor)
		p.Limit, p.StartingAfter, p.EndingBefore = page.Limit, page.StartingAfter, page.EndingBefore
	}
	if err == nil {
		p.CreatedGTE, p.CreatedLT, err = queryCreated(q)
	}
	if v, ok := q["payment_intent"]; ok && err == nil {
		p.PaymentIntent = v
		if v == "" {
			err = keelpay.InvalidRequest("payment_intent", "invalid_payment_intent", "payment_intent must be a payment intent id.")
		}
	}
	if v, ok := q["status"]; ok && err == nil {
		p.Status = keelpay.RefundStatus(v)
		if v == "" {
			err = keelpay.InvalidRequest("status", "invalid_status", "status must be one of the refund statuses.")
		}
	}
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	list, more, err := a.cfg.Refunds.List(r.Context(), c.store, p)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	out := struct {
		Object  string            `json:"object"`
		Data    []json.RawMessage `json:"data"`
		HasMore bool              `json:"has_more"`
	}{Object: "list", Data: make([]json.RawMessage, len(list)), HasMore: more}
	for i, ref := range list {
		out.Data[i] = render.Refund(ref)
	}
	writeJSON(w, http.StatusOK, out)
}
