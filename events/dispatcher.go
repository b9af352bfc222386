package events

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/internal/netguard"
	"github.com/keelpay/keelpay/internal/tracing"
	"github.com/keelpay/keelpay/storage"
	"github.com/keelpay/keelpay/webhooks"
)

// RetryDelays are the waits after each failed attempt (docs/webhooks.md): seven
// attempts in all, then the delivery is failed.
var RetryDelays = []time.Duration{time.Minute, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 6 * time.Hour, 24 * time.Hour}

// MaxAttempts is the number of attempts before a delivery is failed.
const MaxAttempts = 7

// Defaults of DispatcherConfig.
const (
	AttemptTimeoutDefault = 10 * time.Second
	ClaimBatchDefault     = 256
	ConcurrencyDefault    = 256
	LeaseDefault          = time.Minute
	PerStoreDefault       = 128
	PerStoreStartDefault  = 8
	PollIntervalDefault   = time.Second
)

// lingerMax is the longest a result waits for the others of its round
// before they are recorded (Run).
const lingerMax = 2 * time.Millisecond

// UserAgent is sent with every delivery.
const UserAgent = "keelpay/" + keelpay.Version

// DispatcherConfig configures a Dispatcher. Fields are in alphabetical
// order; zero values take the defaults.
type DispatcherConfig struct {
	// AllowInsecure lets deliveries reach loopback, private, link-local
	// and other internal addresses. Default false: such addresses are
	// refused at dial time, after DNS, so rebinding cannot get around it.
	// The reference server's sandbox mode turns it on.
	AllowInsecure bool
	// AttemptTimeout is how long a receiver has to answer (10 s, docs/webhooks.md).
	AttemptTimeout time.Duration
	// ClaimBatch is the most deliveries claimed in one query.
	ClaimBatch int
	// Clock schedules attempts. Default keelpay.SystemClock. The
	// webhook-timestamp header always uses the wall clock, so that
	// receivers accept signatures even when the service clock was moved.
	Clock keelpay.Clock
	// Concurrency is the most attempts in flight in this process.
	Concurrency int
	// Lease is how long a claimed delivery stays with this process; a
	// process that dies mid-attempt loses nothing: the lease lapses and
	// another process claims the delivery. Must exceed AttemptTimeout.
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
	// other's leases and may each fill it.
	PerStore int
	// PerStoreStart is how many attempts of a store may be in flight
	// before its receiver has shown that it answers (default 8, at most
	// PerStore). Each success lets one more attempt of the store be in
	// flight, up to PerStore; each failure or time-out halves the number,
	// down to one. So a store whose receiver hangs or fails holds a few of
	// the Concurrency slots, however many such stores there are, and a
	// store with a backlog and a healthy receiver reaches PerStore within
	// a few rounds of attempts. Each process learns the numbers from its
	// own attempts; a claim applies them to the store's leases in every
	// process.
	PerStoreStart int
	// PollInterval is the longest the dispatcher sleeps when nothing is
	// due before it looks again (Notify wakes it sooner).
	PollInterval time.Duration
	// Storage is required.
	Storage storage.Storage
	// TracerProvider, when set, gets a span for each delivery attempt
	// ("webhook.attempt": event id and type, store id, attempt number,
	// status code and outcome; never the URL, the body or the signature)
	// and for each round of recording and claiming ("webhook.claim").
	// Default nil: no spans, at no cost.
	TracerProvider trace.TracerProvider
	// Transport, when set, replaces the default transport (tests).
	Transport http.RoundTripper
}

// WithDefaults returns a copy of c with defaults filled in.
func (c DispatcherConfig) WithDefaults() DispatcherConfig {
	if c.AttemptTimeout <= 0 {
		c.AttemptTimeout = AttemptTimeoutDefault
	}
	if c.ClaimBatch <= 0 {
		c.ClaimBatch = ClaimBatchDefault
	}
	if c.Clock == nil {
		c.Clock = keelpay.SystemClock{}
	}
	if c.Concurrency <= 0 {
		c.Concurrency = ConcurrencyDefault
	}
	if c.Lease <= 0 {
		c.Lease = LeaseDefault
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.PerStore <= 0 {
		c.PerStore = PerStoreDefault
	}
	if c.PerStoreStart <= 0 {
		c.PerStoreStart = PerStoreStartDefault
	}
	c.PerStoreStart = min(c.PerStoreStart, c.PerStore)
	if c.PollInterval <= 0 {
		c.PollInterval = PollIntervalDefault
	}
	return c
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
	signers sync.Map // webhook secret -> *webhooks.Signer
	metrics *dispatcherMetrics
	limits  *storeLimits
	faults  sync.Map     // store id -> Faults (sandbox only)
	held    sync.Map     // event id -> struct{}: held once by a fault
	tracer  trace.Tracer // nil: no spans
}

// NewDispatcher returns a Dispatcher; start it with Run.
func NewDispatcher(cfg DispatcherConfig) *Dispatcher {
	cfg = cfg.WithDefaults()
	transport := cfg.Transport
	if transport == nil {
		dialer := &net.Dialer{Timeout: cfg.AttemptTimeout, KeepAlive: 30 * time.Second}
		if !cfg.AllowInsecure {
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
		limits: newStoreLimits(cfg.PerStoreStart, cfg.PerStore, cfg.Logger),
		tracer: tracing.Tracer(cfg.TracerProvider),
	}
	if cfg.Metrics != nil {
		d.metrics = newDispatcherMetrics(cfg.Metrics, cfg.Storage, d.limits)
	}
	return d
}

// Notify wakes the dispatcher to look for due deliveries now: after a new
// event, a redelivery, or a move of the service clock.
func (d *Dispatcher) Notify() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// Run delivers until ctx is done. Attempts in flight when ctx ends run to
// their end (at most AttemptTimeout) and are recorded before Run returns;
// one cut off by a crash is claimed again once its lease lapses (at least
// once).
//
// Each transaction of the dispatcher records every result that arrived
// while the previous one committed and, in the same commit, claims due
// deliveries for the slots those results freed. The recorded leases are
// released before the claim counts each store's leases, so a store at its
// cap gets its freed slots back in the same commit instead of one later;
// and a backlog costs one commit per round of attempts, not two. One such
// transaction is under way at a time, except that news (Notify, or a
// delivery coming due) starts a claim at once beside it: a new event's
// webhook does not wait for a batch of results to commit first.
func (d *Dispatcher) Run(ctx context.Context) error {
	// Every attempt sends one result, and at most Concurrency are
	// unrecorded at once: sends never block.
	results := make(chan storage.DeliveryResult, d.cfg.Concurrency)
	type committed struct {
		jobs []*storage.DeliveryJob
		want int
	}
	commits := make(chan committed, 2)
	var wg sync.WaitGroup
	var (
		// held counts the attempts started whose results were not yet
		// handed to a commit; reserved, the slots the claims under way
		// may fill; pending, the commits under way.
		held, reserved, pending int
		batch                   = make([]storage.DeliveryResult, 0, d.cfg.Concurrency)
		// news counts wake-ups (Notify, the timer); seen is its value
		// when the last claim started. more says the last claim was
		// full, so more may be due behind it.
		news, seen = 1, 0
		more       bool
	)
	start := func(jobs []*storage.DeliveryJob) {
		for _, job := range jobs {
			wg.Go(func() {
				// The attempt outlives ctx: a receiver that got the
				// webhook gets it recorded. A result without an event
				// id stands for nothing to record.
				res, _ := d.attempt(context.WithoutCancel(ctx), job)
				results <- res
			})
		}
		held += len(jobs)
	}
	submit := func(want int) {
		rs := slices.Clone(batch)
		held -= len(batch)
		batch = batch[:0]
		if want > 0 {
			seen, more = news, false
		}
		reserved += want
		pending++
		go func() { commits <- committed{d.commit(ctx, rs, want), want} }()
	}
	done := func(c committed) {
		pending--
		reserved -= c.want
		start(c.jobs)
		if c.want > 0 && len(c.jobs) == c.want {
			more = true
		}
	}
	// ready moves the results already sent into batch, without waiting.
	ready := func() {
		for {
			select {
			case r := <-results:
				batch = append(batch, r)
			default:
				return
			}
		}
	}
	// linger waits a moment for the other attempts of a round: attempts
	// claimed together finish together, and a commit for the first result
	// alone would leave the others to wait for the next one. News ends it.
	lingerT := time.NewTimer(0)
	defer lingerT.Stop()
	linger := func() {
		lingerT.Reset(lingerMax)
		for held > len(batch) {
			select {
			case r := <-results:
				batch = append(batch, r)
			case <-d.wake:
				news++
				return
			case <-lingerT.C:
				return
			case <-ctx.Done():
				return
			}
		}
	}
	timer := time.NewTimer(0)
	defer timer.Stop()
	for ctx.Err() == nil {
		ready()
		free := d.cfg.Concurrency - held - reserved
		claim := free > 0 && (news > seen || more || len(batch) > 0)
		switch {
		case pending == 0 && (claim || len(batch) > 0):
			// Results recorded free their stores' caps: claim with them.
			want := 0
			if claim {
				want = min(free, d.cfg.ClaimBatch)
			}
			submit(want)
			continue
		case pending == 1 && free > 0 && news > seen:
			submit(min(free, d.cfg.ClaimBatch))
			continue
		}
		wait := time.Duration(-1)
		if pending == 0 && free > 0 {
			wait = d.sleep(ctx)
		}
		if wait >= 0 {
			timer.Reset(wait)
		} else {
			timer.Stop()
		}
		select {
		case <-ctx.Done():
		case c := <-commits:
			done(c)
		case r := <-results:
			batch = append(batch, r)
			if pending == 0 {
				linger()
			}
		case <-d.wake:
			news++
		case <-timer.C:
			news++
		}
	}
	// Stopping: no more claims. What commits under way claimed is
	// attempted; every attempt is recorded.
	for pending > 0 {
		done(<-commits)
	}
	for held > len(batch) {
		batch = append(batch, <-results)
	}
	wg.Wait()
	if len(batch) > 0 {
		d.commit(ctx, batch, 0)
	}
	return nil
}

// commit records results and claims up to want due deliveries in one
// transaction. When that fails, the results are recorded on their own
// (their leases would otherwise hold the deliveries until they lapse) and
// nothing is claimed; a result that cannot be recorded at all is attempted
// again once its lease lapses (at least once).
func (d *Dispatcher) commit(ctx context.Context, results []storage.DeliveryResult, want int) (jobs []*storage.DeliveryJob) {
	results = slices.DeleteFunc(results, func(r storage.DeliveryResult) bool { return r.EventID == "" })
	if d.tracer != nil {
		var span trace.Span
		ctx, span = d.tracer.Start(ctx, "webhook.claim", trace.WithNewRoot())
		defer func() {
			span.SetAttributes(attribute.Int(tracing.AttrRecorded, len(results)), attribute.Int(tracing.AttrClaimed, len(jobs)))
			span.End()
		}()
	}
	if want == 0 {
		if len(results) > 0 {
			d.record(ctx, results)
		}
		return nil
	}
	p := d.claimParams(want)
	err := d.cfg.Storage.WithTx(context.WithoutCancel(ctx), func(ctx context.Context, tx storage.Executor) error {
		jobs = nil
		if len(results) > 0 {
			if err := tx.DeliveryRecord(ctx, results); err != nil {
				return fmt.Errorf("record deliveries: %w", err)
			}
		}
		var err error
		jobs, err = tx.DeliveryClaimDue(ctx, p)
		if err != nil {
			return fmt.Errorf("claim deliveries: %w", err)
		}
		return nil
	})
	if err != nil {
		if ctx.Err() == nil {
			d.cfg.Logger.ErrorContext(ctx, "record and claim deliveries", slog.Int("count", len(results)), slog.Any("error", err))
		}
		if len(results) > 0 {
			d.record(ctx, results)
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
	next, err := d.cfg.Storage.DeliveryNextDue(ctx)
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

func (d *Dispatcher) claim(ctx context.Context, limit int) ([]*storage.DeliveryJob, error) {
	return d.cfg.Storage.DeliveryClaimDue(ctx, d.claimParams(limit))
}

// ClaimParams returns the parameters for claiming one delivery now, for a
// caller that claims an event's delivery itself (see Service.SendTest).
func (d *Dispatcher) ClaimParams() storage.DeliveryClaimParams {
	p := d.claimParams(1)
	p.PerStore, p.StoreCaps = 1, nil
	return p
}

// Deliver makes one attempt of a claimed delivery and records it.
func (d *Dispatcher) Deliver(ctx context.Context, job *storage.DeliveryJob) error {
	res, ok := d.attempt(ctx, job)
	if !ok {
		return ctx.Err()
	}
	return d.cfg.Storage.DeliveryRecord(context.WithoutCancel(ctx), []storage.DeliveryResult{res})
}

// RunOnce claims every delivery due now, attempts them, records the
// results and returns how many it attempted. Tests drive the dispatcher
// with it after moving their clock; Run is for production.
func (d *Dispatcher) RunOnce(ctx context.Context) (int, error) {
	total := 0
	for {
		jobs, err := d.claim(ctx, d.cfg.ClaimBatch)
		if err != nil || len(jobs) == 0 {
			return total, err
		}
		results := make([]storage.DeliveryResult, len(jobs))
		var wg sync.WaitGroup
		slots := make(chan struct{}, d.cfg.Concurrency)
		for i, job := range jobs {
			slots <- struct{}{}
			wg.Go(func() {
				defer func() { <-slots }()
				results[i], _ = d.attempt(ctx, job)
			})
		}
		wg.Wait()
		if err := ctx.Err(); err != nil {
			return total, err
		}
		if err := d.cfg.Storage.DeliveryRecord(ctx, results); err != nil {
			return total, err
		}
		total += len(jobs)
	}
}

// attempt posts one delivery and returns its result. ok is false when ctx
// ended during the attempt: then nothing is recorded.
func (d *Dispatcher) attempt(ctx context.Context, job *storage.DeliveryJob) (storage.DeliveryResult, bool) {
	started := d.cfg.Clock.Now()
	faulted, skip, dup := d.faulted(job, started)
	if skip {
		return faulted, true
	}
	var span trace.Span
	if d.tracer != nil {
		ctx, span = d.tracer.Start(ctx, "webhook.attempt", trace.WithSpanKind(trace.SpanKindClient))
		defer span.End()
	}
	wall := time.Now()
	post := d.post
	if dup {
		post = d.postTwice
	}
	d.limits.begin(job.StoreID)
	status, failure, body, err := post(ctx, job, wall)
	took := time.Since(wall)
	d.limits.end(ctx, job.StoreID, ctx.Err() == nil, string(failure))
	if ctx.Err() != nil {
		if span != nil && span.IsRecording() {
			span.SetAttributes(attemptAttrs(job, job.Attempts+1, "interrupted", status)...)
		}
		return storage.DeliveryResult{}, false
	}
	res := d.result(job, started, status, failure, body, took)
	outcome := string(failure)
	if failure == "" {
		outcome = "succeeded"
	}
	if span != nil && span.IsRecording() {
		span.SetAttributes(attemptAttrs(job, res.Delivery.Attempts, outcome, status)...)
		if failure != "" {
			span.SetStatus(codes.Error, outcome)
		}
	}
	if d.metrics != nil {
		d.metrics.attempts.WithLabelValues(outcome).Inc()
		d.metrics.latency.WithLabelValues(outcome).Observe(took.Seconds())
	}
	// Successes are routine (thousands a second); failures are what an
	// operator looks for.
	level := slog.LevelDebug
	if failure != "" {
		level = slog.LevelWarn
	}
	attrs := []slog.Attr{
		slog.String("event_id", job.EventID), slog.String("store_id", job.StoreID),
		slog.Int("attempt", res.Delivery.Attempts), slog.String("outcome", outcome), slog.Int("status_code", status),
	}
	if err != nil {
		attrs = append(attrs, slog.String("error", redact(err)))
	}
	d.cfg.Logger.LogAttrs(ctx, level, "webhook attempt", attrs...)
	return res, true
}

// attemptAttrs are the attributes of an attempt's span: ids, numbers and
// the outcome, never the URL, the body or the signature.
func attemptAttrs(job *storage.DeliveryJob, attempt int, outcome string, status int) []attribute.KeyValue {
	attrs := []attribute.KeyValue{
		attribute.String(tracing.AttrEventID, job.EventID),
		attribute.String(tracing.AttrEventType, string(job.Type)),
		attribute.String(tracing.AttrStoreID, job.StoreID),
		attribute.Int(tracing.AttrAttempt, attempt),
		attribute.String(tracing.AttrOutcome, outcome),
	}
	if status != 0 {
		attrs = append(attrs, attribute.Int("http.response.status_code", status))
	}
	return attrs
}

// result is the record of one attempt: the delivery's new state by the
// retry schedule, and the attempt for the history.
func (d *Dispatcher) result(job *storage.DeliveryJob, started time.Time, status int, failure keelpay.DeliveryFailure, body string, took time.Duration) storage.DeliveryResult {
	del := afterAttempt(job.Attempts, started, status, failure)
	att := &keelpay.DeliveryAttempt{
		ID: keelpay.NewID(keelpay.PrefixAttempt), EventID: job.EventID, StoreID: job.StoreID,
		StartedAt: started, Duration: took, StatusCode: status, Failure: failure, ResponseBody: body,
	}
	return storage.DeliveryResult{EventID: job.EventID, LeaseToken: job.LeaseToken, Delivery: del, Attempt: att}
}

// post sends the request and classifies the outcome: failure is "" for a
// 2xx within the time-out. body is the start of the receiver's answer.
func (d *Dispatcher) post(ctx context.Context, job *storage.DeliveryJob, wall time.Time) (int, keelpay.DeliveryFailure, string, error) {
	signer, err := d.signer(job.WebhookSecret)
	if err != nil {
		return 0, keelpay.FailureConnectionError, "", err
	}
	ctx, cancel := context.WithTimeout(ctx, d.cfg.AttemptTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, job.WebhookURL, bytes.NewReader(job.Body))
	if err != nil {
		return 0, keelpay.FailureConnectionError, "", err
	}
	sig := signer.AppendSignature(make([]byte, 0, 48), job.EventID, wall, job.Body)
	h := req.Header
	h[webhooks.HeaderID] = []string{job.EventID}
	h[webhooks.HeaderTimestamp] = []string{strconv.FormatInt(wall.Unix(), 10)}
	h[webhooks.HeaderSignature] = []string{string(sig)}
	h[webhooks.HeaderEventType] = []string{string(job.Type)}
	h["Content-Type"] = []string{"application/json"}
	h["User-Agent"] = []string{UserAgent}
	resp, err := d.client.Do(req)
	if err != nil {
		return 0, classify(err), "", err
	}
	// A receiver is only asked for its status; the start of its answer is
	// kept for debugging, and a little more read so the connection can be
	// reused.
	head := make([]byte, keelpay.AttemptBodyMax)
	n, _ := io.ReadFull(resp.Body, head)
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	resp.Body.Close()
	body := AttemptBody(head[:n])
	return resp.StatusCode, judge(resp.StatusCode), body, nil
}

// AttemptBody makes the start of a receiver's answer into the text kept in
// an attempt: at most keelpay.AttemptBodyMax bytes, cut at a character
// boundary, invalid UTF-8 (and NUL, which not every database stores in
// text) replaced by U+FFFD.
func AttemptBody(b []byte) string {
	s := strings.ToValidUTF8(string(b), "\uFFFD")
	s = strings.ReplaceAll(s, "\x00", "\uFFFD")
	for len(s) > keelpay.AttemptBodyMax {
		_, size := utf8.DecodeLastRuneInString(s)
		s = s[:len(s)-size]
	}
	return s
}

func (d *Dispatcher) signer(secret string) (*webhooks.Signer, error) {
	if s, ok := d.signers.Load(secret); ok {
		return s.(*webhooks.Signer), nil
	}
	s, err := webhooks.NewSigner(secret)
	if err != nil {
		return nil, err
	}
	d.signers.Store(secret, s)
	return s, nil
}

// classify names why a request got no response.
func classify(err error) keelpay.DeliveryFailure {
	var netErr net.Error
	var certErr *tls.CertificateVerificationError
	var unknownAuth x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var recordErr tls.RecordHeaderError
	var alert tls.AlertError
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return keelpay.FailureTimeout
	case errors.As(err, &certErr), errors.As(err, &unknownAuth), errors.As(err, &hostErr),
		errors.As(err, &recordErr), errors.As(err, &alert):
		return keelpay.FailureTLSError
	default:
		return keelpay.FailureConnectionError
	}
}

// redact returns the error without the URL that net/http puts in it: a
// webhook URL may carry a store's token.
func redact(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Op + ": " + ue.Err.Error()
	}
	return err.Error()
}
