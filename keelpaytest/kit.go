package keelpaytest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
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

	"github.com/jackc/pgx/v5"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/internal/statuswriter"
	"github.com/keelpay/keelpay/keyring/keyringtest"
	"github.com/keelpay/keelpay/payments"
	"github.com/keelpay/keelpay/provider/sandbox"
	"github.com/keelpay/keelpay/refunds"
	"github.com/keelpay/keelpay/service"
	"github.com/keelpay/keelpay/storage"
	"github.com/keelpay/keelpay/storage/postgres"
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
// SQLite database in the test's temporary directory (or, with
// [WithPostgres], a PostgreSQL schema of the test's own), the in-memory sandbox
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

	wait        time.Duration
	webhookPath string
	schema      string // the PostgreSQL schema of WithPostgres

	mu        sync.Mutex
	handled   []Handled       // deliveries the store's handler finished with
	nextDone  chan struct{}   // closed when the store's handler finishes another
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
	configure   []func(*service.Config)
	wait        time.Duration
	webhookPath string
	postgres    *string // the DSN of WithPostgres
}

// WithPostgres runs the kit on the PostgreSQL server of dsn (a postgres://
// URL or a key=value string) instead of SQLite: keelpay's tables go to a
// new, empty schema with a random name (kp_ and 16 hexadecimal digits),
// created by Start and dropped with everything in it when the test ends,
// so that tests run in parallel, and runs one after another, never see
// each other's rows. The DSN's user needs CREATE on the database. The
// store's test chooses whether PostgreSQL runs: a common way is to read
// the DSN from an environment variable and skip without it:
//
//	dsn := os.Getenv("KEELPAY_TEST_POSTGRES")
//	if dsn == "" {
//		t.Skip("KEELPAY_TEST_POSTGRES is not set: the PostgreSQL checkout is skipped")
//	}
//	kp := keelpaytest.Start(t, keelpaytest.WithPostgres(dsn))
func WithPostgres(dsn string) Option {
	return func(o *kitOptions) { o.postgres = &dsn }
}

// WithWebhookPath sets the path of every store's webhook_url on the kit's
// receiver, and so the path at which deliveries reach the handler of
// [Kit.HandleWebhooks]: give the path the store's own mux routes to its
// webhook handler, such as "/webhooks". Default "/".
func WithWebhookPath(p string) Option {
	return func(o *kitOptions) { o.webhookPath = p }
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
	o := kitOptions{wait: WaitTimeoutDefault, webhookPath: "/"}
	for _, opt := range opts {
		opt(&o)
	}
	if !strings.HasPrefix(o.webhookPath, "/") {
		t.Fatalf("keelpaytest: WithWebhookPath(%q): the path must start with /", o.webhookPath)
	}
	ctx := context.Background()
	clock := NewClock(time.Now().Truncate(time.Second))

	db, schema, err := openStorage(ctx, t, o)
	if err != nil {
		t.Fatalf("keelpaytest: open the database: %v", err)
	}
	// Cleanups run last in, first out: the database closes last (and its
	// schema is dropped after that).
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
	k := &Kit{Clock: clock, Sandbox: sb, Service: svc, wait: o.wait, webhookPath: o.webhookPath, schema: schema,
		stores: map[string]bool{}, nextDone: make(chan struct{})}
	// A subscription to every event, read only when the kit drains, tells
	// which deliveries are still to come.
	var unsubscribe func()
	k.committed, unsubscribe = svc.Subscribe()
	t.Cleanup(unsubscribe)

	mux := http.NewServeMux()
	mux.Handle("/sandbox/3ds/", sb.ChallengeHandler())
	mux.Handle("/sandbox/elements/", sb.ElementHandler())
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

// openStorage opens the kit's database: a SQLite file in the test's
// temporary directory, or with WithPostgres a new schema of the test's
// own, which it drops when the test ends.
func openStorage(ctx context.Context, t T, o kitOptions) (db storage.Storage, schema string, err error) {
	if o.postgres == nil {
		db, err = sqlite.Open(ctx, sqlite.Config{Keyring: keyringtest.Keyring(), Path: filepath.Join(t.TempDir(), "keelpay.db")})
		return db, "", err
	}
	dsn := *o.postgres
	if dsn == "" {
		return nil, "", errors.New("WithPostgres: the DSN is empty (skip the test when there is no PostgreSQL server)")
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	schema = "kp_" + hex.EncodeToString(b[:])
	// CREATE SCHEMA and DROP SCHEMA ... CASCADE, which drops every
	// object in the schema with it:
	// https://www.postgresql.org/docs/current/sql-createschema.html,
	// https://www.postgresql.org/docs/current/sql-dropschema.html.
	if err := execPostgres(ctx, dsn, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize()); err != nil {
		return nil, "", err
	}
	t.Cleanup(func() {
		dropCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if err := execPostgres(dropCtx, dsn, "DROP SCHEMA "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
			t.Errorf("keelpaytest: drop the test's schema %s: %v", schema, err)
		}
	})
	// A small pool: the tests of a package share the server's
	// connections.
	db, err = postgres.Open(ctx, postgres.Config{DSN: dsn, Keyring: keyringtest.Keyring(), MaxConns: 4, Schema: schema})
	return db, schema, err
}

// execPostgres runs one statement on a connection of its own.
func execPostgres(ctx context.Context, dsn, sql string) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, sql); err != nil {
		return fmt.Errorf("%s: %w", sql, err)
	}
	return nil
}

// HandleWebhooks makes h answer every delivery from now on, after the
// kit's receiver has recorded and verified it: the store's own webhook
// handler, tested with the deliveries keelpay really sends (h gets the
// request as sent, body and signature headers included). Deliveries
// arrive at the path of [WithWebhookPath], "/" by default: a mux that
// routes only "POST /webhooks" needs WithWebhookPath("/webhooks").
// [Kit.RequireHandled] waits until h has finished with a delivery: until
// h returned and, when h (or a handler it routes to) is one of package
// webhooks, until the processing it left running after answering has
// ended too. nil restores the receiver's own answers.
func (k *Kit) HandleWebhooks(h http.Handler) {
	if h == nil {
		k.Webhooks.SetResponder(nil)
		return
	}
	k.Webhooks.SetResponder(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		sw := &statuswriter.Writer{ResponseWriter: w}
		// The handlers of package webhooks report the processing they go
		// on with after answering; start is called before ServeHTTP
		// returns, so every Add happens before the Wait below.
		var processing sync.WaitGroup
		ctx := webhooks.ContextWithProcessing(r.Context(), func() func() {
			processing.Add(1)
			return sync.OnceFunc(processing.Done)
		})
		// Recorded even when h panics (net/http recovers the panic), so a
		// waiting test sees the status it had written; recorded once the
		// processing is over, without holding keelpay's request.
		defer func() {
			status := sw.Status
			if status == 0 {
				status = http.StatusOK
			}
			d := Handled{Path: r.URL.Path, Header: r.Header.Clone(), Body: body, Status: status}
			go func() {
				processing.Wait()
				k.mu.Lock()
				k.handled = append(k.handled, d)
				close(k.nextDone)
				k.nextDone = make(chan struct{})
				k.mu.Unlock()
			}()
		}()
		h.ServeHTTP(sw, r.WithContext(ctx))
	})
}

// Handled is a delivery that the store's handler of [Kit.HandleWebhooks]
// has finished with.
type Handled struct {
	// Path is the request's path: the path of [WithWebhookPath].
	Path   string
	Header http.Header
	Body   []byte
	// Status is what the handler answered (200 when it wrote nothing).
	Status int
}

// Event decodes the body as an event envelope.
func (h Handled) Event() (webhooks.Event, error) {
	var e webhooks.Event
	err := json.Unmarshal(h.Body, &e)
	return e, err
}

// RequireHandled waits until the store's own handler ([Kit.HandleWebhooks])
// has finished with a delivery of an event of type typ about objectID (a
// payment intent, refund or card id), and returns it with the status the
// handler answered. Unlike [Kit.RequireEvent], which returns once the
// kit's receiver has the delivery, it returns only after the handler's
// work is over, so what the handler did (an order fulfilled, a row
// written) can be checked right after. For a handler of package webhooks
// (webhooks.NewHandler, NewAsyncHandler, NewDurableHandler, also behind
// the store's mux or middleware) that is after the store's function
// returned, even when the handler answered 204 before calling it; for any
// other http.Handler, after ServeHTTP returned: a handler of the store's
// own that goes on on a goroutine must be waited for by the test. It
// fails the test if no such delivery is handled within the kit's wait
// timeout ([WithWaitTimeout]).
func (k *Kit) RequireHandled(t T, typ keelpay.EventType, objectID string) Handled {
	t.Helper()
	deadline := time.NewTimer(k.wait)
	defer deadline.Stop()
	for {
		k.mu.Lock()
		got, next := append([]Handled(nil), k.handled...), k.nextDone
		k.mu.Unlock()
		for _, h := range got {
			if e, err := h.Event(); err == nil && e.Type == string(typ) && objectOf(e) == objectID {
				return h
			}
		}
		select {
		case <-next:
		case <-deadline.C:
			t.Fatalf("keelpaytest: the store's handler finished with no %s event for %s after %v (it finished with %d deliveries)",
				typ, objectID, k.wait, len(got))
			return Handled{}
		}
	}
}

// Store is a store set up through the API, its webhooks going to the
// kit's receiver.
type Store struct {
	ID             string
	PublishableKey string
	SecretKey      string
	WebhookSecret  string
	// ClientID is the sandbox application the store was set up with.
	ClientID string
	// Currency is the store's currency (upper case): EUR unless
	// [WithCurrency] or a client-id part chose another.
	Currency string
	// Customer is the customer of the store's test payments and cards.
	Customer keelpay.Customer

	kit *Kit
}

// StoreOption changes how [Kit.Store] and [Kit.Setup] set a store up.
type StoreOption func(*storeOptions)

type storeOptions struct {
	currency string
	parts    []string
}

// WithCurrency sets the store's currency (an ISO 4217 code, in either
// case). USD and GBP are chosen as a sandbox application named with _usd
// or _gbp would choose them; any other code is set on the kit's sandbox
// for the store's application (Sandbox.SetApplication), and then cannot
// be combined with [WithClientIDPart].
func WithCurrency(code string) StoreOption {
	return func(o *storeOptions) { o.currency = strings.ToUpper(code) }
}

// WithClientIDPart adds a part to the client id of the store's sandbox
// application, such as "_usd" or "_missing_roles": the parts choose what
// setup answers, as docs/sandbox-cards.md lists ("_missing_roles" is 422
// missing_roles, "_unavailable" 503 provider_api_unavailable...). A part
// starts with "_" and has letters, digits and underscores. Use
// [Kit.Setup] for the parts whose setup fails.
func WithClientIDPart(part string) StoreOption {
	return func(o *storeOptions) { o.parts = append(o.parts, part) }
}

// SetupError is a setup that did not answer 201: its status and the API's
// error.
type SetupError struct {
	ClientID string
	Status   int
	Code     string
	Message  string
	Details  map[string]any
}

func (e *SetupError) Error() string {
	return fmt.Sprintf("setup of %s: status %d, %s: %s", e.ClientID, e.Status, e.Code, e.Message)
}

// Store sets up a new store with a sandbox application of its own and the
// kit's receiver (at [WithWebhookPath]) as its webhook URL. It fails the
// test when setup does not succeed; see [Kit.Setup] for a setup that is
// meant to fail.
func (k *Kit) Store(t T, opts ...StoreOption) *Store {
	t.Helper()
	s, err := k.Setup(t, opts...)
	if err != nil {
		t.Fatalf("keelpaytest: %v", err)
	}
	return s
}

// Setup sets a new store up as [Kit.Store] does and returns the store, or
// the error setup answered (with [WithClientIDPart]("_missing_roles") for
// example). It fails the test only when the request cannot be made.
func (k *Kit) Setup(t T, opts ...StoreOption) (*Store, *SetupError) {
	t.Helper()
	var o storeOptions
	for _, opt := range opts {
		opt(&o)
	}
	k.mu.Lock()
	k.setups++
	n := k.setups
	k.mu.Unlock()
	name := fmt.Sprintf("kit%d", n)
	for _, p := range o.parts {
		if len(p) < 2 || p[0] != '_' || strings.ContainsFunc(p[1:], func(r rune) bool {
			return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '_')
		}) {
			t.Fatalf("keelpaytest: WithClientIDPart(%q): a part is _ followed by letters, digits and underscores", p)
		}
		name += p
	}
	switch o.currency {
	case "", "EUR":
	case "USD", "GBP":
		name += "_" + strings.ToLower(o.currency)
	default:
		if len(o.parts) > 0 {
			t.Fatalf("keelpaytest: WithCurrency(%q) cannot be combined with WithClientIDPart: the sandbox's names choose only USD and GBP", o.currency)
		}
		k.Sandbox.SetApplication("app_"+name, sandbox.AppBehavior{Currency: o.currency})
	}
	clientID := "app_" + name

	var out struct {
		ID             string `json:"id"`
		Currency       string `json:"currency"`
		PublishableKey string `json:"publishable_key"`
		SecretKey      string `json:"secret_key"`
		WebhookSecret  string `json:"webhook_secret"`
		Error          struct {
			Code    string         `json:"code"`
			Message string         `json:"message"`
			Details map[string]any `json:"details"`
		} `json:"error"`
	}
	status, _ := k.do(t, http.MethodPost, "/v1/setup", "", map[string]any{
		"client_id":     clientID,
		"client_secret": "secret_" + name,
		"webhook_url":   k.Webhooks.URL() + k.webhookPath,
	}, &out)
	if status != http.StatusCreated {
		return nil, &SetupError{ClientID: clientID, Status: status, Code: out.Error.Code, Message: out.Error.Message, Details: out.Error.Details}
	}
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
		ClientID: clientID, Currency: out.Currency,
		Customer: keelpay.Customer{ID: "cus_test", Name: "Test Buyer", Email: "buyer@example.com", Phone: "+4915112345678"},
		kit:      k,
	}, nil
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
// requires_action (answer it with [Store.Answer3DS]), processing (move the
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

// PayWithNewCard creates a payment intent of amount in currency for the
// store's customer with the secret key, then confirms it the way the
// hosted card field does: with the publishable key, the intent's
// client_secret and a new card (a sandbox test card number), not saved.
// It returns the intent as that confirm answered, in the publishable
// key's view (no client_secret, billing or customer details). A card
// refused when tokenised, sandbox.CardRejected, is a failed attempt:
// requires_payment_method with last_error card_rejected.
func (s *Store) PayWithNewCard(t T, number string, amount int64, currency string) *payments.IntentObject {
	t.Helper()
	var created payments.IntentObject
	s.kit.call(t, http.MethodPost, "/v1/payment_intents", s.SecretKey, map[string]any{
		"amount": amount, "currency": currency, "customer": s.Customer,
	}, http.StatusCreated, &created)
	var confirmed payments.IntentObject
	s.kit.call(t, http.MethodPost, "/v1/payment_intents/"+created.ID+"/confirm", s.PublishableKey, map[string]any{
		"client_secret": created.ClientSecret, "number": number,
		"exp_month": 12, "exp_year": s.kit.Clock.Now().Year() + 2, "cvc": "123",
	}, http.StatusOK, &confirmed)
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

// Answer3DS answers the 3D Secure challenge of the intent intentID, in
// requires_action, as the buyer would on the sandbox's page: complete or
// fail. keelpay learns the answer at once, as from a real provider's
// notification; the intent it returns is read after that.
func (s *Store) Answer3DS(t T, intentID string, complete bool) *payments.IntentObject {
	t.Helper()
	intent := s.Intent(t, intentID)
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
//
// The clock is the kit's, one for every store and test that shares the
// kit: on a kit shared by parallel subtests, Advance in one subtest moves
// the clock of all of them (their intents expire, their challenges time
// out, their unknown outcomes resolve). Give a subtest that moves the
// clock a kit of its own.
func (k *Kit) Advance(t T, d time.Duration) {
	t.Helper()
	k.Clock.Advance(d)
	if err := k.runDue(context.Background()); err != nil {
		t.Fatalf("keelpaytest: due work after advancing %v: %v", d, err)
	}
}

func (k *Kit) runDue(ctx context.Context) error {
	defer k.Service.Dispatcher().Notify()
	// The sandbox's own due changes first (a refund that fails later),
	// with the notifications they send.
	return errors.Join(k.Sandbox.Settle(ctx), k.Service.Payments().Expire(ctx), k.Service.Payments().Reconcile(ctx), k.Service.Refunds().Reconcile(ctx))
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
	if status, raw := k.do(t, method, p, key, body, out); status != want {
		t.Fatalf("keelpaytest: %s %s: status %d, want %d: %s", method, p, status, want, raw)
	}
}

// do sends a request to the API, decodes the JSON answer into out and
// returns its status and body. It fails the test when there is no JSON
// answer.
func (k *Kit) do(t T, method, p, key string, body any, out any) (int, []byte) {
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
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("keelpaytest: %s %s: status %d: %v: %s", method, p, resp.StatusCode, err, b)
	}
	return resp.StatusCode, b
}
