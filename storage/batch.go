package storage

import (
	"context"
	"strconv"
	"time"

	"github.com/keelpay/keelpay"
)

// A Batch is the writes of one transaction, recorded in order and
// committed together by [Storage.Commit] (or applied inside WithTx with
// [Batch.Apply]). Each method records one write and checks nothing: its
// outcome is known when the batch is committed, and the error of a write
// that fails is a [*WriteError] naming it. The zero value is an empty
// batch, ready to use. A Batch is used by one goroutine.
//
// A Batch may be applied more than once (a transaction run again after a
// serialisation failure): applying a write twice leaves its arguments as
// applying it once does.
type Batch struct {
	ops      []op
	onCommit []func()
	onFail   []func(*WriteError)
}

// op is one recorded write: its name, for errors and traces, and how to
// make it on an Executor.
type op struct {
	name string
	run  func(ctx context.Context, x Executor) error
}

// WriteError is the error of the write of a [Batch] that failed: its
// index in the batch (from 0), its operation (the Executor method's name)
// and its own error, which it wraps, so that errors.Is(err, ErrConflict)
// and the like see through it.
type WriteError struct {
	Index int
	Op    string
	Err   error
}

func (e *WriteError) Error() string {
	return "storage: write " + strconv.Itoa(e.Index) + " (" + e.Op + "): " + e.Err.Error()
}

func (e *WriteError) Unwrap() error { return e.Err }

// Len returns the number of writes recorded.
func (b *Batch) Len() int { return len(b.ops) }

// Op returns the name of write i (the Executor method it calls).
func (b *Batch) Op(i int) string { return b.ops[i].name }

// Apply makes the writes of b on x, in order, and stops at the first that
// fails: its error is then a *WriteError naming it. Inside WithTx each
// write's error is known as it is made.
func (b *Batch) Apply(ctx context.Context, x Executor) error {
	return b.Walk(ctx, x, nil)
}

// Walk is Apply for an adapter that learns a write's outcome later (a
// pipeline): before, when set, is called with the index of each write
// just before it is made on x, so that the adapter can tell its
// statements apart and report a failure it learns later with [Batch.Err].
func (b *Batch) Walk(ctx context.Context, x Executor, before func(i int)) error {
	for i, o := range b.ops {
		if before != nil {
			before(i)
		}
		if err := o.run(ctx, x); err != nil {
			return b.Err(i, err)
		}
	}
	return nil
}

// Err returns err as the error of write i, a *WriteError (an error that
// is one already is kept), and calls the functions of OnFail with it; nil
// stays nil.
func (b *Batch) Err(i int, err error) error {
	if err == nil {
		return nil
	}
	we, ok := err.(*WriteError)
	if !ok {
		we = &WriteError{Index: i, Op: b.ops[i].name, Err: err}
	}
	for _, fn := range b.onFail {
		fn(we)
	}
	return we
}

// OnFail adds fn to the functions called with the error of each write of
// b that fails, as the error is reported (by Apply or by the adapter's
// Commit, which may report one for each time it runs the batch).
func (b *Batch) OnFail(fn func(*WriteError)) { b.onFail = append(b.onFail, fn) }

// OnCommit adds fn to the functions called once the writes of b have
// committed: by Storage.Commit before it returns nil, or by
// [Batch.Committed] for a batch applied inside WithTx. They are called in
// the order they were added, never for a batch that did not commit.
func (b *Batch) OnCommit(fn func()) { b.onCommit = append(b.onCommit, fn) }

// Committed calls the functions of OnCommit, once: an adapter calls it
// when the batch has committed, and a caller that applied the batch inside
// WithTx calls it once WithTx returned nil.
func (b *Batch) Committed() {
	fns := b.onCommit
	b.onCommit = nil
	for _, fn := range fns {
		fn()
	}
}

func (b *Batch) add(name string, run func(ctx context.Context, x Executor) error) {
	b.ops = append(b.ops, op{name: name, run: run})
}

// PaymentIntentInsert records Executor.PaymentIntentInsert.
func (b *Batch) PaymentIntentInsert(pi *keelpay.PaymentIntent) {
	b.add("PaymentIntentInsert", func(ctx context.Context, x Executor) error { return x.PaymentIntentInsert(ctx, pi) })
}

// PaymentIntentUpdate records Executor.PaymentIntentUpdate: pi's Version
// becomes expectedVersion+1 when it is applied.
func (b *Batch) PaymentIntentUpdate(pi *keelpay.PaymentIntent, expectedVersion int64) {
	b.add("PaymentIntentUpdate", func(ctx context.Context, x Executor) error {
		return x.PaymentIntentUpdate(ctx, pi, expectedVersion)
	})
}

// PaymentIntentStartAttempt records Executor.PaymentIntentStartAttempt:
// a.Intent and a.Card are set when it is applied.
func (b *Batch) PaymentIntentStartAttempt(a *AttemptStart) {
	b.add("PaymentIntentStartAttempt", func(ctx context.Context, x Executor) error {
		return x.PaymentIntentStartAttempt(ctx, a)
	})
}

// CardSessionInsert records Executor.CardSessionInsert.
func (b *Batch) CardSessionInsert(s *keelpay.CardSession) {
	b.add("CardSessionInsert", func(ctx context.Context, x Executor) error { return x.CardSessionInsert(ctx, s) })
}

// CardSessionComplete records Executor.CardSessionComplete.
func (b *Batch) CardSessionComplete(storeID, id, cardID string, now time.Time) {
	b.add("CardSessionComplete", func(ctx context.Context, x Executor) error {
		return x.CardSessionComplete(ctx, storeID, id, cardID, now)
	})
}

// CardInsert records Executor.CardInsert.
func (b *Batch) CardInsert(c *keelpay.Card) {
	b.add("CardInsert", func(ctx context.Context, x Executor) error { return x.CardInsert(ctx, c) })
}

// CardUpdateStatus records Executor.CardUpdateStatus.
func (b *Batch) CardUpdateStatus(storeID, id string, status keelpay.CardStatus) {
	b.add("CardUpdateStatus", func(ctx context.Context, x Executor) error {
		return x.CardUpdateStatus(ctx, storeID, id, status)
	})
}

// AttemptCheckInsert records Executor.AttemptCheckInsert.
func (b *Batch) AttemptCheckInsert(c *AttemptCheck) {
	b.add("AttemptCheckInsert", func(ctx context.Context, x Executor) error { return x.AttemptCheckInsert(ctx, c) })
}

// AttemptCheckReschedule records Executor.AttemptCheckReschedule.
func (b *Batch) AttemptCheckReschedule(attemptID string, checkAt time.Time, checks int) {
	b.add("AttemptCheckReschedule", func(ctx context.Context, x Executor) error {
		return x.AttemptCheckReschedule(ctx, attemptID, checkAt, checks)
	})
}

// AttemptCheckDelete records Executor.AttemptCheckDelete.
func (b *Batch) AttemptCheckDelete(attemptID string) {
	b.add("AttemptCheckDelete", func(ctx context.Context, x Executor) error { return x.AttemptCheckDelete(ctx, attemptID) })
}

// RefundInsert records Executor.RefundInsert.
func (b *Batch) RefundInsert(r *keelpay.Refund) {
	b.add("RefundInsert", func(ctx context.Context, x Executor) error { return x.RefundInsert(ctx, r) })
}

// RefundUpdate records Executor.RefundUpdate: r's Version becomes
// expectedVersion+1 when it is applied.
func (b *Batch) RefundUpdate(r *keelpay.Refund, expectedVersion int64) {
	b.add("RefundUpdate", func(ctx context.Context, x Executor) error { return x.RefundUpdate(ctx, r, expectedVersion) })
}

// RefundDelete records Executor.RefundDelete.
func (b *Batch) RefundDelete(storeID, id string, expectedVersion int64) {
	b.add("RefundDelete", func(ctx context.Context, x Executor) error {
		return x.RefundDelete(ctx, storeID, id, expectedVersion)
	})
}

// StoreUpdate records Executor.StoreUpdate: s's Version becomes
// expectedVersion+1 when it is applied.
func (b *Batch) StoreUpdate(s *keelpay.Store, expectedVersion int64) {
	b.add("StoreUpdate", func(ctx context.Context, x Executor) error { return x.StoreUpdate(ctx, s, expectedVersion) })
}

// EventInsert records Executor.EventInsert of a copy of e, taken now:
// the insert fills in the copy's delivery, and e is left as it is.
func (b *Batch) EventInsert(e *keelpay.Event) {
	c := *e
	b.add("EventInsert", func(ctx context.Context, x Executor) error {
		ev := c
		return x.EventInsert(ctx, &ev)
	})
}

// IdempotencyProgress records Executor.IdempotencyProgress.
func (b *Batch) IdempotencyProgress(p IdempotencyProgressParams) {
	b.add("IdempotencyProgress", func(ctx context.Context, x Executor) error { return x.IdempotencyProgress(ctx, p) })
}

// IdempotencyTake records Executor.IdempotencyTake.
func (b *Batch) IdempotencyTake(p IdempotencyTakeParams) {
	b.add("IdempotencyTake", func(ctx context.Context, x Executor) error { return x.IdempotencyTake(ctx, p) })
}
