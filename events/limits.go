package events

import (
	"cmp"
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/keelpay/keelpay/storage"
)

// storeLimitFloor is the fewest attempts in flight a store is held to: a
// store whose receiver fails every attempt still has one attempt under
// way, so its deliveries keep their retry schedule (late, never early).
const storeLimitFloor = 1

// storeLimitMemory is how long the process remembers a store's limit once
// it has no attempt in flight and no result came back.
const storeLimitMemory = 10 * time.Minute

// storeLimitActive is how long after its last attempt a store above the
// start keeps its limit in claims: the attempts of a round end before the
// commit that claims the next round.
const storeLimitActive = 5 * time.Second

// storeLimitsListed bounds the stores a claim lists with a cap of their
// own: the claim reads the list for every store it looks at. Stores left
// out have PerStoreStart, which is close to a throttled store's cap.
const storeLimitsListed = 256

// storeLimits adapts how many attempts of each store may be in flight to
// how its receiver answers: a store starts at start attempts, gains one for
// each success up to most (PerStore), and halves on each failure (a time-out,
// a refused connection, an error status, a redirect) down to
// storeLimitFloor. A store whose receiver hangs therefore holds a few
// slots, not PerStore, while a healthy store with a backlog grows to
// PerStore within a few rounds of attempts.
//
// The limits are this process's: each process learns them from its own
// attempts, and the claim applies them to the leases of every process.
type storeLimits struct {
	start, most int
	logger      *slog.Logger

	mu     sync.Mutex
	stores map[string]*storeLimit
	pruned time.Time
}

type storeLimit struct {
	limit    int
	inFlight int
	last     time.Time // of the last attempt begun or ended
}

func newStoreLimits(start, most int, logger *slog.Logger) *storeLimits {
	return &storeLimits{start: min(start, most), most: most, logger: logger, stores: map[string]*storeLimit{}}
}

// begin counts an attempt of the store in flight.
func (l *storeLimits) begin(storeID string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.stores[storeID]
	if s == nil {
		s = &storeLimit{limit: l.start}
		l.stores[storeID] = s
	}
	s.inFlight++
	s.last = time.Now()
}

// end counts the attempt's result: failure is "" for a success. An
// attempt cut off by the dispatcher's end (counted false) leaves the
// limit as it was.
func (l *storeLimits) end(ctx context.Context, storeID string, counted bool, failure string) {
	l.mu.Lock()
	s := l.stores[storeID]
	if s == nil { // not begun: nothing to count
		l.mu.Unlock()
		return
	}
	s.inFlight--
	s.last = time.Now()
	before := s.limit
	switch {
	case !counted:
	case failure == "":
		s.limit = min(l.most, s.limit+1)
	default:
		s.limit = max(storeLimitFloor, s.limit/2)
	}
	after := s.limit
	if after == l.start && s.inFlight == 0 {
		delete(l.stores, storeID)
	}
	l.mu.Unlock()
	switch {
	case before >= l.start && after < l.start:
		l.logger.WarnContext(ctx, "webhook store throttled: its receiver fails or times out",
			slog.String("store_id", storeID), slog.String("outcome", failure), slog.Int("in_flight_limit", after))
	case before < l.start && after >= l.start:
		l.logger.InfoContext(ctx, "webhook store no longer throttled",
			slog.String("store_id", storeID), slog.Int("in_flight_limit", after))
	}
}

// caps returns the stores whose limit a claim must apply in place of
// start: every throttled store, and each store above start with an
// attempt in flight or one that ended within storeLimitActive (one idle
// for longer is claimed at start, and is listed again once it has an
// attempt). When there are more than storeLimitsListed, throttled stores
// come first, lowest limit first, then the highest limits.
func (l *storeLimits) caps() []storage.StoreCap {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	prune := now.Sub(l.pruned) > time.Minute
	if prune {
		l.pruned = now
	}
	var caps []storage.StoreCap
	for id, s := range l.stores {
		if prune && s.inFlight == 0 && now.Sub(s.last) > storeLimitMemory {
			delete(l.stores, id)
			continue
		}
		if s.limit < l.start || s.limit > l.start && (s.inFlight > 0 || now.Sub(s.last) < storeLimitActive) {
			caps = append(caps, storage.StoreCap{StoreID: id, Cap: s.limit})
		}
	}
	if len(caps) > storeLimitsListed {
		slices.SortFunc(caps, func(a, b storage.StoreCap) int {
			aLow, bLow := a.Cap < l.start, b.Cap < l.start
			switch {
			case aLow && bLow:
				return cmp.Compare(a.Cap, b.Cap)
			case aLow != bLow:
				if aLow {
					return -1
				}
				return 1
			}
			return cmp.Compare(b.Cap, a.Cap)
		})
		caps = caps[:storeLimitsListed]
	}
	return caps
}

// throttled returns how many stores are below start.
func (l *storeLimits) throttled() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, s := range l.stores {
		if s.limit < l.start {
			n++
		}
	}
	return n
}
