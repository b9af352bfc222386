package service

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Defaults and bounds of RetentionConfig.
const (
	// RetentionEventsDefault is how long an event whose delivery is over
	// is kept: 30 days, as long as Stripe keeps its events.
	RetentionEventsDefault = 30 * 24 * time.Hour
	// RetentionCardSessionsDefault is how long a card session that saved
	// no card is kept after it expired. It holds the customer's name,
	// email and phone and serves nothing once expired, so it goes sooner
	// than events.
	RetentionCardSessionsDefault = 7 * 24 * time.Hour
	// RetentionIntervalDefault is how often the retention worker runs.
	RetentionIntervalDefault = time.Minute
	// RetentionBatchDefault is the most rows of one kind (events, card
	// sessions, idempotency keys, rate-limit hits) one transaction
	// deletes.
	RetentionBatchDefault = 1000
	// RetentionBatchMax bounds RetentionConfig.Batch, so that each
	// transaction stays short.
	RetentionBatchMax = 10000
	// RetentionMin is the shortest retention period accepted: a shorter
	// one is most likely a unit mistake (30 for 30 days).
	RetentionMin = time.Hour
	// KeepForever, as a retention period, keeps the rows for good.
	KeepForever time.Duration = -1
)

// RetentionConfig says how long keelpay keeps what it does not keep for
// good, and how the retention worker deletes the rest. Payment intents,
// refunds, cards and stores are the store's records: they are never
// deleted. Fields are in alphabetical order; each zero value takes its
// default.
type RetentionConfig struct {
	// Batch is the most rows of one kind (events, card sessions,
	// idempotency keys, rate-limit hits) deleted in one transaction (each
	// event takes its delivery and up to storage.AttemptsKept attempts
	// with it); a pass deletes batch after batch until none is left. Default RetentionBatchDefault; at most
	// RetentionBatchMax.
	Batch int
	// CardSessions is how long a card session that saved no card is kept
	// after its expiry. Default RetentionCardSessionsDefault (7 days);
	// KeepForever (any negative value) keeps them; at least RetentionMin.
	CardSessions time.Duration
	// Events is how long an event is kept after it was created, once its
	// delivery is over (succeeded or failed); an event whose delivery is
	// pending stays until it is over. After that it answers 404
	// event_not_found and cannot be redelivered. Default
	// RetentionEventsDefault (30 days); KeepForever (any negative value)
	// keeps them; at least RetentionMin.
	Events time.Duration
	// Interval is how often the retention worker runs. Default
	// RetentionIntervalDefault.
	Interval time.Duration
}

func (c RetentionConfig) withDefaults() RetentionConfig {
	c.Batch = cmp.Or(c.Batch, RetentionBatchDefault)
	c.CardSessions = cmp.Or(c.CardSessions, RetentionCardSessionsDefault)
	c.Events = cmp.Or(c.Events, RetentionEventsDefault)
	c.Interval = cmp.Or(c.Interval, RetentionIntervalDefault)
	return c
}

func (c RetentionConfig) validate(bad func(format string, args ...any)) {
	if c.Batch < 0 || c.Batch > RetentionBatchMax {
		bad("Retention.Batch is %d; it must be positive and at most %d, so that each transaction stays short", c.Batch, RetentionBatchMax)
	}
	for _, f := range []struct {
		name string
		v    time.Duration
	}{{"CardSessions", c.CardSessions}, {"Events", c.Events}} {
		if f.v > 0 && f.v < RetentionMin {
			bad("Retention.%s is %v; it must be at least %v, or negative (service.KeepForever) to keep them for good", f.name, f.v, RetentionMin)
		}
	}
	if c.Interval < 0 {
		bad("Retention.Interval is %v; it must be positive", c.Interval)
	}
}

// retention deletes what the policy no longer keeps.
type retention struct {
	cfg     Config
	deleted *prometheus.CounterVec
}

func newRetention(cfg Config) (*retention, error) {
	r := &retention{cfg: cfg, deleted: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "keelpay_retention_deleted_total",
		Help: "Rows deleted by the retention worker, by kind: event (with its delivery and attempts), card_session, idempotency_key or rate_limit_hit.",
	}, []string{"kind"})}
	if err := cfg.Metrics.Register(r.deleted); err != nil {
		return nil, err
	}
	return r, nil
}

// Purge deletes, in batches of Config.Retention.Batch, the events whose
// delivery is over and that are older than Config.Retention.Events, with
// their deliveries and attempts, the card sessions that expired unused
// longer than Config.Retention.CardSessions ago, the Idempotency-Key
// records past their expiry and the rate-limit hits that left their
// window, until none is left or ctx is done. The retention worker of
// Start runs it every Config.Retention.Interval; call it yourself to
// purge now (after moving a sandbox clock, say). Several processes may
// run it at once. Requests never delete expired records themselves: the
// worker, which every process runs, keeps those tables bounded.
func (s *Service) Purge(ctx context.Context) error {
	r := s.cfg.Retention
	now := s.cfg.Clock.Now()
	type kind struct {
		name, plural string
		keep         bool // the policy keeps this kind for good
		batch        func(context.Context) (int, error)
	}
	kinds := []kind{
		{"event", "events", r.Events < 0, func(ctx context.Context) (int, error) {
			return s.cfg.Storage.EventDeleteBefore(ctx, now.Add(-r.Events), r.Batch)
		}},
		{"card_session", "card sessions", r.CardSessions < 0, func(ctx context.Context) (int, error) {
			return s.cfg.Storage.CardSessionDeleteExpiredBefore(ctx, now.Add(-r.CardSessions), r.Batch)
		}},
		{"idempotency_key", "idempotency keys", false, func(ctx context.Context) (int, error) {
			return s.cfg.Storage.IdempotencyDeleteExpired(ctx, now, r.Batch)
		}},
		{"rate_limit_hit", "rate-limit hits", false, func(ctx context.Context) (int, error) {
			return s.cfg.Storage.RateLimitDeleteExpired(ctx, now, r.Batch)
		}},
	}
	var errs []error
	for _, k := range kinds {
		if k.keep {
			continue
		}
		n, err := s.purge(ctx, k.batch)
		s.retention.deleted.WithLabelValues(k.name).Add(float64(n))
		if err != nil {
			errs = append(errs, fmt.Errorf("retention: %s: %w", k.plural, err))
		} else if n > 0 {
			s.cfg.Logger.InfoContext(ctx, "retention deleted "+k.plural, slog.Int(k.name+"s", n))
		}
	}
	return errors.Join(errs...)
}

// purge calls batch until it deletes less than a full batch, and returns
// how many rows it deleted in all. Each call is a transaction of its own:
// between them the database serves everyone else.
func (s *Service) purge(ctx context.Context, batch func(context.Context) (int, error)) (int, error) {
	total := 0
	for {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		n, err := batch(ctx)
		total += n
		if err != nil || n < s.cfg.Retention.Batch {
			return total, err
		}
	}
}
