package webhooks

import (
	"context"
	"sync"
)

// Seen remembers event ids so that a receiver processes each event once,
// although the service delivers at least once (docs/webhooks.md).
type Seen interface {
	// SeenBefore records eventID and reports whether it was recorded before.
	// Both happen atomically: of concurrent calls with the same id, exactly
	// one reports false. An error means the answer is unknown; the handler
	// then answers 500 so that the service retries.
	SeenBefore(ctx context.Context, eventID string) (bool, error)
}

// DefaultSeenSize is the number of event ids the [Seen] that [NewHandler] uses
// by default remembers.
const DefaultSeenSize = 10_000

// MemorySeen is a [Seen] in memory that remembers the most recent max distinct
// event ids and forgets the oldest first. It is bounded by count, not by time:
// retries of an event span about 33 hours (docs/webhooks.md), so max should exceed the
// number of events a receiver gets in that time. It forgets everything on
// restart; a receiver that must never process an event twice implements Seen
// on its database, e.g. as an insert into a table whose primary key is the
// event id, reporting a conflict as seen.
type MemorySeen struct {
	mu   sync.Mutex
	ids  map[string]int // id -> its index in ring
	ring []string       // ids in insertion order, ring[next] the oldest once full
	next int
}

// NewMemorySeen returns a MemorySeen for max ids; max < 1 means
// [DefaultSeenSize].
func NewMemorySeen(max int) *MemorySeen {
	if max < 1 {
		max = DefaultSeenSize
	}
	return &MemorySeen{ids: make(map[string]int), ring: make([]string, 0, max)}
}

// SeenBefore implements [Seen]; it never fails.
func (s *MemorySeen) SeenBefore(_ context.Context, eventID string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.ids[eventID]; ok {
		return true, nil
	}
	var i int
	if len(s.ring) < cap(s.ring) {
		i = len(s.ring)
		s.ring = append(s.ring, eventID)
	} else {
		i = s.next
		// The slot's id may have been forgotten, and recorded again since
		// in another slot.
		if old := s.ring[i]; s.ids[old] == i {
			delete(s.ids, old)
		}
		s.ring[i] = eventID
		s.next = (s.next + 1) % len(s.ring)
	}
	s.ids[eventID] = i
	return false, nil
}

// Forget implements [Forgetter]: SeenBefore reports eventID as new again
// until it is recorded again. It never fails.
func (s *MemorySeen) Forget(_ context.Context, eventID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.ids, eventID)
	return nil
}
