package keelpaytest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/keelpay/keelpay/internal/eventshook"
	"github.com/keelpay/keelpay/keyring/keyringtest"
	"github.com/keelpay/keelpay/provider/sandbox"
	"github.com/keelpay/keelpay/service"
	"github.com/keelpay/keelpay/storage"
	"github.com/keelpay/keelpay/storage/postgres"
	"github.com/keelpay/keelpay/storage/sqlite"
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
	// manual says the dispatcher delivers only when the kit asks
	// (WithWebhookFaults).
	manual bool

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
	faults      *sandbox.WebhookFaults
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

// WithWebhookFaults attaches f to the kit's dispatcher, so that the
// faults set on f for a store ([sandbox.WebhookFaults.Set]: duplicates,
// reordering, delays, failures) shape its deliveries, as the reference
// server's sandbox mode does. It also makes deliveries happen only when
// the test asks, so that the test knows which events a fault met: the
// dispatcher claims, attempts and records what is due when the test calls
// [Kit.Deliver], [Kit.Advance], [Kit.Drain] or [Kit.RequireNoEvent], and
// never on its own. A delivery a fault held back is due again once the
// clock has moved past the hold: Advance by the hold delivers it.
// [Kit.RequireEvent] and [Kit.RequireHandled] only wait, so call one of
// those first; Drain and RequireNoEvent wait for every committed event,
// held ones too, so move the clock past the holds before them.
//
//	faults := sandbox.NewWebhookFaults()
//	kp := keelpaytest.Start(t, keelpaytest.WithWebhookFaults(faults))
//	store := kp.Store(t)
//	faults.Set(store.ID, sandbox.Faults{Duplicate: 1, Reorder: 1})
//	// ... payments ...
//	kp.Deliver(t)                              // held back, not sent
//	kp.Advance(t, sandbox.ReorderHoldDefault) // sent, twice each
func WithWebhookFaults(f *sandbox.WebhookFaults) Option {
	return func(o *kitOptions) { o.faults = f }
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
	if o.faults != nil {
		// Both before the dispatcher runs (svc.Start).
		eventshook.SetInterceptor(svc.Dispatcher(), o.faults)
		eventshook.Manual(svc.Dispatcher())
		k.manual = true
	}
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
