package events

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/internal/netguard"
	"github.com/keelpay/keelpay/internal/tracing"
	"github.com/keelpay/keelpay/storage"
)

// retryDelays are the waits after each failed attempt but the last
// (docs/webhooks.md). It is an array, so that MaxAttempts follows from it
// and nothing can change it.
var retryDelays = [...]time.Duration{time.Minute, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 6 * time.Hour, 24 * time.Hour}

// MaxAttempts is the number of attempts before a delivery is failed: one
// more than the retry delays.
const MaxAttempts = len(retryDelays) + 1

// RetryDelay is the wait after failed attempt n (from 1) before the next,
// for n below MaxAttempts; 0 for any other n (after attempt MaxAttempts
// the delivery is failed).
func RetryDelay(n int) time.Duration {
	if n < 1 || n > len(retryDelays) {
		return 0
	}
	return retryDelays[n-1]
}

// Defaults of DispatcherConfig.
const (
	// AttemptTimeoutDefault is how long a receiver has to answer.
	AttemptTimeoutDefault = 10 * time.Second
	ClaimBatchDefault     = 256
	ConcurrencyDefault    = 256
	LeaseDefault          = time.Minute
	PerStoreDefault       = 128
	PerStoreStartDefault  = 8
	PollIntervalDefault   = time.Second
)

// UserAgent is sent with every delivery.
const UserAgent = "keelpay/" + keelpay.Version

// DispatcherConfig configures a Dispatcher. Fields are in alphabetical
// order; zero values take the defaults.
type DispatcherConfig struct {
	// AllowInsecureWebhooks lets deliveries reach loopback, private,
	// link-local and other internal addresses. Default false: such
	// addresses are refused at dial time, after DNS, so rebinding cannot
	// get around it. The reference server's sandbox mode turns it on.
	AllowInsecureWebhooks bool
	// AttemptTimeout is how long a receiver has to answer
	// (docs/webhooks.md). Default AttemptTimeoutDefault (10 s).
	AttemptTimeout time.Duration
	// ClaimBatch is the most deliveries claimed in one query. Default
	// ClaimBatchDefault.
	ClaimBatch int
	// Clock schedules attempts. Default keelpay.SystemClock. The
	// webhook-timestamp header always uses the wall clock, so that
	// receivers accept signatures even when the service clock was moved.
	Clock keelpay.Clock
	// Concurrency is the most attempts in flight in this process.
	// Default ConcurrencyDefault.
	Concurrency int
	// Lease is how long a claimed delivery stays with this process; a
	// process that dies mid-attempt loses nothing: the lease lapses and
	// another process claims the delivery. It must exceed
	// AttemptTimeout. Default LeaseDefault (1 min).
	Lease time.Duration
	// Logger defaults to slog.Default(). It gets event ids, store ids and
	// outcomes, never URLs, bodies or secrets.
	Logger *slog.Logger
	// Metrics, when set, receives the dispatcher's metrics.
	Metrics prometheus.Registerer
	// PerStore is the most attempts of one store in flight, across every
	// process on the database, so a slow receiver cannot hold up other
	// stores' deliveries. On PostgreSQL it is exact between claims; claims
	// of several processes that run at the same moment do not see each
	// other's leases and may each fill it. Default PerStoreDefault.
	PerStore int
	// PerStoreStart is how many attempts of a store may be in flight
	// before its receiver has shown that it answers (default
	// PerStoreStartDefault, 8; at most PerStore). Each success lets one more attempt of the store be in
	// flight, up to PerStore; each failure or time-out halves the number,
	// down to one. So a store whose receiver hangs or fails holds a few of
	// the Concurrency slots, however many such stores there are, and a
	// store with a backlog and a healthy receiver reaches PerStore within
	// a few rounds of attempts. Each process learns the numbers from its
	// own attempts; a claim applies them to the store's leases in every
	// process.
	PerStoreStart int
	// PollInterval is the longest the dispatcher sleeps when nothing is
	// due before it looks again (Notify wakes it sooner). Default
	// PollIntervalDefault (1 s).
	PollInterval time.Duration
	// Storage is required.
	Storage storage.Storage
	// TracerProvider, when set, gets a span for each delivery attempt
	// ("webhook.attempt": event id and type, store id, attempt number,
	// status code and outcome; never the URL, the body or the signature)
	// and for each round of recording and claiming ("webhook.claim").
	// Default nil: no spans, at no cost.
	TracerProvider trace.TracerProvider
	// Transport, when set, replaces the default transport, and with it
	// the address guard of AllowInsecureWebhooks (tests). Default: a
	// transport that keeps the address policy.
	Transport http.RoundTripper
}

// WithDefaults returns a copy of c with defaults filled in.
func (c DispatcherConfig) WithDefaults() DispatcherConfig {
	c.AttemptTimeout = cmp.Or(c.AttemptTimeout, AttemptTimeoutDefault)
	c.ClaimBatch = cmp.Or(c.ClaimBatch, ClaimBatchDefault)
	c.Clock = cmp.Or[keelpay.Clock](c.Clock, keelpay.SystemClock{})
	c.Concurrency = cmp.Or(c.Concurrency, ConcurrencyDefault)
	c.Lease = cmp.Or(c.Lease, LeaseDefault)
	c.Logger = cmp.Or(c.Logger, slog.Default())
	c.PerStore = cmp.Or(c.PerStore, PerStoreDefault)
	c.PerStoreStart = min(cmp.Or(c.PerStoreStart, PerStoreStartDefault), c.PerStore)
	c.PollInterval = cmp.Or(c.PollInterval, PollIntervalDefault)
	return c
}

// Validate reports every missing, out-of-range or contradictory field of
// c (after defaults), each naming its field.
func (c DispatcherConfig) Validate() error {
	c = c.WithDefaults()
	var errs []error
	if c.Storage == nil {
		errs = append(errs, errors.New("events: DispatcherConfig.Storage is required"))
	}
	for _, p := range c.problems("DispatcherConfig") {
		errs = append(errs, errors.New("events: "+p))
	}
	return errors.Join(errs...)
}

// problems returns what is out of range or contradictory in c's tuning
// fields as they are (Validate applies the defaults first), each message
// naming its field under name.
func (c DispatcherConfig) problems(name string) []string {
	var out []string
	for _, f := range []struct {
		name string
		bad  bool
		v    any
	}{
		{"AttemptTimeout", c.AttemptTimeout < 0, c.AttemptTimeout},
		{"ClaimBatch", c.ClaimBatch < 0, c.ClaimBatch},
		{"Concurrency", c.Concurrency < 0, c.Concurrency},
		{"Lease", c.Lease < 0, c.Lease},
		{"PerStore", c.PerStore < 0, c.PerStore},
		{"PerStoreStart", c.PerStoreStart < 0, c.PerStoreStart},
		{"PollInterval", c.PollInterval < 0, c.PollInterval},
	} {
		if f.bad {
			out = append(out, fmt.Sprintf("%s.%s is %v; it must be positive", name, f.name, f.v))
		}
	}
	if c.Lease > 0 && c.AttemptTimeout > 0 && c.Lease <= c.AttemptTimeout {
		out = append(out, fmt.Sprintf("%s.Lease (%v) must exceed %s.AttemptTimeout (%v): a lease that lapses mid-attempt lets another process deliver the same event at once", name, c.Lease, name, c.AttemptTimeout))
	}
	return out
}

// Dispatcher delivers events from storage to stores' webhook URLs: it
// claims due deliveries with a lease, posts the stored body bytes signed
// with the store's current secret, records each attempt and schedules the
// next by the table in docs/webhooks.md. Several dispatchers, in one process or many,
// can run against one database.
type Dispatcher struct {
	cfg     DispatcherConfig
	client  *http.Client
	wake    chan struct{}
	signers signerCache
	metrics *dispatcherMetrics
	limits  *storeLimits
	tracer  trace.Tracer // nil: no spans
	hooks   hooks
	rides   rides
}

// NewDispatcher validates cfg, fills in its defaults and returns a
// Dispatcher; start it with Run. The error names every missing or
// out-of-range field, and says so when Metrics already has the
// dispatcher's metrics.
func NewDispatcher(cfg DispatcherConfig) (*Dispatcher, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	transport := cfg.Transport
	if transport == nil {
		dialer := &net.Dialer{Timeout: cfg.AttemptTimeout, KeepAlive: 30 * time.Second}
		if !cfg.AllowInsecureWebhooks {
			dialer.Control = netguard.Control
		}
		// Every attempt in flight may go to one host (the stores of one
		// platform, or one store with a backlog): a connection is kept for
		// each, so that a busy dispatcher reuses them instead of dialling
		// and closing one per attempt.
		transport = &http.Transport{
			// No proxy: the guard must see the receiver's own address.
			Proxy:                 nil,
			DialContext:           dialer.DialContext,
			ForceAttemptHTTP2:     true,
			MaxIdleConns:          cfg.Concurrency,
			MaxIdleConnsPerHost:   cfg.Concurrency,
			IdleConnTimeout:       90 * time.Second,
			TLSHandshakeTimeout:   cfg.AttemptTimeout,
			ResponseHeaderTimeout: cfg.AttemptTimeout,
		}
	}
	d := &Dispatcher{
		cfg: cfg,
		client: &http.Client{
			Transport: transport,
			// Redirects are not followed (docs/webhooks.md): a 3xx is a failure.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		wake:   make(chan struct{}, 1),
		rides:  rides{jobs: make(chan committed, cfg.Concurrency)},
		limits: newStoreLimits(cfg.PerStoreStart, cfg.PerStore, cfg.Logger),
		tracer: tracing.Tracer(cfg.TracerProvider),
	}
	if cfg.Metrics != nil {
		var err error
		if d.metrics, err = newDispatcherMetrics(cfg.Metrics, cfg.Storage, d.limits); err != nil {
			return nil, fmt.Errorf("events: DispatcherConfig.Metrics: %w", err)
		}
	}
	return d, nil
}

// Notify wakes the dispatcher to look for due deliveries now: after a new
// event, a redelivery, or a move of the service clock.
func (d *Dispatcher) Notify() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// commit records results and claims up to want due deliveries in one
// transaction. When that fails, the results are recorded on their own
// (their leases would otherwise hold the deliveries until they lapse) and
// nothing is claimed; a result that cannot be recorded at all is attempted
// again once its lease lapses (at least once).
func (d *Dispatcher) commit(ctx context.Context, results []storage.DeliveryResult, want int) (jobs []*storage.DeliveryJob) {
	results = slices.DeleteFunc(results, func(r storage.DeliveryResult) bool { return r.EventID == "" })
	if len(results) == 0 {
		// Nothing to record: a poll, which on an idle server finds nothing
		// every PollInterval. It makes a span only when it claimed
		// something or failed.
		return d.claimOnly(ctx, want)
	}
	if d.tracer != nil {
		var span trace.Span
		ctx, span = d.tracer.Start(ctx, "webhook.claim", trace.WithNewRoot())
		defer func() {
			span.SetAttributes(attribute.Int(tracing.AttrRecorded, len(results)), attribute.Int(tracing.AttrClaimed, len(jobs)))
			span.End()
		}()
	}
	if want == 0 {
		d.record(ctx, results)
		return nil
	}
	// One call records the results and claims, in one transaction (one
	// round trip on PostgreSQL).
	p := d.claimParams(want)
	p.Record = results
	jobs, err := d.cfg.Storage.DeliveryClaimDue(context.WithoutCancel(ctx), p)
	if err != nil {
		if ctx.Err() == nil {
			d.cfg.Logger.ErrorContext(ctx, "record and claim deliveries", slog.Int("count", len(results)), slog.Any("error", err))
		}
		d.record(ctx, results)
		return nil
	}
	return jobs
}

// claimOnly claims up to want due deliveries, with nothing to record. A
// claim alone is one statement: no transaction around it. It runs under a
// quiet context (tracing.Quiet: no storage or statement spans), and the
// round's "webhook.claim" span, with a storage.DeliveryClaimDue span under
// it, is made afterwards, dated when the claim started, only when the
// claim found something or failed: an idle server's polls export nothing.
func (d *Dispatcher) claimOnly(ctx context.Context, want int) []*storage.DeliveryJob {
	if want == 0 {
		return nil
	}
	start := time.Now()
	jobs, err := d.cfg.Storage.DeliveryClaimDue(tracing.Quiet(context.WithoutCancel(ctx)), d.claimParams(want))
	if d.tracer != nil && (len(jobs) > 0 || err != nil) {
		end := time.Now()
		sctx, span := d.tracer.Start(ctx, "webhook.claim", trace.WithNewRoot(), trace.WithTimestamp(start))
		_, claim := d.tracer.Start(sctx, "storage.DeliveryClaimDue", trace.WithTimestamp(start))
		if err != nil {
			claim.SetStatus(codes.Error, "storage error")
		}
		claim.End(trace.WithTimestamp(end))
		span.SetAttributes(attribute.Int(tracing.AttrRecorded, 0), attribute.Int(tracing.AttrClaimed, len(jobs)))
		span.End(trace.WithTimestamp(end))
	}
	if err != nil {
		if ctx.Err() == nil {
			d.cfg.Logger.ErrorContext(ctx, "claim deliveries", slog.Any("error", err))
		}
		return nil
	}
	return jobs
}

// record writes results in a transaction of their own.
func (d *Dispatcher) record(ctx context.Context, results []storage.DeliveryResult) {
	if err := d.cfg.Storage.DeliveryRecord(context.WithoutCancel(ctx), results); err != nil {
		// The leases lapse and the deliveries are attempted again.
		d.cfg.Logger.ErrorContext(ctx, "record deliveries", slog.Int("count", len(results)), slog.Any("error", err))
	}
}

// sleep returns how long to wait before the next claim: until the next
// delivery is due, or PollInterval when what is due could not be claimed
// (its store is at its cap, or it is leased) or nothing is pending.
func (d *Dispatcher) sleep(ctx context.Context) time.Duration {
	// Asked after every round, busy or idle: no span of its own (it
	// would be a trace of its own each time).
	next, err := d.cfg.Storage.DeliveryNextDue(tracing.Quiet(ctx))
	if err != nil || next.IsZero() {
		return d.cfg.PollInterval
	}
	if wait := next.Sub(d.cfg.Clock.Now()); wait > 0 {
		return min(wait, d.cfg.PollInterval)
	}
	return d.cfg.PollInterval
}

func (d *Dispatcher) claimParams(limit int) storage.DeliveryClaimParams {
	now := d.cfg.Clock.Now()
	return storage.DeliveryClaimParams{
		Now:        now,
		LeaseUntil: now.Add(d.cfg.Lease),
		Limit:      limit,
		PerStore:   d.cfg.PerStoreStart,
		StoreCaps:  d.limits.caps(),
		LeaseToken: keelpay.NewID("lease_"),
	}
}

// claimOne returns the parameters for claiming one delivery now, for
// Service.SendTest, which claims its event's delivery itself.
func (d *Dispatcher) claimOne() storage.DeliveryClaimParams {
	p := d.claimParams(1)
	p.PerStore, p.StoreCaps = 1, nil
	return p
}

// deliver makes one attempt of a claimed delivery and records it.
func (d *Dispatcher) deliver(ctx context.Context, job *storage.DeliveryJob) error {
	res, ok := d.attempt(ctx, job)
	if !ok {
		return ctx.Err()
	}
	return d.cfg.Storage.DeliveryRecord(context.WithoutCancel(ctx), []storage.DeliveryResult{res})
}
