package refunds_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/httpapi"
	"github.com/keelpay/keelpay/keyring/keyringtest"
	"github.com/keelpay/keelpay/payments"
	"github.com/keelpay/keelpay/provider/sandbox"
	"github.com/keelpay/keelpay/refunds"
	"github.com/keelpay/keelpay/service"
	"github.com/keelpay/keelpay/storage/sqlite"
	"github.com/keelpay/keelpay/stores"
)

// A refund of a succeeded payment: always the whole amount, sent once; a
// second Send of a refund that succeeded is refused with refund_exists.
func Example() {
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
	pay, ref := svc.Payments(), svc.Refunds()

	pi, err := pay.CreateIntent(ctx, store, payments.IntentParams{
		Amount: 4200, Currency: "EUR",
		Customer: keelpay.Customer{ID: "cus_1", Name: "Ada Lovelace", Email: "ada@example.com", Phone: "+358401234567"},
	})
	if err != nil {
		panic(err)
	}
	pi, err = pay.ConfirmIntent(ctx, store, pi.ID, payments.ConfirmParams{
		ClientSecret: pi.ClientSecret,
		Card:         &payments.NewCard{Number: sandbox.CardVisa, ExpMonth: 12, ExpYear: 2034, CVC: "123"},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println("payment:", pi.Status)

	res, err := ref.Send(ctx, store, refunds.Params{PaymentIntent: pi.ID, Reason: "Returned within 30 days"})
	if err != nil {
		panic(err)
	}
	fmt.Println("refund:", res.Created, res.Refund.Status, res.Refund.Amount, res.Refund.Currency, res.Refund.Attempts)

	_, err = ref.Send(ctx, store, refunds.Params{PaymentIntent: pi.ID, Reason: "Returned within 30 days"})
	var kerr *keelpay.Error
	if errors.As(err, &kerr) {
		fmt.Println("again:", httpapi.Status(kerr.Code), kerr.Code) // the status the API answers with
	}
	// Output:
	// payment: succeeded
	// refund: true succeeded 4200 EUR 1
	// again: 409 refund_exists
}
