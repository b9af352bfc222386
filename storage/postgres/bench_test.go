package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/storage/postgres"
	"github.com/keelpay/keelpay/storage/postgres/postgrestest"
	"github.com/keelpay/keelpay/storage/storagetest"
)

// benchIntent is a succeeded intent with a payment method, as a payment
// leaves it, in a store of its own.
func benchIntent(b *testing.B) (*postgres.DB, *keelpay.PaymentIntent) {
	b.Helper()
	ctx := context.Background()
	db := postgrestest.NewDB(b)
	now := time.Date(2026, 11, 22, 22, 48, 4, 0, time.UTC)
	st := storagetest.NewStoreRecord(now)
	if err := db.StoreInsert(ctx, st); err != nil {
		b.Fatal(err)
	}
	pi := storagetest.NewSucceededIntentRecord(st.ID, now)
	if err := db.PaymentIntentInsert(ctx, pi); err != nil {
		b.Fatal(err)
	}
	return db, pi
}

// BenchmarkPaymentIntentGet is the read of GET /v1/payment_intents/{id}.
func BenchmarkPaymentIntentGet(b *testing.B) {
	ctx := context.Background()
	db, pi := benchIntent(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := db.PaymentIntentGet(ctx, pi.StoreID, pi.ID); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPaymentIntentUpdate is one conditional update of an intent,
// outside a transaction.
func BenchmarkPaymentIntentUpdate(b *testing.B) {
	ctx := context.Background()
	db, pi := benchIntent(b)
	b.ReportAllocs()
	for b.Loop() {
		if err := db.PaymentIntentUpdate(ctx, pi, pi.Version); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEventInsert is the insert of an event and its delivery.
func BenchmarkEventInsert(b *testing.B) {
	ctx := context.Background()
	db, pi := benchIntent(b)
	now := time.Date(2026, 11, 23, 2, 10, 0, 0, time.UTC)
	b.ReportAllocs()
	for b.Loop() {
		e := storagetest.NewEventRecord(pi.StoreID, keelpay.EventPaymentIntentSucceeded, now)
		if err := db.EventInsert(ctx, e); err != nil {
			b.Fatal(err)
		}
	}
}
