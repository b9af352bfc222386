package httpapi_test

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

	"github.com/keelpay/keelpay/keyring"
	"github.com/keelpay/keelpay/provider/sandbox"
	"github.com/keelpay/keelpay/service"
	"github.com/keelpay/keelpay/storage/sqlite"
)

// Embedding: keelpay's API mounted under /payments/ of a store's own mux,
// on a SQLite file and the sandbox provider. service.New assembles the
// services and this handler; a store's server would also run their
// background work with svc.Start and svc.Stop. This example only calls
// the API.
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
		Logger:   slog.New(slog.DiscardHandler),
		Provider: sandbox.New(sandbox.Config{}),
		Storage:  db,
	})
	if err != nil {
		panic(err)
	}

	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "the store's own page\n") })
	mux.Handle("/payments/", http.StripPrefix("/payments", svc.Handler()))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	// call sends a JSON request and decodes the JSON answer.
	call := func(method, path, key, body string) (int, map[string]any) {
		req, _ := http.NewRequest(method, srv.URL+"/payments"+path, strings.NewReader(body))
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		defer resp.Body.Close()
		var v map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&v)
		return resp.StatusCode, v
	}

	status, store := call("POST", "/v1/setup", "",
		`{"client_id":"app_shop","client_secret":"secret_shop","webhook_url":"https://shop.example/hooks"}`)
	fmt.Println("setup:", status, store["object"], store["currency"])
	sk, pk := store["secret_key"].(string), store["publishable_key"].(string)

	status, pi := call("POST", "/v1/payment_intents", sk, `{"amount":2500,"currency":"EUR",
		"customer":{"id":"cus_1","name":"Ada Lovelace","email":"ada@example.com","phone":"+358401234567"}}`)
	fmt.Println("create:", status, pi["status"])

	// What the hosted card field sends from the buyer's browser.
	status, pi = call("POST", "/v1/payment_intents/"+pi["id"].(string)+"/confirm", pk,
		`{"client_secret":"`+pi["client_secret"].(string)+`","number":"4242424242424242","exp_month":12,"exp_year":2034,"cvc":"123"}`)
	fmt.Println("confirm:", status, pi["status"], pi["amount"], pi["currency"])

	status, e := call("GET", "/v1/payment_intents/nope", sk, "")
	fmt.Println("unknown:", status, e["error"].(map[string]any)["code"])
	// Output:
	// setup: 201 store EUR
	// create: 201 requires_payment_method
	// confirm: 200 succeeded 2500 EUR
	// unknown: 404 payment_intent_not_found
}
