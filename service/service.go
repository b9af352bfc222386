package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/sync/errgroup"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/events"
	"github.com/keelpay/keelpay/httpapi"
	"github.com/keelpay/keelpay/internal/tracing"
	"github.com/keelpay/keelpay/internal/tracing/traced"
	"github.com/keelpay/keelpay/payments"
	"github.com/keelpay/keelpay/provider"
	"github.com/keelpay/keelpay/refunds"
	"github.com/keelpay/keelpay/storage"
	"github.com/keelpay/keelpay/stores"
)

// Service is keelpay assembled: the API, the background workers and the
// in-process event subscriptions over one storage and one provider.
type Service struct {
	cfg        Config
	api        http.Handler
	health     http.Handler
	dispatcher *events.Dispatcher
	events     *events.Service
	payments   *payments.Service
	refunds    *refunds.Service
	retention  *retention
	stores     *stores.Service
	subs       *subscribers
	clock      *clockWorker // nil unless the clock is the database's
	tracer     trace.Tracer // background passes; no-op without a TracerProvider

	mu      sync.Mutex
	running bool
	stop    context.CancelFunc
	workers *errgroup.Group
}

// New validates cfg and assembles a Service. Nothing runs in the
// background until Start.
func New(cfg Config) (*Service, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Clock == nil {
		// Several servers on one database keep to its clock (see
		// DatabaseClock); the storage was opened, so it answers now.
		if dt, ok := cfg.Storage.(DatabaseTimer); ok {
			c, err := NewDatabaseClock(context.Background(), dt, nil)
			if err != nil {
				return nil, err
			}
			cfg.Clock = c
		}
	}
	cfg = cfg.WithDefaults()
	// With a TracerProvider every part gets the storage and the provider
	// wrapped in spans; without one they are the ones given.
	untraced := cfg
	tracer := tracing.Tracer(cfg.TracerProvider)
	cfg.Storage = traced.Storage(cfg.Storage, tracer)
	cfg.Provider = traced.Provider(cfg.Provider, tracer)
	s := &Service{cfg: cfg, tracer: tracing.OrNoop(cfg.TracerProvider).Tracer(tracing.ScopeName)}
	s.subs = newSubscribers(cfg.SubscriptionBuffer, cfg.Logger)
	var err error
	if s.dispatcher, err = events.NewDispatcher(cfg.dispatcherConfig()); err != nil {
		return nil, fmt.Errorf("service: %w", err)
	}
	// Every event committed in this process wakes the dispatcher, so its
	// webhook leaves at once, and reaches this process's subscribers.
	committed := func(ctx context.Context, e *keelpay.Event) {
		s.dispatcher.Notify()
		s.subs.publish(e)
	}
	if err := s.newParts(cfg, committed); err != nil {
		return nil, fmt.Errorf("service: %w", err)
	}
	// A storage that can claim deliveries in the commit of an event
	// (storage/sqlite) does it for this dispatcher: the webhook leaves
	// when the event commits, not after a claim committed behind the
	// writes that came meanwhile.
	if c, ok := untraced.Storage.(storage.CommitClaimer); ok {
		c.SetCommitClaim(s.dispatcher.CommitClaim())
	}
	// The provider's notifications (a 3D Secure answer, an outcome that
	// became known) go to this service's payments, wired once here.
	if n, ok := untraced.Provider.(provider.Notifier); ok {
		n.SetNotifier(s.payments.Notify)
	}
	// A refund that changed after its send was answered (a pending one
	// ended, a succeeded one failed later) goes to this service's refunds.
	if n, ok := untraced.Provider.(provider.RefundNotifier); ok {
		n.SetRefundNotifier(s.refunds.NotifyRefund)
	}
	s.api, err = httpapi.New(httpapi.Config{
		Admission:  cfg.Admission,
		ClientAddr: cfg.ClientAddr,
		Clock:      cfg.Clock,
		Events:     s.events,
		Logger:     cfg.Logger,
		Metrics:    cfg.Metrics,
		Payments:   s.payments,
		Refunds:    s.refunds,
		Storage:    cfg.Storage,
		Stores:     s.stores,

		TracerProvider: cfg.TracerProvider,
	})
	if err != nil {
		return nil, fmt.Errorf("service: %w", err)
	}
	// Probes and scrapes are not traced: they would make a trace a second.
	s.health = httpapi.Health(httpapi.HealthConfig{Storage: untraced.Storage, Logger: cfg.Logger})
	if err := registerStorageStats(cfg.Metrics, untraced.Storage); err != nil {
		return nil, fmt.Errorf("service: %w", err)
	}
	if s.retention, err = newRetention(cfg); err != nil {
		return nil, fmt.Errorf("service: %w", err)
	}
	if d := databaseClock(cfg.Clock); d != nil {
		if s.clock, err = newClockWorker(d, cfg.Metrics, cfg.Logger); err != nil {
			return nil, fmt.Errorf("service: %w", err)
		}
	}
	return s, nil
}

// newParts builds the events, payments, refunds and stores services over
// cfg's storage and provider; committed gets every event they commit.
func (s *Service) newParts(cfg Config, committed func(context.Context, *keelpay.Event)) error {
	var errs [4]error
	s.events, errs[0] = events.New(events.Config{Clock: cfg.Clock, Committed: committed, Dispatcher: s.dispatcher, Storage: cfg.Storage})
	s.payments, errs[1] = payments.New(payments.Config{
		AnswerTimeout: cfg.AnswerTimeout,
		CallTimeout:   cfg.CallTimeout,
		Clock:         cfg.Clock,
		Committed:     committed,
		Logger:        cfg.Logger,
		Metrics:       cfg.Metrics,
		Provider:      cfg.Provider,
		Storage:       cfg.Storage,
	})
	s.refunds, errs[2] = refunds.New(refunds.Config{
		AnswerTimeout: cfg.AnswerTimeout,
		CallTimeout:   cfg.CallTimeout,
		Clock:         cfg.Clock,
		Committed:     committed,
		Logger:        cfg.Logger,
		Metrics:       cfg.Metrics,
		Provider:      cfg.Provider,
		Storage:       cfg.Storage,
	})
	s.stores, errs[3] = stores.New(stores.Config{
		AllowInsecureWebhooks: cfg.AllowInsecureWebhooks,
		CallTimeout:           cfg.CallTimeout,
		Clock:                 cfg.Clock,
		Provider:              cfg.Provider,
		Storage:               cfg.Storage,
	})
	return errors.Join(errs[:]...)
}

// registerStorageStats exports the transactions and commits of an adapter
// that counts them (both built-in ones do): their ratio to payments is the
// write cost of a payment, and to each other how many transactions share
// a commit.
func registerStorageStats(reg prometheus.Registerer, db storage.Storage) error {
	sdb, ok := db.(interface{ Stats() storage.Stats })
	if !ok {
		return nil
	}
	return errors.Join(
		reg.Register(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "keelpay_storage_transactions_total",
			Help: "Write transactions committed by the storage adapter.",
		}, func() float64 { return float64(sdb.Stats().Transactions) })),
		reg.Register(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "keelpay_storage_commits_total",
			Help: "Commits made by the storage adapter; a commit may hold several transactions.",
		}, func() float64 { return float64(sdb.Stats().Commits) })),
		reg.Register(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "keelpay_storage_round_trips_total",
			Help: "Requests sent to the database server and waited for (statements, pipelines, commits, rollbacks); 0 on SQLite.",
		}, func() float64 { return float64(sdb.Stats().RoundTrips) })),
	)
}

// Handler is the API, to serve as it is or to mount under a prefix of
// another mux (with http.StripPrefix). It does not serve /healthz or
// /metrics: mount HealthHandler and MetricsHandler where they belong.
func (s *Service) Handler() http.Handler { return s.api }

// HealthHandler is the readiness check (httpapi.Health): GET and HEAD
// answer 200 {"status":"ok"} while the database answers a ping within 2
// seconds, and 503 database_unavailable while it does not. Probes share one
// check a second at most, whatever their number.
func (s *Service) HealthHandler() http.Handler { return s.health }

// MetricsHandler serves Config.Metrics in the Prometheus text format when
// it is a prometheus.Gatherer, and 404 otherwise. It is not authenticated:
// mount it where only the team's scraper reaches it.
func (s *Service) MetricsHandler() http.Handler {
	if g, ok := s.cfg.Metrics.(prometheus.Gatherer); ok {
		return promhttp.HandlerFor(g, promhttp.HandlerOpts{})
	}
	return http.NotFoundHandler()
}

// Dispatcher, Events, Payments, Refunds and Stores are the parts the
// Service assembled, for what the API does not cover (a sandbox clock, an
// administrative tool, tests).
func (s *Service) Dispatcher() *events.Dispatcher { return s.dispatcher }

// Events is the events service: webhook tests, event reads, redelivery.
func (s *Service) Events() *events.Service { return s.events }

// Payments is the payments service.
func (s *Service) Payments() *payments.Service { return s.payments }

// Refunds is the refunds service.
func (s *Service) Refunds() *refunds.Service { return s.refunds }

// Stores is the stores service.
func (s *Service) Stores() *stores.Service { return s.stores }

// ErrStarted is returned by Start when the Service is already running.
var ErrStarted = errors.New("service: already started")

// Start starts every background worker: the webhook dispatcher, the
// payment reconciler and expirer, the refund reconciler, the retention
// worker (see Purge) and, on the database's clock, its measurement every
// ClockSyncInterval (see DatabaseClock). They run until Stop, or until ctx is
// done. Each worker is safe to run in several processes against one
// database. A second Start without Stop is ErrStarted.
func (s *Service) Start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running {
		return ErrStarted
	}
	ctx, s.stop = context.WithCancel(ctx)
	s.running = true
	g := new(errgroup.Group)
	s.workers = g
	g.Go(func() error {
		s.dispatcher.Run(ctx)
		return nil
	})
	type worker struct {
		name     string
		interval time.Duration
		pass     func(context.Context) error
	}
	workers := []worker{
		{"payment reconciler", s.cfg.ReconcileInterval, s.payments.Reconcile},
		{"expirer", s.cfg.ExpireInterval, s.payments.Expire},
		{"refund reconciler", s.cfg.ReconcileInterval, s.refunds.Reconcile},
		{"retention", s.cfg.Retention.Interval, s.Purge},
	}
	if s.clock != nil {
		workers = append(workers, worker{"database clock", ClockSyncInterval, s.clock.pass})
	}
	for _, w := range workers {
		g.Go(func() error {
			s.every(ctx, w.interval, w.name, w.pass)
			return nil
		})
	}
	return nil
}

// every runs pass now and then every interval until ctx is done; a failed
// pass is logged and the next one tries again. Each pass is a span of its
// own trace, named after the worker ("payment reconciler pass").
func (s *Service) every(ctx context.Context, interval time.Duration, name string, pass func(context.Context) error) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		pctx, span := s.tracer.Start(ctx, name+" pass", trace.WithNewRoot(), trace.WithAttributes(attribute.String(tracing.AttrWorker, name)))
		if err := pass(pctx); err != nil && ctx.Err() == nil {
			span.SetStatus(codes.Error, "pass failed")
			s.cfg.Logger.ErrorContext(ctx, name+" pass failed", slog.Any("error", err))
		}
		span.End()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Stop stops the background workers and waits for them: no new work is
// claimed, and deliveries and provider calls already under way finish and
// are recorded. That includes the provider calls of confirms and refund
// sends that went on after their request was answered (past
// Config.AnswerTimeout): stop the HTTP server first, so that no new ones
// start. If ctx ends first, Stop returns its error and the rest finishes on
// its own (a delivery not recorded is delivered again: at least once; an
// outcome not committed is found by the reconciler). Otherwise it returns
// the error a worker stopped with, if any (it was logged when it
// happened). Stop without Start does nothing.
func (s *Service) Stop(ctx context.Context) error {
	s.mu.Lock()
	if !s.running {
		s.mu.Unlock()
		return nil
	}
	s.stop()
	s.running = false
	g := s.workers
	s.mu.Unlock()
	done := make(chan error, 1)
	go func() { done <- g.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			return err
		}
	case <-ctx.Done():
		return ctx.Err()
	}
	return errors.Join(s.payments.Drain(ctx), s.refunds.Drain(ctx))
}
