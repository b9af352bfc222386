package keelpaytest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/keelpaytest"
	"github.com/keelpay/keelpay/provider/sandbox"
	"github.com/keelpay/keelpay/webhooks"
)

// shop is a store's own code, the code under test: its checkout creates a
// payment intent for an order through keelpay's API and confirms it with
// the buyer's saved card; its webhook handler fulfils the order when
// keelpay reports payment_intent.succeeded.
type shop struct {
	api       string // keelpay's API
	secretKey string
	customer  keelpay.Customer
	verifier  *webhooks.Verifier
	fulfilled chan string // the orders fulfilled, in the order of their webhooks
}

// ServeHTTP is the checkout: POST ?order=...&card=... answers the status
// of the payment and, for 3D Secure, the page to send the buyer to.
func (s *shop) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var pi struct {
		ID         string `json:"id"`
		Status     string `json:"status"`
		NextAction *struct {
			URL string `json:"url"`
		} `json:"next_action"`
	}
	err := s.call("/v1/payment_intents", map[string]any{"amount": 1999, "currency": "eur", "customer": s.customer,
		"reference": r.FormValue("order"), "payment_method": r.FormValue("card")}, &pi)
	if err == nil {
		err = s.call("/v1/payment_intents/"+pi.ID+"/confirm", map[string]any{}, &pi)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	answer := map[string]string{"payment_intent": pi.ID, "status": pi.Status}
	if pi.NextAction != nil {
		answer["redirect"] = pi.NextAction.URL
	}
	_ = json.NewEncoder(w).Encode(answer)
}

func (s *shop) call(path string, body, out any) error {
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", s.api+path, bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+s.secretKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		return fmt.Errorf("keelpay answered %s", resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

// webhook verifies a delivery and fulfils the order it pays.
func (s *shop) webhook(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err == nil {
		err = s.verifier.Verify(body, r.Header)
	}
	if err != nil {
		http.Error(w, "bad signature", http.StatusBadRequest)
		return
	}
	var e webhooks.Event
	_ = json.Unmarshal(body, &e)
	if e.Type == string(keelpay.EventPaymentIntentSucceeded) {
		var pi struct {
			Reference string `json:"reference"`
		}
		_ = json.Unmarshal(e.Data.Object, &pi)
		s.fulfilled <- pi.Reference
	}
	w.WriteHeader(http.StatusNoContent)
}

// A store's checkout tested end to end against a whole keelpay: a card
// that pays at once, a card that asks for 3D Secure, and a card whose
// outcome is unknown until the clock moves on. In a test, t is the test's
// own *testing.T and the kit stops when the test ends.
func ExampleStart() {
	t := &exampleT{}
	defer t.finish()

	kp := keelpaytest.Start(t)
	store := kp.Store(t)
	verifier, _ := webhooks.NewVerifier([]string{store.WebhookSecret})
	s := &shop{api: kp.URL, secretKey: store.SecretKey, customer: store.Customer,
		verifier: verifier, fulfilled: make(chan string, 10)}
	kp.HandleWebhooks(http.HandlerFunc(s.webhook))

	checkout := func(order, card string) map[string]string {
		w := httptest.NewRecorder()
		s.ServeHTTP(w, httptest.NewRequest("POST", "/checkout?order="+order+"&card="+card, nil))
		var answer map[string]string
		_ = json.NewDecoder(w.Body).Decode(&answer)
		return answer
	}
	fulfilled := func() string {
		select {
		case order := <-s.fulfilled:
			return order
		case <-time.After(keelpaytest.WaitTimeoutDefault):
			return "nothing"
		}
	}

	// A card that pays at once.
	paid := checkout("order-1", store.SaveCard(t, sandbox.CardVisa))
	fmt.Println("order-1:", paid["status"])
	kp.RequireEvent(t, keelpay.EventPaymentIntentSucceeded, paid["payment_intent"])
	fmt.Println("fulfilled:", fulfilled())

	// 3D Secure: the buyer completes the challenge on the sandbox's page.
	challenged := checkout("order-2", store.SaveCard(t, sandbox.CardThreeDSecure))
	fmt.Println("order-2:", challenged["status"], strings.HasPrefix(challenged["redirect"], kp.URL+"/sandbox/3ds/"))
	pi := store.Answer3DS(t, challenged["payment_intent"], true)
	fmt.Println("order-2 after 3D Secure:", pi.Status)
	fmt.Println("fulfilled:", fulfilled())

	// An unknown outcome: nothing is fulfilled until keelpay learns that
	// the charge went through, which the sandbox tells after 2 minutes.
	unknown := checkout("order-3", store.SaveCard(t, sandbox.CardOutcomeUnknown))
	fmt.Println("order-3:", unknown["status"])
	kp.RequireNoEvent(t, keelpay.EventPaymentIntentSucceeded, unknown["payment_intent"])
	kp.Advance(t, 2*time.Minute)
	kp.RequireEvent(t, keelpay.EventPaymentIntentSucceeded, unknown["payment_intent"])
	store.RequireIntentStatus(t, unknown["payment_intent"], "succeeded")
	fmt.Println("fulfilled:", fulfilled())

	// Output:
	// order-1: succeeded
	// fulfilled: order-1
	// order-2: requires_action true
	// order-2 after 3D Secure: succeeded
	// fulfilled: order-2
	// order-3: processing
	// fulfilled: order-3
}

// exampleT stands in for the *testing.T that an Example does not get.
type exampleT struct {
	cleanups []func()
	dirs     []string
}

func (t *exampleT) Cleanup(f func())               { t.cleanups = append(t.cleanups, f) }
func (t *exampleT) Errorf(format string, a ...any) { fmt.Printf("error: "+format+"\n", a...) }
func (t *exampleT) Fatalf(format string, a ...any) { panic(fmt.Sprintf(format, a...)) }
func (t *exampleT) Helper()                        {}
func (t *exampleT) TempDir() string {
	dir, err := os.MkdirTemp("", "keelpaytest-example")
	if err != nil {
		panic(err)
	}
	t.dirs = append(t.dirs, dir)
	return dir
}

// finish runs the cleanups, last first, as a test's end does.
func (t *exampleT) finish() {
	for _, f := range slices.Backward(t.cleanups) {
		f()
	}
	for _, dir := range t.dirs {
		_ = os.RemoveAll(dir)
	}
}

// A store's webhook handler, webhooks.NewHandler as the store mounts it,
// tested against a whole keelpay: RequireHandled returns once the store's
// function has returned, although the handler answered 204 before calling
// it, so its effect is checked right after.
func ExampleKit_RequireHandled() {
	t := &exampleT{}
	defer t.finish()

	kp := keelpaytest.Start(t, keelpaytest.WithWebhookPath("/webhooks"))
	store := kp.Store(t)
	verifier, _ := webhooks.NewVerifier([]string{store.WebhookSecret})
	var mu sync.Mutex
	paid := map[string]bool{} // the store's orders
	mux := http.NewServeMux()
	mux.Handle("POST /webhooks", webhooks.NewHandler(verifier, func(ctx context.Context, e webhooks.Event, body []byte) {
		if e.Type != string(keelpay.EventPaymentIntentSucceeded) {
			return
		}
		var pi struct {
			ID string `json:"id"`
		}
		_ = json.Unmarshal(e.Data.Object, &pi)
		mu.Lock()
		paid[pi.ID] = true
		mu.Unlock()
	}))
	kp.HandleWebhooks(mux)

	pi := store.Pay(t, store.SaveCard(t, sandbox.CardVisa), 1999, "eur")
	h := kp.RequireHandled(t, keelpay.EventPaymentIntentSucceeded, pi.ID)
	mu.Lock()
	fmt.Println(h.Status, paid[pi.ID])
	mu.Unlock()
	// Output: 204 true
}
