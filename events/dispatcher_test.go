package events_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/events"
	"github.com/keelpay/keelpay/keyring/keyringtest"
	"github.com/keelpay/keelpay/storage"
	"github.com/keelpay/keelpay/storage/postgres/postgrestest"
	"github.com/keelpay/keelpay/storage/sqlite"
	"github.com/keelpay/keelpay/storage/storagetest"
	"github.com/keelpay/keelpay/webhooks"
)

// forEachStorage runs test on a SQLite file and on PostgreSQL.
func forEachStorage(t *testing.T, test func(t *testing.T, db storage.Storage)) {
	t.Run("SQLite", func(t *testing.T) {
		t.Parallel()
		db, err := sqlite.Open(context.Background(), sqlite.Config{Keyring: keyringtest.Keyring(), Path: filepath.Join(t.TempDir(), "keelpay.db")})
		require.NoError(t, err)
		t.Cleanup(func() { db.Close() })
		test(t, db)
	})
	t.Run("PostgreSQL", func(t *testing.T) {
		t.Parallel()
		test(t, postgrestest.NewDB(t))
	})
}

// receiver is a store's webhook endpoint: it verifies each delivery,
// counts each event id and the attempts in flight, and holds every
// request until its gate opens.
type receiver struct {
	t        *testing.T
	verifier *webhooks.Verifier
	gate     chan struct{} // closed: answer at once
	opened   sync.Once

	mu       sync.Mutex
	changed  *sync.Cond
	got      map[string]int
	inFlight int
	most     int
	invalid  int
}

func newReceiver(t *testing.T, db storage.Storage, held bool) (*receiver, *keelpay.Store) {
	t.Helper()
	store := storagetest.NewStoreRecord(time.Now().UTC())
	v, err := webhooks.NewVerifier([]string{store.WebhookSecret})
	require.NoError(t, err)
	rc := &receiver{t: t, verifier: v, gate: make(chan struct{}), got: map[string]int{}}
	rc.changed = sync.NewCond(&rc.mu)
	if !held {
		rc.open()
	}
	srv := httptest.NewServer(rc)
	t.Cleanup(srv.Close)
	// A test that failed with requests held lets them go before the
	// server closes.
	t.Cleanup(rc.open)
	store.WebhookURL = srv.URL + "/webhooks"
	require.NoError(t, db.StoreInsert(context.Background(), store))
	return rc, store
}

// open lets the held requests, and every later one, be answered.
func (rc *receiver) open() { rc.opened.Do(func() { close(rc.gate) }) }

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	rc.inFlight++
	rc.most = max(rc.most, rc.inFlight)
	rc.changed.Broadcast()
	rc.mu.Unlock()
	<-rc.gate
	err := rc.verifier.Verify(body, r.Header)
	rc.mu.Lock()
	rc.inFlight--
	if err != nil {
		rc.invalid++
	} else {
		rc.got[r.Header.Get(webhooks.HeaderID)]++
	}
	rc.changed.Broadcast()
	rc.mu.Unlock()
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// await waits until cond holds (checked under the receiver's lock at each
// change), or fails the test after a minute.
func (rc *receiver) await(what string, cond func() bool) {
	rc.t.Helper()
	expired := false
	timer := time.AfterFunc(time.Minute, func() {
		rc.mu.Lock()
		expired = true
		rc.changed.Broadcast()
		rc.mu.Unlock()
	})
	defer timer.Stop()
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for !cond() {
		if expired {
			rc.t.Fatalf("waited a minute for %s: %d events received, %d in flight", what, len(rc.got), rc.inFlight)
		}
		rc.changed.Wait()
	}
}

func insertEvents(t *testing.T, db storage.Storage, store *keelpay.Store, n int, at time.Time) []string {
	t.Helper()
	ids := make([]string, n)
	require.NoError(t, db.WithTx(context.Background(), func(ctx context.Context, tx storage.Executor) error {
		for i := range ids {
			e := storagetest.NewEventRecord(store.ID, keelpay.EventWebhookTest, at)
			if err := tx.EventInsert(ctx, e); err != nil {
				return err
			}
			ids[i] = e.ID
		}
		return nil
	}))
	return ids
}

func runDispatcher(t *testing.T, d *events.Dispatcher) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { d.Run(ctx); close(done) }()
	stopped := false
	stop = func() {
		if !stopped {
			stopped = true
			cancel()
			<-done
		}
	}
	t.Cleanup(stop)
	return stop
}

// With the default limits, a store whose receiver does not answer holds at
// most its per-store cap of attempts, however long its backlog; another
// store's deliveries go out meanwhile; and once the receiver answers,
// every event arrives exactly once (a leased delivery is not sent again
// while its attempt is under way).
func TestDispatcherSlowStoreHoldsOnlyItsCap(t *testing.T) {
	forEachStorage(t, func(t *testing.T, db storage.Storage) {
		slow, slowStore := newReceiver(t, db, true)
		fast, fastStore := newReceiver(t, db, false)
		now := time.Now().UTC()
		slowIDs := insertEvents(t, db, slowStore, 2*events.PerStoreDefault+20, now.Add(-time.Minute))
		fastIDs := insertEvents(t, db, fastStore, 40, now)

		// The default limits, with a store starting at its cap (no store
		// is throttled here: the held receiver never answers); attempts
		// may wait on the held receiver for as long as the test takes.
		d := mustNew(events.NewDispatcher(events.DispatcherConfig{AllowInsecureWebhooks: true, Logger: quiet, Storage: db,
			AttemptTimeout: 5 * time.Minute, Lease: 10 * time.Minute, PerStoreStart: events.PerStoreDefault}))

		stop := runDispatcher(t, d)
		t.Cleanup(slow.open) // before stop, should the test fail

		slow.await("the slow store to reach its cap", func() bool { return slow.inFlight == events.PerStoreDefault })
		fast.await("the other store's events", func() bool { return len(fast.got) == len(fastIDs) })
		slow.mu.Lock()
		require.Equal(t, events.PerStoreDefault, slow.most, "attempts of the slow store in flight at once")
		slow.mu.Unlock()

		slow.open()
		slow.await("every event of the slow store", func() bool { return len(slow.got) == len(slowIDs) })
		stop()
		for _, rc := range []*receiver{slow, fast} {
			rc.mu.Lock()
			require.Zero(t, rc.invalid)
			for id, n := range rc.got {
				require.Equal(t, 1, n, "deliveries of %s", id)
			}
			require.LessOrEqual(t, rc.most, events.PerStoreDefault)
			rc.mu.Unlock()
		}
		pending, failed, err := db.DeliveryCounts(context.Background())
		require.NoError(t, err)
		require.Equal(t, [2]int{0, 0}, [2]int{pending, failed}, "every result recorded")
	})
}

// Attempts under way when Run's context ends run to their end, and Run
// returns only once they are recorded.
func TestDispatcherRecordsAttemptsUnderWayBeforeStopping(t *testing.T) {
	forEachStorage(t, func(t *testing.T, db storage.Storage) {
		rc, store := newReceiver(t, db, true)
		ids := insertEvents(t, db, store, 5, time.Now().UTC())
		d := mustNew(events.NewDispatcher(events.DispatcherConfig{AllowInsecureWebhooks: true, Logger: quiet, Storage: db,
			AttemptTimeout: 5 * time.Minute, Lease: 10 * time.Minute}))

		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { d.Run(ctx); close(done) }()
		t.Cleanup(func() {
			rc.open()
			cancel()
		})
		rc.await("every attempt under way", func() bool { return rc.inFlight == len(ids) })
		cancel()
		select {
		case <-done:
			t.Fatal("Run returned with attempts under way")
		default:
		}
		rc.open()
		<-done
		for _, id := range ids {
			e, err := db.EventGet(context.Background(), store.ID, id)
			require.NoError(t, err)
			require.Equal(t, keelpay.DeliverySucceeded, e.Delivery.Status)
			require.Equal(t, 1, e.Delivery.Attempts)
		}
	})
}
