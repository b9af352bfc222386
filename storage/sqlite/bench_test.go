package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/keyring/keyringtest"
	"github.com/keelpay/keelpay/storage/sqlite"
	"github.com/keelpay/keelpay/storage/storagetest"
)

// BenchmarkPaymentIntentGet is the read of GET /v1/payment_intents/{id}:
// one succeeded intent, by store and id, from the reader pool.
func BenchmarkPaymentIntentGet(b *testing.B) {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, sqlite.Config{Keyring: keyringtest.Keyring(), Path: filepath.Join(b.TempDir(), "k.db")})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	now := time.Date(2026, 11, 22, 22, 48, 4, 0, time.UTC)
	st := storagetest.NewStoreRecord(now)
	if err := db.StoreInsert(ctx, st); err != nil {
		b.Fatal(err)
	}
	pi := &keelpay.PaymentIntent{ID: "pi_GwdqTYQPJbLMlUIpLeMcDYQX", StoreID: st.ID, Status: keelpay.IntentSucceeded, Amount: 2500, Currency: "EUR",
		Customer:     keelpay.Customer{ID: "cus_bench", Name: "Bench Buyer", Email: "bench@shop.example", Phone: "+358401234567"},
		ClientSecret: "pi_GwdqTYQPJbLMlUIpLeMcDYQX_secret_w9VrFZigzzCntwF6GKfhEDs8", CardID: "card_i0Yfo6YuTx1XpSLNizvHbkj6",
		PaymentMethod:     &keelpay.PaymentMethod{Brand: "visa", Last4: "4242", ExpMonth: 12, ExpYear: 2035, Saved: true},
		AuthorizationCode: "O4B59W", OrderID: "ord_IkWJuEqyxz39NQZVtzf2gRT9", MerchantID: "merch_x", AttemptID: "att_x",
		SucceededAt: now, ExpiresAt: now.Add(24 * time.Hour), CreatedAt: now, UpdatedAt: now, Version: 3}
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
