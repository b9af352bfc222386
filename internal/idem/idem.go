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
	err := tx.IdempotencyProgress(ctx, storage.IdempotencyProgressParams{
		StoreID: c.StoreID, Key: c.Key, LockToken: c.LockToken, RecoveryPoint: point, ObjectID: objectID,
	})
	return lost(err)
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
	err := tx.IdempotencyProgress(ctx, storage.IdempotencyProgressParams{
		StoreID: c.StoreID, Key: c.Key, LockToken: c.LockToken, RecoveryPoint: Done, ObjectID: objectID,
	})
	if err == nil {
		err = tx.IdempotencyComplete(ctx, storage.IdempotencyCompleteParams{
			StoreID: c.StoreID, Key: c.Key, LockToken: c.LockToken, Status: status, Body: body,
		})
	}
	return lost(err)
}

func lost(err error) error {
	if errors.Is(err, storage.ErrNotFound) {
		return ErrKeyLost
	}
	return err
}
