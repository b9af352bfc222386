package httpapi

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/keelpay/keelpay/storage"
)

// Settling the keys of requests cut off by the database.
const (
	// unsettledMax is the most keys a process keeps to settle later;
	// past it, a key is released only when IdempotencyLockTimeout lapses.
	unsettledMax = 10000
	// unsettledRetryMin and unsettledRetryMax bound the wait between two
	// rounds of settling while the database does not answer.
	unsettledRetryMin = 20 * time.Millisecond
	unsettledRetryMax = 500 * time.Millisecond
	// unsettledCallTimeout bounds one call to the database of a round.
	unsettledCallTimeout = 5 * time.Second
)

// unsettledKeys are the Idempotency-Keys that this process holds and
// could not free at the end of their request (a 5xx, or any answer that
// is not stored, see storedResponse) because the database did not answer:
// it died, restarted or failed over to a standby while the request ran.
// Such a key would stay locked until IdempotencyLockTimeout, and every
// retry of the request would get 409 idempotency_key_in_use meanwhile.
//
// The process keeps them and frees each as soon as the database answers
// again, in the background and whenever a keyed request comes in. Only the
// holder of a key's lock token can free it, and this process is still
// that holder, so no other run can hold the key in between: a retry finds
// the key held (409, as before) until it is freed, and then free to
// resume from the last step that committed. A key
// whose lock was taken by a transaction that the database lost (an
// asynchronous standby promoted) is not found, and there is nothing to
// settle. Past the key's lock time-out the key is abandoned and a retry
// takes it over, so a key is given up then.
type unsettledKeys struct {
	storage storage.Storage
	log     *slog.Logger
	n       atomic.Int64 // len(keys), read without the lock
	wake    chan struct{}

	mu      sync.Mutex
	keys    map[unsettledID]*unsettledKey
	running bool // a goroutine is settling keys
}

// unsettledID names a key and the run that holds it.
type unsettledID struct{ storeID, key, token string }

// unsettledKey is what settling a key does: with complete, store status
// and body (IdempotencyComplete); otherwise free the key
// (IdempotencyRelease). Only keys to be freed are kept (see settleKey).
type unsettledKey struct {
	complete bool
	status   int
	body     []byte
	// until is when the key's lock lapses on its own (wall clock, with a
	// margin: it was taken earlier).
	until time.Time
}

func newUnsettledKeys(s storage.Storage, log *slog.Logger) *unsettledKeys {
	return &unsettledKeys{storage: s, log: log, wake: make(chan struct{}, 1), keys: map[unsettledID]*unsettledKey{}}
}

// settleKey stores the response of the run that holds key, or frees the
// key when the response is not kept (see storedResponse). Nothing is left
// to do when the response sent is the answer the service's last change
// stored (run.sentStored).
// ErrNotFound: the run does not hold the key. When a key to be freed
// could not be (the database did not answer), it is left to unsettled,
// which frees it once the database answers; the error is still
// returned, to be logged.
//
// A response to be stored that could not be is not stored later: the
// database that answers later may not be the one that committed the
// request's work (an asynchronous standby promoted meanwhile may not have
// it), and an answer stored there would replay work that is not there.
// That key waits out its lock time-out, and its retry then resumes from
// the steps the database has.
func (a *api) settleKey(ctx context.Context, run *keyRun, status int, header http.Header, body []byte) error {
	if run.sentStored {
		return nil
	}
	u := &unsettledKey{complete: storedResponse(status, header, run.code), status: status, body: body}
	key := run.key
	id := unsettledID{key.StoreID, key.Key, key.LockToken}
	err := a.unsettled.settle(ctx, id, u)
	if err != nil && !errors.Is(err, storage.ErrNotFound) && !u.complete {
		a.unsettled.add(id, u)
	}
	return err
}

// settle makes one attempt at settling id as u says.
func (s *unsettledKeys) settle(ctx context.Context, id unsettledID, u *unsettledKey) error {
	if u.complete {
		return s.storage.IdempotencyComplete(ctx, storage.IdempotencyCompleteParams{
			StoreID: id.storeID, Key: id.key, LockToken: id.token, Status: u.status, Body: u.body,
		})
	}
	return s.storage.IdempotencyRelease(ctx, id.storeID, id.key, id.token)
}

// add keeps id to settle later, and starts settling when nothing is.
func (s *unsettledKeys) add(id unsettledID, u *unsettledKey) {
	u.until = time.Now().Add(IdempotencyLockTimeout)
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.keys) >= unsettledMax {
		return
	}
	s.keys[id] = u
	s.n.Store(int64(len(s.keys)))
	if !s.running {
		s.running = true
		go s.run()
	}
}

// poke asks for a round of settling now, when there is anything to
// settle: a keyed request came in, which may be the retry of one.
func (s *unsettledKeys) poke() {
	if s.n.Load() == 0 {
		return
	}
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// run settles the kept keys, round after round, until none is left.
func (s *unsettledKeys) run() {
	wait := unsettledRetryMin
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-timer.C:
		case <-s.wake:
		}
		progress, left := s.round()
		if !left {
			return
		}
		if progress {
			wait = unsettledRetryMin
		} else {
			wait = min(2*wait, unsettledRetryMax)
		}
		timer.Reset(wait)
	}
}

// round tries to settle every kept key, and stops at the first one the
// database does not answer for. It reports whether it settled any, and
// whether any is left (when none is, run must return: running is false).
func (s *unsettledKeys) round() (progress, left bool) {
	s.mu.Lock()
	ids := make([]unsettledID, 0, len(s.keys))
	for id := range s.keys {
		ids = append(ids, id)
	}
	s.mu.Unlock()
	now := time.Now()
	for _, id := range ids {
		s.mu.Lock()
		u := s.keys[id]
		s.mu.Unlock()
		done := !now.Before(u.until)
		if !done {
			ctx, cancel := context.WithTimeout(context.Background(), unsettledCallTimeout)
			err := s.settle(ctx, id, u)
			cancel()
			switch {
			case err == nil:
				s.log.Info("idempotency: freed a key left held while the database was unreachable",
					slog.String("store_id", id.storeID))
				done, progress = true, true
			case errors.Is(err, storage.ErrNotFound):
				done, progress = true, true // not held by this run (any more)
			}
		}
		if !done {
			break
		}
		s.mu.Lock()
		delete(s.keys, id)
		s.n.Store(int64(len(s.keys)))
		s.mu.Unlock()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.keys) == 0 {
		s.running = false
		return progress, false
	}
	return progress, true
}
