package httpapi_test

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/payments"
	"github.com/keelpay/keelpay/provider"
	"github.com/keelpay/keelpay/storage"
)

// errUnreachable is what a database that died (or is failing over to a
// standby) answers: nothing.
var errUnreachable = errors.New("dial tcp: connection refused")

// outage stands between keelpay and its database: while down, every
// transaction and every Idempotency-Key call fails as on a database that
// does not answer. The payments service and httpapi share one, so the
// database goes away for both at once.
type outage struct {
	storage.Storage
	down atomic.Bool
}

func (o *outage) err() error {
	if o.down.Load() {
		return errUnreachable
	}
	return nil
}

func (o *outage) WithTx(ctx context.Context, fn func(context.Context, storage.Executor) error) error {
	if err := o.err(); err != nil {
		return err
	}
	return o.Storage.WithTx(ctx, fn)
}

func (o *outage) Commit(ctx context.Context, b *storage.Batch) error {
	if err := o.err(); err != nil {
		return err
	}
	return o.Storage.Commit(ctx, b)
}

func (o *outage) PaymentIntentUpdate(ctx context.Context, pi *keelpay.PaymentIntent, version int64) error {
	if err := o.err(); err != nil {
		return err
	}
	return o.Storage.PaymentIntentUpdate(ctx, pi, version)
}

func (o *outage) IdempotencyBegin(ctx context.Context, p storage.IdempotencyBeginParams) (*storage.IdempotencyRecord, bool, error) {
	if err := o.err(); err != nil {
		return nil, false, err
	}
	return o.Storage.IdempotencyBegin(ctx, p)
}

func (o *outage) IdempotencyGet(ctx context.Context, storeID, key string) (*storage.IdempotencyRecord, error) {
	if err := o.err(); err != nil {
		return nil, err
	}
	return o.Storage.IdempotencyGet(ctx, storeID, key)
}

func (o *outage) IdempotencyComplete(ctx context.Context, p storage.IdempotencyCompleteParams) error {
	if err := o.err(); err != nil {
		return err
	}
	return o.Storage.IdempotencyComplete(ctx, p)
}

func (o *outage) IdempotencyRelease(ctx context.Context, storeID, key, token string) error {
	if err := o.err(); err != nil {
		return err
	}
	return o.Storage.IdempotencyRelease(ctx, storeID, key, token)
}

// dbDiesInCharge takes the database away while a charge is at the
// provider, once armed: the request that made it cannot record the
// outcome, nor free its key.
type dbDiesInCharge struct {
	provider.Provider
	db    *outage
	armed atomic.Bool
}

func (d *dbDiesInCharge) Charge(ctx context.Context, r provider.ChargeRequest) (*provider.ChargeResult, error) {
	res, err := d.Provider.Charge(ctx, r)
	if d.armed.Swap(false) {
		d.db.down.Store(true)
	}
	return res, err
}

// TestKeyCutOffByTheDatabaseIsUsableOnceItIsBack: a confirm whose
// database went away while its charge was at the provider answers 500 and
// cannot free its key. Once the database answers again, the retry with
// the same key must run (and resume the charge, not make another) without
// waiting out the key's lock time-out: the service clock does not move in
// this test, so a key left locked would answer 409 idempotency_key_in_use
// for ever (the clock moves only past the time the charge could still
// be at the provider, which the payments service waits out before it
// resumes a confirm).
func TestKeyCutOffByTheDatabaseIsUsableOnceItIsBack(t *testing.T) {
	t.Parallel()
	db := &outage{}
	dies := &dbDiesInCharge{db: db}
	b := setup(t, func(o *options) {
		o.wrap = func(p provider.Provider) provider.Provider { dies.Provider = p; return dies }
		o.wrapStorage = func(s storage.Storage) storage.Storage { db.Storage = s; return db }
		o.wrapPayments = func(s storage.Storage) storage.Storage { return db }
	})
	s := b.shop(t, "app_shop")
	card := b.saveCard(t, s, "4242424242424242")
	pi := b.createIntent(t, s, intentBody(s, 2500)).str("id")
	rq := keyed("POST", "/v1/payment_intents/"+pi+"/confirm", s.sk, "confirm-"+pi, map[string]any{"payment_method": card})

	dies.armed.Store(true)
	first := b.do(t, rq)
	require.Equal(t, http.StatusInternalServerError, first.Status, "%s", first.Raw)
	require.True(t, db.down.Load(), "the database went away in the charge")

	// While the database is away, the key cannot be freed, and nothing
	// else can hold it.
	require.Equal(t, http.StatusInternalServerError, b.do(t, rq).Status)

	db.down.Store(false)
	// Past the time the charge could still be at the provider (a retry
	// before it is 409 idempotency_key_in_use by the payments service's
	// own rule), and well before the key's lock would lapse.
	b.clock.Advance(payments.CallTimeoutMax + time.Second)
	var last *response
	require.Eventually(t, func() bool {
		last = b.do(t, rq)
		return last.Status != http.StatusConflict
	}, 10*time.Second, 20*time.Millisecond, "the key is still held: %s", b.logs)
	require.Equal(t, http.StatusOK, last.Status, "the retry runs once the database is back: %s", last.Raw)
	require.Equal(t, string(keelpay.IntentSucceeded), last.str("status"))
	require.LessOrEqual(t, b.sandbox.ChargeCount(b.record(t, s, pi).AttemptID), 1, "the retry resumed the charge")
	requireReplay(t, last, b.do(t, rq))
}
