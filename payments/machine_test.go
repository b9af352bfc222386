package payments

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/provider"
)

var t0 = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

func TestNextCheck(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		status      keelpay.PaymentIntentStatus
		after, want time.Duration
	}{
		{keelpay.IntentProcessing, 0, time.Minute},
		{keelpay.IntentRequiresAction, 0, 10 * time.Minute},
		{keelpay.IntentRequiresAction, 9 * time.Minute, 10 * time.Minute},
		// Still open after the wait (the provider's clock is behind):
		// the schedule goes on.
		{keelpay.IntentRequiresAction, 10 * time.Minute, 15 * time.Minute},
		{keelpay.IntentRequiresAction, 15 * time.Minute, time.Hour},
	} {
		if got := nextCheck(tc.status, t0, t0.Add(tc.after)).Sub(t0); got != tc.want {
			t.Errorf("nextCheck(%s) at +%v = +%v, want +%v", tc.status, tc.after, got, tc.want)
		}
	}
}

func TestConfirmAndCancelStates(t *testing.T) {
	t.Parallel()
	for status, want := range map[keelpay.PaymentIntentStatus][2]bool{
		keelpay.IntentRequiresPaymentMethod: {true, true},
		keelpay.IntentRequiresAction:        {false, true},
		keelpay.IntentProcessing:            {false, false},
		keelpay.IntentSucceeded:             {false, false},
		keelpay.IntentCanceled:              {false, false},
	} {
		if got := [2]bool{canConfirm(status), canCancel(status)}; got != want {
			t.Errorf("%s: confirm, cancel = %v, want %v", status, got, want)
		}
	}
}

// TestFirstAttemptIsStartAttempt holds the one-write first attempt
// (storage.AttemptStart) to the state machine: on an intent as created
// with a saved card, startAttempt with that card changes exactly the
// fields the write sets, to the values the confirm passes it, and
// unattempted gives the intent back (but for UpdatedAt).
func TestFirstAttemptIsStartAttempt(t *testing.T) {
	t.Parallel()
	card := &keelpay.Card{ID: "card_1", CustomerID: "cus_1", Brand: "visa", Last4: "4242", ExpMonth: 12, ExpYear: 2030, Status: keelpay.CardActive}
	created := keelpay.PaymentIntent{
		ID: "pi_1", StoreID: "store_1", Status: keelpay.IntentRequiresPaymentMethod, Amount: 100, Currency: "EUR",
		Customer: keelpay.Customer{ID: "cus_1", Name: "Jane Roe"}, Description: "Order 1", Metadata: map[string]string{"a": "b"},
		Billing: &keelpay.Billing{Country: "DE"}, ClientSecret: "pi_1_secret_x",
		CardID: card.ID, PaymentMethod: savedMethod(card),
		ExpiresAt: t0.Add(IntentLifetime), CreatedAt: t0, UpdatedAt: t0, Version: createdVersion,
	}
	now := t0.Add(time.Minute)
	got := startAttempt(created, "att_1", "merch_1", savedMethod(card), card.ID, nil, now)
	// What storage.AttemptStart writes, and nothing else.
	want := created
	want.Status = keelpay.IntentProcessing
	want.AttemptID, want.AttemptAt, want.MerchantID = "att_1", now, "merch_1"
	want.ReconcileAt, want.UpdatedAt = nextCheck(keelpay.IntentProcessing, now, now), now
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("startAttempt on a created intent (-the write +startAttempt):\n%s", diff)
	}
	got.Version++ // as the write leaves it
	back := unattempted(got)
	back.UpdatedAt = created.UpdatedAt
	if diff := cmp.Diff(created, back); diff != "" {
		t.Errorf("unattempted (-created +back):\n%s", diff)
	}
}

func TestStartAttempt(t *testing.T) {
	t.Parallel()
	pi := keelpay.PaymentIntent{
		ID: "pi_1", Status: keelpay.IntentRequiresPaymentMethod, Amount: 100, Currency: "EUR",
		Billing:   &keelpay.Billing{Country: "DE"},
		LastError: &keelpay.LastError{Code: ErrorCardDeclined}, AttemptID: "att_old", ReconcileCount: 3, Version: 4,
	}
	pm := &keelpay.PaymentMethod{Brand: "visa", Last4: "4242", Saved: true}
	now := t0.Add(time.Hour)
	got := startAttempt(pi, "att_new", "merch_1", pm, "card_1", nil, now)
	want := pi
	want.Status = keelpay.IntentProcessing
	want.AttemptID, want.AttemptAt, want.MerchantID = "att_new", now, "merch_1"
	want.ReconcileAt, want.ReconcileCount = now.Add(time.Minute), 0
	want.CardID, want.PaymentMethod = "card_1", pm
	want.LastError = nil
	want.UpdatedAt = now
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("startAttempt (-want +got):\n%s", diff)
	}
	billing := &keelpay.Billing{Country: "US"}
	if got := startAttempt(pi, "a", "m", pm, "", billing, now); got.Billing != billing {
		t.Errorf("billing given with the confirm replaces the intent's")
	}
}

// TestAdvance is the state machine of an open attempt: each provider
// answer, from Charge or from a look-up, with and without a cancel in
// progress.
func TestAdvance(t *testing.T) {
	t.Parallel()
	attemptAt := t0
	open := func(status keelpay.PaymentIntentStatus, mod ...func(*keelpay.PaymentIntent)) keelpay.PaymentIntent {
		pi := keelpay.PaymentIntent{
			ID: "pi_1", StoreID: "store_1", Status: status, Amount: 1000, Currency: "EUR",
			Customer: keelpay.Customer{ID: "cus_1"}, AttemptID: "att_1", AttemptAt: attemptAt, MerchantID: "merch_1",
			ReconcileAt: attemptAt.Add(time.Minute), Version: 2,
		}
		if status == keelpay.IntentRequiresAction {
			pi.NextAction = &keelpay.NextAction{Type: "three_d_secure", URL: "https://p.example/3ds/x"}
			pi.ReconcileAt = attemptAt.Add(ThreeDSecureWait)
		}
		for _, m := range mod {
			m(&pi)
		}
		return pi
	}
	saved := func(pi *keelpay.PaymentIntent) {
		pi.CardID = "card_1"
		pi.PaymentMethod = &keelpay.PaymentMethod{Brand: "visa", Last4: "0341", ExpMonth: 12, ExpYear: 2030, Saved: true}
	}
	canceling := func(pi *keelpay.PaymentIntent) { pi.CancellationReason = "abandoned" }
	card := &provider.SavedCard{Token: "tok", Brand: "visa", Last4: "4242", ExpMonth: 12, ExpYear: 2030}
	result := func(status provider.ChargeStatus, mod ...func(*provider.ChargeResult)) *provider.ChargeResult {
		r := &provider.ChargeResult{Status: status, Amount: 1000, Currency: "EUR", Card: card}
		for _, m := range mod {
			m(r)
		}
		return r
	}
	ok := result(provider.ChargeSucceeded, func(r *provider.ChargeResult) { r.AuthorizationCode, r.OrderID = "ABC123", "ord_1" })
	failure := func(code provider.FailureCode, decline string) *provider.ChargeResult {
		return result(provider.ChargeFailed, func(r *provider.ChargeResult) {
			r.Failure = &provider.Failure{Code: code, DeclineCode: decline, Message: "provider text"}
		})
	}
	unavailable := &provider.Error{Kind: provider.KindUnavailable}

	// want describes the resulting intent and effects; zero fields are
	// checked too.
	type want struct {
		status       keelpay.PaymentIntentStatus
		event        keelpay.EventType
		code         string // last_error.code; "" for none
		decline      string
		reason       string // cancellation_reason
		void         bool
		cardDown     bool
		reconcileIn  time.Duration // ReconcileAt - attempt; 0 for zero
		count        int
		nextAction   bool
		outcome      string
		authorized   bool
		paidWithCard bool // payment_method from the provider's card
		lateCheck    bool // looked up again for a late charge
	}
	for _, tc := range []struct {
		name string
		pi   keelpay.PaymentIntent
		a    answer
		now  time.Duration // since the attempt
		want want
	}{
		{"charge succeeded", open(keelpay.IntentProcessing), answer{res: ok}, 0,
			want{status: keelpay.IntentSucceeded, event: keelpay.EventPaymentIntentSucceeded, outcome: outcomeSucceeded, authorized: true, paidWithCard: true}},
		{"look-up succeeded", open(keelpay.IntentRequiresAction), answer{res: ok, lookup: true}, 3 * time.Minute,
			want{status: keelpay.IntentSucceeded, event: keelpay.EventPaymentIntentSucceeded, outcome: outcomeSucceeded, authorized: true, count: 1, paidWithCard: true}},
		{"charged another currency", open(keelpay.IntentProcessing), answer{res: result(provider.ChargeSucceeded, func(r *provider.ChargeResult) { r.Currency = "USD" })}, 0,
			want{status: keelpay.IntentCanceled, event: keelpay.EventPaymentIntentCanceled, code: ErrorCurrencyMismatch, reason: ReasonVoided, void: true, outcome: outcomeVoided, paidWithCard: true}},
		{"charged another amount", open(keelpay.IntentProcessing), answer{res: result(provider.ChargeSucceeded, func(r *provider.ChargeResult) { r.Amount = 1001 })}, 0,
			want{status: keelpay.IntentCanceled, event: keelpay.EventPaymentIntentCanceled, code: ErrorAmountMismatch, reason: ReasonVoided, void: true, outcome: outcomeVoided, paidWithCard: true}},
		{"found voided by an earlier pass", open(keelpay.IntentProcessing), answer{res: result(provider.ChargeSucceeded, func(r *provider.ChargeResult) { r.Amount, r.Voided = 1001, true }), lookup: true}, time.Minute,
			want{status: keelpay.IntentCanceled, event: keelpay.EventPaymentIntentCanceled, code: ErrorAmountMismatch, reason: ReasonVoided, count: 1, outcome: outcomeVoided, paidWithCard: true}},
		{"declined", open(keelpay.IntentProcessing), answer{res: failure(provider.FailureCardDeclined, provider.DeclineInsufficientFunds)}, 0,
			want{status: keelpay.IntentRequiresPaymentMethod, event: keelpay.EventPaymentIntentPaymentFailed, code: ErrorCardDeclined, decline: "insufficient_funds", outcome: outcomeFailed, paidWithCard: true}},
		{"decline code only for card_declined", open(keelpay.IntentProcessing), answer{res: failure(provider.FailureProviderError, "x")}, 0,
			want{status: keelpay.IntentRequiresPaymentMethod, event: keelpay.EventPaymentIntentPaymentFailed, code: ErrorProviderError, outcome: outcomeFailed, paidWithCard: true}},
		{"saved card stopped working", open(keelpay.IntentProcessing, saved), answer{res: failure(provider.FailureCardUnavailable, "")}, 0,
			want{status: keelpay.IntentRequiresPaymentMethod, event: keelpay.EventPaymentIntentPaymentFailed, code: ErrorCardUnavailable, cardDown: true, outcome: outcomeFailed, paidWithCard: true}},
		{"unknown failure code", open(keelpay.IntentProcessing), answer{res: failure("weird", "")}, 0,
			want{status: keelpay.IntentRequiresPaymentMethod, event: keelpay.EventPaymentIntentPaymentFailed, code: ErrorProviderError, outcome: outcomeFailed, paidWithCard: true}},
		{"failed without a failure", open(keelpay.IntentProcessing), answer{res: result(provider.ChargeFailed)}, 0,
			want{status: keelpay.IntentRequiresPaymentMethod, event: keelpay.EventPaymentIntentPaymentFailed, code: ErrorProviderError, outcome: outcomeFailed, paidWithCard: true}},
		{"3D Secure challenge", open(keelpay.IntentProcessing), answer{res: result(provider.ChargeRequiresAction, func(r *provider.ChargeResult) { r.ActionURL = "https://p.example/3ds/y" })}, 0,
			want{status: keelpay.IntentRequiresAction, reconcileIn: ThreeDSecureWait, nextAction: true, paidWithCard: true}},
		{"challenge found after a crash", open(keelpay.IntentProcessing), answer{res: result(provider.ChargeRequiresAction), lookup: true}, time.Minute,
			want{status: keelpay.IntentRequiresAction, reconcileIn: ThreeDSecureWait, count: 1, nextAction: true, paidWithCard: true}},
		{"challenge still open after the wait", open(keelpay.IntentRequiresAction), answer{res: result(provider.ChargeRequiresAction), lookup: true}, ThreeDSecureWait,
			want{status: keelpay.IntentRequiresAction, reconcileIn: 15 * time.Minute, count: 1, nextAction: true, paidWithCard: true}},
		{"challenge expired", open(keelpay.IntentRequiresAction), answer{res: failure(provider.FailureAuthenticationExpired, ""), lookup: true}, ThreeDSecureWait,
			want{status: keelpay.IntentRequiresPaymentMethod, event: keelpay.EventPaymentIntentPaymentFailed, code: ErrorAuthenticationExpired, count: 1, outcome: outcomeFailed, paidWithCard: true}},
		{"pending at the first look-up", open(keelpay.IntentProcessing), answer{res: result(provider.ChargePending), lookup: true}, time.Minute,
			want{status: keelpay.IntentProcessing, code: ErrorOutcomeUnknown, reconcileIn: 5 * time.Minute, count: 1, paidWithCard: true}},
		{"charge timed out", open(keelpay.IntentProcessing), answer{err: &provider.Error{Kind: provider.KindOutcomeUnknown}}, 0,
			want{status: keelpay.IntentProcessing, code: ErrorOutcomeUnknown, reconcileIn: time.Minute}},
		{"charge broke off unclassified", open(keelpay.IntentProcessing), answer{err: errors.New("connection reset")}, 0,
			want{status: keelpay.IntentProcessing, code: ErrorOutcomeUnknown, reconcileIn: time.Minute}},
		{"charge deadline exceeded", open(keelpay.IntentProcessing), answer{err: fmt.Errorf("call: %w", context.DeadlineExceeded)}, 30 * time.Second,
			want{status: keelpay.IntentProcessing, code: ErrorOutcomeUnknown, reconcileIn: time.Minute}},
		{"charge refused as invalid", open(keelpay.IntentProcessing), answer{err: &provider.Error{Kind: provider.KindInvalidRequest}}, 0,
			want{status: keelpay.IntentRequiresPaymentMethod, event: keelpay.EventPaymentIntentPaymentFailed, code: ErrorInvalidRequest, outcome: outcomeFailed}},
		{"charge refused otherwise", open(keelpay.IntentProcessing), answer{err: &provider.Error{Kind: provider.KindInvalidCredentials}}, 0,
			want{status: keelpay.IntentRequiresPaymentMethod, event: keelpay.EventPaymentIntentPaymentFailed, code: ErrorProviderError, outcome: outcomeFailed}},
		{"provider never saw the attempt", open(keelpay.IntentProcessing), answer{err: provider.ErrUnknownAttempt, lookup: true}, ReachWindow,
			want{status: keelpay.IntentRequiresPaymentMethod, event: keelpay.EventPaymentIntentPaymentFailed, code: ErrorProviderError, count: 1, outcome: outcomeFailed, lateCheck: true}},
		// Before ReachWindow the run that made the attempt may still send
		// it: not seen yet is not never charged.
		{"provider has not seen the attempt yet", open(keelpay.IntentProcessing), answer{err: provider.ErrUnknownAttempt, lookup: true}, 50 * time.Second,
			want{status: keelpay.IntentProcessing, code: ErrorOutcomeUnknown, reconcileIn: ReachWindow, count: 1}},
		{"provider has not seen the attempt a moment after it", open(keelpay.IntentProcessing), answer{err: provider.ErrUnknownAttempt, lookup: true}, time.Second,
			want{status: keelpay.IntentProcessing, code: ErrorOutcomeUnknown, reconcileIn: ReachWindow, count: 1}},
		{"provider never saw the attempt, hours later", open(keelpay.IntentProcessing), answer{err: provider.ErrUnknownAttempt, lookup: true}, 7 * time.Hour,
			want{status: keelpay.IntentRequiresPaymentMethod, event: keelpay.EventPaymentIntentPaymentFailed, code: ErrorProviderError, count: 1, outcome: outcomeFailed, lateCheck: true}},
		{"look-up unavailable", open(keelpay.IntentProcessing), answer{err: unavailable, lookup: true}, 5 * time.Minute,
			want{status: keelpay.IntentProcessing, reconcileIn: 15 * time.Minute, count: 1}},
		{"charge answered nothing", open(keelpay.IntentProcessing), answer{}, 0,
			want{status: keelpay.IntentProcessing, code: ErrorOutcomeUnknown, reconcileIn: time.Minute}},
		{"look-up answered nothing", open(keelpay.IntentProcessing), answer{lookup: true}, time.Minute,
			want{status: keelpay.IntentProcessing, reconcileIn: 5 * time.Minute, count: 1}},
		{"look-up answer unusable", open(keelpay.IntentProcessing), answer{res: result("weird"), lookup: true}, time.Minute,
			want{status: keelpay.IntentProcessing, reconcileIn: 5 * time.Minute, count: 1, paidWithCard: true}},
		// A cancel in progress: whatever the attempt did, it ends canceled.
		{"canceling, buyer completed", open(keelpay.IntentRequiresAction, canceling), answer{res: ok, lookup: true}, 0,
			want{status: keelpay.IntentCanceled, event: keelpay.EventPaymentIntentCanceled, reason: "abandoned", void: true, count: 1, outcome: outcomeCanceled, paidWithCard: true}},
		{"canceling, challenge open", open(keelpay.IntentRequiresAction, canceling), answer{res: result(provider.ChargeRequiresAction), lookup: true}, 0,
			want{status: keelpay.IntentCanceled, event: keelpay.EventPaymentIntentCanceled, reason: "abandoned", void: true, count: 1, outcome: outcomeCanceled, paidWithCard: true}},
		{"canceling, buyer failed", open(keelpay.IntentRequiresAction, canceling), answer{res: failure(provider.FailureAuthenticationFailed, ""), lookup: true}, 0,
			want{status: keelpay.IntentCanceled, event: keelpay.EventPaymentIntentCanceled, reason: "abandoned", count: 1, outcome: outcomeCanceled, paidWithCard: true}},
		{"canceling, provider never saw it", open(keelpay.IntentRequiresAction, canceling), answer{err: provider.ErrUnknownAttempt, lookup: true}, 0,
			want{status: keelpay.IntentCanceled, event: keelpay.EventPaymentIntentCanceled, reason: "abandoned", count: 1, outcome: outcomeCanceled}},
		{"canceling, look-up unavailable", open(keelpay.IntentRequiresAction, canceling), answer{err: unavailable, lookup: true}, 0,
			want{status: keelpay.IntentRequiresAction, reason: "abandoned", reconcileIn: ThreeDSecureWait, count: 1, nextAction: true}},
		{"canceling, voided already", open(keelpay.IntentRequiresAction, canceling), answer{res: result(provider.ChargeSucceeded, func(r *provider.ChargeResult) { r.Voided = true }), lookup: true}, 0,
			want{status: keelpay.IntentCanceled, event: keelpay.EventPaymentIntentCanceled, reason: "abandoned", count: 1, outcome: outcomeVoided, paidWithCard: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			now := attemptAt.Add(tc.now)
			s := advance(tc.pi, tc.a, now)
			next := s.next
			got := want{
				status: next.Status, event: s.event, reason: next.CancellationReason, void: s.void, cardDown: s.cardUnavailable,
				count: next.ReconcileCount, nextAction: next.NextAction != nil, outcome: s.outcome,
				authorized: next.AuthorizationCode != "", lateCheck: s.lateCheck,
			}
			if next.LastError != nil {
				got.code, got.decline = next.LastError.Code, next.LastError.DeclineCode
				if next.LastError.Message == "" || next.LastError.Message == "provider text" {
					t.Errorf("last_error message %q: want the service's own text", next.LastError.Message)
				}
			}
			if !next.ReconcileAt.IsZero() {
				got.reconcileIn = next.ReconcileAt.Sub(attemptAt)
			}
			got.paidWithCard = next.PaymentMethod != nil && next.PaymentMethod.Last4 == "4242"
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("advance (-want +got):\n%s", diff)
			}
			if s.outcome != "" && s.code != got.code {
				t.Errorf("metric code %q, last_error %q", s.code, got.code)
			}
			// Invariants of every step.
			if next.UpdatedAt != now {
				t.Errorf("UpdatedAt = %v, want now", next.UpdatedAt)
			}
			if next.ID != tc.pi.ID || next.AttemptID != tc.pi.AttemptID || next.Amount != tc.pi.Amount || next.Version != tc.pi.Version {
				t.Errorf("identity, attempt, amount or version changed: %+v", next)
			}
			final := next.Status != keelpay.IntentProcessing && next.Status != keelpay.IntentRequiresAction
			if final != (s.event != "") {
				t.Errorf("status %s with event %q: a closed attempt is reported, an open one is not", next.Status, s.event)
			}
			if final != next.ReconcileAt.IsZero() {
				t.Errorf("status %s with ReconcileAt %v", next.Status, next.ReconcileAt)
			}
			if next.Status == keelpay.IntentSucceeded && (next.SucceededAt != now || next.OrderID != "ord_1") {
				t.Errorf("succeeded without succeeded_at or order id: %+v", next)
			}
			if next.Status != keelpay.IntentRequiresAction && next.NextAction != nil {
				t.Errorf("next_action in %s", next.Status)
			}
		})
	}
}

func TestCancelStep(t *testing.T) {
	t.Parallel()
	pi := keelpay.PaymentIntent{Status: keelpay.IntentRequiresAction, NextAction: &keelpay.NextAction{Type: "three_d_secure"},
		ReconcileAt: t0, LastError: &keelpay.LastError{Code: ErrorCardDeclined}}
	got := cancel(pi, ReasonExpired, nil, t0.Add(time.Hour))
	want := keelpay.PaymentIntent{Status: keelpay.IntentCanceled, CancellationReason: ReasonExpired,
		LastError: pi.LastError, UpdatedAt: t0.Add(time.Hour)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("cancel (-want +got):\n%s", diff)
	}
}
