package core

import (
	"testing"
	"time"

	"github.com/keelpay/keelpay"
)

// noopRow scans nothing: the benchmarks measure the mapping, not a driver.
type noopRow struct{}

func (noopRow) Scan(dest ...any) error { return nil }

func benchIntent() *keelpay.PaymentIntent {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	return &keelpay.PaymentIntent{ID: "pi_1", StoreID: "st_1", Status: "succeeded", Amount: 1234, Currency: "EUR",
		Customer: keelpay.Customer{ID: "cus_1"}, Metadata: map[string]string{"a": "b"},
		PaymentMethod: &keelpay.PaymentMethod{Brand: "visa", Last4: "4242", ExpMonth: 1, ExpYear: 2030},
		AttemptID:     "att_1", CreatedAt: at, UpdatedAt: at, ExpiresAt: at, Version: 3}
}

func BenchmarkIntentValues(b *testing.B) {
	r := Records{D: testDialect{}}
	pi := benchIntent()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.SealedIntentValues(pi); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkScanIntent(b *testing.B) {
	r := Records{D: testDialect{}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.ScanIntent(noopRow{}); err != nil {
			b.Fatal(err)
		}
	}
}
