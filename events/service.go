package events

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/storage"
)

// Limits of the events API (docs/api.md).
const (
	TestLimit        = 10
	TestLimitWindow  = time.Minute
	ListLimitMax     = 100
	ListLimitDefault = 10
)

// Config configures a Service.
type Config struct {
	// Clock defaults to keelpay.SystemClock.
	Clock keelpay.Clock
	// Dispatcher makes the first attempt of a test event and is woken for
	// redeliveries. Required.
	Dispatcher *Dispatcher
	// Storage is required.
	Storage storage.Storage
}

// Service sends test events and reads events back.
type Service struct {
	cfg Config
}

// NewService returns a Service.
func NewService(cfg Config) *Service {
	if cfg.Clock == nil {
		cfg.Clock = keelpay.SystemClock{}
	}
	return &Service{cfg: cfg}
}

// testObject is the data.object of webhook.test (docs/api.md).
var testObject = map[string]string{"message": "test"}

// SendTest creates a webhook.test event for the store and makes its first
// attempt before returning it with its delivery state. At most TestLimit
// per TestLimitWindow per store (429 rate_limited).
func (s *Service) SendTest(ctx context.Context, storeID string) (*keelpay.Event, error) {
	now := s.cfg.Clock.Now()
	wait, err := s.cfg.Storage.RateLimitTake(ctx, now,
		storage.RateLimit{Key: "webhook_test:" + storeID, Limit: TestLimit, Window: TestLimitWindow})
	if err != nil {
		return nil, fmt.Errorf("webhook test rate limit: %w", err)
	}
	if wait > 0 {
		return nil, keelpay.NewError(http.StatusTooManyRequests, keelpay.CodeRateLimited,
			"Too many webhook tests; retry after the time in Retry-After.").WithRetryAfter(wait)
	}
	e, err := New(storeID, keelpay.EventWebhookTest, testObject, now)
	if err != nil {
		return nil, err
	}
	// The event is created already claimed by this request, so the
	// background dispatcher does not race it; if this process dies, the
	// lease lapses and the dispatcher delivers it.
	var job *storage.DeliveryJob
	err = s.cfg.Storage.WithTx(ctx, func(ctx context.Context, tx storage.Executor) error {
		if err := tx.EventInsert(ctx, e); err != nil {
			return err
		}
		var err error
		job, err = tx.DeliveryClaimEvent(ctx, e.ID, s.cfg.Dispatcher.ClaimParams())
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("webhook test: %w", err)
	}
	if err := s.cfg.Dispatcher.Deliver(ctx, job); err != nil {
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

func errEventNotFound() error {
	return keelpay.NewError(http.StatusNotFound, keelpay.CodeEventNotFound, "No such event.")
}
