package providercall

import (
	"context"
	"sync"
	"time"
)

// AnswerTimeoutDefault is how long a request waits for the provider's
// answer before it answers that the outcome is not known yet (the
// services' Config.AnswerTimeout default). It is well below
// httpapi.ServerWriteTimeout, so that the answer is written before the
// server closes the connection, whatever the provider does.
const AnswerTimeoutDefault = 20 * time.Second

// AnswerMargin is the least time between the answer deadline and an HTTP
// server's WriteTimeout: what the request needs after the deadline to
// render, store and write its answer.
const AnswerMargin = 5 * time.Second

// Detach runs work, a provider call and the commit of its outcome, in a
// goroutine of its own and waits at most wait for it. work must call claim
// once it has the provider's answer and before it commits anything: true
// means the caller still waits and gets what work returns (work commits
// with the request's idempotency key); false means the caller gave up and
// answered without it (work commits without the key: nobody waits for its
// result). answered is false when the caller gave up: v and err are then
// zero, and work goes on to its end on its own.
//
// A panic of work is the caller's panic while the caller waits (as if
// work had run in it); once the caller gave up, it is handed to lost
// instead, since no one is left to recover it.
//
// runs, when not nil, counts work from before Detach returns until work
// has ended, so that a service's shutdown can wait for it (Runs.Wait).
func Detach[T any](runs *Runs, wait time.Duration, work func(claim func() bool) (T, error), lost func(panicked any)) (v T, err error, answered bool) {
	type result struct {
		v        T
		err      error
		panicked any
	}
	done := make(chan result, 1)
	var mu sync.Mutex
	gaveUp, claimed := false, false
	claim := func() bool {
		mu.Lock()
		defer mu.Unlock()
		claimed = !gaveUp
		return claimed
	}
	runs.start()
	go func() {
		var r result
		defer runs.done()
		defer func() {
			r.panicked = recover()
			mu.Lock()
			nobody := gaveUp
			if !nobody || r.panicked == nil {
				done <- r // buffered: never blocks
			}
			mu.Unlock()
			if nobody && r.panicked != nil {
				lost(r.panicked)
			}
		}()
		r.v, r.err = work(claim)
	}()
	t := time.NewTimer(wait)
	defer t.Stop()
	var r result
	select {
	case r = <-done:
	case <-t.C:
		mu.Lock()
		gaveUp = !claimed
		if gaveUp {
			// work may have ended (a panic before its claim) just
			// before the deadline: its result is still this caller's.
			select {
			case r = <-done:
				mu.Unlock()
			default:
				mu.Unlock()
				return v, nil, false
			}
		} else {
			mu.Unlock()
			// work has the answer and is committing it for this caller.
			r = <-done
		}
	}
	if r.panicked != nil {
		panic(r.panicked)
	}
	return r.v, r.err, true
}

// Runs counts the work of Detach still running, which may outlive the
// request that started it. The zero Runs is ready; a nil *Runs counts
// nothing.
type Runs struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // closed when n drops to 0; nil while nobody waits
}

func (r *Runs) start() {
	if r == nil {
		return
	}
	r.mu.Lock()
	r.n++
	r.mu.Unlock()
}

func (r *Runs) done() {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n--
	if r.n == 0 && r.idle != nil {
		close(r.idle)
		r.idle = nil
	}
}

// Wait returns once no work is running, or with ctx's error when ctx ends
// first. Work that starts while it waits is waited for too.
func (r *Runs) Wait(ctx context.Context) error {
	r.mu.Lock()
	if r.n == 0 {
		r.mu.Unlock()
		return nil
	}
	if r.idle == nil {
		r.idle = make(chan struct{})
	}
	idle := r.idle
	r.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
