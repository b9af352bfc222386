package service_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/keyring"
	"github.com/keelpay/keelpay/provider/sandbox"
	"github.com/keelpay/keelpay/service"
	"github.com/keelpay/keelpay/storage/sqlite"
)

// A Go program embeds keelpay with one constructor and one Start: the API
// under its own prefix, health beside it, and the payments it commits
// received in-process.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "keelpay-example")
	defer os.RemoveAll(dir)
	// Secrets are sealed at rest under a key kept beside the database
	// (back it up apart from it; see docs/security.md).
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
		AllowInsecureWebhooks: true, // a sandbox on this machine
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
	paid, stop := svc.Subscribe(keelpay.EventPaymentIntentSucceeded)
	defer stop()

	mux := http.NewServeMux()
	mux.Handle("/payments/", http.StripPrefix("/payments", svc.Handler()))
	mux.Handle("/internal/healthz", svc.HealthHandler())
	srv := httptest.NewServer(mux)
	defer srv.Close()

	post := func(path, key, body string) *http.Response {
		req, _ := http.NewRequest("POST", srv.URL+"/payments"+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		return resp
	}
	var store struct {
		SecretKey      string `json:"secret_key"`
		PublishableKey string `json:"publishable_key"`
	}
	decode(post("/v1/setup", "", `{"client_id":"app_shop","client_secret":"secret_shop","webhook_url":"http://127.0.0.1:9/hooks"}`), &store)
	var intent struct {
		ID           string `json:"id"`
		ClientSecret string `json:"client_secret"`
	}
	decode(post("/v1/payment_intents", store.SecretKey, `{"amount":1999,"currency":"eur",
		"customer":{"id":"cus_1","name":"Jane Roe","email":"jane@example.com","phone":"+4915112345678"}}`), &intent)
	var confirmed struct {
		Status string `json:"status"`
	}
	// The buyer's browser confirms with the card it typed.
	decode(post("/v1/payment_intents/"+intent.ID+"/confirm", store.PublishableKey, fmt.Sprintf(
		`{"client_secret":%q,"number":"4242424242424242","exp_month":12,"exp_year":%d,"cvc":"123"}`,
		intent.ClientSecret, time.Now().Year()+2)), &confirmed)
	fmt.Println("confirm:", confirmed.Status)

	e := <-paid
	fmt.Println("in-process:", e.Type, e.PaymentIntent.Amount, e.PaymentIntent.Currency, e.PaymentIntent.ID == intent.ID)
	// Output:
	// confirm: succeeded
	// in-process: payment_intent.succeeded 1999 EUR true
}

func decode(resp *http.Response, v any) {
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		b, _ := io.ReadAll(resp.Body)
		panic(fmt.Sprintf("status %d: %s", resp.StatusCode, b))
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		panic(err)
	}
}
