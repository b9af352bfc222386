package service

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"reflect"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/events"
	"github.com/keelpay/keelpay/httpapi"
	"github.com/keelpay/keelpay/internal/providercall"
	"github.com/keelpay/keelpay/payments"
	"github.com/keelpay/keelpay/provider"
	"github.com/keelpay/keelpay/storage"
)

// Defaults of Config.
const (
	// ExpireIntervalDefault is how often the expirer runs.
	ExpireIntervalDefault = 5 * time.Second
	// ReconcileIntervalDefault is how often the reconcilers run.
	ReconcileIntervalDefault = 5 * time.Second
	// SubscriptionBufferDefault is how many events a subscription holds
	// for a subscriber that has not read them yet.
	SubscriptionBufferDefault = 1000
)

// Config configures a Service. Fields are in alphabetical order; each zero
// value takes the documented default. Provider and Storage are required.
type Config struct {
	// Admission bounds the API requests worked on at once, per class
	// (payments, confirms, other writes, reads, the browser's); a request
	// past the bound is answered 429 rate_limited with Retry-After, none
	// of its work done (httpapi.AdmissionConfig; docs/operating.md,
	// "Overload"). The zero value takes the defaults.
	Admission httpapi.AdmissionConfig
	// AllowInsecureWebhooks is the webhook address policy, one switch for
	// setup and delivery. false (the default): setup accepts only https
	// webhook URLs to public hosts, and the dispatcher refuses at dial
	// time, after DNS, to reach loopback, private, link-local and other
	// internal addresses. true: http URLs and such hosts are accepted and
	// delivered to, as a sandbox or a test needs.
	AllowInsecureWebhooks bool
	// AnswerTimeout bounds how long a confirm or a refund send waits for
	// the provider before it answers that the outcome is not known yet
	// (processing, or pending, with last_error outcome_unknown); the call
	// goes on and its outcome is committed when it comes (docs/operating.md,
	// "Time-outs"). It must leave a margin of 5 s below the WriteTimeout of
	// the http.Server that serves Handler: httpapi.NewServer's is
	// httpapi.ServerWriteTimeout (30 s), so the default and the most
	// allowed is 20 s and 25 s; with a server of your own, make its
	// WriteTimeout at least AnswerTimeout + 5 s (or 0). Default
	// payments.AnswerTimeoutDefault (20 s).
	AnswerTimeout time.Duration
	// CallTimeout bounds each call to the provider: charges, refunds,
	// look-ups and the check of an application at setup. Default
	// provider.CallTimeoutDefault (30 s); at most payments.CallTimeoutMax.
	CallTimeout time.Duration
	// ClientAddr returns the address a request came from, which limits
	// setups whose credentials are not yet proven per address. Default:
	// the host of r.RemoteAddr (httpapi.RemoteHost). Behind a reverse
	// proxy, give a function that reads what your own proxy wrote.
	ClientAddr func(r *http.Request) string
	// Clock decides every time the service keeps: expiry, retries of
	// webhooks, the reconcilers' schedule, rate limits, key locks and
	// leases. Default: the database's clock (a DatabaseClock measured by
	// New) when Storage is a DatabaseTimer (PostgreSQL, which several
	// servers share), keelpay.SystemClock otherwise (SQLite). A clock
	// that moves a DatabaseClock (keelpay.OffsetClock with it as Base)
	// is kept measured too.
	Clock keelpay.Clock
	// Dispatcher tunes webhook delivery: AttemptTimeout, ClaimBatch,
	// Concurrency, Interceptor, Lease, PerStore, PerStoreStart,
	// PollInterval and Transport, whose zero values take the defaults of
	// events.DispatcherConfig. Its AllowInsecureWebhooks, Clock, Logger,
	// Metrics, Storage and TracerProvider are this Config's: leave them
	// unset (New fills them in, and Validate names any set otherwise).
	// A Transport replaces the dispatcher's own, and with it the address
	// guard of AllowInsecureWebhooks.
	Dispatcher events.DispatcherConfig
	// ExpireInterval is how often the expirer closes card sessions and
	// cancels intents past their lifetime. Default ExpireIntervalDefault.
	ExpireInterval time.Duration
	// Logger gets failures of background work and one line per request,
	// with ids only: never bodies, keys, card details or personal data.
	// Lines written while a request is served carry its request_id.
	// Default slog.Default().
	Logger *slog.Logger
	// Metrics is where every metric is registered: requests, payment
	// attempts, refund sends, deliveries. When it is also a
	// prometheus.Gatherer (a *prometheus.Registry is both),
	// Service.MetricsHandler serves it. Default: a new registry.
	Metrics prometheus.Registerer
	// Provider charges cards and sends refunds. Required. When it
	// implements provider.Notifier, New registers the service's payments
	// with it, once: a provider serves one Service.
	Provider provider.Provider
	// ReconcileInterval is how often the reconcilers look up charges and
	// refunds whose outcome is unknown and 3D Secure waits that ended.
	// Default ReconcileIntervalDefault.
	ReconcileInterval time.Duration
	// Retention says how long events and unused card sessions are kept
	// (30 and 7 days by default) and how the retention worker deletes
	// them; see RetentionConfig.
	Retention RetentionConfig
	// Storage keeps everything. Required.
	Storage storage.Storage
	// SubscriptionBuffer is how many events each subscription holds for
	// its reader (see Service.Subscribe). Default
	// SubscriptionBufferDefault.
	SubscriptionBuffer int
	// TracerProvider receives OpenTelemetry spans: one per API request,
	// storage transaction and query, provider call, webhook attempt and
	// background pass (docs/operating.md, "Tracing"). Default nil: nothing
	// is traced, and the instrumentation is not installed at all (the
	// no-op provider, trace/noop, is treated the same). To follow the
	// process's global provider, pass otel.GetTracerProvider().
	TracerProvider trace.TracerProvider
}

// WithDefaults returns a copy of c with defaults filled in. The
// dispatcher gets this Config's address policy, clock, logger, metrics,
// storage and tracer.
func (c Config) WithDefaults() Config {
	c.AnswerTimeout = cmp.Or(c.AnswerTimeout, payments.AnswerTimeoutDefault)
	c.CallTimeout = cmp.Or(c.CallTimeout, provider.CallTimeoutDefault)
	c.Clock = cmp.Or[keelpay.Clock](c.Clock, keelpay.SystemClock{})
	c.ExpireInterval = cmp.Or(c.ExpireInterval, ExpireIntervalDefault)
	c.Logger = slog.New(keelpay.NewLogHandler(cmp.Or(c.Logger, slog.Default()).Handler()))
	c.Metrics = cmp.Or[prometheus.Registerer](c.Metrics, prometheus.NewRegistry())
	c.ReconcileInterval = cmp.Or(c.ReconcileInterval, ReconcileIntervalDefault)
	c.Retention = c.Retention.withDefaults()
	c.SubscriptionBuffer = cmp.Or(c.SubscriptionBuffer, SubscriptionBufferDefault)
	d := &c.Dispatcher
	d.AllowInsecureWebhooks = c.AllowInsecureWebhooks
	d.Clock, d.Logger, d.Metrics, d.Storage, d.TracerProvider = c.Clock, c.Logger, c.Metrics, c.Storage, c.TracerProvider
	c.Dispatcher = c.Dispatcher.WithDefaults()
	return c
}

// Validate reports every missing, out-of-range or contradictory field of
// c (after defaults), each naming its field.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("service: Config."+format, args...)) }
	// The dispatcher shares these with the rest of the service.
	d := c.Dispatcher
	for _, f := range []struct {
		name       string
		dispatcher any
		service    any
	}{
		{"AllowInsecureWebhooks", d.AllowInsecureWebhooks, c.AllowInsecureWebhooks},
		{"Clock", d.Clock, c.Clock},
		{"Logger", d.Logger, c.Logger},
		{"Metrics", d.Metrics, c.Metrics},
		{"Storage", d.Storage, c.Storage},
		{"TracerProvider", d.TracerProvider, c.TracerProvider},
	} {
		if set(f.dispatcher) && !same(f.dispatcher, f.service) {
			bad("Dispatcher.%s is set; the dispatcher uses Config.%s: leave it unset", f.name, f.name)
		}
	}
	c = c.WithDefaults()
	if c.Provider == nil {
		bad("Provider is required")
	}
	if c.Storage == nil {
		bad("Storage is required")
	}
	if c.CallTimeout < 0 || c.CallTimeout > payments.CallTimeoutMax {
		bad("CallTimeout is %v; it must be positive and at most %v, so that a call is over before the reconciler first looks the attempt up", c.CallTimeout, payments.CallTimeoutMax)
	}
	if maxAnswer := httpapi.ServerWriteTimeout - providercall.AnswerMargin; c.AnswerTimeout < 0 || c.AnswerTimeout > maxAnswer {
		bad("AnswerTimeout is %v; it must be positive and at most %v, %v below httpapi.ServerWriteTimeout, so that a confirm is answered before the server closes its connection", c.AnswerTimeout, maxAnswer, providercall.AnswerMargin)
	}
	if c.ExpireInterval < 0 {
		bad("ExpireInterval is %v; it must be positive", c.ExpireInterval)
	}
	if c.ReconcileInterval < 0 {
		bad("ReconcileInterval is %v; it must be positive", c.ReconcileInterval)
	}
	c.Retention.validate(bad)
	if c.SubscriptionBuffer < 0 {
		bad("SubscriptionBuffer is %d; it must be positive", c.SubscriptionBuffer)
	}
	if isNilPointer(c.TracerProvider) {
		bad("TracerProvider is a nil %T; leave the field nil for no tracing", c.TracerProvider)
	}
	for _, p := range c.Dispatcher.Problems("Config.Dispatcher") {
		errs = append(errs, errors.New("service: "+p))
	}
	return errors.Join(errs...)
}

// isNilPointer reports whether v holds a nil pointer: an interface that is
// not nil but whose methods would panic.
func isNilPointer(v any) bool {
	if v == nil {
		return false
	}
	rv := reflect.ValueOf(v)
	return rv.Kind() == reflect.Pointer && rv.IsNil()
}

// set reports whether v is not its type's zero value.
func set(v any) bool { return v != nil && !reflect.ValueOf(v).IsZero() }

// same reports whether a and b are the same value, without panicking on
// values that cannot be compared.
func same(a, b any) bool {
	if reflect.TypeOf(a) != reflect.TypeOf(b) || !reflect.TypeOf(a).Comparable() {
		return false
	}
	return a == b
}
