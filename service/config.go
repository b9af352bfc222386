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
	// WebhookAttemptTimeout is how long a receiver has to answer a
	// delivery (docs/webhooks.md). Default events.AttemptTimeoutDefault
	// (10 s).
	WebhookAttemptTimeout time.Duration
	// WebhookClaimBatch is the most deliveries the dispatcher claims in
	// one query. Default events.ClaimBatchDefault.
	WebhookClaimBatch int
	// WebhookConcurrency is the most delivery attempts in flight in this
	// process. Default events.ConcurrencyDefault.
	WebhookConcurrency int
	// WebhookLease is how long a claimed delivery stays with this
	// process; a process that dies mid-attempt loses nothing, as the
	// lease lapses and another claims the delivery. It must exceed
	// WebhookAttemptTimeout. Default events.LeaseDefault (1 min).
	WebhookLease time.Duration
	// WebhookPerStore is the most attempts of one store in flight, across
	// every process on the database (events.DispatcherConfig.PerStore).
	// Default events.PerStoreDefault.
	WebhookPerStore int
	// WebhookPerStoreStart is how many attempts of a store may be in
	// flight before its receiver has shown that it answers, at most
	// WebhookPerStore (events.DispatcherConfig.PerStoreStart). Default
	// events.PerStoreStartDefault.
	WebhookPerStoreStart int
	// WebhookPollInterval is the longest the dispatcher sleeps when
	// nothing is due before it looks again. Default
	// events.PollIntervalDefault (1 s).
	WebhookPollInterval time.Duration
	// WebhookTransport, when set, replaces the dispatcher's transport,
	// and with it the address guard of AllowInsecureWebhooks (tests).
	// Default: a transport that keeps the address policy.
	WebhookTransport http.RoundTripper
}

// WithDefaults returns a copy of c with defaults filled in.
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
	c.WebhookAttemptTimeout = cmp.Or(c.WebhookAttemptTimeout, events.AttemptTimeoutDefault)
	c.WebhookClaimBatch = cmp.Or(c.WebhookClaimBatch, events.ClaimBatchDefault)
	c.WebhookConcurrency = cmp.Or(c.WebhookConcurrency, events.ConcurrencyDefault)
	c.WebhookLease = cmp.Or(c.WebhookLease, events.LeaseDefault)
	c.WebhookPerStore = cmp.Or(c.WebhookPerStore, events.PerStoreDefault)
	c.WebhookPerStoreStart = min(cmp.Or(c.WebhookPerStoreStart, events.PerStoreStartDefault), c.WebhookPerStore)
	c.WebhookPollInterval = cmp.Or(c.WebhookPollInterval, events.PollIntervalDefault)
	return c
}

// dispatcherConfig is the webhook dispatcher's configuration: the
// Webhook fields, and this Config's address policy, clock, logger,
// metrics, storage and tracer, which the dispatcher shares with the rest
// of the service.
func (c Config) dispatcherConfig() events.DispatcherConfig {
	return events.DispatcherConfig{
		AllowInsecureWebhooks: c.AllowInsecureWebhooks,
		AttemptTimeout:        c.WebhookAttemptTimeout,
		ClaimBatch:            c.WebhookClaimBatch,
		Clock:                 c.Clock,
		Concurrency:           c.WebhookConcurrency,
		Lease:                 c.WebhookLease,
		Logger:                c.Logger,
		Metrics:               c.Metrics,
		PerStore:              c.WebhookPerStore,
		PerStoreStart:         c.WebhookPerStoreStart,
		PollInterval:          c.WebhookPollInterval,
		Storage:               c.Storage,
		TracerProvider:        c.TracerProvider,
		Transport:             c.WebhookTransport,
	}
}

// Validate reports every missing, out-of-range or contradictory field of
// c (after defaults), each naming its field.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("service: Config."+format, args...)) }
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
	for _, f := range []struct {
		name string
		bad  bool
		v    any
	}{
		{"WebhookAttemptTimeout", c.WebhookAttemptTimeout < 0, c.WebhookAttemptTimeout},
		{"WebhookClaimBatch", c.WebhookClaimBatch < 0, c.WebhookClaimBatch},
		{"WebhookConcurrency", c.WebhookConcurrency < 0, c.WebhookConcurrency},
		{"WebhookLease", c.WebhookLease < 0, c.WebhookLease},
		{"WebhookPerStore", c.WebhookPerStore < 0, c.WebhookPerStore},
		{"WebhookPerStoreStart", c.WebhookPerStoreStart < 0, c.WebhookPerStoreStart},
		{"WebhookPollInterval", c.WebhookPollInterval < 0, c.WebhookPollInterval},
	} {
		if f.bad {
			bad("%s is %v; it must be positive", f.name, f.v)
		}
	}
	if c.WebhookLease > 0 && c.WebhookAttemptTimeout > 0 && c.WebhookLease <= c.WebhookAttemptTimeout {
		bad("WebhookLease (%v) must exceed Config.WebhookAttemptTimeout (%v): a lease that lapses mid-attempt lets another process deliver the same event at once", c.WebhookLease, c.WebhookAttemptTimeout)
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
