package httpapi_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/provider"
	"github.com/keelpay/keelpay/provider/sandbox"
	"github.com/keelpay/keelpay/refunds"
)

// paid returns a succeeded intent of the shop, paid with a new card.
func (b *bundle) paid(t *testing.T, s shop, number string) string {
	t.Helper()
	intent := b.createIntent(t, s, intentBody(s, 2500))
	r := b.confirmNew(t, s, intent, number, nil)
	requireStatus(t, r, http.StatusOK, keelpay.IntentSucceeded)
	return r.str("id")
}

func (b *bundle) refund(t *testing.T, s shop, body any) *response {
	t.Helper()
	return b.do(t, req{method: "POST", path: "/v1/refunds", key: s.sk, body: body})
}

func refundBody(intentID string) map[string]any {
	return map[string]any{"payment_intent": intentID, "reason": "Returned within 30 days"}
}

func TestRefundSucceedsOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.shop(t, "app_shop")
	id := b.paid(t, s, sandbox.CardVisa)

	body := refundBody(id)
	body["metadata"] = map[string]any{"ticket": "T-1"}
	r := b.refund(t, s, body)
	require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
	require.True(t, keelpay.ValidID("re_", r.str("id")))
	require.Equal(t, "refund", r.str("object"))
	require.Equal(t, "succeeded", r.str("status"))
	require.Equal(t, id, r.str("payment_intent"))
	require.EqualValues(t, 2500, r.Body["amount"], "always the whole amount")
	require.Equal(t, s.currency, r.str("currency"))
	require.Equal(t, "Returned within 30 days", r.str("reason"))
	require.Equal(t, map[string]any{"ticket": "T-1"}, r.Body["metadata"])
	require.EqualValues(t, 1, r.Body["attempts"])
	require.Nil(t, r.Body["last_error"])
	require.NotEmpty(t, r.str("succeeded_at"))

	got := b.do(t, req{method: "GET", path: "/v1/refunds/" + r.str("id"), key: s.sk})
	require.Equal(t, http.StatusOK, got.Status)
	require.Equal(t, r.Body, got.Body)
	require.Equal(t, r.str("id"), b.getIntent(t, s, id).str("refund"), "the intent links to its refund")

	again := b.refund(t, s, refundBody(id))
	requireError(t, again, http.StatusConflict, "refund_exists")
	require.Equal(t, r.str("id"), again.details()["refund"])
	require.Equal(t, 1, b.sandbox.Refunds(), "paid out once")
	events := b.events(t, s.id, keelpay.EventRefundSucceeded)
	require.Len(t, events, 1)
	require.Equal(t, r.str("id"), eventObject(events[0])["id"])
	require.Equal(t, "succeeded", eventObject(events[0])["status"])
}

func TestRefundValidation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.shop(t, "app_shop")
	id := b.paid(t, s, sandbox.CardVisa)
	tests := []struct {
		body        string
		field, code string
	}{
		{`{}`, "payment_intent", "missing_payment_intent"},
		{`{"payment_intent":5}`, "payment_intent", "invalid_payment_intent"},
		{`{"payment_intent":"pi_short"}`, "payment_intent", "invalid_payment_intent"},
		{`{"payment_intent":"` + id + `"}`, "reason", "invalid_reason"},
		{`{"payment_intent":"` + id + `","reason":""}`, "reason", "invalid_reason"},
		{`{"payment_intent":"` + id + `","reason":7}`, "reason", "invalid_reason"},
		{`{"payment_intent":"` + id + `","reason":"` + strings.Repeat("é", 151) + `"}`, "reason", "invalid_reason"},
		{`{"payment_intent":"` + id + `","reason":"line\nbreak"}`, "reason", "invalid_reason"},
		{`{"payment_intent":"` + id + `","reason":"tab\there"}`, "reason", "invalid_reason"},
		{`{"payment_intent":"` + id + `","reason":"ok","metadata":"x"}`, "metadata", "invalid_metadata"},
		{`{"payment_intent":"` + id + `","reason":"ok","metadata":{"k":1}}`, "metadata", "invalid_metadata"},
		{`{"payment_intent":"` + id + `","reason":"ok","metadata":{"[k]":"v"}}`, "metadata", "invalid_metadata"},
		// Unknown keys first, amount included: a refund is always whole.
		{`{"reason":"","amount":100}`, "amount", "unknown_field"},
		{`{"payment_intent":"` + id + `","reason":"ok","Reason":"x"}`, "Reason", "unknown_field"},
		{`{"payment_intent":"` + id + `","payment_intent":"` + id + `"}`, "payment_intent", "duplicate_field"},
	}
	for _, tc := range tests {
		requireInvalid(t, b.refund(t, s, tc.body), tc.field, tc.code)
	}
	// 150 characters is the most a reason may have.
	r := b.refund(t, s, map[string]any{"payment_intent": id, "reason": strings.Repeat("é", 150)})
	require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
	require.Zero(t, b.sandbox.Refunds()-1)
}

func TestRefundNotFoundAndNotRefundable(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.shop(t, "app_shop")
	other := b.shop(t, "app_other")
	id := b.paid(t, s, sandbox.CardVisa)

	requireError(t, b.refund(t, s, refundBody("pi_AAAAAAAAAAAAAAAAAAAAAAAA")), http.StatusNotFound, "payment_intent_not_found")
	requireError(t, b.refund(t, other, refundBody(id)), http.StatusNotFound, "payment_intent_not_found")

	unpaid := b.createIntent(t, s, intentBody(s, 100)).str("id")
	r := b.refund(t, s, refundBody(unpaid))
	requireError(t, r, http.StatusConflict, "payment_intent_not_refundable")
	require.Equal(t, "not_succeeded", r.details()["reason"])

	noOrder := b.paid(t, s, sandbox.CardNoOrderID)
	r = b.refund(t, s, refundBody(noOrder))
	requireError(t, r, http.StatusConflict, "payment_intent_not_refundable")
	require.Equal(t, "order_unknown", r.details()["reason"])

	ref := b.refund(t, s, refundBody(id))
	require.Equal(t, http.StatusCreated, ref.Status)
	requireError(t, b.do(t, req{method: "GET", path: "/v1/refunds/re_AAAAAAAAAAAAAAAAAAAAAAAA", key: s.sk}), http.StatusNotFound, "refund_not_found")
	requireError(t, b.do(t, req{method: "GET", path: "/v1/refunds/nope", key: s.sk}), http.StatusNotFound, "refund_not_found")
	requireError(t, b.do(t, req{method: "GET", path: "/v1/refunds/" + ref.str("id"), key: other.sk}), http.StatusNotFound, "refund_not_found")
	requireError(t, b.do(t, req{method: "GET", path: "/v1/refunds/" + ref.str("id")}), http.StatusUnauthorized, "invalid_api_key")
}

func TestRefundRefusalsAndTheThreeSendLimit(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.shop(t, "app_shop")
	for _, tc := range []struct {
		card, code string
	}{
		{sandbox.CardRefundRejected, "refund_rejected"},
		{sandbox.CardRefundOrderNotFound, "order_not_found"},
		{sandbox.CardRefundProviderError, "provider_error"},
	} {
		id := b.paid(t, s, tc.card)
		for send := 1; send <= 3; send++ {
			r := b.refund(t, s, refundBody(id))
			want := http.StatusOK
			if send == 1 {
				want = http.StatusCreated
			}
			require.Equal(t, want, r.Status, "%s send %d: %s", tc.card, send, r.Raw)
			require.Equal(t, "failed", r.str("status"))
			require.EqualValues(t, send, r.Body["attempts"])
			le := r.Body["last_error"].(map[string]any)
			require.Equal(t, tc.code, le["code"])
			require.NotEmpty(t, le["message"])
			if tc.code == "refund_rejected" {
				require.Equal(t, "Refund declined by issuer.", le["message"], "the provider's own text")
			}
		}
		r := b.refund(t, s, refundBody(id))
		requireError(t, r, http.StatusConflict, "payment_intent_not_refundable")
		require.Equal(t, "attempts_exhausted", r.details()["reason"])
	}
	failed := b.events(t, s.id, keelpay.EventRefundFailed)
	require.Len(t, failed, 9, "one refund.failed for each refused send")
	for _, e := range failed {
		require.NotNil(t, eventObject(e)["last_error"])
	}
	require.Empty(t, b.events(t, s.id, keelpay.EventRefundSucceeded))
	require.Zero(t, b.sandbox.Refunds(), "nothing was paid out")
}

func TestRefundUnknownOutcome(t *testing.T) {
	t.Parallel()
	for _, resolveBy := range []string{"reconciler", "sending again after 3 minutes"} {
		t.Run(resolveBy, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			s := b.shop(t, "app_shop")
			id := b.paid(t, s, sandbox.CardRefundOutcomeUnknown)
			r := b.refund(t, s, refundBody(id))
			require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
			require.Equal(t, "pending", r.str("status"))
			require.Equal(t, "outcome_unknown", r.Body["last_error"].(map[string]any)["code"])
			refundID := r.str("id")

			again := b.refund(t, s, refundBody(id))
			requireError(t, again, http.StatusConflict, "refund_in_progress")
			require.Equal(t, "180", again.Header.Get("Retry-After"))
			b.clock.Advance(time.Minute)
			again = b.refund(t, s, refundBody(id))
			requireError(t, again, http.StatusConflict, "refund_in_progress")
			require.Equal(t, "120", again.Header.Get("Retry-After"))

			// At 1 minute the provider does not know yet (it resolves at 2).
			require.NoError(t, b.refunds.Reconcile(context.Background()))
			require.Equal(t, "pending", b.do(t, req{method: "GET", path: "/v1/refunds/" + refundID, key: s.sk}).str("status"))
			require.Empty(t, b.events(t, s.id, keelpay.EventRefundSucceeded))

			switch resolveBy {
			case "reconciler":
				b.clock.Advance(4 * time.Minute) // the schedule's 5-minute look-up
				require.NoError(t, b.refunds.Reconcile(context.Background()))
			default:
				b.clock.Advance(2 * time.Minute)
				r := b.refund(t, s, refundBody(id))
				require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
				require.EqualValues(t, 2, r.Body["attempts"])
			}
			got := b.do(t, req{method: "GET", path: "/v1/refunds/" + refundID, key: s.sk})
			require.Equal(t, "succeeded", got.str("status"), "%s", got.Raw)
			require.Len(t, b.events(t, s.id, keelpay.EventRefundSucceeded), 1)
			require.NoError(t, b.refunds.Reconcile(context.Background()))
			b.clock.Advance(time.Hour)
			require.NoError(t, b.refunds.Reconcile(context.Background()))
			require.Len(t, b.events(t, s.id, keelpay.EventRefundSucceeded), 1, "sent once")
			require.Equal(t, 1, b.sandbox.Refunds(), "paid out once")
		})
	}
}

func TestRefundProviderUnavailableStoresNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.shop(t, "app_shop")
	id := b.paid(t, s, sandbox.CardVisa)

	b.sandbox.SetUnavailable(true)
	r := b.refund(t, s, refundBody(id))
	requireError(t, r, http.StatusServiceUnavailable, "provider_api_unavailable")
	require.NotEmpty(t, r.Header.Get("Retry-After"))
	b.sandbox.SetUnavailable(false)
	b.sandbox.SetAccessPending(true)
	r = b.refund(t, s, refundBody(id))
	requireError(t, r, http.StatusServiceUnavailable, "platform_access_pending")
	require.Equal(t, "60", r.Header.Get("Retry-After"))
	b.sandbox.SetAccessPending(false)

	require.Nil(t, b.getIntent(t, s, id).Body["refund"], "no refund was kept")
	r = b.refund(t, s, refundBody(id))
	require.Equal(t, http.StatusCreated, r.Status, "the next POST sends it, as a first send: %s", r.Raw)
	require.EqualValues(t, 1, r.Body["attempts"])

	// A repeated send the provider does not take leaves the refund as it was.
	rejected := b.paid(t, s, sandbox.CardRefundRejected)
	first := b.refund(t, s, refundBody(rejected))
	require.Equal(t, "failed", first.str("status"))
	b.sandbox.SetUnavailable(true)
	requireError(t, b.refund(t, s, refundBody(rejected)), http.StatusServiceUnavailable, "provider_api_unavailable")
	b.sandbox.SetUnavailable(false)
	got := b.do(t, req{method: "GET", path: "/v1/refunds/" + first.str("id"), key: s.sk})
	require.Equal(t, first.Body, got.Body)
}

func TestConcurrentRefundsSendOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.shop(t, "app_shop")
	id := b.paid(t, s, sandbox.CardVisa)
	results := make([]*response, 10)
	var wg sync.WaitGroup
	for i := range results {
		wg.Go(func() { results[i] = b.refund(t, s, refundBody(id)) })
	}
	wg.Wait()
	created := 0
	for _, r := range results {
		switch r.Status {
		case http.StatusCreated:
			created++
		default:
			// The others arrive while it is being sent, or after it succeeded.
			require.Contains(t, []string{"refund_in_progress", "refund_exists"}, r.errCode(), "%s", r.Raw)
		}
	}
	require.Equal(t, 1, created)
	require.Equal(t, 1, b.sandbox.Refunds())
	require.Len(t, b.events(t, s.id, keelpay.EventRefundSucceeded), 1)
}

// crashAfterRefund pays out at the provider, then "kills the process"
// before the service can commit the outcome.
type crashAfterRefund struct {
	provider.Provider
}

type crash struct{}

func (c crashAfterRefund) Refund(ctx context.Context, r provider.RefundRequest) (*provider.RefundResult, error) {
	if _, err := c.Provider.Refund(ctx, r); err != nil {
		return nil, err
	}
	panic(crash{})
}

func TestRefundCrashBetweenPayoutAndCommitPaysOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.shop(t, "app_shop")
	id := b.paid(t, s, sandbox.CardVisa)
	st, err := b.db.StoreGetByID(context.Background(), s.id)
	require.NoError(t, err)

	// The process that crashes: its own service on the same database.
	dying := mustNew(refunds.New(refunds.Config{Clock: b.clock, Provider: crashAfterRefund{b.sandbox}, Storage: b.db, Logger: discardLogger()}))
	require.PanicsWithValue(t, crash{}, func() {
		_, _ = dying.Send(context.Background(), st, refunds.Params{PaymentIntent: id, Reason: "crash"})
	})
	require.Equal(t, 1, b.sandbox.Refunds(), "the provider paid out")
	pending := b.do(t, req{method: "GET", path: "/v1/payment_intents/" + id, key: s.sk}).str("refund")
	r := b.do(t, req{method: "GET", path: "/v1/refunds/" + pending, key: s.sk})
	require.Equal(t, "pending", r.str("status"), "the send was recorded before the call")

	// After the restart, the reconciler finishes it from the provider's
	// record of the attempt.
	b.clock.Advance(time.Minute)
	require.NoError(t, b.refunds.Reconcile(context.Background()))
	r = b.do(t, req{method: "GET", path: "/v1/refunds/" + pending, key: s.sk})
	require.Equal(t, "succeeded", r.str("status"))
	require.Equal(t, 1, b.sandbox.Refunds(), "one payout")
	require.Len(t, b.events(t, s.id, keelpay.EventRefundSucceeded), 1)
}

func TestRefundSentByTheReconcilerWhenTheProcessDiedBeforeTheCall(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t)
	s := b.shop(t, "app_shop")
	id := b.paid(t, s, sandbox.CardVisa)
	st, err := b.db.StoreGetByID(ctx, s.id)
	require.NoError(t, err)
	dying := mustNew(refunds.New(refunds.Config{Clock: b.clock, Provider: crashBeforeRefund{b.sandbox}, Storage: b.db, Logger: discardLogger()}))
	require.PanicsWithValue(t, crash{}, func() {
		_, _ = dying.Send(ctx, st, refunds.Params{PaymentIntent: id, Reason: "crash"})
	})
	require.Zero(t, b.sandbox.Refunds())
	b.clock.Advance(time.Minute)
	require.NoError(t, b.refunds.Reconcile(ctx))
	require.Equal(t, 1, b.sandbox.Refunds(), "sent now, with the recorded attempt id")
	require.Len(t, b.events(t, s.id, keelpay.EventRefundSucceeded), 1)
}

type crashBeforeRefund struct {
	provider.Provider
}

func (crashBeforeRefund) Refund(context.Context, provider.RefundRequest) (*provider.RefundResult, error) {
	panic(crash{})
}

// flakyRefunds refuses the first refund attempt it sees with
// provider_error, as a provider with a passing fault would, and passes
// every other attempt through.
type flakyRefunds struct {
	provider.Provider
	mu       sync.Mutex
	attempts []string
}

func (f *flakyRefunds) Refund(ctx context.Context, r provider.RefundRequest) (*provider.RefundResult, error) {
	f.mu.Lock()
	first := len(f.attempts) == 0 || f.attempts[0] == r.AttemptID
	f.attempts = append(f.attempts, r.AttemptID)
	f.mu.Unlock()
	if first {
		return &provider.RefundResult{Status: provider.RefundFailed,
			Failure: &provider.Failure{Code: provider.FailureProviderError, Message: "upstream hiccup"}}, nil
	}
	return f.Provider.Refund(ctx, r)
}

func TestRefundSentAgainAfterARefusalIsANewAttempt(t *testing.T) {
	t.Parallel()
	flaky := &flakyRefunds{}
	b := setup(t, func(o *options) {
		o.wrap = func(p provider.Provider) provider.Provider { flaky.Provider = p; return flaky }
	})
	s := b.shop(t, "app_shop")
	id := b.paid(t, s, sandbox.CardVisa)
	r := b.refund(t, s, refundBody(id))
	require.Equal(t, "failed", r.str("status"))
	require.Equal(t, "provider_error", r.Body["last_error"].(map[string]any)["code"])
	// The refusal was certain, so the next send is a new attempt: repeating
	// the refused attempt id would only replay the refusal.
	r = b.refund(t, s, refundBody(id))
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
	require.Equal(t, "succeeded", r.str("status"))
	require.Len(t, flaky.attempts, 2)
	require.NotEqual(t, flaky.attempts[0], flaky.attempts[1])
	require.Equal(t, 1, b.sandbox.Refunds())
}

// TestEveryEventTypeCarriesNoPersonalData completes the events test of
// payments_privacy_test.go with the types it does not produce: both refund
// events and webhook.test come from flows whose intent is full of personal
// data, and every stored event body of every type is checked.
func TestEveryEventTypeCarriesNoPersonalData(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.shop(t, "app_shop")
	billing := map[string]any{"country": "DE", "state": state, "postal_code": postal}
	pay := func(card string) string {
		body := intentBody(s, 1000)
		body["billing"] = billing
		r := b.confirmNew(t, s, b.createIntent(t, s, body), card, map[string]any{"billing": billing})
		requireStatus(t, r, http.StatusOK, keelpay.IntentSucceeded)
		return r.str("id")
	}
	session := b.session(t, s)
	require.Equal(t, http.StatusCreated, b.capture(t, s, session, sandbox.CardVisa).Status)
	require.Equal(t, http.StatusCreated, b.refund(t, s, refundBody(pay(sandbox.CardVisa))).Status)
	require.Equal(t, http.StatusCreated, b.refund(t, s, refundBody(pay(sandbox.CardRefundRejected))).Status)
	requireStatus(t, b.confirmNew(t, s, b.createIntent(t, s, intentBody(s, 100)), sandbox.CardDeclined, nil), http.StatusOK, keelpay.IntentRequiresPaymentMethod)
	require.Equal(t, http.StatusOK, b.do(t, req{method: "POST", path: "/v1/payment_intents/" + b.createIntent(t, s, intentBody(s, 100)).str("id") + "/cancel", key: s.sk}).Status)
	require.Equal(t, http.StatusAccepted, b.do(t, req{method: "POST", path: "/v1/webhooks/test", key: s.sk}).Status)

	seen := map[keelpay.EventType]bool{}
	p := storageListAll(s.id)
	for {
		events, more, err := b.db.EventList(context.Background(), p)
		require.NoError(t, err)
		for _, e := range events {
			seen[e.Type] = true
			requireNoPersonalData(t, e.Body)
		}
		if !more {
			break
		}
		p.StartingAfter = events[len(events)-1].ID
	}
	for _, typ := range keelpay.EventTypes {
		require.True(t, seen[typ], "no %s event was produced", typ)
	}
}

// TestRefundThatFailsAfterItSucceeded: the provider reports a refund
// succeeded and, later, failed (Stripe's refund.failed; the sandbox's
// CardRefundFailsLater). Its notification makes the refund failed with the
// provider's message and a refund.failed event, and the refund can be sent
// again, as a new attempt.
func TestRefundThatFailsAfterItSucceeded(t *testing.T) {
	t.Parallel()
	eachDB(t, testRefundThatFailsAfterItSucceeded)
}

func testRefundThatFailsAfterItSucceeded(t *testing.T, b *bundle) {
	s := b.shop(t, "app_shop")
	id := b.paid(t, s, sandbox.CardRefundFailsLater)
	ctx := context.Background()

	r := b.refund(t, s, refundBody(id))
	require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
	require.Equal(t, "succeeded", r.str("status"))
	refundID := r.str("id")
	first, err := b.db.RefundGet(ctx, s.id, refundID)
	require.NoError(t, err)
	require.Len(t, b.events(t, s.id, keelpay.EventRefundSucceeded), 1)

	// Nothing changes before the provider's refund fails.
	b.clock.Advance(time.Minute)
	require.NoError(t, b.sandbox.Settle(ctx))
	require.Equal(t, "succeeded", b.do(t, req{method: "GET", path: "/v1/refunds/" + refundID, key: s.sk}).str("status"))

	// The provider's refund fails; its notification reaches the service.
	b.clock.Advance(time.Minute)
	require.NoError(t, b.sandbox.Settle(ctx))
	got := b.do(t, req{method: "GET", path: "/v1/refunds/" + refundID, key: s.sk})
	require.Equal(t, http.StatusOK, got.Status)
	require.Equal(t, "failed", got.str("status"), "%s", got.Raw)
	le := got.Body["last_error"].(map[string]any)
	require.Equal(t, "refund_rejected", le["code"])
	require.Equal(t, "The refund failed: the customer's bank returned it.", le["message"], "the provider's own text")
	require.Nil(t, got.Body["succeeded_at"], "%s", got.Raw)
	require.EqualValues(t, 1, got.Body["attempts"])
	failed := b.events(t, s.id, keelpay.EventRefundFailed)
	require.Len(t, failed, 1)
	require.Equal(t, refundID, eventObject(failed[0])["id"])
	require.Equal(t, "failed", eventObject(failed[0])["status"])
	require.Zero(t, b.sandbox.Refunds(), "no money stayed returned")

	// A second notification, and the reconciler, change nothing more.
	store, err := b.db.StoreGetByID(ctx, s.id)
	require.NoError(t, err)
	b.refunds.NotifyRefund(ctx, store.MerchantID, first.AttemptID)
	require.NoError(t, b.refunds.Reconcile(ctx))
	require.Len(t, b.events(t, s.id, keelpay.EventRefundFailed), 1)

	// Sent again: a new attempt, which pays out.
	again := b.refund(t, s, refundBody(id))
	require.Equal(t, http.StatusOK, again.Status, "%s", again.Raw)
	require.Equal(t, refundID, again.str("id"))
	require.Equal(t, "succeeded", again.str("status"), "%s", again.Raw)
	require.EqualValues(t, 2, again.Body["attempts"])
	second, err := b.db.RefundGet(ctx, s.id, refundID)
	require.NoError(t, err)
	require.NotEqual(t, first.AttemptID, second.AttemptID, "a new attempt id")
	require.Equal(t, 1, b.sandbox.Refunds())
	require.Len(t, b.events(t, s.id, keelpay.EventRefundSucceeded), 2)
}
