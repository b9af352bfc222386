package sqlite_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/keyring/keyringtest"
	"github.com/keelpay/keelpay/storage"
	"github.com/keelpay/keelpay/storage/sqlite"
	"github.com/keelpay/keelpay/storage/storagetest"
)

// BenchmarkPaymentIntentGet is the read of GET /v1/payment_intents/{id}:
// one succeeded intent, by store and id, from the reader pool.
func BenchmarkPaymentIntentGet(b *testing.B) {
	ctx := context.Background()
	now := time.Date(2026, 11, 22, 22, 48, 4, 0, time.UTC)
	db, st := openBench(b, now)
	pi := storagetest.NewSucceededIntentRecord(st.ID, now)
	if err := db.PaymentIntentInsert(ctx, pi); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := db.PaymentIntentGet(ctx, st.ID, pi.ID); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEventList is the read of GET /v1/events?limit=100: the newest
// page of a store's 1,000 events, bodies of about 800 bytes, from the
// reader pool.
func BenchmarkEventList(b *testing.B) {
	ctx := context.Background()
	now := time.Date(2026, 11, 23, 2, 10, 0, 0, time.UTC)
	db, st := openBench(b, now)
	body := `{"id":"evt_x","object":"event","type":"payment_intent.succeeded","data":{"object":{"id":"pi_x","object":"payment_intent","amount":2500,"currency":"EUR","status":"succeeded","metadata":{"order":"` +
		strings.Repeat("x", 600) + `"}}}}`
	for i := range 1000 {
		e := storagetest.NewEventRecord(st.ID, keelpay.EventPaymentIntentSucceeded, now.Add(time.Duration(i)*time.Millisecond))
		e.Body = json.RawMessage(body)
		if err := db.EventInsert(ctx, e); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		list, _, err := db.EventList(ctx, storage.EventListParams{StoreID: st.ID, Limit: 100})
		if err != nil || len(list) != 100 {
			b.Fatal(err, len(list))
		}
	}
}

// BenchmarkCardGet is the read of a saved card in each payment's create
// and confirm, from the reader pool.
func BenchmarkCardGet(b *testing.B) {
	ctx := context.Background()
	now := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	db, st := openBench(b, now)
	c := &keelpay.Card{ID: keelpay.NewID("card_"), StoreID: st.ID, CustomerID: "cus_bench", CardSessionID: keelpay.NewID("cs_"),
		ProviderToken: "tok_" + strings.Repeat("x", 24), Brand: "visa", Last4: "4242", ExpMonth: 12, ExpYear: 2035,
		Status: keelpay.CardActive, CreatedAt: now}
	if err := db.CardInsert(ctx, c); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := db.CardGet(ctx, st.ID, c.ID); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDeliveryRecord is the dispatcher's record of a round of
// attempts: 32 claimed deliveries delivered, with their attempts, in one
// transaction. Its figures are per round.
func BenchmarkDeliveryRecord(b *testing.B) {
	ctx := context.Background()
	now := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	db, st := openBench(b, now)
	const n = 32
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		err := db.WithTx(ctx, func(ctx context.Context, tx storage.Executor) error {
			for range n {
				if err := tx.EventInsert(ctx, storagetest.NewEventRecord(st.ID, keelpay.EventPaymentIntentSucceeded, now)); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
		jobs, err := db.DeliveryClaimDue(ctx, storage.DeliveryClaimParams{Now: now, LeaseUntil: now.Add(time.Minute),
			Limit: n, PerStore: n, LeaseToken: keelpay.NewID("lease_")})
		if err != nil || len(jobs) != n {
			b.Fatal(len(jobs), err)
		}
		results := make([]storage.DeliveryResult, n)
		for i, j := range jobs {
			results[i] = storage.DeliveryResult{EventID: j.EventID, LeaseToken: j.LeaseToken,
				Delivery: keelpay.Delivery{Status: keelpay.DeliverySucceeded, Attempts: 1, LastAttemptAt: now, LastStatusCode: 204},
				Attempt:  &keelpay.DeliveryAttempt{ID: keelpay.NewID("att_"), StartedAt: now, Duration: time.Millisecond, StatusCode: 204}}
		}
		b.StartTimer()
		if err := db.DeliveryRecord(ctx, results); err != nil {
			b.Fatal(err)
		}
	}
}

// openBench opens a database in a temporary file, closed when b ends,
// with one store created at now.
func openBench(b *testing.B, now time.Time) (*sqlite.DB, *keelpay.Store) {
	b.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, sqlite.Config{Keyring: keyringtest.Keyring(), Path: filepath.Join(b.TempDir(), "k.db")})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = db.Close() })
	st := storagetest.NewStoreRecord(now)
	if err := db.StoreInsert(ctx, st); err != nil {
		b.Fatal(err)
	}
	return db, st
}
