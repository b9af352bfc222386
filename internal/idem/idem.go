// Package idem carries a request's hold on its Idempotency-Key from the
// HTTP layer into the services, so that every step the request commits
// records its progress in the same transaction, and the last step stores
// the request's response with it.
//
// This is the design of Stripe's idempotency keys with recovery points: a
// retry after a crash finds the key at the last step that committed and
// resumes from there; it never runs committed work again, and a create
// that committed answers with the response stored beside the object.
//
// Outside a request with a key (background workers, an embedder calling
// a service directly) the context carries no [Claim] and every function
// here does nothing.
package idem

import (
	"bytes"
	"context"
	"errors"

	"github.com/keelpay/keelpay/storage"
)

// Recovery points: the steps a request records.
const (
	// Attempt: a confirm committed its payment attempt; the object id is
	// the attempt id.
	Attempt = "attempt"
	// CancelMarked: a cancel of an intent waiting for 3D Secure marked
	// the intent; the object id is the intent id.
	CancelMarked = "cancel_marked"
	// RefundSent: a refund send was recorded; the object id is the refund
	// id.
	RefundSent = "refund_sent"
	// Created: the request created an object whose answer is not final
	// yet (a webhook test, before its first attempt); the object id is
	// its id.
	Created = "created"
	// Done: the request's last change committed, with its response.
	Done = "done"
)

// ErrKeyLost is returned when the
// request no longer holds its key: it ran past the key's lock time-out
// and a retry took the key over. The change it was part of rolls back, so
// that only the retry commits.
var ErrKeyLost = errors.New("idempotency key taken over by a retry")

// ErrKeyBusy is returned by the first Step or Finish of a [Claim] with
// Begin set when the key turned out to be held by another run, answered
// already, or left with progress by a run that did not finish. The
// change rolls back; the request is then answered as a retry of that run
// (the HTTP layer discards what the handler wrote).
var ErrKeyBusy = errors.New("idempotency key already in use")

// A Claim is a request's hold on its Idempotency-Key.
type Claim struct {
	StoreID   string
	Key       string
	LockToken string
	// Render turns the result of the request's last change (what the
	// service returns to the handler) into the response the handler will
	// send: status and body bytes. ok false: this result is not one the
	// request answers with as is; its response is stored after the
	// handler instead.
	Render func(v any) (status int, body []byte, ok bool)
	// Begin, when set, is the lock on the key not taken yet: the first
	// Step or Finish takes it inside its own transaction, so that the key
	// rides in the transaction of the first change it guards instead of a
	// commit of its own. Only for requests that change nothing before
	// their first Step or Finish (nothing a second run of the same
	// request would repeat).
	Begin *storage.IdempotencyBeginParams

	began    bool // a transaction took the lock (it may have rolled back)
	busy     bool // the key was found held or answered
	answered bool // Finish stored status and body, below, with a change
	status   int
	body     []byte
}

// Began reports whether a Step or Finish took the lock of a claim with
// Begin set. The transaction that took it may have rolled back.
func (c *Claim) Began() bool { return c.began }

// Busy reports whether the key was found held or answered by another run
// (ErrKeyBusy).
func (c *Claim) Busy() bool { return c.busy }

// Answered reports whether Finish stored exactly this response with the
// request's last change. The services return the result Finish rendered
// only once its transaction committed, so a handler that answers with
// these bytes answers with what is stored: nothing is left to store.
func (c *Claim) Answered(status int, body []byte) bool {
	return c.answered && c.status == status && bytes.Equal(c.body, body)
}

type claimKey struct{}

// NewContext returns ctx carrying c.
func NewContext(ctx context.Context, c *Claim) context.Context {
	return context.WithValue(ctx, claimKey{}, c)
}

// FromContext returns the claim of the request ctx belongs to, or nil.
func FromContext(ctx context.Context) *Claim {
	c, _ := ctx.Value(claimKey{}).(*Claim)
	return c
}

// Without returns ctx without a claim: for work that the request starts
// but whose changes are not the request's own steps.
func Without(ctx context.Context) context.Context {
	if FromContext(ctx) == nil {
		return ctx
	}
	return context.WithValue(ctx, claimKey{}, (*Claim)(nil))
}

// Step records, inside tx, that the request reached point on objectID.
// Call it in the transaction of the change that reaches the point.
func Step(ctx context.Context, tx storage.Executor, point, objectID string) error {
	c := FromContext(ctx)
	if c == nil {
		return nil
	}
	return lost(c.progress(ctx, tx, storage.IdempotencyProgressParams{
		StoreID: c.StoreID, Key: c.Key, LockToken: c.LockToken, RecoveryPoint: point, ObjectID: objectID,
	}))
}

// Finish records, inside tx, that the request's last change committed
// with result v on objectID, and stores the response rendered from v
// with it. Call it in the transaction of the last change, with what the
// service will return.
func Finish(ctx context.Context, tx storage.Executor, objectID string, v any) error {
	c := FromContext(ctx)
	if c == nil || c.Render == nil {
		return nil
	}
	status, body, ok := c.Render(v)
	if !ok {
		return nil
	}
	err := c.progress(ctx, tx, storage.IdempotencyProgressParams{
		StoreID: c.StoreID, Key: c.Key, LockToken: c.LockToken, RecoveryPoint: Done, ObjectID: objectID,
		Status: status, Body: body,
	})
	if err == nil {
		c.answered, c.status, c.body = true, status, body
	}
	return lost(err)
}

// progress records step p inside tx (with its response when p.Status >
// 0). A claim whose Begin is still to be taken takes the key with the
// step, in one statement; so does one whose key is not this run's after
// all: the transaction that took it rolled back (a failed change, or a
// transaction run again after a serialisation failure).
func (c *Claim) progress(ctx context.Context, tx storage.Executor, p storage.IdempotencyProgressParams) error {
	if c.Begin != nil && !c.began {
		return c.take(ctx, tx, p)
	}
	err := tx.IdempotencyProgress(ctx, p)
	if errors.Is(err, storage.ErrNotFound) && c.Begin != nil {
		return c.take(ctx, tx, p)
	}
	return err
}

// take locks the key inside tx with step p. A key that another run holds
// or answered, or that a run which did not finish left with progress, is
// ErrKeyBusy: the caller decides as for a retry.
func (c *Claim) take(ctx context.Context, tx storage.Executor, p storage.IdempotencyProgressParams) error {
	taken, err := tx.IdempotencyTake(ctx, storage.IdempotencyTakeParams{
		IdempotencyBeginParams: *c.Begin,
		RecoveryPoint:          p.RecoveryPoint, ObjectID: p.ObjectID, Status: p.Status, Body: p.Body,
	})
	if err != nil {
		return err
	}
	if !taken {
		c.busy = true
		return ErrKeyBusy
	}
	c.began = true
	return nil
}

func lost(err error) error {
	if errors.Is(err, storage.ErrNotFound) {
		return ErrKeyLost
	}
	return err
}
