package keelpaytest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/keyring/keyringtest"
	"github.com/keelpay/keelpay/payments"
	"github.com/keelpay/keelpay/provider/sandbox"
	"github.com/keelpay/keelpay/refunds"
	"github.com/keelpay/keelpay/service"
	"github.com/keelpay/keelpay/storage/sqlite"
	"github.com/keelpay/keelpay/webhooks"
	"github.com/keelpay/keelpay/webhooks/webhookstest"
)

// WaitTimeoutDefault is how long [Kit.RequireEvent] and
// [Kit.RequireNoEvent] wait for deliveries before they fail the test.
const WaitTimeoutDefault = 10 * time.Second

// subscriptionBuffer is the service's SubscriptionBuffer in the kit: the
// events a test commits between two drains (a drain misses those lost to
// a full buffer).
const subscriptionBuffer = 1 << 16

// Kit is a complete keelpay running inside a test: the service over a
// SQLite database in the test's temporary directory, the in-memory sandbox
// provider, a manual clock shared by both, the API served on a loopback
// httptest server, and a webhook receiver that verifies every delivery.
// Start builds it; everything stops when the test ends.
type Kit struct {
	// Clock is the time of the service and the sandbox. Move it with
	// [Kit.Advance], which also runs what became due.
	Clock *Clock
	// Sandbox is the provider: its test cards, switches and counters.
	Sandbox *sandbox.Sandbox
	// Service is the keelpay under test, its background workers running.
	Service *service.Service
	// URL is the base of the API (and of the sandbox's 3D Secure pages).
	URL string
	// Webhooks receives every store's deliveries and verifies them with
	// the store's webhook secret.
	Webhooks *webhookstest.Recorder

	wait time.Duration

	mu        sync.Mutex
	setups    int             // Store calls so far, naming each store's application
	stores    map[string]bool // ids of the stores set up by Store
	secrets   []string
	committed <-chan *service.Event // every event this service committed
	pending   []string              // ids of committed events of the kit's stores
}

// T is what the kit needs of a test: *testing.T, *testing.B and
// *testing.F have it (as does any testing.TB).
type T interface {
	Cleanup(func())
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
	Helper()
	TempDir() string
}

// Option changes how [Start] builds a Kit.
type Option func(*kitOptions)

type kitOptions struct {
	configure []func(*service.Config)
	wait      time.Duration
}

// WithServiceConfig lets configure change the service's configuration
// before the service is built (a logger, worker intervals, dispatcher
// options), after the kit filled it in; several run in order. Storage,
// Provider and Clock are the kit's: change them only to wrap them.
func WithServiceConfig(configure func(*service.Config)) Option {
	return func(o *kitOptions) { o.configure = append(o.configure, configure) }
}

// WithWaitTimeout sets how long the kit waits for deliveries before it
// fails the test. Default [WaitTimeoutDefault].
func WithWaitTimeout(d time.Duration) Option {
	return func(o *kitOptions) { o.wait = d }
}

// Start starts a complete keelpay for t and stops it when t ends. The
// clock starts at the current time, to the second, and moves only when
// the test moves it. The service's log is discarded unless
// [WithServiceConfig] sets a logger.
func Start(t T, opts ...Option) *Kit {
	t.Helper()
	o := kitOptions{wait: WaitTimeoutDefault}
	for _, opt := range opts {
		opt(&o)
	}
	ctx := context.Background()
	clock := NewClock(time.Now().Truncate(time.Second))

	db, err := sqlite.Open(ctx, sqlite.Config{Keyring: keyringtest.Keyring(), Path: filepath.Join(t.TempDir(), "keelpay.db")})
	if err != nil {
		t.Fatalf("keelpaytest: open the database: %v", err)
	}
	// Cleanups run last in, first out: the database closes last.
	t.Cleanup(func() { _ = db.Close() })
	sb := sandbox.New(sandbox.Config{Clock: clock})
	t.Cleanup(func() { _ = sb.Close() })
	cfg := service.Config{
		AllowInsecureWebhooks: true, // the receiver is on loopback
		Clock:                 clock,
		Logger:                slog.New(slog.DiscardHandler),
		Provider:              sb,
		Storage:               db,
		// The kit's own subscription is read only when it drains.
		SubscriptionBuffer: subscriptionBuffer,
	}
	for _, configure := range o.configure {
		configure(&cfg)
	}
	svc, err := service.New(cfg)
	if err != nil {
		t.Fatalf("keelpaytest: %v", err)
	}
	k := &Kit{Clock: clock, Sandbox: sb, Service: svc, wait: o.wait, stores: map[string]bool{}}
	// A subscription to every event, read only when the kit drains, tells
	// which deliveries are still to come.
	var unsubscribe func()
	k.committed, unsubscribe = svc.Subscribe()
	t.Cleanup(unsubscribe)

	mux := http.NewServeMux()
	mux.Handle("/sandbox/3ds/", sb.ChallengeHandler())
	mux.Handle("/", svc.Handler())
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	k.URL = srv.URL
	sb.SetBaseURL(srv.URL)
	k.Webhooks = webhookstest.NewRecorder(t, "")

	if err := svc.Start(ctx); err != nil {
		t.Fatalf("keelpaytest: %v", err)
	}
	// The workers stop first, while the receiver and the server still
	// answer.
	t.Cleanup(func() {
		stopCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if err := svc.Stop(stopCtx); err != nil {
			t.Errorf("keelpaytest: stop the service: %v", err)
		}
	})
	return k
}

// HandleWebhooks makes h answer every delivery from now on, after the
// kit's receiver has recorded and verified it: the store's own webhook
// handler, tested with the deliveries keelpay really sends (h gets the
// request as sent, body and signature headers included). nil restores the
// receiver's own answers.
func (k *Kit) HandleWebhooks(h http.Handler) {
	if h == nil {
		k.Webhooks.SetResponder(nil)
		return
	}
	k.Webhooks.SetResponder(h.ServeHTTP)
}

// Store is a store set up through the API, its webhooks going to the
// kit's receiver.
type Store struct {
	ID             string
	PublishableKey string
	SecretKey      string
	WebhookSecret  string
	// Customer is the customer of the store's test payments and cards.
	Customer keelpay.Customer

	kit *Kit
}

// Store sets up a new store with a sandbox application of its own and
// the kit's receiver as its webhook URL.
func (k *Kit) Store(t T) *Store {
	t.Helper()
	k.mu.Lock()
	k.setups++
	n := k.setups
	k.mu.Unlock()
	var out struct {
		ID             string `json:"id"`
		PublishableKey string `json:"publishable_key"`
		SecretKey      string `json:"secret_key"`
		WebhookSecret  string `json:"webhook_secret"`
	}
	k.call(t, http.MethodPost, "/v1/setup", "", map[string]any{
		"client_id":     fmt.Sprintf("app_kit%d", n),
		"client_secret": fmt.Sprintf("secret_kit%d", n),
		"webhook_url":   k.Webhooks.URL(),
	}, http.StatusCreated, &out)
	k.mu.Lock()
	k.stores[out.ID] = true
	k.secrets = append(k.secrets, out.WebhookSecret)
	err := k.Webhooks.SetSecrets(k.secrets...)
	k.mu.Unlock()
	if err != nil {
		t.Fatalf("keelpaytest: %v", err)
	}
	return &Store{
		ID: out.ID, PublishableKey: out.PublishableKey, SecretKey: out.SecretKey, WebhookSecret: out.WebhookSecret,
		Customer: keelpay.Customer{ID: "cus_test", Name: "Test Buyer", Email: "buyer@example.com", Phone: "+4915112345678"},
		kit:      k,
	}
}

// SaveCard saves a sandbox test card (sandbox.CardVisa,
// sandbox.CardThreeDSecure, ...) for the store's customer the way a
// browser does: a card session with the secret key, the card captured
// into it with the publishable key. It returns the card's id.
func (s *Store) SaveCard(t T, number string) string {
	t.Helper()
	var session struct {
		ID           string `json:"id"`
		ClientSecret string `json:"client_secret"`
	}
	s.kit.call(t, http.MethodPost, "/v1/card_sessions", s.SecretKey, map[string]any{
		"customer": s.Customer, "page_origins": []string{"https://shop.example"},
	}, http.StatusCreated, &session)
	var card struct {
		ID string `json:"id"`
	}
	s.kit.call(t, http.MethodPost, "/v1/card_sessions/"+session.ID+"/cards", s.PublishableKey, map[string]any{
		"client_secret": session.ClientSecret, "number": number,
		"exp_month": 12, "exp_year": s.kit.Clock.Now().Year() + 2, "cvc": "123",
	}, http.StatusCreated, &card)
	return card.ID
}

// Pay creates a payment intent of amount in currency (an ISO code, "eur")
// for the store's customer and confirms it with the saved card, with the
// secret key. It returns the intent as the confirm answered: succeeded,
// requires_action (answer it with [Kit.Answer3DS]), processing (move the
// clock) or requires_payment_method with last_error.
func (s *Store) Pay(t T, card string, amount int64, currency string) *payments.IntentObject {
	t.Helper()
	var created payments.IntentObject
	s.kit.call(t, http.MethodPost, "/v1/payment_intents", s.SecretKey, map[string]any{
		"amount": amount, "currency": currency, "customer": s.Customer, "payment_method": card,
	}, http.StatusCreated, &created)
	var confirmed payments.IntentObject
	s.kit.call(t, http.MethodPost, "/v1/payment_intents/"+created.ID+"/confirm", s.SecretKey, map[string]any{},
		http.StatusOK, &confirmed)
	return &confirmed
}

// Intent reads a payment intent with the secret key.
func (s *Store) Intent(t T, id string) *payments.IntentObject {
	t.Helper()
	var pi payments.IntentObject
	s.kit.call(t, http.MethodGet, "/v1/payment_intents/"+id, s.SecretKey, nil, http.StatusOK, &pi)
	return &pi
}

// RequireIntentStatus fails the test unless the intent is in status now,
// and returns it.
func (s *Store) RequireIntentStatus(t T, id string, status keelpay.PaymentIntentStatus) *payments.IntentObject {
	t.Helper()
	pi := s.Intent(t, id)
	if pi.Status != status {
		t.Fatalf("keelpaytest: payment intent %s is %s, want %s (last_error %+v)", id, pi.Status, status, pi.LastError)
	}
	return pi
}

// Refund sends the refund of a succeeded intent with reason and returns
// it as the API answered (pending, failed or succeeded).
func (s *Store) Refund(t T, intentID, reason string) *refunds.Object {
	t.Helper()
	var r refunds.Object
	s.kit.call(t, http.MethodPost, "/v1/refunds", s.SecretKey, map[string]any{
		"payment_intent": intentID, "reason": reason,
	}, http.StatusCreated, &r)
	return &r
}

// Answer3DS answers the 3D Secure challenge of an intent in
// requires_action as the buyer would on the sandbox's page: complete or
// fail. keelpay learns the answer at once, as from a real provider's
// notification; the intent it returns is read after that.
func (s *Store) Answer3DS(t T, intent *payments.IntentObject, complete bool) *payments.IntentObject {
	t.Helper()
	if intent.NextAction == nil || intent.NextAction.URL == "" {
		t.Fatalf("keelpaytest: payment intent %s (%s) has no 3D Secure page", intent.ID, intent.Status)
	}
	// The sandbox tells the service on a goroutine of its own; the answer is
	// known when the intent's outcome is committed.
	settled, stop := s.kit.Service.Subscribe(keelpay.EventPaymentIntentSucceeded,
		keelpay.EventPaymentIntentPaymentFailed, keelpay.EventPaymentIntentCanceled)
	defer stop()
	if err := s.kit.Sandbox.AnswerChallenge(context.Background(), path.Base(intent.NextAction.URL), complete); err != nil {
		t.Fatalf("keelpaytest: answer 3D Secure of %s: %v", intent.ID, err)
	}
	deadline := time.NewTimer(s.kit.wait)
	defer deadline.Stop()
	for {
		select {
		case e := <-settled:
			if e.PaymentIntent != nil && e.PaymentIntent.ID == intent.ID {
				return s.Intent(t, intent.ID)
			}
		case <-deadline.C:
			t.Fatalf("keelpaytest: payment intent %s not settled %v after its 3D Secure answer", intent.ID, s.kit.wait)
			return nil
		}
	}
}

// Advance moves the clock forward by d and runs what became due, before
// it returns: expiry of intents and card sessions, 3D Secure waits that
// ended, reconciliation of unknown charge and refund outcomes; the
// webhooks they cause leave at once. (With sandbox.CardOutcomeUnknown,
// Advance(2*time.Minute) or more resolves the payment.)
func (k *Kit) Advance(t T, d time.Duration) {
	t.Helper()
	k.Clock.Advance(d)
	if err := k.runDue(context.Background()); err != nil {
		t.Fatalf("keelpaytest: due work after advancing %v: %v", d, err)
	}
}

func (k *Kit) runDue(ctx context.Context) error {
	defer k.Service.Dispatcher().Notify()
	return errors.Join(k.Service.Payments().Expire(ctx), k.Service.Payments().Reconcile(ctx), k.Service.Refunds().Reconcile(ctx))
}

// RequireEvent waits until the receiver got a delivery, with a valid
// signature, of an event of type typ about the object objectID (a payment
// intent, refund or card id), and returns it. It fails the test if none
// arrives within the kit's wait timeout ([WithWaitTimeout]).
func (k *Kit) RequireEvent(t T, typ keelpay.EventType, objectID string) webhookstest.Delivery {
	t.Helper()
	deadline := time.NewTimer(k.wait)
	defer deadline.Stop()
	for {
		got, next := k.Webhooks.Watch()
		for _, d := range got {
			if matches(d, typ, objectID) {
				return d
			}
		}
		select {
		case <-next:
		case <-deadline.C:
			t.Fatalf("keelpaytest: no verified %s event for %s after %v; received: %s", typ, objectID, k.wait, summary(got))
			return webhookstest.Delivery{}
		}
	}
}

// RequireNoEvent runs what is due now (without moving the clock), waits
// until every event committed so far for the kit's stores reached the
// receiver, and fails the test if one of them is of type typ about
// objectID.
func (k *Kit) RequireNoEvent(t T, typ keelpay.EventType, objectID string) {
	t.Helper()
	got := k.Drain(t)
	for _, d := range got {
		if matches(d, typ, objectID) {
			t.Fatalf("keelpaytest: unexpected %s event for %s", typ, objectID)
		}
	}
}

// Drain runs what is due now (without moving the clock) and waits until
// every event committed so far for the kit's stores reached the receiver
// at least once; it returns every delivery received.
func (k *Kit) Drain(t T) []webhookstest.Delivery {
	t.Helper()
	if err := k.runDue(context.Background()); err != nil {
		t.Fatalf("keelpaytest: due work: %v", err)
	}
	k.mu.Lock()
	for more := true; more; {
		select {
		case e := <-k.committed:
			if k.stores[e.StoreID] {
				k.pending = append(k.pending, e.ID)
			}
		default:
			more = false
		}
	}
	want := append([]string(nil), k.pending...)
	k.mu.Unlock()

	deadline := time.NewTimer(k.wait)
	defer deadline.Stop()
	for {
		got, next := k.Webhooks.Watch()
		arrived := map[string]bool{}
		for _, d := range got {
			if e, err := d.Event(); err == nil {
				arrived[e.ID] = true
			}
		}
		var missing []string
		for _, id := range want {
			if !arrived[id] {
				missing = append(missing, id)
			}
		}
		if len(missing) == 0 {
			return got
		}
		select {
		case <-next:
		case <-deadline.C:
			t.Fatalf("keelpaytest: events %v not delivered after %v", missing, k.wait)
			return got
		}
	}
}

// matches reports whether d is a verified delivery of an event of type typ
// about objectID.
func matches(d webhookstest.Delivery, typ keelpay.EventType, objectID string) bool {
	if d.Err != nil {
		return false
	}
	e, err := d.Event()
	if err != nil || e.Type != string(typ) {
		return false
	}
	return objectOf(e) == objectID
}

func objectOf(e webhooks.Event) string {
	var obj struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(e.Data.Object, &obj)
	return obj.ID
}

func summary(got []webhookstest.Delivery) string {
	if len(got) == 0 {
		return "nothing"
	}
	var b strings.Builder
	for i, d := range got {
		if i > 0 {
			b.WriteString(", ")
		}
		e, err := d.Event()
		switch {
		case err != nil:
			fmt.Fprintf(&b, "(unreadable body: %v)", err)
		case d.Err != nil:
			fmt.Fprintf(&b, "%s %s (not verified: %v)", e.Type, objectOf(e), d.Err)
		default:
			fmt.Fprintf(&b, "%s %s", e.Type, objectOf(e))
		}
	}
	return b.String()
}

// call sends a request to the API and decodes the answer into out,
// failing the test unless the status is want.
func (k *Kit) call(t T, method, p, key string, body any, want int, out any) {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatalf("keelpaytest: %v", err)
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, k.URL+p, r)
	if err != nil {
		t.Fatalf("keelpaytest: %v", err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("keelpaytest: %s %s: %v", method, p, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("keelpaytest: %s %s: %v", method, p, err)
	}
	if resp.StatusCode != want {
		t.Fatalf("keelpaytest: %s %s: status %d, want %d: %s", method, p, resp.StatusCode, want, b)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("keelpaytest: %s %s: %v", method, p, err)
	}
}
