package events

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/idempotency"
	"github.com/keelpay/keelpay/internal/outbox"
	"github.com/keelpay/keelpay/storage"
)

// Limits of the events API (docs/api.md).
const (
	TestLimit        = 10
	TestLimitWindow  = time.Minute
	ListLimitMax     = 100
	ListLimitDefault = 10
)

// Config configures a Service. Fields are in alphabetical order.
type Config struct {
	// Clock defaults to keelpay.SystemClock.
	Clock keelpay.Clock
	// Committed, when set, is called with each event after the
	// transaction that wrote it has committed. Default: nothing is called.
	Committed func(ctx context.Context, e *keelpay.Event)
	// Dispatcher makes the first attempt of a test event and is woken for
	// redeliveries. Required.
	Dispatcher *Dispatcher
	// Storage is required.
	Storage storage.Storage
}

// Service sends test events and reads events back.
type Service struct {
	cfg    Config
	outbox *outbox.Outbox
}

// WithDefaults returns a copy of c with defaults filled in.
func (c Config) WithDefaults() Config {
	c.Clock = cmp.Or[keelpay.Clock](c.Clock, keelpay.SystemClock{})
	return c
}

// Validate reports every missing field of c, each naming its field.
func (c Config) Validate() error {
	var errs []error
	if c.Dispatcher == nil {
		errs = append(errs, errors.New("events: Config.Dispatcher is required"))
	}
	if c.Storage == nil {
		errs = append(errs, errors.New("events: Config.Storage is required"))
	}
	return errors.Join(errs...)
}

// New validates cfg, fills in its defaults and returns a Service. The
// error names every missing field.
func New(cfg Config) (*Service, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	return &Service{cfg: cfg, outbox: outbox.New(cfg.Storage, cfg.Committed)}, nil
}

// testObject is the data.object of webhook.test (docs/api.md).
var testObject = map[string]string{"message": "test"}

// SendTest creates a webhook.test event for the store and makes its first
// attempt before returning it with its delivery state. At most TestLimit
// per TestLimitWindow per store (429 rate_limited). key is the request's
// idempotency key, or nil: the event's creation is recorded on it, so
// that a retry answers with this event rather than sending another.
func (s *Service) SendTest(ctx context.Context, storeID string, key *idempotency.Key) (*keelpay.Event, error) {
	now := s.cfg.Clock.Now()
	wait, err := s.cfg.Storage.RateLimitTake(ctx, now,
		storage.RateLimit{Key: "webhook_test:" + storeID, Limit: TestLimit, Window: TestLimitWindow})
	if err != nil {
		return nil, fmt.Errorf("webhook test rate limit: %w", err)
	}
	if wait > 0 {
		return nil, keelpay.NewError(keelpay.CodeRateLimited,
			"Too many webhook tests; retry after the time in Retry-After.").WithRetryAfter(wait)
	}
	e, err := NewEvent(storeID, keelpay.EventWebhookTest, testObject, now)
	if err != nil {
		return nil, err
	}
	// The event is created already claimed by this request, so the
	// background dispatcher does not race it; if this process dies, the
	// lease lapses and the dispatcher delivers it.
	var job *storage.DeliveryJob
	err = s.outbox.CommitTx(ctx, func(ctx context.Context, tx storage.Executor, b *storage.Batch) error {
		var err error
		if job, err = tx.DeliveryClaimEvent(ctx, e.ID, s.cfg.Dispatcher.claimOne()); err != nil {
			return err
		}
		// A retry of this request after a crash answers with this event
		// instead of sending another.
		key.Step(b, idempotency.Created, e.ID)
		return nil
	}, e)
	if err != nil {
		return nil, fmt.Errorf("webhook test: %w", err)
	}
	if err := s.cfg.Dispatcher.deliver(ctx, job); err != nil {
		return nil, fmt.Errorf("webhook test: deliver: %w", err)
	}
	return s.Get(ctx, storeID, e.ID)
}

// Get returns an event of the store with its delivery, or 404
// event_not_found.
func (s *Service) Get(ctx context.Context, storeID, id string) (*keelpay.Event, error) {
	if !keelpay.ValidID(keelpay.PrefixEvent, id) {
		return nil, errEventNotFound()
	}
	e, err := s.cfg.Storage.EventGet(ctx, storeID, id)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, errEventNotFound()
	}
	return e, err
}

// ListParams selects a page of events.
type ListParams = storage.EventListParams

// List returns a page of the store's events, newest first.
func (s *Service) List(ctx context.Context, p ListParams) ([]*keelpay.Event, bool, error) {
	if p.Limit == 0 {
		p.Limit = ListLimitDefault
	}
	if p.Type != "" && !keelpay.ValidEventType(string(p.Type)) {
		return nil, false, keelpay.InvalidRequest("type", "invalid_type", "type must be one of the event types.")
	}
	if p.Limit < 1 || p.Limit > ListLimitMax {
		return nil, false, keelpay.InvalidRequest("limit", "invalid_limit", "limit must be an integer from 1 to 100.")
	}
	for _, c := range []struct{ field, id string }{{"starting_after", p.StartingAfter}, {"ending_before", p.EndingBefore}} {
		if c.id != "" && !keelpay.ValidID(keelpay.PrefixEvent, c.id) {
			return nil, false, keelpay.InvalidRequest(c.field, "invalid_"+c.field, c.field+" must be the id of one of the store's events.")
		}
	}
	if p.StartingAfter != "" && p.EndingBefore != "" {
		return nil, false, keelpay.InvalidRequest("ending_before", "invalid_ending_before", "Give starting_after or ending_before, not both.")
	}
	events, more, err := s.cfg.Storage.EventList(ctx, p)
	if errors.Is(err, storage.ErrNotFound) {
		field := "starting_after"
		if p.EndingBefore != "" {
			field = "ending_before"
		}
		return nil, false, keelpay.InvalidRequest(field, "invalid_"+field, field+" must be the id of one of the store's events.")
	}
	return events, more, err
}

// AttemptListParams selects a page of an event's attempts.
type AttemptListParams = storage.DeliveryAttemptListParams

// Attempts returns a page of an event's delivery attempts, newest first:
// 404 event_not_found when the store has no such event.
func (s *Service) Attempts(ctx context.Context, p AttemptListParams) ([]*keelpay.DeliveryAttempt, bool, error) {
	if _, err := s.Get(ctx, p.StoreID, p.EventID); err != nil {
		return nil, false, err
	}
	if p.Limit == 0 {
		p.Limit = ListLimitDefault
	}
	if p.Limit < 1 || p.Limit > ListLimitMax {
		return nil, false, keelpay.InvalidRequest("limit", "invalid_limit", "limit must be an integer from 1 to 100.")
	}
	const msg = " must be the id of one of the event's attempts."
	for _, c := range []struct{ field, id string }{{"starting_after", p.StartingAfter}, {"ending_before", p.EndingBefore}} {
		if c.id != "" && !keelpay.ValidID(keelpay.PrefixAttempt, c.id) {
			return nil, false, keelpay.InvalidRequest(c.field, "invalid_"+c.field, c.field+msg)
		}
	}
	if p.StartingAfter != "" && p.EndingBefore != "" {
		return nil, false, keelpay.InvalidRequest("ending_before", "invalid_ending_before", "Give starting_after or ending_before, not both.")
	}
	attempts, more, err := s.cfg.Storage.DeliveryAttemptList(ctx, p)
	if errors.Is(err, storage.ErrNotFound) {
		field := "starting_after"
		if p.EndingBefore != "" {
			field = "ending_before"
		}
		return nil, false, keelpay.InvalidRequest(field, "invalid_"+field, field+msg)
	}
	return attempts, more, err
}

// Redeliver queues one more attempt of an event now: a failed delivery
// becomes pending again with a fresh attempt count.
func (s *Service) Redeliver(ctx context.Context, storeID, id string) (*keelpay.Event, error) {
	if !keelpay.ValidID(keelpay.PrefixEvent, id) {
		return nil, errEventNotFound()
	}
	e, err := s.cfg.Storage.DeliveryRedeliver(ctx, storeID, id, s.cfg.Clock.Now())
	if errors.Is(err, storage.ErrNotFound) {
		return nil, errEventNotFound()
	}
	if err != nil {
		return nil, err
	}
	s.cfg.Dispatcher.Notify()
	return e, nil
}

// RedeliverMax is the most deliveries one bulk redelivery queues.
const RedeliverMax = 10000

// RedeliverManyParams selects the events a bulk redelivery queues again.
type RedeliverManyParams struct {
	StoreID string
	// Status is the delivery status to match; default failed.
	Status keelpay.DeliveryStatus
	// Type, when set, keeps only events of that type.
	Type keelpay.EventType
	// CreatedAfter and CreatedBefore, when not zero, keep only events
	// created strictly between them.
	CreatedAfter  time.Time
	CreatedBefore time.Time
	// StartingAfter continues a bulk redelivery that matched more than
	// RedeliverMax events: the Next of the previous call.
	StartingAfter string
	// Idempotency, when set, is the request's idempotency key: the answer
	// is stored with what the call queued (see package idempotency). nil:
	// no key.
	Idempotency *idempotency.Key
}

// RedeliverManyResult says what a bulk redelivery did.
type RedeliverManyResult struct {
	// Queued is how many deliveries were made pending again.
	Queued int
	// Next, when not empty, is the event to continue after: more events
	// matched than one call queues.
	Next string
}

// RedeliverMany queues a fresh attempt, due now, for every event of the
// store that matches p, oldest first, at most RedeliverMax a call.
func (s *Service) RedeliverMany(ctx context.Context, p RedeliverManyParams) (RedeliverManyResult, error) {
	if p.Status == "" {
		p.Status = keelpay.DeliveryFailed
	}
	switch p.Status {
	case keelpay.DeliveryFailed, keelpay.DeliveryPending, keelpay.DeliverySucceeded:
	default:
		return RedeliverManyResult{}, keelpay.InvalidRequest("status", "invalid_status", "status must be failed, pending or succeeded.")
	}
	if p.Type != "" && !keelpay.ValidEventType(string(p.Type)) {
		return RedeliverManyResult{}, keelpay.InvalidRequest("type", "invalid_type", "type must be one of the event types.")
	}
	if !p.CreatedAfter.IsZero() && !p.CreatedBefore.IsZero() && !p.CreatedBefore.After(p.CreatedAfter) {
		return RedeliverManyResult{}, keelpay.InvalidRequest("created_before", "invalid_created_before", "created_before must be later than created_after.")
	}
	const cursorMsg = "starting_after must be the id of one of the store's events."
	if p.StartingAfter != "" && !keelpay.ValidID(keelpay.PrefixEvent, p.StartingAfter) {
		return RedeliverManyResult{}, keelpay.InvalidRequest("starting_after", "invalid_starting_after", cursorMsg)
	}
	var res RedeliverManyResult
	var b *storage.Batch
	err := s.cfg.Storage.WithTx(ctx, func(ctx context.Context, tx storage.Executor) error {
		b = &storage.Batch{}
		n, next, err := tx.DeliveryRedeliverMany(ctx, storage.DeliveryRedeliverManyParams{
			StoreID: p.StoreID, Status: p.Status, Type: p.Type, CreatedAfter: p.CreatedAfter, CreatedBefore: p.CreatedBefore,
			StartingAfter: p.StartingAfter, Limit: RedeliverMax, Now: s.cfg.Clock.Now(),
		})
		if err != nil {
			return err
		}
		res = RedeliverManyResult{Queued: n, Next: next}
		// With an Idempotency-Key the answer commits with what it
		// queued: a retry after a crash reports these counts rather than
		// queueing again.
		if err := p.Idempotency.Finish(b, p.StoreID, idempotency.OutcomeChanged, res); err != nil {
			return err
		}
		return b.Apply(ctx, tx)
	})
	if err == nil {
		b.Committed()
	}
	if errors.Is(err, storage.ErrNotFound) {
		return RedeliverManyResult{}, keelpay.InvalidRequest("starting_after", "invalid_starting_after", cursorMsg)
	}
	if err != nil {
		return RedeliverManyResult{}, fmt.Errorf("redeliver events: %w", err)
	}
	if res.Queued > 0 {
		s.cfg.Dispatcher.Notify()
	}
	return res, nil
}

func errEventNotFound() error {
	return keelpay.NewError(keelpay.CodeEventNotFound, "No such event.")
}
