package httpapi_test

import (
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/storage"
	"github.com/keelpay/keelpay/storage/postgres/postgrestest"
)

// An Idempotency-Key on a create or a confirm rides in the transactions
// of the work it guards: the key costs no commit of its own, and the
// answer is stored with the last change. These tests hold the adapters'
// transaction counts to that, and the guarantee to what it was when the
// key had a commit of its own: concurrent requests with one key do the
// work once.

// transactions returns the write transactions the bundle's database
// committed so far.
func (b *bundle) transactions(t *testing.T) int64 {
	t.Helper()
	s, ok := b.db.(interface{ Stats() storage.Stats })
	require.True(t, ok, "the adapter counts its transactions")
	return s.Stats().Transactions
}

// costs runs rq and returns its response and the transactions it
// committed. Nothing else runs meanwhile: the bundle's dispatcher and
// reconcilers are driven by the tests.
func (b *bundle) costs(t *testing.T, rq req) (*response, int64) {
	t.Helper()
	before := b.transactions(t)
	r := b.do(t, rq)
	return r, b.transactions(t) - before
}

func eachDB(t *testing.T, f func(t *testing.T, b *bundle), opts ...func(*options)) {
	t.Run("SQLite", func(t *testing.T) {
		t.Parallel()
		f(t, setup(t, opts...))
	})
	t.Run("PostgreSQL", func(t *testing.T) {
		t.Parallel()
		f(t, setup(t, append(opts, func(o *options) { o.db = postgrestest.NewDB(t) })...))
	})
}

// savedCardPayment sets up a store with a saved card and returns the body
// of an intent for it.
func (b *bundle) savedCardPayment(t *testing.T) (shop, map[string]any) {
	t.Helper()
	s := b.shop(t, "app_shop")
	body := intentBody(s, 2500)
	body["payment_method"] = b.saveCard(t, s, "4242424242424242")
	return s, body
}

func TestIdempotencyKeyCostsNoCommitOfItsOwn(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, b *bundle) {
		s, body := b.savedCardPayment(t)

		// Without a key: the intent; then the attempt, and the outcome
		// with its event.
		plain, n := b.costs(t, req{method: "POST", path: "/v1/payment_intents", key: s.sk, body: body})
		require.Equal(t, http.StatusCreated, plain.Status, "%s", plain.Raw)
		require.EqualValues(t, 1, n, "a create")
		r, n := b.costs(t, req{method: "POST", path: "/v1/payment_intents/" + plain.str("id") + "/confirm", key: s.sk})
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
		require.EqualValues(t, 2, n, "a confirm")

		// With a key: the same transactions, no more.
		create := keyed("POST", "/v1/payment_intents", s.sk, "create-1", body)
		created, n := b.costs(t, create)
		requireFresh(t, created, http.StatusCreated)
		require.EqualValues(t, 1, n, "a keyed create")
		confirm := keyed("POST", "/v1/payment_intents/"+created.str("id")+"/confirm", s.sk, "confirm-1", nil)
		confirmed, n := b.costs(t, confirm)
		requireFresh(t, confirmed, http.StatusOK)
		require.Equal(t, string(keelpay.IntentSucceeded), confirmed.str("status"))
		require.EqualValues(t, 2, n, "a keyed confirm")

		// The answers were stored with the work: a retry is a replay and
		// commits nothing.
		for _, rq := range []req{create, confirm} {
			again, n := b.costs(t, rq)
			requireReplay(t, map[string]*response{create.path: created, confirm.path: confirmed}[rq.path], again)
			require.Zero(t, n, "%s", rq.path)
		}
		session := keyed("POST", "/v1/card_sessions", s.sk, "session-1",
			map[string]any{"customer": customerJSON(), "page_origins": []string{"https://shop.example"}})
		opened, n := b.costs(t, session)
		requireFresh(t, opened, http.StatusCreated)
		require.EqualValues(t, 1, n, "a keyed card session")
		again, n := b.costs(t, session)
		requireReplay(t, opened, again)
		require.Zero(t, n)

		// An answer decided without a change is kept in one commit; one
		// rejected by validation is not kept at all.
		missing := keyed("POST", "/v1/payment_intents/"+keelpay.NewID(keelpay.PrefixPaymentIntent)+"/confirm", s.sk, "confirm-2", nil)
		notFound, n := b.costs(t, missing)
		requireError(t, notFound, http.StatusNotFound, "payment_intent_not_found")
		require.EqualValues(t, 1, n)
		again, n = b.costs(t, missing)
		requireReplay(t, notFound, again)
		require.Zero(t, n)
		bad, n := b.costs(t, keyed("POST", "/v1/payment_intents", s.sk, "create-2", map[string]any{"amount": -1}))
		require.Equal(t, http.StatusBadRequest, bad.Status)
		require.Zero(t, n)

		// The same key with another body is still refused.
		other := intentBody(s, 2600)
		requireError(t, b.do(t, keyed("POST", "/v1/payment_intents", s.sk, "create-1", other)),
			http.StatusUnprocessableEntity, "idempotency_key_reused")
	})
}

// TestConcurrentKeyedConfirmsChargeOnce: confirms with one key sent at
// once. Each takes the key in its attempt's transaction; exactly one
// does, and the others answer as retries: 409 idempotency_key_in_use
// while it runs, its answer once it finished. One charge, one intent.
func TestConcurrentKeyedConfirmsChargeOnce(t *testing.T) {
	t.Parallel()
	eachDB(t, concurrentKeyedConfirms)
}

// TestConcurrentKeyedConfirmsThroughAWrappingMiddleware: the same, with a
// middleware in front of the API that wraps the ResponseWriter in a type
// of its own (as logging and compression middleware do). The requests
// that find the key busy learn it from the service's error, which no
// writer carries: they still answer as retries.
func TestConcurrentKeyedConfirmsThroughAWrappingMiddleware(t *testing.T) {
	t.Parallel()
	wrapped := func(o *options) {
		o.wrapHandler = func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				next.ServeHTTP(&countingWriter{ResponseWriter: w}, r)
			})
		}
	}
	eachDB(t, concurrentKeyedConfirms, wrapped)
}

// countingWriter is a middleware's ResponseWriter: it counts the bytes
// written, and has no Unwrap.
type countingWriter struct {
	http.ResponseWriter
	n int
}

func (w *countingWriter) Write(p []byte) (int, error) {
	n, err := w.ResponseWriter.Write(p)
	w.n += n
	return n, err
}

func concurrentKeyedConfirms(t *testing.T, b *bundle) {
	{
		s, body := b.savedCardPayment(t)

		const n = 8
		run := func(rq req) []*response {
			out := make([]*response, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() { out[i] = b.do(t, rq) })
			}
			wg.Wait()
			return out
		}
		// requireOneRun: one fresh answer; the rest are that answer
		// replayed or 409 idempotency_key_in_use.
		requireOneRun := func(rs []*response, status int) *response {
			t.Helper()
			var fresh *response
			for _, r := range rs {
				if r.Status == http.StatusConflict {
					requireError(t, r, http.StatusConflict, "idempotency_key_in_use")
					continue
				}
				require.Equal(t, status, r.Status, "%s", r.Raw)
				if r.Header.Get("Idempotent-Replayed") == "" {
					require.Nil(t, fresh, "a second fresh answer: %s", r.Raw)
					fresh = r
				}
			}
			require.NotNil(t, fresh, "one request ran")
			for _, r := range rs {
				if r.Status == status && r != fresh {
					requireReplay(t, fresh, r)
				}
			}
			return fresh
		}

		created := requireOneRun(run(keyed("POST", "/v1/payment_intents", s.sk, "create", body)), http.StatusCreated)
		list := b.do(t, req{method: "GET", path: "/v1/payment_intents?limit=100", key: s.sk})
		require.Len(t, list.Body["data"], 1, "one intent for the key")

		id := created.str("id")
		confirmed := requireOneRun(run(keyed("POST", "/v1/payment_intents/"+id+"/confirm", s.sk, "confirm", nil)), http.StatusOK)
		require.Equal(t, string(keelpay.IntentSucceeded), confirmed.str("status"))
		require.Equal(t, 1, b.sandbox.Charges(), "one charge")
		require.Equal(t, 1, b.sandbox.ChargeCount(b.record(t, s, id).AttemptID))
		b.requireOneEvent(t, s, keelpay.EventPaymentIntentSucceeded, id)
	}
}

// TestRoundTripsOfAKeyedPayment holds a payment on PostgreSQL to its
// round trips, the request's work between the server and the database:
// a keyed create reads the card and writes the intent with its key; a
// keyed first confirm records its attempt with its key, reading the
// intent and its card in the same pipeline, and then commits the outcome
// with its event and answer. A confirm that the one write does not fit
// (the intent was attempted before) costs a read and a second try.
func TestRoundTripsOfAKeyedPayment(t *testing.T) {
	t.Parallel()
	b := setup(t, func(o *options) { o.db = postgrestest.NewDB(t) })
	s, body := b.savedCardPayment(t)
	// The store's key is served from the key cache once the database
	// hears store changes; the first request after that reads it.
	watch := b.db.(storage.StoreWatcher)
	require.Eventually(t, func() bool { _, ok := watch.StoreEpoch(); return ok }, 10*time.Second, 5*time.Millisecond,
		"the database hears store changes")
	require.Equal(t, http.StatusOK, b.do(t, req{method: "GET", path: "/v1/payment_intents", key: s.sk}).Status)
	trips := func(rq req) (*response, int64) {
		t.Helper()
		db := b.db.(interface{ Stats() storage.Stats })
		before := db.Stats().RoundTrips
		r := b.do(t, rq)
		return r, db.Stats().RoundTrips - before
	}
	created, n := trips(keyed("POST", "/v1/payment_intents", s.sk, "create-1", body))
	requireFresh(t, created, http.StatusCreated)
	require.EqualValues(t, 2, n, "a keyed create")
	confirmed, n := trips(keyed("POST", "/v1/payment_intents/"+created.str("id")+"/confirm", s.sk, "confirm-1", nil))
	requireFresh(t, confirmed, http.StatusOK)
	require.Equal(t, string(keelpay.IntentSucceeded), confirmed.str("status"))
	require.EqualValues(t, 2, n, "a keyed first confirm")

	// Declined first, then confirmed with another card: the second
	// confirm's write does not fit, so it reads the intent and records
	// the attempt on the version it read.
	body["payment_method"] = b.saveCard(t, s, "4000000000000002")
	created, _ = trips(keyed("POST", "/v1/payment_intents", s.sk, "create-2", body))
	requireFresh(t, created, http.StatusCreated)
	declined, n := trips(keyed("POST", "/v1/payment_intents/"+created.str("id")+"/confirm", s.sk, "confirm-2", nil))
	requireFresh(t, declined, http.StatusOK)
	require.Equal(t, string(keelpay.IntentRequiresPaymentMethod), declined.str("status"), "%s", declined.Raw)
	require.EqualValues(t, 2, n, "a declined first confirm")
	good := b.saveCard(t, s, "4242424242424242")
	again, n := trips(keyed("POST", "/v1/payment_intents/"+created.str("id")+"/confirm", s.sk, "confirm-3", map[string]any{"payment_method": good}))
	requireFresh(t, again, http.StatusOK)
	require.Equal(t, string(keelpay.IntentSucceeded), again.str("status"), "%s", again.Raw)
	require.EqualValues(t, 4, n, "a second confirm: the write that does not fit, the read, the attempt, the outcome")
}
