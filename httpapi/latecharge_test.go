package httpapi_test

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/payments"
	"github.com/keelpay/keelpay/provider"
	"github.com/keelpay/keelpay/provider/sandbox"
	"github.com/keelpay/keelpay/storage"
)

// heldCharge holds the first Charge on its way to the provider until
// release is closed, as a network that stopped forwarding would hold a
// request already sent: the provider sees it only when it is let go.
type heldCharge struct {
	provider.Provider
	once    sync.Once
	arrived chan string // the held charge's attempt id
	release chan struct{}
}

func newHeldCharge() *heldCharge {
	return &heldCharge{arrived: make(chan string, 1), release: make(chan struct{})}
}

func (p *heldCharge) Charge(ctx context.Context, r provider.ChargeRequest) (*provider.ChargeResult, error) {
	first := false
	p.once.Do(func() { first = true })
	if first {
		p.arrived <- r.AttemptID
		<-p.release
	}
	return p.Provider.Charge(ctx, r)
}

// TestLateChargeOfAClosedAttemptIsVoided is a confirm whose charge sits in
// a stalled network past every deadline. The client's retry with the same
// Idempotency-Key takes the key over once its lock lapsed and, the provider
// not knowing the attempt, closes it as provider_error. Then the held
// charge reaches the provider after all. The reconciler's look-ups of the
// closed attempt find the charge and void it, and the intent says so; the
// confirm the client makes next charges the buyer once.
func TestLateChargeOfAClosedAttemptIsVoided(t *testing.T) {
	t.Parallel()
	held := newHeldCharge()
	b := setup(t, func(o *options) {
		o.wrap = func(p provider.Provider) provider.Provider { held.Provider = p; return held }
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
	start := b.record(t, s, id)
	require.Equal(t, keelpay.IntentProcessing, start.Status)
	require.Equal(t, attempt, start.AttemptID)

	// While the first run holds the key, the retry waits.
	b.clock.Advance(30 * time.Second)
	requireError(t, confirm("order-42"), http.StatusConflict, "idempotency_key_in_use")

	// Past the key's lock and the attempt's reach: the retry takes the key
	// over and closes the attempt the provider does not know.
	b.clock.Advance(31 * time.Second)
	retry := confirm("order-42")
	requireStatus(t, retry, http.StatusOK, keelpay.IntentRequiresPaymentMethod)
	require.Equal(t, "provider_error", lastError(retry)["code"])
	b.requireOneEvent(t, s, keelpay.EventPaymentIntentPaymentFailed, id)

	// The held charge arrives: the provider charges the closed attempt.
	close(held.release)
	<-first
	require.Equal(t, 1, b.sandbox.ChargeCount(attempt))
	require.Zero(t, b.sandbox.Stats().VoidedByAttempt[attempt])
	got := b.getIntent(t, s, id)
	require.Equal(t, "requires_payment_method", got.str("status"), "%s", got.Raw)
	require.NotContains(t, got.Body, "voided_charges")

	// The reconciler looks the closed attempt up a minute after it was
	// closed, finds the charge and voids it.
	logs := &syncBuffer{}
	worker := mustNew(payments.New(payments.Config{Clock: b.clock, Logger: slog.New(slog.NewJSONHandler(logs, nil)),
		Provider: hideNotifier{b.sandbox}, Storage: b.db}))

	require.NoError(t, worker.Reconcile(ctx))
	require.Zero(t, b.sandbox.Stats().Voids, "not due before a minute")
	b.clock.Advance(time.Minute)
	require.NoError(t, worker.Reconcile(ctx))
	require.Equal(t, 1, b.sandbox.Stats().VoidedByAttempt[attempt])
	got = b.getIntent(t, s, id)
	require.Equal(t, "requires_payment_method", got.str("status"), "%s", got.Raw)
	voided, _ := got.Body["voided_charges"].([]any)
	require.Len(t, voided, 1, "%s", got.Raw)
	v := voided[0].(map[string]any)
	require.Equal(t, attempt, v["attempt"])
	require.EqualValues(t, 4200, v["amount"])
	require.Equal(t, "EUR", v["currency"])
	require.Equal(t, b.clock.Now().UTC().Format(time.RFC3339), v["voided_at"])
	require.Contains(t, logs.String(), `"level":"WARN","msg":"a charge arrived for an attempt closed as never charged; it was voided"`)
	require.Contains(t, logs.String(), `"attempt":"`+attempt+`"`)

	// The documented retry after provider_error: a new confirm charges
	// once, and the buyer pays once in all.
	again := confirm("order-42-again")
	requireStatus(t, again, http.StatusOK, keelpay.IntentSucceeded)
	st := b.sandbox.Stats()
	require.Equal(t, 2, st.Charges)
	require.Equal(t, 1, st.Voids)

	// Nothing more: the check ended with the void.
	b.clock.Advance(48 * time.Hour)
	require.NoError(t, worker.Reconcile(ctx))
	require.Equal(t, 1, b.sandbox.Stats().Voids)
	require.Len(t, b.getIntent(t, s, id).Body["voided_charges"], 1)
}

// TestClosedAttemptIsLookedUpForADay: an attempt closed as never charged
// whose charge never comes is looked up on the reconcile schedule for a
// day, then no more; nothing is voided.
func TestClosedAttemptIsLookedUpForADay(t *testing.T) {
	t.Parallel()
	lookups := &countedLookups{}
	b := setup(t, func(o *options) {
		o.wrap = func(p provider.Provider) provider.Provider { lookups.Provider = p; return &crashing{Provider: lookups} }
	})
	s := b.shop(t, "app_shop")
	intent := b.createIntent(t, s, intentBody(s, 3000))
	id := pi(t, intent)
	ctx := context.Background()
	requireError(t, b.confirmNew(t, s, intent, sandbox.CardVisa, nil), http.StatusInternalServerError, "internal_error")

	worker := mustNew(payments.New(payments.Config{Clock: b.clock, Logger: discardLogger(), Provider: lookups, Storage: b.db}))
	b.clock.Advance(payments.ReachWindow)
	require.NoError(t, worker.Reconcile(ctx))
	require.Equal(t, "provider_error", lastError(b.getIntent(t, s, id))["code"])
	require.Equal(t, 1, lookups.n())

	// 1, 5, 15 minutes and an hour after the close, then every six hours
	// from the hour, and once at the end of the day.
	for _, step := range []time.Duration{time.Minute, 4 * time.Minute, 10 * time.Minute, 45 * time.Minute,
		6 * time.Hour, 6 * time.Hour, 6 * time.Hour, 5 * time.Hour} {
		before := lookups.n()
		b.clock.Advance(step - time.Second)
		require.NoError(t, worker.Reconcile(ctx))
		require.Equal(t, before, lookups.n(), "not due %v early", time.Second)
		b.clock.Advance(time.Second)
		require.NoError(t, worker.Reconcile(ctx))
		require.Equal(t, before+1, lookups.n(), "due after %v", step)
	}
	b.clock.Advance(30 * 24 * time.Hour)
	require.NoError(t, worker.Reconcile(ctx))
	require.Equal(t, 9, lookups.n(), "no look-up after the day")
	require.Zero(t, b.sandbox.Stats().Voids)
	require.NotContains(t, b.getIntent(t, s, id).Body, "voided_charges")
}

// countedLookups counts LookupCharge calls.
type countedLookups struct {
	provider.Provider
	mu      sync.Mutex
	lookups int
}

func (p *countedLookups) LookupCharge(ctx context.Context, merchantID, attemptID string) (*provider.ChargeResult, error) {
	p.mu.Lock()
	p.lookups++
	p.mu.Unlock()
	return p.Provider.LookupCharge(ctx, merchantID, attemptID)
}

func (p *countedLookups) n() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lookups
}

// pauseAfterCommit pauses the caller of the next transaction or batch it commits,
// once armed, until release is closed: a process stopped (SIGSTOP) right
// after its attempt was recorded.
type pauseAfterCommit struct {
	storage.Storage
	armed   atomic.Bool
	paused  chan struct{}
	release chan struct{}
}

func (p *pauseAfterCommit) WithTx(ctx context.Context, fn func(ctx context.Context, tx storage.Executor) error) error {
	err := p.Storage.WithTx(ctx, fn)
	p.pause(err)
	return err
}

func (p *pauseAfterCommit) Commit(ctx context.Context, b *storage.Batch) error {
	err := p.Storage.Commit(ctx, b)
	p.pause(err)
	return err
}

func (p *pauseAfterCommit) pause(err error) {
	if err == nil && p.armed.CompareAndSwap(true, false) {
		close(p.paused)
		<-p.release
	}
}

// TestConfirmPausedPastItsSendWindowDoesNotCharge pauses a confirm right
// after it recorded its attempt, for longer than the send window. When it
// resumes it does not call the provider: it answers with a look-up, an
// unknown outcome while the attempt could still reach the provider, and
// the reconciler closes the attempt as never charged afterwards. Nothing
// is charged, and a new confirm charges once.
func TestConfirmPausedPastItsSendWindowDoesNotCharge(t *testing.T) {
	t.Parallel()
	pause := &pauseAfterCommit{paused: make(chan struct{}), release: make(chan struct{})}
	b := setup(t, func(o *options) {
		o.wrapPayments = func(db storage.Storage) storage.Storage { pause.Storage = db; return pause }
	})
	s := b.shop(t, "app_shop")
	intent := b.createIntent(t, s, intentBody(s, 2500))
	id := pi(t, intent)
	ctx := context.Background()

	pause.armed.Store(true)
	answer := make(chan *response, 1)
	go func() { answer <- b.confirmNew(t, s, intent, sandbox.CardVisa, nil) }()
	<-pause.paused
	rec := b.record(t, s, id)
	require.Equal(t, keelpay.IntentProcessing, rec.Status, "the attempt was recorded")
	b.clock.Advance(payments.SendWindow)
	close(pause.release)

	r := <-answer
	requireStatus(t, r, http.StatusOK, keelpay.IntentProcessing)
	require.Equal(t, "outcome_unknown", lastError(r)["code"])
	require.Zero(t, b.sandbox.ChargeCount(rec.AttemptID), "a run past its send window does not call the provider")
	require.Contains(t, b.logs.String(), "confirm resumed past its send window; the provider is not called")

	worker := b.worker(t)
	b.clock.Advance(payments.ReachWindow - payments.SendWindow)
	require.NoError(t, worker.Reconcile(ctx))
	got := b.getIntent(t, s, id)
	require.Equal(t, "requires_payment_method", got.str("status"), "%s", got.Raw)
	require.Equal(t, "provider_error", lastError(got)["code"])

	again := b.confirmNew(t, s, intent, sandbox.CardVisa, nil)
	requireStatus(t, again, http.StatusOK, keelpay.IntentSucceeded)
	b.clock.Advance(48 * time.Hour)
	require.NoError(t, worker.Reconcile(ctx))
	st := b.sandbox.Stats()
	require.Equal(t, 1, st.Charges)
	require.Zero(t, st.Voids)
	require.Zero(t, b.sandbox.ChargeCount(rec.AttemptID))
}
