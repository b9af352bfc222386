package service_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"time"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/client"
	"github.com/keelpay/keelpay/keyring"
	"github.com/keelpay/keelpay/payments"
	"github.com/keelpay/keelpay/provider/sandbox"
	"github.com/keelpay/keelpay/refunds"
	"github.com/keelpay/keelpay/service"
	"github.com/keelpay/keelpay/storage/sqlite"
	"github.com/keelpay/keelpay/stores"
)

// An embedded server sets its store up in-process at start, with no second
// process and no restart: the first start creates the store and gets its
// secret key once, which the server keeps in its own secret store; every
// later start finds the store already enabled and authenticates with the
// kept key. Payments are then made in-process through the services, or over
// HTTP with the typed client (docs/embedding.md).
func Example_embedded() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "keelpay-embedded")
	defer os.RemoveAll(dir)
	kr, _, err := keyring.ReadOrCreateFile(filepath.Join(dir, "keelpay.db.key"), "k1")
	if err != nil {
		panic(err)
	}
	db, err := sqlite.Open(ctx, sqlite.Config{Keyring: kr, Path: filepath.Join(dir, "keelpay.db")})
	if err != nil {
		panic(err)
	}
	defer db.Close()
	svc, err := service.New(service.Config{
		AllowInsecureWebhooks: true, // the store's receiver is on this machine
		Logger:                slog.New(slog.DiscardHandler),
		Provider:              sandbox.New(sandbox.Config{}),
		Storage:               db,
	})
	if err != nil {
		panic(err)
	}
	if err := svc.Start(ctx); err != nil {
		panic(err)
	}
	defer svc.Stop(ctx)

	// The server's own secret store: where it keeps the store's secret
	// key between starts (a vault, an environment variable; a map here).
	kept := map[string]string{}
	setUp := func() *keelpay.Store {
		res, err := svc.Stores().Setup(ctx, stores.SetupParams{
			ClientID: "app_shop", ClientSecret: "secret_shop", WebhookURL: "http://127.0.0.1:9/webhooks",
		})
		var e *keelpay.Error
		switch {
		case err == nil:
			// First start: the keys are issued now, and only now.
			kept["secret_key"], kept["webhook_secret"] = res.SecretKey, res.WebhookSecret
			return res.Store
		case errors.As(err, &e) && e.Code == keelpay.CodeStoreAlreadyEnabled:
			st, err := svc.Stores().Authenticate(ctx, kept["secret_key"])
			if err != nil {
				panic(err)
			}
			return st
		default:
			panic(err)
		}
	}
	st := setUp()
	again := setUp() // as after a restart
	fmt.Println("same store after a restart:", again.ID == st.ID)

	// In-process: the services take the store and typed params.
	customer := keelpay.Customer{ID: "cus_1", Name: "Jane Roe", Email: "jane@example.com", Phone: "+4915112345678"}
	cs, err := svc.Payments().CreateCardSession(ctx, st, payments.CardSessionParams{
		Customer: customer, PageOrigins: []string{"https://shop.example"},
	})
	if err != nil {
		panic(err)
	}
	// The buyer's browser captures the card (here the sandbox's test card,
	// through the spec's capture call).
	card, err := svc.Payments().CaptureCard(ctx, st, cs.ID, payments.CaptureParams{
		ClientSecret: cs.ClientSecret,
		Card:         payments.NewCard{Number: sandbox.CardVisa, ExpMonth: 12, ExpYear: int64(time.Now().Year() + 2), CVC: "123"},
	})
	if err != nil {
		panic(err)
	}
	pi, err := svc.Payments().CreateIntent(ctx, st, payments.IntentParams{Amount: 2500, Currency: "EUR", Customer: customer})
	if err != nil {
		panic(err)
	}
	pi, err = svc.Payments().ConfirmIntent(ctx, st, pi.ID, payments.ConfirmParams{PaymentMethod: card.ID})
	if err != nil {
		panic(err)
	}
	fmt.Println("in-process:", pi.Status, pi.Amount, pi.Currency)
	sent, err := svc.Refunds().Send(ctx, st, refunds.Params{PaymentIntent: pi.ID, Reason: "returned"})
	if err != nil {
		panic(err)
	}
	fmt.Println("refund:", sent.Refund.Status)

	// Over HTTP: the typed client, with the kept secret key, against the
	// API wherever it is mounted.
	srv := httptest.NewServer(svc.Handler())
	defer srv.Close()
	c, err := client.New(srv.URL, kept["secret_key"])
	if err != nil {
		panic(err)
	}
	pi2, err := c.CreatePaymentIntent(ctx, &client.PaymentIntentParams{Amount: 1200, Currency: "EUR", Customer: customer})
	if err != nil {
		panic(err)
	}
	pi2, err = c.ConfirmPaymentIntent(ctx, pi2.ID, &client.ConfirmParams{PaymentMethod: card.ID})
	if err != nil {
		panic(err)
	}
	fmt.Println("client:", pi2.Status, pi2.Amount)
	_, err = c.CreateRefund(ctx, &client.RefundParams{PaymentIntent: "pi_nosuchintent000000000000", Reason: "returned"})
	fmt.Println("client error:", keelpay.ErrorCode(err))
	// Output:
	// same store after a restart: true
	// in-process: succeeded 2500 EUR
	// refund: succeeded
	// client: succeeded 1200
	// client error: payment_intent_not_found
}
