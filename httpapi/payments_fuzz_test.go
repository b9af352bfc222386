package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/httpapi"
	"github.com/keelpay/keelpay/keelpaytest"
	"github.com/keelpay/keelpay/keyring/keyringtest"
	"github.com/keelpay/keelpay/payments"
	"github.com/keelpay/keelpay/provider/sandbox"
	"github.com/keelpay/keelpay/storage/sqlite"
	"github.com/keelpay/keelpay/stores"
)

// fuzzPayments is a handler with payments and one store, for the fuzz
// targets.
type fuzzPayments struct {
	h     http.Handler
	pay   *payments.Service
	store *keelpay.Store
	sk    string
	card  string // a saved card of custID
	clock *keelpaytest.Clock
}

func newFuzzPayments(f *testing.F) *fuzzPayments {
	f.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, sqlite.Config{Keyring: keyringtest.Keyring(), Path: filepath.Join(f.TempDir(), "fuzz.db")})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { db.Close() })
	clock := keelpaytest.NewClock(time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC))
	sb := sandbox.New(sandbox.Config{Clock: clock})
	st := mustNew(stores.New(stores.Config{AllowInsecureWebhooks: true, Clock: clock, Provider: sb, Storage: db}))
	pay := mustNew(payments.New(payments.Config{Clock: clock, Logger: discardLogger(), Provider: sb, Storage: db}))
	h := newAPI(f, httpapi.Config{Clock: clock, Metrics: prometheus.NewRegistry(), Payments: pay, Storage: db, Stores: st, Logger: discardLogger()}, sb)
	res, err := st.Setup(ctx, stores.SetupParams{ClientID: "app_fuzz", ClientSecret: "secret_fuzz", WebhookURL: "https://store.example/hooks"})
	if err != nil {
		f.Fatal(err)
	}
	cs, err := pay.CreateCardSession(ctx, res.Store, payments.CardSessionParams{
		Customer:    keelpay.Customer{ID: custID, Name: custName, Email: custEmail, Phone: custPhone},
		PageOrigins: []string{"https://shop.example"},
	})
	if err != nil {
		f.Fatal(err)
	}
	card, err := pay.CaptureCard(ctx, res.Store, cs.ID, payments.CaptureParams{ClientSecret: cs.ClientSecret,
		Card: payments.NewCard{Number: sandbox.CardVisa, ExpMonth: 12, ExpYear: 2030, CVC: "123"}})
	if err != nil {
		f.Fatal(err)
	}
	return &fuzzPayments{h: h, pay: pay, store: res.Store, sk: res.SecretKey, card: card.ID, clock: clock}
}

// serve sends a POST and checks what every answer must be: JSON, never a
// 500 or an unexpected status, every error with a code and a message, and
// nothing personal in answers to the publishable key.
func (fp *fuzzPayments) serve(t *testing.T, path, key, body string, created int) map[string]any {
	r := httptest.NewRequest("POST", path, strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Authorization", "Bearer "+key)
	w := httptest.NewRecorder()
	fp.h.ServeHTTP(w, r)
	if w.Code == http.StatusInternalServerError || w.Code > http.StatusServiceUnavailable {
		t.Fatalf("status %d for %q: %s", w.Code, body, w.Body)
	}
	var out map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil {
		t.Fatalf("not JSON: %s", w.Body)
	}
	if w.Code >= 400 {
		e, _ := out["error"].(map[string]any)
		if code, _ := e["code"].(string); code == "" || e["message"] == "" || e["message"] == nil {
			t.Fatalf("error without code or message: %s", w.Body)
		}
		return nil
	}
	if w.Code != created && w.Code != http.StatusOK {
		t.Fatalf("unexpected status %d: %s", w.Code, w.Body)
	}
	if strings.HasPrefix(key, keelpay.PrefixPublishableKey) {
		for _, leak := range []string{`"email"`, `"phone"`, `"billing"`, `"client_secret"`, custName} {
			if strings.Contains(w.Body.String(), leak) {
				t.Fatalf("the browser was shown %s: %s", leak, w.Body)
			}
		}
	}
	return out
}

// FuzzCreateIntent sends arbitrary bodies to POST /v1/payment_intents.
// Run it longer with
//
//	go test ./httpapi -run '^$' -fuzz FuzzCreateIntent -fuzztime 3m
func FuzzCreateIntent(f *testing.F) {
	for _, seed := range []string{
		validIntent(``),
		validIntent(`"description":"Mugs","reference":"o-1","metadata":{"a":"b"},"billing":{"country":"de","state":"BE","postal_code":"10115"},"page_origins":["https://shop.example","http://localhost:3000"]`),
		validIntent(`"payment_method":"CARD_ID"`),
		validIntent(`"payment_method":"card_AAAAAAAAAAAAAAAAAAAAAAAA"`),
		`{"amount":1,"currency":"JPY"}`, `{"amount":"1"}`, `{"amount":1e2}`, `{"amount":-0}`, `{"amount":null,"currency":null}`,
		`{"amount":1,"currency":"EUR","customer":{"id":"c","id":"d"}}`, `{"customer":{"x":1},"zz":[]}`,
		validIntent(`"metadata":{"k":{"nested":1}}`), validIntent(`"billing":{"country":"DE","country":"FR"}`),
		`[]`, `{} {}`, "{\"amount\":\"\xff\"}", ``, `{"amount":1000,"currency":"eur","customer":{"id":"\u0000"}}`,
	} {
		f.Add(seed)
	}
	fp := newFuzzPayments(f)
	f.Fuzz(func(t *testing.T, body string) {
		body = strings.ReplaceAll(body, "CARD_ID", fp.card)
		out := fp.serve(t, "/v1/payment_intents", fp.sk, body, http.StatusCreated)
		if out != nil && (out["status"] != "requires_payment_method" || !keelpay.ValidID(keelpay.PrefixPaymentIntent, out["id"].(string))) {
			t.Fatalf("created something else: %v", out)
		}
	})
}

// FuzzConfirmIntent confirms a fresh intent with arbitrary bodies, with the
// secret key or the publishable key. CLIENT_SECRET and CARD_ID in a body
// stand for the intent's client_secret and a saved card of its customer,
// so that the fuzzer reaches past those checks. Run it longer with
//
//	go test ./httpapi -run '^$' -fuzz FuzzConfirmIntent -fuzztime 3m
func FuzzConfirmIntent(f *testing.F) {
	browser := func(number, extra string) string {
		return `{"client_secret":"CLIENT_SECRET","number":"` + number + `","exp_month":12,"exp_year":2030,"cvc":"123","name":"J R"` + extra + `}`
	}
	for _, number := range []string{
		sandbox.CardVisa, sandbox.CardThreeDSecure, sandbox.CardDeclined, sandbox.CardRejected, sandbox.CardBillingRequired,
		sandbox.CardProviderError, sandbox.CardOutcomeUnknown, sandbox.CardCurrencyMismatch, sandbox.CardAmountMismatch,
		sandbox.CardNoOrderID, "4242 4242 4242 4242", "4242424242424241", "378282246310005",
	} {
		f.Add(browser(number, ""), true)
	}
	for _, seed := range []struct {
		body        string
		publishable bool
	}{
		{browser(sandbox.CardBillingRequired, `,"billing":{"country":"DE","postal_code":"10115"}`), true},
		{`{"client_secret":"wrong","number":"4242424242424242","exp_month":12,"exp_year":2030,"cvc":"123"}`, true},
		{`{"client_secret":"CLIENT_SECRET","number":"4242424242424242","exp_month":"12","exp_year":2030.0,"cvc":123}`, true},
		{`{"client_secret":"CLIENT_SECRET","payment_method":"CARD_ID"}`, true},
		{`{"payment_method":"CARD_ID"}`, false},
		{`{"payment_method":"CARD_ID","billing":{"country":"de"}}`, false},
		{`{"payment_method":"card_AAAAAAAAAAAAAAAAAAAAAAAA"}`, false},
		{`{"payment_method":"CARD_ID","payment_method":"CARD_ID"}`, false},
		{`{}`, false}, {``, false}, {`{"number":"4242424242424242"}`, false}, {`null`, true}, {`{"billing":{"zip":1}}`, false},
	} {
		f.Add(seed.body, seed.publishable)
	}
	fp := newFuzzPayments(f)
	f.Fuzz(func(t *testing.T, body string, publishable bool) {
		// A fresh intent each time, and a clock that moves on, so that
		// one input's attempt does not decide the next.
		fp.clock.Advance(time.Second)
		pi, err := fp.pay.CreateIntent(context.Background(), fp.store, payments.IntentParams{
			Amount: 1234, Currency: "EUR", Customer: keelpay.Customer{ID: custID, Name: custName, Email: custEmail, Phone: custPhone},
		})
		if err != nil {
			t.Fatal(err)
		}
		key := fp.sk
		if publishable {
			key = fp.store.PublishableKey
		}
		body = strings.ReplaceAll(strings.ReplaceAll(body, "CLIENT_SECRET", pi.ClientSecret), "CARD_ID", fp.card)
		out := fp.serve(t, "/v1/payment_intents/"+pi.ID+"/confirm", key, body, http.StatusOK)
		if out != nil && out["id"] != pi.ID {
			t.Fatalf("answered about another intent: %v", out)
		}
	})
}
