package payments_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/keelpaytest"
	"github.com/keelpay/keelpay/keyring/keyringtest"
	"github.com/keelpay/keelpay/payments"
	"github.com/keelpay/keelpay/provider/sandbox"
	"github.com/keelpay/keelpay/service"
	"github.com/keelpay/keelpay/storage/sqlite"
	"github.com/keelpay/keelpay/stores"
)

// A payment whose outcome the provider does not know at first: the intent
// stays processing until the reconciler asks again, and only then is the
// event written.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "keelpay-example")
	defer os.RemoveAll(dir)
	db, err := sqlite.Open(ctx, sqlite.Config{Keyring: keyringtest.Keyring(), Path: filepath.Join(dir, "keelpay.db")})
	if err != nil {
		panic(err)
	}
	defer db.Close()
	clock := keelpaytest.NewClock(time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC))
	sb := sandbox.New(sandbox.Config{Clock: clock})
	svc, err := service.New(service.Config{Clock: clock, Provider: sb, Storage: db})
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

	pi, err := pay.CreateIntent(ctx, store, payments.IntentParams{
		Amount: 1999, Currency: "eur",
		Customer: keelpay.Customer{ID: "cus_1", Name: "Jane Roe", Email: "jane@example.com", Phone: "+4915112345678"},
	})
	if err != nil {
		panic(err)
	}
	pi, err = pay.ConfirmIntent(ctx, store, pi.ID, payments.ConfirmParams{
		ClientSecret: pi.ClientSecret,
		Card:         &payments.NewCard{Number: sandbox.CardOutcomeUnknown, ExpMonth: 12, ExpYear: 2030, CVC: "123"},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println("confirmed:", pi.Status, pi.LastError.Code)

	clock.Advance(5 * time.Minute)
	if err := pay.Reconcile(ctx); err != nil {
		panic(err)
	}
	pi, _ = pay.GetIntent(ctx, store, pi.ID)
	fmt.Println("after the reconciler:", pi.Status, pi.Amount, pi.Currency)
	fmt.Println("charges made:", sb.Charges())
	// Output:
	// confirmed: processing outcome_unknown
	// after the reconciler: succeeded 1999 EUR
	// charges made: 1
}
