package service

import (
	"encoding/json"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/payments"
	"github.com/keelpay/keelpay/refunds"
)

// Event is an event that this process committed, as a subscriber gets it:
// the envelope's fields and its object, typed. Exactly one of Card,
// PaymentIntent and Refund is set, by Type (none for webhook.test).
type Event struct {
	ID        string
	StoreID   string
	Type      keelpay.EventType
	CreatedAt time.Time
	// Body is the webhook's body, byte for byte.
	Body []byte

	Card          *payments.CardObject
	PaymentIntent *payments.IntentObject
	Refund        *refunds.Object
}

// Subscribe returns a channel that receives the events of the given types
// (every type when none is given) that this process commits from now on,
// each once its transaction has committed, and a function that ends the
// subscription and closes the channel.
//
// The guarantee is deliberately small: only events committed by this
// process reach its subscribers (another process sharing the database has
// its own), in commit order per goroutine, and an event arrives at most
// once. A subscriber that falls Config.SubscriptionBuffer events behind
// loses the newest (each loss is logged), and a crash loses what was not
// read. For anything that must happen, use the webhooks: they are stored
// with the change and delivered at least once.
func (s *Service) Subscribe(types ...keelpay.EventType) (<-chan *Event, func()) {
	return s.subs.add(types)
}

type subscription struct {
	types []keelpay.EventType
	ch    chan *Event
}

type subscribers struct {
	buffer int
	log    *slog.Logger

	mu   sync.RWMutex
	list []*subscription
}

func newSubscribers(buffer int, log *slog.Logger) *subscribers {
	return &subscribers{buffer: buffer, log: log}
}

func (s *subscribers) add(types []keelpay.EventType) (<-chan *Event, func()) {
	sub := &subscription{types: slices.Clone(types), ch: make(chan *Event, s.buffer)}
	s.mu.Lock()
	s.list = append(s.list, sub)
	s.mu.Unlock()
	var once sync.Once
	return sub.ch, func() {
		once.Do(func() {
			s.mu.Lock()
			s.list = slices.DeleteFunc(s.list, func(x *subscription) bool { return x == sub })
			s.mu.Unlock()
			close(sub.ch)
		})
	}
}

// publish hands e to every subscription that wants it, without waiting
// for a reader: the committing request or worker never blocks on one.
func (s *subscribers) publish(e *keelpay.Event) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var ev *Event
	for _, sub := range s.list {
		if len(sub.types) > 0 && !slices.Contains(sub.types, e.Type) {
			continue
		}
		if ev == nil {
			var err error
			if ev, err = decode(e); err != nil {
				s.log.Error("subscription: decode event", slog.String("event_id", e.ID), slog.Any("error", err))
				return
			}
		}
		select {
		case sub.ch <- ev:
		default:
			s.log.Warn("subscription: buffer full, event dropped", slog.String("event_id", e.ID), slog.String("type", string(e.Type)))
		}
	}
}

// decode reads the typed object out of e's stored body.
func decode(e *keelpay.Event) (*Event, error) {
	ev := &Event{ID: e.ID, StoreID: e.StoreID, Type: e.Type, CreatedAt: e.CreatedAt, Body: e.Body}
	var env struct {
		Data struct {
			Object json.RawMessage `json:"object"`
		} `json:"data"`
	}
	if err := json.Unmarshal(e.Body, &env); err != nil {
		return nil, err
	}
	var dst any
	switch e.Type {
	case keelpay.EventCardCreated:
		ev.Card = new(payments.CardObject)
		dst = ev.Card
	case keelpay.EventPaymentIntentSucceeded, keelpay.EventPaymentIntentPaymentFailed, keelpay.EventPaymentIntentCanceled:
		ev.PaymentIntent = new(payments.IntentObject)
		dst = ev.PaymentIntent
	case keelpay.EventRefundSucceeded, keelpay.EventRefundFailed:
		ev.Refund = new(refunds.Object)
		dst = ev.Refund
	default:
		return ev, nil
	}
	return ev, json.Unmarshal(env.Data.Object, dst)
}
