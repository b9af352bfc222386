package keelpaytest

import (
	"context"
	"net/http"
	"path"
	"time"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/payments"
	"github.com/keelpay/keelpay/refunds"
)

// SaveCard saves a sandbox test card (sandbox.CardVisa,
// sandbox.CardThreeDSecure, ...) for the store's customer the way a
// browser does: a card session with the secret key, the card captured
// into it with the publishable key. It returns the card's id.
func (s *Store) SaveCard(t T, number string) string {
	t.Helper()
	var session struct {
		ID           string `json:"id"`
		ClientSecret string `json:"client_secret"`
	}
	s.kit.call(t, http.MethodPost, "/v1/card_sessions", s.SecretKey, map[string]any{
		"customer": s.Customer, "page_origins": []string{"https://shop.example"},
	}, http.StatusCreated, &session)
	var card struct {
		ID string `json:"id"`
	}
	s.kit.call(t, http.MethodPost, "/v1/card_sessions/"+session.ID+"/cards", s.PublishableKey, map[string]any{
		"client_secret": session.ClientSecret, "number": number,
		"exp_month": 12, "exp_year": s.kit.Clock.Now().Year() + 2, "cvc": "123",
	}, http.StatusCreated, &card)
	return card.ID
}

// Pay creates a payment intent of amount in currency (an ISO code, "eur")
// for the store's customer and confirms it with the saved card, with the
// secret key. It returns the intent as the confirm answered: succeeded,
// requires_action (answer it with [Store.Answer3DS]), processing (move the
// clock) or requires_payment_method with last_error.
func (s *Store) Pay(t T, card string, amount int64, currency string) *payments.IntentObject {
	t.Helper()
	var created payments.IntentObject
	s.kit.call(t, http.MethodPost, "/v1/payment_intents", s.SecretKey, map[string]any{
		"amount": amount, "currency": currency, "customer": s.Customer, "payment_method": card,
	}, http.StatusCreated, &created)
	var confirmed payments.IntentObject
	s.kit.call(t, http.MethodPost, "/v1/payment_intents/"+created.ID+"/confirm", s.SecretKey, map[string]any{},
		http.StatusOK, &confirmed)
	return &confirmed
}

// PayWithNewCard creates a payment intent of amount in currency for the
// store's customer with the secret key, then confirms it the way the
// hosted card field does: with the publishable key, the intent's
// client_secret and a new card (a sandbox test card number), not saved.
// It returns the intent as that confirm answered, in the publishable
// key's view (no client_secret, billing or customer details). A card
// refused when tokenised, sandbox.CardRejected, is a failed attempt:
// requires_payment_method with last_error card_rejected.
func (s *Store) PayWithNewCard(t T, number string, amount int64, currency string) *payments.IntentObject {
	t.Helper()
	var created payments.IntentObject
	s.kit.call(t, http.MethodPost, "/v1/payment_intents", s.SecretKey, map[string]any{
		"amount": amount, "currency": currency, "customer": s.Customer,
	}, http.StatusCreated, &created)
	var confirmed payments.IntentObject
	s.kit.call(t, http.MethodPost, "/v1/payment_intents/"+created.ID+"/confirm", s.PublishableKey, map[string]any{
		"client_secret": created.ClientSecret, "number": number,
		"exp_month": 12, "exp_year": s.kit.Clock.Now().Year() + 2, "cvc": "123",
	}, http.StatusOK, &confirmed)
	return &confirmed
}

// Intent reads a payment intent with the secret key.
func (s *Store) Intent(t T, id string) *payments.IntentObject {
	t.Helper()
	var pi payments.IntentObject
	s.kit.call(t, http.MethodGet, "/v1/payment_intents/"+id, s.SecretKey, nil, http.StatusOK, &pi)
	return &pi
}

// RequireIntentStatus fails the test unless the intent is in status now,
// and returns it.
func (s *Store) RequireIntentStatus(t T, id string, status keelpay.PaymentIntentStatus) *payments.IntentObject {
	t.Helper()
	pi := s.Intent(t, id)
	if pi.Status != status {
		t.Fatalf("keelpaytest: payment intent %s is %s, want %s (last_error %+v)", id, pi.Status, status, pi.LastError)
	}
	return pi
}

// Refund sends the refund of a succeeded intent with reason and returns
// it as the API answered (pending, failed or succeeded).
func (s *Store) Refund(t T, intentID, reason string) *refunds.Object {
	t.Helper()
	var r refunds.Object
	s.kit.call(t, http.MethodPost, "/v1/refunds", s.SecretKey, map[string]any{
		"payment_intent": intentID, "reason": reason,
	}, http.StatusCreated, &r)
	return &r
}

// Answer3DS answers the 3D Secure challenge of the intent intentID, in
// requires_action, as the buyer would on the sandbox's page: complete or
// fail. keelpay learns the answer at once, as from a real provider's
// notification; the intent it returns is read after that.
func (s *Store) Answer3DS(t T, intentID string, complete bool) *payments.IntentObject {
	t.Helper()
	intent := s.Intent(t, intentID)
	if intent.NextAction == nil || intent.NextAction.URL == "" {
		t.Fatalf("keelpaytest: payment intent %s (%s) has no 3D Secure page", intent.ID, intent.Status)
	}
	// The sandbox tells the service on a goroutine of its own; the answer is
	// known when the intent's outcome is committed.
	settled, stop := s.kit.Service.Subscribe(keelpay.EventPaymentIntentSucceeded,
		keelpay.EventPaymentIntentPaymentFailed, keelpay.EventPaymentIntentCanceled)
	defer stop()
	if err := s.kit.Sandbox.AnswerChallenge(context.Background(), path.Base(intent.NextAction.URL), complete); err != nil {
		t.Fatalf("keelpaytest: answer 3D Secure of %s: %v", intent.ID, err)
	}
	deadline := time.NewTimer(s.kit.wait)
	defer deadline.Stop()
	for {
		select {
		case e := <-settled:
			if e.PaymentIntent != nil && e.PaymentIntent.ID == intent.ID {
				return s.Intent(t, intent.ID)
			}
		case <-deadline.C:
			t.Fatalf("keelpaytest: payment intent %s not settled %v after its 3D Secure answer", intent.ID, s.kit.wait)
			return nil
		}
	}
}
