package events_test

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/events"
	"github.com/keelpay/keelpay/keyring/keyringtest"
	"github.com/keelpay/keelpay/storage"
	"github.com/keelpay/keelpay/storage/sqlite"
	"github.com/keelpay/keelpay/storage/storagetest"
	"github.com/keelpay/keelpay/webhooks"
)

var quiet = slog.New(slog.DiscardHandler)

// benchEnv is a SQLite database with one store whose webhook URL is a
// local receiver that verifies every signature.
type benchEnv struct {
	db       *sqlite.DB
	store    *keelpay.Store
	received atomic.Int64
	invalid  atomic.Int64
	mu       sync.Mutex
	at       map[string]time.Time // event id -> receipt
	srv      *httptest.Server
}

func newBenchEnv(b *testing.B) *benchEnv {
	b.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, sqlite.Config{Keyring: keyringtest.Keyring(), Path: filepath.Join(b.TempDir(), "bench.db")})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	env := &benchEnv{db: db, at: map[string]time.Time{}}
	env.store = storagetest.NewStoreRecord(time.Now().UTC())
	v, err := webhooks.NewVerifier([]string{env.store.WebhookSecret})
	if err != nil {
		b.Fatal(err)
	}
	env.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := v.Verify(body, r.Header); err != nil {
			env.invalid.Add(1)
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		now := time.Now()
		env.mu.Lock()
		env.at[r.Header.Get(webhooks.HeaderID)] = now
		env.mu.Unlock()
		env.received.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	b.Cleanup(env.srv.Close)
	env.store.WebhookURL = env.srv.URL
	if err := db.StoreInsert(ctx, env.store); err != nil {
		b.Fatal(err)
	}
	return env
}

func (env *benchEnv) event(b *testing.B) *keelpay.Event {
	e, err := events.NewEvent(env.store.ID, keelpay.EventPaymentIntentSucceeded, map[string]any{
		"id": keelpay.NewID(keelpay.PrefixPaymentIntent), "object": "payment_intent", "status": "succeeded",
		"amount": 1999, "currency": "EUR", "reference": "order-12345",
	}, time.Now())
	if err != nil {
		b.Fatal(err)
	}
	return e
}

// BenchmarkDispatcherThroughput: b.N events of one store committed
// beforehand, then the time for the dispatcher to deliver and record all of
// them, with the dispatcher's defaults and, in the same run, with the
// limits it had before (128 attempts in flight, 64 of one store; before
// that, 8 of one store). It reports the write transactions the dispatcher
// made per 1,000 deliveries beside the rate.
func BenchmarkDispatcherThroughput(b *testing.B) {
	for _, c := range []struct{ concurrency, perStore int }{{0, 0}, {128, 64}, {128, 8}} {
		name := "defaults"
		if c.concurrency != 0 {
			name = fmt.Sprintf("Concurrency=%d,PerStore=%d", c.concurrency, c.perStore)
		}
		b.Run(name, func(b *testing.B) { benchmarkThroughput(b, c.concurrency, c.perStore) })
	}
}

func benchmarkThroughput(b *testing.B, concurrency, perStore int) {
	env := newBenchEnv(b)
	ctx := context.Background()
	for i := 0; i < b.N; i += 500 {
		err := env.db.WithTx(ctx, func(ctx context.Context, tx storage.Executor) error {
			for j := i; j < min(i+500, b.N); j++ {
				if err := tx.EventInsert(ctx, env.event(b)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	st := &countingStorage{Storage: env.db}
	d := mustNew(events.NewDispatcher(events.DispatcherConfig{AllowInsecureWebhooks: true, Logger: quiet, Storage: st,
		Concurrency: concurrency, PerStore: perStore}))

	b.ReportAllocs()
	b.ResetTimer()
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { d.Run(runCtx); close(done) }()
	// Progress polls of a benchmark, not waits of a test: first until every
	// delivery arrived, then until every attempt is recorded.
	for env.received.Load() < int64(b.N) {
		time.Sleep(time.Millisecond)
	}
	for {
		pending, _, err := env.db.DeliveryCounts(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if pending == 0 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	elapsed := b.Elapsed()
	b.StopTimer()
	cancel()
	<-done
	if env.invalid.Load() != 0 || env.received.Load() < int64(b.N) {
		b.Fatalf("received %d (invalid %d) of %d", env.received.Load(), env.invalid.Load(), b.N)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "deliveries/s")
	b.ReportMetric(float64(st.txs.Load())*1000/float64(b.N), "txs/1000-deliveries")
}

// countingStorage counts the dispatcher's write transactions: each WithTx
// and Commit, and each claim or record made outside one.
type countingStorage struct {
	storage.Storage
	txs atomic.Int64
}

func (c *countingStorage) WithTx(ctx context.Context, fn func(context.Context, storage.Executor) error) error {
	c.txs.Add(1)
	return c.Storage.WithTx(ctx, fn)
}

func (c *countingStorage) Commit(ctx context.Context, b *storage.Batch) error {
	c.txs.Add(1)
	return c.Storage.Commit(ctx, b)
}

func (c *countingStorage) DeliveryClaimDue(ctx context.Context, p storage.DeliveryClaimParams) ([]*storage.DeliveryJob, error) {
	c.txs.Add(1)
	return c.Storage.DeliveryClaimDue(ctx, p)
}

func (c *countingStorage) DeliveryRecord(ctx context.Context, results []storage.DeliveryResult) error {
	c.txs.Add(1)
	return c.Storage.DeliveryRecord(ctx, results)
}

// BenchmarkDispatcherLatency: events committed one per transaction by 8
// writers while the dispatcher runs with its defaults; reports
// commit-to-receipt latency. The writers wake the dispatcher (Notify) after
// each commit, as a service that shares the dispatcher's process can.
func BenchmarkDispatcherLatency(b *testing.B) {
	env := newBenchEnv(b)
	ctx := context.Background()
	d := mustNew(events.NewDispatcher(events.DispatcherConfig{AllowInsecureWebhooks: true, Logger: quiet, Storage: env.db}))
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { d.Run(runCtx); close(done) }()
	var mu sync.Mutex
	committed := make(map[string]time.Time, b.N)
	b.ResetTimer()
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for next.Add(1) <= int64(b.N) {
				e := env.event(b)
				if err := env.db.EventInsert(ctx, e); err != nil {
					b.Error(err)
					return
				}
				now := time.Now()
				mu.Lock()
				committed[e.ID] = now
				mu.Unlock()
				d.Notify()
			}
		})
	}
	wg.Wait()
	for env.received.Load() < int64(b.N) {
		time.Sleep(time.Millisecond) // a benchmark's progress poll, not a test wait
	}
	b.StopTimer()
	cancel()
	<-done
	lat := make([]time.Duration, 0, b.N)
	env.mu.Lock()
	for id, c := range committed {
		lat = append(lat, max(env.at[id].Sub(c), 0))
	}
	env.mu.Unlock()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "deliveries/s")
}

// BenchmarkAnchorSQLiteCommit is the anchor for the dispatcher figures,
// measured in the same run: one small insert per transaction on a bare
// SQLite file in WAL mode with synchronous=FULL (one fsync per commit), no
// keelpay code involved.
func BenchmarkAnchorSQLiteCommit(b *testing.B) {
	path := filepath.Join(b.TempDir(), "anchor.db")
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)")
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(`CREATE TABLE t (id INTEGER PRIMARY KEY, v BLOB)`); err != nil {
		b.Fatal(err)
	}
	v := make([]byte, 200)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := db.Exec(`INSERT INTO t (v) VALUES (?)`, v); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
}
