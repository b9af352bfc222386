package httpapi_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/provider/sandbox"
)

// TestConfirmWithEverySandboxCard confirms an intent with each test card
// from the hosted card field (publishable key, new card) and, where the
// card can be saved, with the saved card (secret key), and checks the
// intent, its one event and the money that moved.
func TestConfirmWithEverySandboxCard(t *testing.T) {
	t.Parallel()
	type want struct {
		status      keelpay.PaymentIntentStatus
		event       keelpay.EventType
		code        string // last_error.code
		declineCode string
		reason      string // cancellation_reason
		charges     int    // made at the provider (voided included)
		voids       int
		noOrderID   bool
	}
	succeeded := want{status: keelpay.IntentSucceeded, event: keelpay.EventPaymentIntentSucceeded, charges: 1}
	failed := func(code, decline string) want {
		return want{status: keelpay.IntentRequiresPaymentMethod, event: keelpay.EventPaymentIntentPaymentFailed, code: code, declineCode: decline}
	}
	voided := func(code string) want {
		return want{status: keelpay.IntentCanceled, event: keelpay.EventPaymentIntentCanceled, code: code, reason: "voided", charges: 1, voids: 1}
	}
	tests := []struct {
		name, number string
		saved        bool
		want         want
	}{
		{"visa", sandbox.CardVisa, false, succeeded},
		{"visa saved", sandbox.CardVisa, true, succeeded},
		{"mastercard", sandbox.CardMastercard, false, succeeded},
		{"no order id", sandbox.CardNoOrderID, false, want{status: keelpay.IntentSucceeded, event: keelpay.EventPaymentIntentSucceeded, charges: 1, noOrderID: true}},
		{"declined", sandbox.CardDeclined, false, failed("card_declined", "generic_decline")},
		{"declined saved", sandbox.CardDeclined, true, failed("card_declined", "generic_decline")},
		{"insufficient funds", sandbox.CardInsufficientFunds, false, failed("card_declined", "insufficient_funds")},
		{"rejected at tokenisation", sandbox.CardRejected, false, failed("card_rejected", "")},
		{"billing required", sandbox.CardBillingRequired, false, failed("billing_required", "")},
		{"provider error", sandbox.CardProviderError, false, failed("provider_error", "")},
		{"provider error saved", sandbox.CardProviderError, true, failed("provider_error", "")},
		{"unavailable saved", sandbox.CardUnavailable, true, failed("card_unavailable", "")},
		{"unavailable as a new card", sandbox.CardUnavailable, false, succeeded},
		{"currency mismatch", sandbox.CardCurrencyMismatch, false, voided("currency_mismatch")},
		{"amount mismatch", sandbox.CardAmountMismatch, false, voided("amount_mismatch")},
		{"amount mismatch saved", sandbox.CardAmountMismatch, true, voided("amount_mismatch")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			s := b.shop(t, "app_shop")
			intent := b.createIntent(t, s, intentBody(s, 1999))
			id := pi(t, intent)
			var r *response
			if tc.saved {
				r = b.confirmSaved(t, s, id, b.saveCard(t, s, tc.number))
			} else {
				r = b.confirmNew(t, s, intent, tc.number, nil)
			}
			w := tc.want
			requireStatus(t, r, http.StatusOK, w.status)

			// The answer.
			last4 := tc.number[len(tc.number)-4:]
			pm := r.Body["payment_method"].(map[string]any)
			require.Equal(t, last4, pm["last4"])
			require.Equal(t, tc.saved, pm["saved"])
			if tc.saved {
				require.NotNil(t, r.Body["card"])
			} else {
				require.Nil(t, r.Body["card"], "a new card is not saved")
				requireNoPersonalData(t, r.Raw)
			}
			le := lastError(r)
			if w.code == "" {
				require.Nil(t, le, "%s", r.Raw)
			} else {
				require.Equal(t, w.code, le["code"], "%s", r.Raw)
				require.NotEmpty(t, le["message"])
				if w.declineCode == "" {
					require.NotContains(t, le, "decline_code")
				} else {
					require.Equal(t, w.declineCode, le["decline_code"])
				}
			}
			if w.reason == "" {
				require.NotContains(t, r.Body, "cancellation_reason")
			} else {
				require.Equal(t, w.reason, r.str("cancellation_reason"))
			}
			if w.status == keelpay.IntentSucceeded {
				require.Len(t, r.str("authorization_code"), 6)
				require.Equal(t, "2026-11-21T10:00:00Z", r.str("succeeded_at"))
				require.Equal(t, w.noOrderID, r.str("order_id") == "", "%s", r.Raw)
				require.Equal(t, !w.noOrderID, r.Body["order_id"] != nil, "order_id is absent, not null, without one")
			} else {
				require.NotContains(t, r.Body, "authorization_code")
				require.NotContains(t, r.Body, "succeeded_at")
			}
			require.Nil(t, r.Body["next_action"])

			// What is stored agrees, and the event reports it once.
			got := b.getIntent(t, s, id)
			require.Equal(t, string(w.status), got.str("status"))
			obj := b.requireOneEvent(t, s, w.event, id)
			require.Equal(t, string(w.status), obj["status"])
			require.Equal(t, r.Body["authorization_code"], obj["authorization_code"])
			require.Equal(t, r.Body["order_id"], obj["order_id"])
			require.Equal(t, r.Body["succeeded_at"], obj["succeeded_at"])
			require.Equal(t, r.Body["last_error"], obj["last_error"])
			require.Equal(t, r.Body["cancellation_reason"], obj["cancellation_reason"])
			for _, other := range []keelpay.EventType{keelpay.EventPaymentIntentSucceeded, keelpay.EventPaymentIntentPaymentFailed, keelpay.EventPaymentIntentCanceled} {
				if other != w.event {
					b.requireNoEvent(t, s, other, id)
				}
			}
			require.Equal(t, w.charges, b.sandbox.Charges(), "charges made")
			require.Equal(t, w.voids, b.sandbox.Voids(), "charges voided")

			// A failed attempt may be repeated; anything else is final.
			again := b.confirmNew(t, s, intent, sandbox.CardVisa, nil)
			if w.status == keelpay.IntentRequiresPaymentMethod {
				requireStatus(t, again, http.StatusOK, keelpay.IntentSucceeded)
				require.Nil(t, lastError(again), "a new attempt clears last_error")
			} else {
				requireError(t, again, http.StatusConflict, "payment_intent_unexpected_state")
				require.Equal(t, string(w.status), again.details()["status"])
			}
		})
	}
}

func TestBillingRequiredThenConfirmWithBilling(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.shop(t, "app_shop")
	cardID := b.saveCard(t, s, sandbox.CardBillingRequired)
	id := pi(t, b.createIntent(t, s, intentBody(s, 500)))
	r := b.confirmSaved(t, s, id, cardID)
	requireStatus(t, r, http.StatusOK, keelpay.IntentRequiresPaymentMethod)
	require.Equal(t, "billing_required", lastError(r)["code"])

	r = b.do(t, req{method: "POST", path: "/v1/payment_intents/" + id + "/confirm", key: s.sk, body: map[string]any{
		"payment_method": cardID, "billing": map[string]any{"country": "de", "postal_code": postal},
	}})
	requireStatus(t, r, http.StatusOK, keelpay.IntentSucceeded)
	require.Equal(t, map[string]any{"country": "DE", "postal_code": postal}, r.Body["billing"], "the secret key sees billing")
	require.Len(t, b.events(t, s.id, keelpay.EventPaymentIntentPaymentFailed), 1)
	b.requireOneEvent(t, s, keelpay.EventPaymentIntentSucceeded, id)
}

func TestSavedCardThatStoppedWorking(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.shop(t, "app_shop")
	cardID := b.saveCard(t, s, sandbox.CardUnavailable)
	id := pi(t, b.createIntent(t, s, intentBody(s, 500)))
	r := b.confirmSaved(t, s, id, cardID)
	requireStatus(t, r, http.StatusOK, keelpay.IntentRequiresPaymentMethod)
	require.Equal(t, "card_unavailable", lastError(r)["code"])

	card := b.do(t, req{method: "GET", path: "/v1/cards/" + cardID, key: s.sk})
	require.Equal(t, http.StatusOK, card.Status)
	require.Equal(t, "unavailable", card.str("status"), "the card is marked in the attempt's transaction")

	// The card cannot be used again; the buyer enters it again.
	requireError(t, b.confirmSaved(t, s, id, cardID), http.StatusConflict, "card_unavailable")
	other := pi(t, b.createIntent(t, s, intentBody(s, 700)))
	requireError(t, b.confirmSaved(t, s, other, cardID), http.StatusConflict, "card_unavailable")
	require.Equal(t, "requires_payment_method", b.getIntent(t, s, id).str("status"), "a refused confirm records no attempt")
	requireStatus(t, b.confirmNew(t, s, b.getIntent(t, s, id), sandbox.CardVisa, nil), http.StatusOK, keelpay.IntentSucceeded)
}

// A saved card whose token the provider does not know for the store's
// merchant (the store moved to another application) is refused by the
// provider: last_error invalid_request.
func TestProviderRefusesTheRequest(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.shop(t, "app_first")
	cardID := b.saveCard(t, s, sandbox.CardVisa)
	r := b.do(t, req{method: "POST", path: "/v1/setup", key: s.sk, body: setupBody("app_second", "https://store.example/hooks")})
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)

	id := pi(t, b.createIntent(t, s, intentBody(s, 500)))
	r = b.confirmSaved(t, s, id, cardID)
	requireStatus(t, r, http.StatusOK, keelpay.IntentRequiresPaymentMethod)
	require.Equal(t, "invalid_request", lastError(r)["code"])
	b.requireOneEvent(t, s, keelpay.EventPaymentIntentPaymentFailed, id)
	require.Zero(t, b.sandbox.Charges())
}

func TestConfirmWithTheIntentsCard(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.shop(t, "app_shop")
	cardID := b.saveCard(t, s, sandbox.CardMastercard)
	body := intentBody(s, 2500)
	body["payment_method"] = cardID
	created := b.createIntent(t, s, body)
	require.Equal(t, cardID, created.str("card"))
	require.Equal(t, map[string]any{"brand": "mastercard", "last4": "4444", "exp_month": 12.0, "exp_year": 2030.0, "saved": true}, created.Body["payment_method"])

	// No body: the intent's card.
	r := b.do(t, req{method: "POST", path: "/v1/payment_intents/" + pi(t, created) + "/confirm", key: s.sk})
	requireStatus(t, r, http.StatusOK, keelpay.IntentSucceeded)
	require.Equal(t, cardID, r.str("card"))

	// Without a card anywhere, payment_method is required.
	id := pi(t, b.createIntent(t, s, intentBody(s, 100)))
	requireInvalid(t, b.do(t, req{method: "POST", path: "/v1/payment_intents/" + id + "/confirm", key: s.sk, body: `{}`}),
		"payment_method", "missing_payment_method")
}

func TestThreeDSecureCompleted(t *testing.T) {
	t.Parallel()
	n := &notified{}
	b := setup(t, withNotified(n))
	s := b.shop(t, "app_shop")
	intent := b.createIntent(t, s, intentBody(s, 4200))
	id := pi(t, intent)
	r := b.confirmNew(t, s, intent, sandbox.CardThreeDSecure, nil)
	requireStatus(t, r, http.StatusOK, keelpay.IntentRequiresAction)
	next := r.Body["next_action"].(map[string]any)
	require.Equal(t, "three_d_secure", next["type"])
	actionURL := next["url"].(string)
	require.Contains(t, actionURL, b.srv.URL+"/sandbox/3ds/")
	require.Zero(t, b.sandbox.Charges())
	b.requireNoEvent(t, s, keelpay.EventPaymentIntentSucceeded, id)

	// Waiting for the buyer: no other attempt may start.
	requireError(t, b.confirmNew(t, s, intent, sandbox.CardVisa, nil), http.StatusConflict, "payment_intent_unexpected_state")

	// The buyer completes the challenge on its page, as the browser would.
	resp, err := b.srv.Client().PostForm(actionURL, url.Values{"result": {"complete"}})
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	n.wait(t, b.record(t, s, id).AttemptID)

	got := b.getIntent(t, s, id)
	require.Equal(t, "succeeded", got.str("status"))
	require.Nil(t, got.Body["next_action"])
	require.Len(t, got.str("authorization_code"), 6)
	b.requireOneEvent(t, s, keelpay.EventPaymentIntentSucceeded, id)
	require.Equal(t, 1, b.sandbox.Charges())

	// The worker finds nothing left to do.
	b.clock.Advance(time.Hour)
	require.NoError(t, b.worker(t).Reconcile(context.Background()))
	b.requireOneEvent(t, s, keelpay.EventPaymentIntentSucceeded, id)
}

func TestThreeDSecureFailed(t *testing.T) {
	t.Parallel()
	n := &notified{}
	b := setup(t, withNotified(n))
	s := b.shop(t, "app_shop")
	cardID := b.saveCard(t, s, sandbox.CardThreeDSecure)
	id := pi(t, b.createIntent(t, s, intentBody(s, 4200)))
	r := b.confirmSaved(t, s, id, cardID)
	requireStatus(t, r, http.StatusOK, keelpay.IntentRequiresAction)

	require.NoError(t, b.sandbox.AnswerChallenge(context.Background(), r.Body["next_action"].(map[string]any)["url"].(string), false))
	n.wait(t, b.record(t, s, id).AttemptID)
	got := b.getIntent(t, s, id)
	require.Equal(t, "requires_payment_method", got.str("status"))
	require.Equal(t, "authentication_failed", lastError(got)["code"])
	require.Nil(t, got.Body["next_action"])
	obj := b.requireOneEvent(t, s, keelpay.EventPaymentIntentPaymentFailed, id)
	require.Equal(t, "authentication_failed", obj["last_error"].(map[string]any)["code"])
	require.Zero(t, b.sandbox.Charges())

	// The buyer may retry.
	requireStatus(t, b.confirmNew(t, s, got, sandbox.CardVisa, nil), http.StatusOK, keelpay.IntentSucceeded)
}

func TestThreeDSecureExpiresAfterTenMinutes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.shop(t, "app_shop")
	intent := b.createIntent(t, s, intentBody(s, 4200))
	id := pi(t, intent)
	r := b.confirmNew(t, s, intent, sandbox.CardThreeDSecure, nil)
	requireStatus(t, r, http.StatusOK, keelpay.IntentRequiresAction)
	actionURL := r.Body["next_action"].(map[string]any)["url"].(string)
	worker := b.worker(t)
	ctx := context.Background()

	b.clock.Advance(10*time.Minute - time.Second)
	require.NoError(t, worker.Reconcile(ctx))
	require.Equal(t, "requires_action", b.getIntent(t, s, id).str("status"), "the buyer still has a second")

	b.clock.Advance(time.Second)
	require.NoError(t, worker.Reconcile(ctx))
	got := b.getIntent(t, s, id)
	require.Equal(t, "requires_payment_method", got.str("status"))
	require.Equal(t, "authentication_expired", lastError(got)["code"])
	require.Nil(t, got.Body["next_action"])
	b.requireOneEvent(t, s, keelpay.EventPaymentIntentPaymentFailed, id)

	// Too late for the buyer now.
	require.ErrorIs(t, b.sandbox.AnswerChallenge(ctx, actionURL, true), sandbox.ErrChallengeExpired)
	require.Zero(t, b.sandbox.Charges())
}

func TestCancelDuringThreeDSecureVoidsTheChallenge(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.shop(t, "app_shop")
	intent := b.createIntent(t, s, intentBody(s, 4200))
	id := pi(t, intent)
	r := b.confirmNew(t, s, intent, sandbox.CardThreeDSecure, nil)
	requireStatus(t, r, http.StatusOK, keelpay.IntentRequiresAction)
	actionURL := r.Body["next_action"].(map[string]any)["url"].(string)

	c := b.do(t, req{method: "POST", path: "/v1/payment_intents/" + id + "/cancel", key: s.sk, body: map[string]any{"cancellation_reason": "abandoned"}})
	requireStatus(t, c, http.StatusOK, keelpay.IntentCanceled)
	require.Equal(t, "abandoned", c.str("cancellation_reason"))
	obj := b.requireOneEvent(t, s, keelpay.EventPaymentIntentCanceled, id)
	require.Equal(t, "abandoned", obj["cancellation_reason"])

	// A buyer who answers afterwards is not charged.
	require.Error(t, b.sandbox.AnswerChallenge(context.Background(), actionURL, true))
	require.Zero(t, b.sandbox.Charges())
	b.clock.Advance(time.Hour)
	require.NoError(t, b.worker(t).Reconcile(context.Background()))
	require.Equal(t, "canceled", b.getIntent(t, s, id).str("status"))
}
