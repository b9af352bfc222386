package httpapi

import (
	"encoding/json"
	"net/http"

	"github.com/keelpay/keelpay/internal/check"
	"github.com/keelpay/keelpay/internal/render"
	"github.com/keelpay/keelpay/payments"
)

// The handlers of a customer's saved cards and of a customer's erasure
// (docs/api.md, "Cards" and "Customer erasure").

func (a *api) listCards(w http.ResponseWriter, r *http.Request, c caller) {
	q, err := parseQuery(r.URL.RawQuery, "customer", "limit", "starting_after", "ending_before")
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	limit, err := queryLimit(q)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	for _, cursor := range []string{"starting_after", "ending_before"} {
		if v, ok := q[cursor]; ok && v == "" {
			a.writeError(w, r, check.InvalidCursor(cursor))
			return
		}
	}
	p := payments.CardListParams{Customer: q["customer"], ListParams: payments.ListParams{
		Limit: limit, StartingAfter: q["starting_after"], EndingBefore: q["ending_before"]}}
	cards, more, err := a.cfg.Payments.ListCards(r.Context(), c.store, p)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeRaw(w, http.StatusOK, render.CardList(cards, more))
}

// deleteCard deletes a saved card and answers with the card as it was.
func (a *api) deleteCard(w http.ResponseWriter, r *http.Request, c caller) {
	if err := requireNoBody(w, r); err != nil {
		a.writeError(w, r, err)
		return
	}
	card, err := a.cfg.Payments.DeleteCard(r.Context(), c.store, r.PathValue("id"))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeRaw(w, http.StatusOK, render.Card(card))
}

func (a *api) eraseCustomer(w http.ResponseWriter, r *http.Request, c caller) {
	if err := requireNoBody(w, r); err != nil {
		a.writeError(w, r, err)
		return
	}
	e, err := a.cfg.Payments.EraseCustomer(r.Context(), c.store, r.PathValue("id"), c.key)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	a.writeObject(w, r, http.StatusOK, e, true)
}

// erasureJSON is the JSON of an erasure: object customer_erasure.
func erasureJSON(e *payments.Erasure) []byte {
	b, err := json.Marshal(struct {
		Object         string `json:"object"`
		Customer       string `json:"customer"`
		CardsDeleted   int    `json:"cards_deleted"`
		PaymentIntents int    `json:"payment_intents"`
		CardSessions   int    `json:"card_sessions"`
	}{"customer_erasure", e.Customer, e.CardsDeleted, e.PaymentIntents, e.CardSessions})
	if err != nil {
		panic("httpapi: marshal erasure: " + err.Error())
	}
	return b
}
