package httpapi_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/payments"
	"github.com/keelpay/keelpay/provider"
	"github.com/keelpay/keelpay/provider/sandbox"
	"github.com/keelpay/keelpay/storage/postgres/postgrestest"
)

// voidedCharges returns the intent's voided_charges entries.
func voidedCharges(t *testing.T, r *response) []map[string]any {
	t.Helper()
	list, _ := r.Body["voided_charges"].([]any)
	out := make([]map[string]any, len(list))
	for i, v := range list {
		out[i] = v.(map[string]any)
		// The schema's fields (docs/openapi.json, VoidedCharge), no other.
		require.ElementsMatch(t, []string{"attempt", "amount", "currency", "status", "voided_at"}, keys(out[i]), "%s", r.Raw)
	}
	return out
}

// TestMismatchWhoseVoidIsPendingStaysCharged: the provider charged another
// amount and its void stays pending for a while (the sandbox's
// CardAmountMismatchVoidPending). While the money is still charged the
// intent is not canceled: its attempt stays open (processing) and says
// why; the reconciler voids again until the void holds, and only then is
// the intent canceled with amount_mismatch, listing the voided charge.
func TestMismatchWhoseVoidIsPendingStaysCharged(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.shop(t, "app_shop")
	ctx := context.Background()
	intent := b.createIntent(t, s, intentBody(s, 2500))
	id := intent.str("id")
	r := b.confirmNew(t, s, intent, sandbox.CardAmountMismatchVoidPending, nil)
	requireStatus(t, r, http.StatusOK, keelpay.IntentProcessing)
	require.Equal(t, "amount_mismatch", lastError(r)["code"], "%s", r.Raw)
	require.Contains(t, lastError(r)["message"], "still held")
	require.NotContains(t, r.Body, "voided_charges")
	require.Zero(t, b.sandbox.Voids())
	requireError(t, b.do(t, req{method: "POST", path: "/v1/payment_intents/" + id + "/cancel", key: s.sk}),
		http.StatusConflict, "payment_intent_not_cancelable")

	worker := mustNew(payments.New(payments.Config{Clock: b.clock, Provider: hideNotifier{b.sandbox}, Storage: b.db}))
	b.clock.Advance(time.Minute)
	require.NoError(t, worker.Reconcile(ctx))
	got := b.getIntent(t, s, id)
	require.Equal(t, "processing", got.str("status"), "the void is still pending: %s", got.Raw)
	require.Equal(t, "amount_mismatch", lastError(got)["code"])

	b.clock.Advance(4 * time.Minute) // the 5-minute look-up; the void held at 2
	require.NoError(t, worker.Reconcile(ctx))
	got = b.getIntent(t, s, id)
	require.Equal(t, "canceled", got.str("status"), "%s", got.Raw)
	require.Equal(t, "voided", got.str("cancellation_reason"))
	require.Equal(t, "amount_mismatch", lastError(got)["code"])
	v := voidedCharges(t, got)
	require.Len(t, v, 1)
	require.Equal(t, "voided", v[0]["status"])
	require.EqualValues(t, 2501, v[0]["amount"], "what was charged")
	require.Equal(t, b.clock.Now().UTC().Format(time.RFC3339), v[0]["voided_at"])
	require.Equal(t, 1, b.sandbox.Voids())
	b.requireOneEvent(t, s, keelpay.EventPaymentIntentCanceled, id)
	require.Empty(t, b.events(t, s.id, keelpay.EventPaymentIntentPaymentFailed))
}

// voidSwitch makes every Void fail (the provider unavailable) while fail is
// set.
type voidSwitch struct {
	provider.Provider
	fail atomic.Bool
}

func (p *voidSwitch) Void(ctx context.Context, merchantID, attemptID string) error {
	if p.fail.Load() {
		return &provider.Error{Kind: provider.KindUnavailable, Message: "voids are off"}
	}
	return p.Provider.Void(ctx, merchantID, attemptID)
}

// TestVoidThatFailsLaterIsMadeAgain: a mismatch's void holds, the intent is
// canceled, and later the void fails at the provider (the sandbox's
// CardAmountMismatchVoidFailsLater): the money is charged again. The
// provider's notification with the voided attempt makes the service look
// it up and void again; while that does not hold, the intent lists the
// charge as charged, and the scheduled re-check voids it once the provider
// takes voids again.
func TestVoidThatFailsLaterIsMadeAgain(t *testing.T) {
	t.Parallel()
	for _, pg := range []bool{false, true} {
		name := map[bool]string{false: "SQLite", true: "PostgreSQL"}[pg]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			voids := &voidSwitch{}
			b := setup(t, func(o *options) {
				o.wrap = func(p provider.Provider) provider.Provider { voids.Provider = p; return voids }
				if pg {
					o.db = postgrestest.NewDB(t)
				}
			})
			testVoidThatFailsLaterIsMadeAgain(t, b, voids)
		})
	}
}

func testVoidThatFailsLaterIsMadeAgain(t *testing.T, b *bundle, voids *voidSwitch) {
	s := b.shop(t, "app_shop")
	ctx := context.Background()
	intent := b.createIntent(t, s, intentBody(s, 2500))
	id := intent.str("id")
	r := b.confirmNew(t, s, intent, sandbox.CardAmountMismatchVoidFailsLater, nil)
	requireStatus(t, r, http.StatusOK, keelpay.IntentCanceled)
	require.Equal(t, "amount_mismatch", lastError(r)["code"])
	v := voidedCharges(t, r)
	require.Len(t, v, 1, "%s", r.Raw)
	require.Equal(t, "voided", v[0]["status"])
	attempt := v[0]["attempt"].(string)
	require.Equal(t, 1, b.sandbox.Voids())

	// The void fails at the provider, which notifies; voiding again does
	// not hold yet.
	voids.fail.Store(true)
	b.clock.Advance(sandbox.ResolveAfter)
	require.NoError(t, b.sandbox.Settle(ctx))
	require.Zero(t, b.sandbox.Voids(), "the money is charged again")
	got := b.getIntent(t, s, id)
	require.Equal(t, "canceled", got.str("status"))
	v = voidedCharges(t, got)
	require.Len(t, v, 1, "%s", got.Raw)
	require.Equal(t, attempt, v[0]["attempt"])
	require.Equal(t, "charged", v[0]["status"], "the intent says the money is still charged: %s", got.Raw)
	require.Nil(t, v[0]["voided_at"])
	require.EqualValues(t, 2501, v[0]["amount"])

	// The re-check on the schedule (5 minutes after the cancel) voids it
	// again, and this void holds.
	voids.fail.Store(false)
	worker := mustNew(payments.New(payments.Config{Clock: b.clock, Provider: hideNotifier{voids}, Storage: b.db}))
	b.clock.Advance(3 * time.Minute)
	require.NoError(t, worker.Reconcile(ctx))
	require.Equal(t, 1, b.sandbox.Voids())
	got = b.getIntent(t, s, id)
	v = voidedCharges(t, got)
	require.Len(t, v, 1, "%s", got.Raw)
	require.Equal(t, "voided", v[0]["status"])
	require.Equal(t, b.clock.Now().UTC().Format(time.RFC3339), v[0]["voided_at"])
	require.Equal(t, 1, b.sandbox.ChargeCount(attempt), "charged once")
	b.requireOneEvent(t, s, keelpay.EventPaymentIntentCanceled, id)

	// A day on, the checks end; nothing more moves.
	b.clock.Advance(48 * time.Hour)
	require.NoError(t, worker.Reconcile(ctx))
	require.NoError(t, worker.Reconcile(ctx))
	require.Equal(t, 1, b.sandbox.Voids())
}

// TestLateChargeWhoseVoidDoesNotHoldIsNotRecordedVoided: the late-charge
// path (a charge that reached the provider after its attempt was closed as
// never charged) under the same rule: while the void does not hold, the
// intent lists the charge as still charged, and as voided only once the
// void holds.
func TestLateChargeWhoseVoidDoesNotHoldIsNotRecordedVoided(t *testing.T) {
	t.Parallel()
	held := newHeldCharge()
	voids := &voidSwitch{}
	b := setup(t, func(o *options) {
		o.wrap = func(p provider.Provider) provider.Provider {
			voids.Provider = p
			held.Provider = voids
			return held
		}
	})
	s := b.shop(t, "app_shop")
	card := b.saveCard(t, s, sandbox.CardVisa)
	id := pi(t, b.createIntent(t, s, intentBody(s, 4200)))
	ctx := context.Background()
	confirm := func(key string) *response {
		return b.do(t, req{method: "POST", path: "/v1/payment_intents/" + id + "/confirm", key: s.sk,
			body: map[string]any{"payment_method": card}, header: map[string]string{"Idempotency-Key": key}})
	}
	first := make(chan *response, 1)
	go func() { first <- confirm("order-42") }()
	attempt := <-held.arrived
	b.clock.Advance(61 * time.Second)
	retry := confirm("order-42")
	requireStatus(t, retry, http.StatusOK, keelpay.IntentRequiresPaymentMethod)
	close(held.release)
	<-first
	require.Equal(t, 1, b.sandbox.ChargeCount(attempt))

	worker := mustNew(payments.New(payments.Config{Clock: b.clock, Provider: hideNotifier{voids}, Storage: b.db}))
	voids.fail.Store(true)
	b.clock.Advance(time.Minute)
	require.NoError(t, worker.Reconcile(ctx))
	require.Zero(t, b.sandbox.Voids())
	v := voidedCharges(t, b.getIntent(t, s, id))
	require.Len(t, v, 1)
	require.Equal(t, attempt, v[0]["attempt"])
	require.Equal(t, "charged", v[0]["status"], "not recorded as voided while the money is charged")
	require.Nil(t, v[0]["voided_at"])

	voids.fail.Store(false)
	b.clock.Advance(5 * time.Minute)
	require.NoError(t, worker.Reconcile(ctx))
	require.Equal(t, 1, b.sandbox.Stats().VoidedByAttempt[attempt])
	v = voidedCharges(t, b.getIntent(t, s, id))
	require.Len(t, v, 1)
	require.Equal(t, "voided", v[0]["status"])
	require.Equal(t, b.clock.Now().UTC().Format(time.RFC3339), v[0]["voided_at"])
}

// TestVoidThatFailsLaterIsMadeAgainAtTheNotification: the same with a
// provider that takes the void made again at once: the notification about
// the voided attempt voids it again, and the intent's entry says when.
func TestVoidThatFailsLaterIsMadeAgainAtTheNotification(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.shop(t, "app_shop")
	intent := b.createIntent(t, s, intentBody(s, 2500))
	id := intent.str("id")
	r := b.confirmNew(t, s, intent, sandbox.CardAmountMismatchVoidFailsLater, nil)
	requireStatus(t, r, http.StatusOK, keelpay.IntentCanceled)
	first := voidedCharges(t, r)[0]["voided_at"]

	b.clock.Advance(sandbox.ResolveAfter)
	require.NoError(t, b.sandbox.Settle(context.Background()))
	got := b.getIntent(t, s, id)
	v := voidedCharges(t, got)
	require.Len(t, v, 1, "%s", got.Raw)
	require.Equal(t, "voided", v[0]["status"])
	require.Equal(t, b.clock.Now().UTC().Format(time.RFC3339), v[0]["voided_at"], "voided again when the provider told")
	require.NotEqual(t, first, v[0]["voided_at"])
	require.Equal(t, 1, b.sandbox.Voids(), "the money is back")
	b.requireOneEvent(t, s, keelpay.EventPaymentIntentCanceled, id)
}
