package stripe_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay/internal/browsertest"
	"github.com/keelpay/keelpay/keyring/keyringtest"
	"github.com/keelpay/keelpay/provider/stripe"
	"github.com/keelpay/keelpay/service"
	"github.com/keelpay/keelpay/storage/sqlite"
	"github.com/keelpay/keelpay/webhooks/webhookstest"
)

// The whole of going live on Stripe, offline: keelpay's service and HTTP
// API on a SQLite file, the Stripe adapter on the fake of Stripe (which
// keeps Stripe's documented rules), the hosted card field in Chromium with
// the stand-in of Stripe.js, and a store on a standard Stripe account: no
// raw card data access, its search lagging, set up while the server runs
// (so its webhooks are read back from Stripe, not verified with a secret
// keelpay was given).

const (
	liveAccount     = "acct_1StandardShop"
	liveKey         = "rk_test_standard_shop"
	livePublishable = "pk_test_standard_shop"
)

// live is keelpay on the fake Stripe.
type live struct {
	fake   *fakeStripe
	srv    *httptest.Server
	dbPath string
	logs   *syncBuffer
	bodies *browsertest.Bodies
	hooks  *webhookstest.Recorder
	sk, pk string
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func startLive(t *testing.T) *live {
	t.Helper()
	f := newFakeStripe(t)
	// A standard account: no raw card data access. Search lags half an
	// hour, as it may during Stripe's incidents (docs.stripe.com/search).
	f.addAccount(liveKey, &fakeAccount{id: liveAccount, currency: "eur", chargesEnabled: true, publishableKey: livePublishable})
	f.set(func(f *fakeStripe) { f.searchLag = 30 * time.Minute })

	l := &live{fake: f, logs: &syncBuffer{}, bodies: &browsertest.Bodies{}, dbPath: filepath.Join(t.TempDir(), "keelpay.db")}
	mux := http.NewServeMux()
	l.srv = httptest.NewServer(mux)
	t.Cleanup(l.srv.Close)

	// The account is known by its publishable key only; its restricted
	// key arrives with the store's setup, and no webhook secret at all.
	p, err := stripe.New(stripe.Config{
		Accounts:  []stripe.Account{{ID: liveAccount, Key: liveKey, PublishableKey: livePublishable}},
		ReturnURL: l.srv.URL + "/stripe/return",
		APIURL:    f.srv.URL,
		JSURL:     f.jsURL(),
	})
	require.NoError(t, err)

	ctx := context.Background()
	db, err := sqlite.Open(ctx, sqlite.Config{Keyring: keyringtest.Keyring(), Path: l.dbPath})
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	svc, err := service.New(service.Config{
		AllowInsecureWebhooks: true, // the store's receiver is on loopback
		Logger:                slog.New(slog.NewJSONHandler(l.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Provider:              p,
		Storage:               db,
	})
	require.NoError(t, err)
	mux.Handle("/", l.bodies.Wrap(svc.Handler()))
	mux.Handle("GET /stripe/return", p.ReturnHandler())
	mux.Handle("POST /stripe/webhook", p.WebhookHandler())
	f.set(func(f *fakeStripe) { f.webhooks = append(f.webhooks, l.srv.URL+"/stripe/webhook") })
	require.NoError(t, svc.Start(ctx))
	t.Cleanup(func() {
		stopCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		require.NoError(t, svc.Stop(stopCtx))
	})

	// The store sets itself up with its account id and restricted key.
	l.hooks = webhookstest.NewRecorder(t, "")
	var store struct {
		SecretKey      string `json:"secret_key"`
		PublishableKey string `json:"publishable_key"`
		WebhookSecret  string `json:"webhook_secret"`
		Currency       string `json:"currency"`
	}
	status := l.call(t, "POST", "/v1/setup", "", map[string]any{
		"client_id": liveAccount, "client_secret": liveKey, "webhook_url": l.hooks.URL(),
	}, &store)
	require.Equal(t, http.StatusCreated, status)
	require.Equal(t, "EUR", store.Currency)
	require.NoError(t, l.hooks.SetSecrets(store.WebhookSecret))
	l.sk, l.pk = store.SecretKey, store.PublishableKey
	return l
}

// call makes one API request with the key (none when empty) and decodes
// the answer into out; it returns the status.
func (l *live) call(t *testing.T, method, path, key string, body any, out any) int {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(t, err)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, l.srv.URL+path, rd)
	require.NoError(t, err)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	if out != nil {
		require.NoError(t, json.Unmarshal(raw, out), "%s %s: %s", method, path, raw)
	}
	return res.StatusCode
}

// await reads path until cond holds of the object, or fails the test
// after limit.
func (l *live) await(t *testing.T, path string, limit time.Duration, cond func(map[string]any) bool) map[string]any {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		var obj map[string]any
		require.Equal(t, http.StatusOK, l.call(t, "GET", path, l.sk, nil, &obj))
		if cond(obj) {
			return obj
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not reach the state within %v: %v", path, limit, obj)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

var liveCustomer = map[string]any{"id": "cus-1", "name": "Jane Roe", "email": "jane@example.com", "phone": "+358401234567"}

// saveCard saves number through the hosted card field in Chromium, as a
// buyer does, and returns the card.
func (l *live) saveCard(t *testing.T, ctx context.Context, number string) map[string]any {
	t.Helper()
	var session map[string]any
	require.Equal(t, http.StatusCreated, l.call(t, "POST", "/v1/card_sessions", l.sk, map[string]any{
		"customer": liveCustomer, "page_origins": []string{l.srv.URL},
	}, &session))
	q := url.Values{"key": {l.pk}, "card_session": {session["id"].(string)},
		"client_secret": {session["client_secret"].(string)}, "origin": {l.srv.URL}, "name": {"1"}}
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(l.srv.URL+"/elements/v1/card?"+q.Encode()),
		// The stand-in of Stripe.js renders its inputs into the card field.
		chromedp.WaitVisible(`input[name="card-number"]`),
		chromedp.SendKeys(`#name`, "Jane Roe"),
		chromedp.SendKeys(`input[name="card-number"]`, number),
		chromedp.SendKeys(`input[name="card-expiry"]`, "12 / 30"),
		chromedp.SendKeys(`input[name="card-cvc"]`, "123"),
	))
	// The store's page asks the field to save the card, as keelpay.js
	// does, with postMessage (the field is opened as its own parent here).
	res, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]any](`new Promise(resolve => {
		const id = Math.floor(Math.random() * 1e9);
		window.addEventListener('message', e => {
			if (e.data && e.data.type === 'keelpay:result' && e.data.id === id) resolve(e.data);
		});
		window.postMessage({id, type: 'keelpay:capture'}, location.origin);
	})`, chromedp.EvalAwaitPromise))
	require.NoError(t, err)
	require.Equal(t, true, res["ok"], "capture: %v\n%s", res, l.logs.String())
	return res["value"].(map[string]any)
}

// pay creates an intent of amount and confirms it with the saved card.
func (l *live) pay(t *testing.T, cardID string, amount int) map[string]any {
	t.Helper()
	var pi map[string]any
	require.Equal(t, http.StatusCreated, l.call(t, "POST", "/v1/payment_intents", l.sk, map[string]any{
		"amount": amount, "currency": "EUR", "customer": liveCustomer,
	}, &pi))
	var confirmed map[string]any
	require.Equal(t, http.StatusOK, l.call(t, "POST", "/v1/payment_intents/"+pi["id"].(string)+"/confirm", l.sk,
		map[string]any{"payment_method": cardID}, &confirmed))
	return confirmed
}

func TestGoingLiveOnAStandardStripeAccount(t *testing.T) {
	ctx := browsertest.New(t, 3*time.Minute)
	l := startLive(t)

	// 1. A card saved through the hosted field: Stripe.js makes the
	// PaymentMethod in the browser, keelpay gets its id.
	card := l.saveCard(t, ctx, fakeCard3DS)
	require.Equal(t, "3184", card["last4"])
	require.Equal(t, "visa", card["brand"])
	require.EqualValues(t, 12, card["exp_month"])
	require.EqualValues(t, 2030, card["exp_year"])

	// 2. Paid with 3D Secure, and the buyer comes back at once: the intent
	// succeeds within seconds, although Stripe's search would not show the
	// PaymentIntent for half an hour.
	pi := l.pay(t, card["id"].(string), 4200)
	require.Equal(t, "requires_action", pi["status"], "%v", pi)
	next := pi["next_action"].(map[string]any)
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(next["url"].(string)),
		chromedp.Click(`#complete`),
		chromedp.WaitReady(`body`),
	))
	paid := l.await(t, "/v1/payment_intents/"+pi["id"].(string), 5*time.Second,
		func(o map[string]any) bool { return o["status"] == "succeeded" })
	require.Equal(t, "3184", paid["payment_method"].(map[string]any)["last4"])
	orderID, _ := paid["order_id"].(string)
	require.NotEmpty(t, orderID)

	// 3. Refunded, and paid back at Stripe.
	var refund map[string]any
	require.Equal(t, http.StatusCreated, l.call(t, "POST", "/v1/refunds", l.sk,
		map[string]any{"payment_intent": pi["id"], "reason": "returned"}, &refund))
	require.Equal(t, "succeeded", refund["status"], "%v", refund)
	require.Equal(t, []string{"succeeded"}, refundStatuses(l.fake, orderID))

	// 4. A refund that Stripe reports succeeded and later failed (test
	// card 4000000000005126) is reported failed, with Stripe's reason,
	// and a refund.failed event.
	failing := l.saveCard(t, ctx, fakeCardRefundFails)
	pi2 := l.pay(t, failing["id"].(string), 1500)
	require.Equal(t, "succeeded", pi2["status"], "%v", pi2)
	var refund2 map[string]any
	require.Equal(t, http.StatusCreated, l.call(t, "POST", "/v1/refunds", l.sk,
		map[string]any{"payment_intent": pi2["id"], "reason": "returned"}, &refund2))
	require.Equal(t, "succeeded", refund2["status"], "%v", refund2)
	l.fake.failRefundsNow()
	failed := l.await(t, "/v1/refunds/"+refund2["id"].(string), 5*time.Second,
		func(o map[string]any) bool { return o["status"] == "failed" })
	le := failed["last_error"].(map[string]any)
	require.Equal(t, "refund_rejected", le["code"], "%v", failed)
	require.Contains(t, le["message"], "Stripe")
	events := l.await(t, "/v1/events?type=refund.failed", 5*time.Second, func(o map[string]any) bool {
		return len(o["data"].([]any)) == 1
	})
	obj := events["data"].([]any)[0].(map[string]any)["data"].(map[string]any)["object"].(map[string]any)
	require.Equal(t, refund2["id"], obj["id"])

	// 5. A buyer pays with a new card typed into the field of an intent:
	// Stripe.js makes the PaymentMethod, the confirm carries only its id.
	var pi3 map[string]any
	require.Equal(t, http.StatusCreated, l.call(t, "POST", "/v1/payment_intents", l.sk, map[string]any{
		"amount": 990, "currency": "EUR", "customer": liveCustomer, "page_origins": []string{l.srv.URL},
	}, &pi3))
	q := url.Values{"key": {l.pk}, "payment_intent": {pi3["id"].(string)},
		"client_secret": {pi3["client_secret"].(string)}, "origin": {l.srv.URL}}
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(l.srv.URL+"/elements/v1/card?"+q.Encode()),
		chromedp.WaitVisible(`input[name="card-number"]`),
		chromedp.SendKeys(`input[name="card-number"]`, fakeCardSucceeds),
		chromedp.SendKeys(`input[name="card-expiry"]`, "12 / 30"),
		chromedp.SendKeys(`input[name="card-cvc"]`, "123"),
	))
	res, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]any](`new Promise(resolve => {
		const id = Math.floor(Math.random() * 1e9);
		window.addEventListener('message', e => {
			if (e.data && e.data.type === 'keelpay:result' && e.data.id === id) resolve(e.data);
		});
		window.postMessage({id, type: 'keelpay:confirm', paymentIntent: {id: '`+pi3["id"].(string)+`', clientSecret: '`+pi3["client_secret"].(string)+`'}}, location.origin);
	})`, chromedp.EvalAwaitPromise))
	require.NoError(t, err)
	require.Equal(t, true, res["ok"], "confirm: %v", res)
	paid3 := res["value"].(map[string]any)
	require.Equal(t, "succeeded", paid3["status"], "%v", paid3)
	require.Equal(t, map[string]any{"brand": "visa", "last4": "4242", "exp_month": 12.0, "exp_year": 2030.0, "saved": false}, paid3["payment_method"])
	var confirms int
	for _, body := range l.bodies.List() {
		if strings.HasPrefix(body, "POST /v1/payment_intents/"+pi3["id"].(string)+"/confirm ") {
			confirms++
			require.Regexp(t, `"payment_method":"pm_[A-Za-z0-9_]+"`, body)
		}
	}
	require.Equal(t, 1, confirms)

	// The money rule: every PaymentIntent Stripe charged belongs to a
	// succeeded intent of keelpay's, the one whose order it is.
	paid2 := l.await(t, "/v1/payment_intents/"+pi2["id"].(string), time.Second,
		func(o map[string]any) bool { return o["status"] == "succeeded" })
	paid3read := l.await(t, "/v1/payment_intents/"+pi3["id"].(string), time.Second,
		func(o map[string]any) bool { return o["status"] == "succeeded" })
	orders := map[any]bool{paid["order_id"]: true, paid2["order_id"]: true, paid3read["order_id"]: true}
	var charged int
	for _, c := range l.fake.chargeList() {
		if c["status"] == "succeeded" {
			charged++
			require.True(t, orders[c["id"]], "Stripe charged %v, which no succeeded intent holds", c["id"])
		}
	}
	require.Equal(t, 3, charged)

	// No card number reached keelpay: not in a request body its API
	// received, not in its log, not in its database file.
	numbers := []string{fakeCard3DS, fakeCardRefundFails, fakeCardSucceeds, "4000 0027 6000 3184", "4000 0000 0000 5126", "4242 4242 4242 4242"}
	for _, n := range numbers {
		for _, body := range l.bodies.List() {
			require.NotContains(t, body, n, "a request body to keelpay's API holds a card number")
		}
		require.NotContains(t, l.logs.String(), n, "a log line holds a card number")
	}
	for _, suffix := range []string{"", "-wal"} {
		data, err := os.ReadFile(l.dbPath + suffix)
		if os.IsNotExist(err) {
			continue
		}
		require.NoError(t, err)
		for _, n := range numbers {
			require.False(t, bytes.Contains(data, []byte(n)), "keelpay.db%s holds a card number", suffix)
		}
	}
	var captures int
	for _, body := range l.bodies.List() {
		if strings.HasPrefix(body, "POST /v1/card_sessions/") && strings.Contains(body, "/cards ") {
			captures++
			require.Regexp(t, `"payment_method":"pm_[A-Za-z0-9_]+"`, body)
		}
	}
	require.Equal(t, 2, captures)
}

// refundStatuses are the statuses of the fake's refunds of PaymentIntent
// piID.
func refundStatuses(f *fakeStripe, piID string) []string {
	var out []string
	for _, r := range f.refundList() {
		if r["payment_intent"] == piID {
			out = append(out, r["status"].(string))
		}
	}
	return out
}

// A card number sent through keelpay's capture API, on an adapter without
// the raw card data opt-in: refused before it reaches Stripe, and both the
// answer and the log say which setting and why.
func TestRawCardNumberOnAStandardAccountSaysWhy(t *testing.T) {
	l := startLive(t)
	var session map[string]any
	require.Equal(t, http.StatusCreated, l.call(t, "POST", "/v1/card_sessions", l.sk, map[string]any{
		"customer": liveCustomer, "page_origins": []string{l.srv.URL},
	}, &session))
	var answer struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	status := l.call(t, "POST", "/v1/card_sessions/"+session["id"].(string)+"/cards", l.pk, map[string]any{
		"client_secret": session["client_secret"], "number": fakeCardSucceeds, "exp_month": 12, "exp_year": 2030, "cvc": "123",
	}, &answer)
	require.Equal(t, http.StatusUnprocessableEntity, status)
	require.Equal(t, "card_rejected", answer.Error.Code)
	require.Contains(t, answer.Error.Message, "RawCardData")
	require.Contains(t, answer.Error.Message, "SAQ D")
	require.NotContains(t, answer.Error.Message, fakeCardSucceeds)
	require.Contains(t, l.logs.String(), "KEELPAY_STRIPE_RAW_CARD_DATA")
	require.NotContains(t, l.logs.String(), fakeCardSucceeds)
	for _, r := range l.fake.requestList() {
		require.NotEqual(t, "POST /v1/payment_methods", r, "the number reached Stripe")
	}
}
