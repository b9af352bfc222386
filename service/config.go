package service

import (
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
	// AllowInsecureWebhooks is the webhook address policy, one switch for
	// setup and delivery. false (the default): setup accepts only https
	// webhook URLs to public hosts, and the dispatcher refuses at dial
	// time, after DNS, to reach loopback, private, link-local and other
	// internal addresses. true: http URLs and such hosts are accepted and
	// delivered to, as a sandbox or a test needs.
	AllowInsecureWebhooks bool
	// CallTimeout bounds each call to the provider: charges, refunds,
	// look-ups and the check of an application at setup. Default
	// payments.CallTimeoutDefault (30 s); at most payments.CallTimeoutMax.
	CallTimeout time.Duration
	// ClientAddr returns the address a request came from, which limits
	// setups whose credentials are not yet proven per address. Default:
	// the host of r.RemoteAddr (httpapi.RemoteHost). Behind a reverse
	// proxy, give a function that reads what your own proxy wrote.
	ClientAddr func(r *http.Request) string
	// Clock decides every time the service keeps: expiry, retries of
	// webhooks, the reconcilers' schedule, rate limits. Default
	// keelpay.SystemClock.
	Clock keelpay.Clock
	// Dispatcher tunes webhook delivery; its zero fields take the
	// defaults of events.DispatcherConfig.
	Dispatcher DispatcherConfig
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

// DispatcherConfig tunes webhook delivery. Fields are in alphabetical
// order; zero values take the defaults of events.DispatcherConfig.
type DispatcherConfig struct {
	// AttemptTimeout is how long a receiver has to answer. Default
	// events.AttemptTimeoutDefault (10 s).
	AttemptTimeout time.Duration
	// ClaimBatch is the most deliveries claimed in one query. Default
	// events.ClaimBatchDefault.
	ClaimBatch int
	// Concurrency is the most attempts in flight in this process. Default
	// events.ConcurrencyDefault.
	Concurrency int
	// Lease is how long a claimed delivery stays with this process; it
	// must exceed AttemptTimeout. Default events.LeaseDefault (1 min).
	Lease time.Duration
	// PerStore is the most attempts of one store in flight across every
	// process on the database. Default events.PerStoreDefault.
	PerStore int
	// PerStoreStart is how many attempts of a store may be in flight
	// before its receiver has answered; successes raise it to PerStore,
	// failures and time-outs halve it (docs/operating.md). Default
	// events.PerStoreStartDefault.
	PerStoreStart int
	// PollInterval is the longest the dispatcher waits before it looks for
	// due deliveries again; committed events wake it at once. Default
	// events.PollIntervalDefault (1 s).
	PollInterval time.Duration
	// Transport, when set, replaces the dispatcher's transport (and with
	// it the address guard of AllowInsecureWebhooks). Default: a transport
	// that keeps the address policy.
	Transport http.RoundTripper
}

// WithDefaults returns a copy of c with defaults filled in.
func (c Config) WithDefaults() Config {
	if c.CallTimeout == 0 {
		c.CallTimeout = payments.CallTimeoutDefault
	}
	if c.Clock == nil {
		c.Clock = keelpay.SystemClock{}
	}
	if c.ExpireInterval == 0 {
		c.ExpireInterval = ExpireIntervalDefault
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	c.Logger = slog.New(keelpay.NewLogHandler(c.Logger.Handler()))
	if c.Metrics == nil {
		c.Metrics = prometheus.NewRegistry()
	}
	if c.ReconcileInterval == 0 {
		c.ReconcileInterval = ReconcileIntervalDefault
	}
	c.Retention = c.Retention.withDefaults()
	if c.SubscriptionBuffer == 0 {
		c.SubscriptionBuffer = SubscriptionBufferDefault
	}
	d := c.Dispatcher
	c.Dispatcher = DispatcherConfig{
		AttemptTimeout: orDefault(d.AttemptTimeout, events.AttemptTimeoutDefault),
		ClaimBatch:     orDefault(d.ClaimBatch, events.ClaimBatchDefault),
		Concurrency:    orDefault(d.Concurrency, events.ConcurrencyDefault),
		Lease:          orDefault(d.Lease, events.LeaseDefault),
		PerStore:       orDefault(d.PerStore, events.PerStoreDefault),
		PerStoreStart:  orDefault(d.PerStoreStart, events.PerStoreStartDefault),
		PollInterval:   orDefault(d.PollInterval, events.PollIntervalDefault),
		Transport:      d.Transport,
	}
	return c
}

func orDefault[T int | time.Duration](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}

// Validate reports every missing, out-of-range or contradictory field of
// c (after defaults), each naming its field.
func (c Config) Validate() error {
	c = c.WithDefaults()
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("service: Config."+format, args...)) }
	if c.Provider == nil {
		bad("Provider is required")
	}
	if c.Storage == nil {
		bad("Storage is required")
	}
	if c.CallTimeout < 0 || c.CallTimeout > payments.CallTimeoutMax {
		bad("CallTimeout is %v; it must be positive and at most %v, so that a call is over before the reconciler first looks the attempt up", c.CallTimeout, payments.CallTimeoutMax)
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
	d := c.Dispatcher
	for _, f := range []struct {
		name string
		bad  bool
		v    any
	}{
		{"AttemptTimeout", d.AttemptTimeout < 0, d.AttemptTimeout},
		{"ClaimBatch", d.ClaimBatch < 0, d.ClaimBatch},
		{"Concurrency", d.Concurrency < 0, d.Concurrency},
		{"Lease", d.Lease < 0, d.Lease},
		{"PerStore", d.PerStore < 0, d.PerStore},
		{"PerStoreStart", d.PerStoreStart < 0, d.PerStoreStart},
		{"PollInterval", d.PollInterval < 0, d.PollInterval},
	} {
		if f.bad {
			bad("Dispatcher.%s is %v; it must be positive", f.name, f.v)
		}
	}
	if d.Lease > 0 && d.AttemptTimeout > 0 && d.Lease <= d.AttemptTimeout {
		bad("Dispatcher.Lease (%v) must exceed Config.Dispatcher.AttemptTimeout (%v): a lease that lapses mid-attempt lets another process deliver the same event at once", d.Lease, d.AttemptTimeout)
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
