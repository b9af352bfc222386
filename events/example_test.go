package events_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/events"
	"github.com/keelpay/keelpay/keyring/keyringtest"
	"github.com/keelpay/keelpay/payments"
	"github.com/keelpay/keelpay/provider/sandbox"
	"github.com/keelpay/keelpay/service"
	"github.com/keelpay/keelpay/storage/sqlite"
	"github.com/keelpay/keelpay/stores"
	"github.com/keelpay/keelpay/webhooks"
)

// Reading events: a payment writes its event, the dispatcher delivers it to
// the store's receiver (which verifies the signature), and the events API
// shows it with its delivery state.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "keelpay-example")
	defer os.RemoveAll(dir)
	db, err := sqlite.Open(ctx, sqlite.Config{Keyring: keyringtest.Keyring(), Path: filepath.Join(dir, "keelpay.db")})
	if err != nil {
		panic(err)
	}
	defer db.Close()

	// The store's receiver; its secret is known after setup.
	var (
		mu       sync.Mutex
		received []string
		verifier *webhooks.Verifier
		done     = make(chan struct{}, 10)
	)
	var handler http.Handler // set once the secret is known
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.ServeHTTP(w, r) }))
	defer receiver.Close()

	svc, err := service.New(service.Config{
		AllowInsecureWebhooks: true, // the receiver is on loopback
		Logger:                slog.New(slog.DiscardHandler),
		Provider:              sandbox.New(sandbox.Config{}),
		Storage:               db,
	})
	if err != nil {
		panic(err)
	}
	setup, err := svc.Stores().Setup(ctx, stores.SetupParams{
		ClientID: "app_shop", ClientSecret: "secret_shop", WebhookURL: receiver.URL + "/webhooks",
	})
	if err != nil {
		panic(err)
	}
	store := setup.Store
	if verifier, err = webhooks.NewVerifier([]string{setup.WebhookSecret}); err != nil {
		panic(err)
	}
	handler = webhooks.NewHandler(verifier, func(_ context.Context, e webhooks.Event, _ []byte) {
		mu.Lock()
		defer mu.Unlock()
		received = append(received, e.Type)
	}, webhooks.WithDone(func() { done <- struct{}{} }))

	pay := svc.Payments()
	pi, err := pay.CreateIntent(ctx, store, payments.IntentParams{
		Amount: 2500, Currency: "EUR",
		Customer: keelpay.Customer{ID: "cus_1", Name: "Ada Lovelace", Email: "ada@example.com", Phone: "+358401234567"},
	})
	if err != nil {
		panic(err)
	}
	if _, err := pay.ConfirmIntent(ctx, store, pi.ID, payments.ConfirmParams{
		ClientSecret: pi.ClientSecret,
		Card:         &payments.NewCard{Number: sandbox.CardVisa, ExpMonth: 12, ExpYear: 2034, CVC: "123"},
	}); err != nil {
		panic(err)
	}

	// svc.Start runs the dispatcher in the background; Stop returns once
	// every attempt under way is recorded.
	if err := svc.Start(ctx); err != nil {
		panic(err)
	}
	<-done
	if err := svc.Stop(ctx); err != nil {
		panic(err)
	}
	mu.Lock()
	fmt.Println("received:", received)
	mu.Unlock()

	list, hasMore, err := svc.Events().List(ctx, events.ListParams{StoreID: store.ID, Limit: 10})
	if err != nil {
		panic(err)
	}
	for _, e := range list {
		fmt.Println(e.Type, e.Delivery.Status, e.Delivery.Attempts)
	}
	fmt.Println("has more:", hasMore)
	// Output:
	// received: [payment_intent.succeeded]
	// payment_intent.succeeded succeeded 1
	// has more: false
}
