package refserver

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/events"
	"github.com/keelpay/keelpay/payments"
	"github.com/keelpay/keelpay/provider/sandbox"
	"github.com/keelpay/keelpay/refunds"
)

// trigger makes any event of a store happen through the real flows, as a
// buyer and the store would: POST /sandbox/trigger {"type": "<event
// type>"} (sandbox mode only, secret key). It answers with the ids of the
// objects it made and of the event.
type trigger struct {
	clock    keelpay.Clock
	events   *events.Service
	payments *payments.Service
	refunds  *refunds.Service
}

// triggerAmount is the amount of a triggered payment, in minor units.
const triggerAmount = 4200

// triggerJSON is the answer of POST /sandbox/trigger.
type triggerJSON struct {
	Object        string            `json:"object"`
	Type          keelpay.EventType `json:"type"`
	Event         *string           `json:"event"`
	CardSession   *string           `json:"card_session"`
	Card          *string           `json:"card"`
	PaymentIntent *string           `json:"payment_intent"`
	Refund        *string           `json:"refund"`
}

func (s *sandboxAPI) triggerEvent(w http.ResponseWriter, r *http.Request, st *keelpay.Store) {
	var body struct {
		Type *string `json:"type"`
	}
	if err := decodeSandbox(w, r, &body); err != nil {
		s.writeError(w, r, err)
		return
	}
	if body.Type == nil {
		s.writeError(w, r, keelpay.InvalidRequest("type", "missing_type", "type is required."))
		return
	}
	if !keelpay.ValidEventType(*body.Type) {
		s.writeError(w, r, keelpay.InvalidRequest("type", "invalid_type", "type must be one of the event types."))
		return
	}
	out, err := s.trigger.run(r.Context(), st, keelpay.EventType(*body.Type))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeSandboxJSON(w, http.StatusOK, out)
}

// run makes an event of type typ happen for the store.
func (t *trigger) run(ctx context.Context, st *keelpay.Store, typ keelpay.EventType) (*triggerJSON, error) {
	out := &triggerJSON{Object: "sandbox_trigger", Type: typ}
	if typ == keelpay.EventWebhookTest {
		e, err := t.events.SendTest(ctx, st.ID, nil)
		if err != nil {
			return nil, err
		}
		out.Event = &e.ID
		return out, nil
	}
	customer := keelpay.Customer{ID: "sandbox-trigger", Name: "Sandbox Trigger", Email: "trigger@sandbox.example", Phone: "+4915112345678"}
	// A card for the flow: the sandbox's test card that gives the outcome.
	number := sandbox.CardVisa
	switch typ {
	case keelpay.EventPaymentIntentPaymentFailed:
		number = sandbox.CardDeclined
	case keelpay.EventRefundFailed:
		number = sandbox.CardRefundRejected
	}
	var card *keelpay.Card
	if typ != keelpay.EventPaymentIntentCanceled {
		cs, err := t.payments.CreateCardSession(ctx, st, payments.CardSessionParams{
			Customer: customer, PageOrigins: []string{"https://shop.example"}})
		if err != nil {
			return nil, err
		}
		out.CardSession = &cs.ID
		year := int64(t.clock.Now().Year() + 3)
		card, err = t.payments.CaptureCard(ctx, st, cs.ID, payments.CaptureParams{ClientSecret: cs.ClientSecret,
			Card: payments.NewCard{Number: number, ExpMonth: 12, ExpYear: year, CVC: "123", Name: "Sandbox Trigger"}})
		if err != nil {
			return nil, err
		}
		out.Card = &card.ID
		if typ == keelpay.EventCardCreated {
			return t.withEvent(ctx, st, out, card.ID)
		}
	}
	pi, err := t.payments.CreateIntent(ctx, st, payments.IntentParams{
		Amount: triggerAmount, Currency: st.Currency, Customer: customer,
		Description: "Triggered in the sandbox", Reference: "sandbox-trigger",
	})
	if err != nil {
		return nil, err
	}
	out.PaymentIntent = &pi.ID
	if typ == keelpay.EventPaymentIntentCanceled {
		if _, err := t.payments.CancelIntent(ctx, st, pi.ID, "", nil); err != nil {
			return nil, err
		}
		return t.withEvent(ctx, st, out, pi.ID)
	}
	if _, err := t.payments.ConfirmIntent(ctx, st, pi.ID, payments.ConfirmParams{PaymentMethod: card.ID}); err != nil {
		return nil, err
	}
	if typ != keelpay.EventRefundSucceeded && typ != keelpay.EventRefundFailed {
		return t.withEvent(ctx, st, out, pi.ID)
	}
	res, err := t.refunds.Send(ctx, st, refunds.Params{PaymentIntent: pi.ID, Reason: "Triggered in the sandbox"})
	if err != nil {
		return nil, err
	}
	out.Refund = &res.Refund.ID
	return t.withEvent(ctx, st, out, res.Refund.ID)
}

// withEvent adds the id of the newest event of out.Type about the object,
// when the flow made one.
func (t *trigger) withEvent(ctx context.Context, st *keelpay.Store, out *triggerJSON, objectID string) (*triggerJSON, error) {
	list, _, err := t.events.List(ctx, events.ListParams{StoreID: st.ID, Type: out.Type, Limit: events.ListLimitMax})
	if err != nil {
		return nil, err
	}
	for _, e := range list {
		var env struct {
			Data struct {
				Object struct {
					ID string `json:"id"`
				} `json:"object"`
			} `json:"data"`
		}
		if json.Unmarshal(e.Body, &env) == nil && env.Data.Object.ID == objectID {
			out.Event = &e.ID
			break
		}
	}
	return out, nil
}
