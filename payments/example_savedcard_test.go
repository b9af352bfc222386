package payments_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/keyring/keyringtest"
	"github.com/keelpay/keelpay/payments"
	"github.com/keelpay/keelpay/provider/sandbox"
	"github.com/keelpay/keelpay/service"
	"github.com/keelpay/keelpay/storage/sqlite"
	"github.com/keelpay/keelpay/stores"
)

// Paying with the sandbox: a card is saved through a card session (what the
// hosted card field does in the buyer's browser), then a payment intent is
// created for it and confirmed by the store's server.
func Example_savedCard() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "keelpay-example")
	defer os.RemoveAll(dir)
	db, err := sqlite.Open(ctx, sqlite.Config{Keyring: keyringtest.Keyring(), Path: filepath.Join(dir, "keelpay.db")})
	if err != nil {
		panic(err)
	}
	defer db.Close()
	svc, err := service.New(service.Config{Provider: sandbox.New(sandbox.Config{}), Storage: db})
	if err != nil {
		panic(err)
	}
	setup, err := svc.Stores().Setup(ctx, stores.SetupParams{
		ClientID: "app_shop", ClientSecret: "secret_shop", WebhookURL: "https://shop.example/hooks",
	})
	if err != nil {
		panic(err)
	}
	store := setup.Store
	pay := svc.Payments()
	ada := keelpay.Customer{ID: "cus_1", Name: "Ada Lovelace", Email: "ada@example.com", Phone: "+358401234567"}

	cs, err := pay.CreateCardSession(ctx, store, payments.CardSessionParams{
		Customer: ada, PageOrigins: []string{"https://shop.example"},
	})
	if err != nil {
		panic(err)
	}
	card, err := pay.CaptureCard(ctx, store, cs.ID, payments.CaptureParams{
		ClientSecret: cs.ClientSecret,
		Card:         payments.NewCard{Number: sandbox.CardMastercard, ExpMonth: 12, ExpYear: 2034, CVC: "123"},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println("saved:", card.Brand, card.Last4, card.Status)

	pi, err := pay.CreateIntent(ctx, store, payments.IntentParams{
		Amount: 2500, Currency: "EUR", Customer: ada, Reference: "order-1001", PaymentMethod: card.ID,
	})
	if err != nil {
		panic(err)
	}
	pi, err = pay.ConfirmIntent(ctx, store, pi.ID, payments.ConfirmParams{})
	if err != nil {
		panic(err)
	}
	fmt.Println("paid:", pi.Status, pi.Amount, pi.Currency, pi.PaymentMethod.Saved)
	// Output:
	// saved: mastercard 4444 active
	// paid: succeeded 2500 EUR true
}
