// Package idempotency is a request's hold on its idempotency key, as the
// services see it: a [Key] passed to a service method makes every step
// the method commits record its progress on the key in the same
// transaction, and its last change store the request's answer with it.
//
// This is the design of Stripe's idempotency keys with recovery points: a
// retry after a crash finds the key at the last step that committed and
// resumes from there; it never runs committed work again, and a create
// that committed answers with the answer stored beside the object.
//
// The HTTP API (package httpapi) takes keys, builds a Key for each request
// that sends one and passes it to the service in the method's parameters.
// An embedder that calls a service directly passes nil: a nil *Key
// records nothing, and every method of it does nothing.
//
// A service method uses its Key in two calls, each recording a write in
// the [storage.Batch] of a change it already commits:
//
//   - [Key.Step] in the batch of a change that a retry must not make
//     again (a payment attempt recorded before its provider call), with
//     the recovery point that tells the retry where to resume;
//   - [Key.Finish] in the batch of its last change, with the object the
//     request answers with. The key renders it with [Key.Render], the
//     function the HTTP API gives it and renders every answer with, so
//     the answer stored and the answer sent are the same bytes.
//
// What a Key reports (Began, Busy, Answer) is what committed: it learns
// it from the batch once the batch has committed, or failed.
package idempotency

import (
	"errors"
	"reflect"

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
	// Done: the request's last change committed, with its answer.
	Done = "done"
)

// ErrKeyLost is returned when the request no longer holds its key: it ran
// past the key's lock time-out and a retry took the key over. The change
// it was part of rolls back, so that only the retry commits. It is
// storage's ErrIdempotencyKeyLost.
var ErrKeyLost = storage.ErrIdempotencyKeyLost

// ErrKeyBusy is the error of the write of a Step or Finish of a [Key]
// with Begin set when the key turned out to be held by another run,
// answered already, or left with progress by a run that did not finish.
// The change rolls back, the commit of its batch returns the error, and
// [Key.Busy] reports it; the request is then answered as a retry of that
// run (the HTTP API discards what the handler wrote). It is storage's
// ErrIdempotencyKeyBusy.
var ErrKeyBusy = storage.ErrIdempotencyKeyBusy

// A Key is a request's hold on its idempotency key, locked with
// LockToken (storage's IdempotencyBegin), or to be locked by the first
// Step or Finish when Begin is set. A Key belongs to one request: it is
// not safe for concurrent use.
type Key struct {
	// StoreID and Key name the key; LockToken is the lock this request
	// holds (or takes, with Begin).
	StoreID   string
	Key       string
	LockToken string
	// Begin, when set, is the lock on the key not taken yet: the first
	// Step or Finish takes it in its own batch, so that the key rides in
	// the transaction of the first change it guards instead of a commit
	// of its own. Only for requests that change nothing before
	// their first Step or Finish (nothing a second run of the same
	// request would repeat).
	Begin *storage.IdempotencyBeginParams
	// Render makes the answer of a request whose last change had outcome
	// o on object v: its status and JSON body, without the final newline.
	// Finish stores what it returns; the HTTP API sets it to the function
	// it answers with.
	Render func(o Outcome, v any) (status int, body []byte, err error)

	began    bool // a batch that took the lock committed
	busy     bool // a batch's take found the key held or answered
	answered bool // Finish stored object's answer, below, with a change that committed
	object   any
	status   int
	body     []byte
}

// Step records in b that the request reached point on objectID. Call it
// with the batch of the change that reaches the point. A nil Key records
// nothing.
func (k *Key) Step(b *storage.Batch, point, objectID string) {
	if k == nil {
		return
	}
	k.progress(b, storage.IdempotencyProgressParams{
		StoreID: k.StoreID, Key: k.Key, LockToken: k.LockToken, RecoveryPoint: point, ObjectID: objectID,
	})
}

// Outcome is what a request's last change did to its object, which the
// stored answer reports: the services say what they did, and the HTTP
// status follows from it here.
type Outcome int

// Outcomes of a request.
const (
	// OutcomeChanged: the request changed (or read) an object that
	// existed before it (the HTTP API answers 200).
	OutcomeChanged Outcome = iota
	// OutcomeCreated: the request made its object (201).
	OutcomeCreated
)

// Finish records in b that the request's last change committed on
// objectID, and stores the request's answer with it: the status and body
// Render makes of o and v, the body kept followed by a newline, as the
// HTTP API sends it. Call it with the batch of the last change, with the object the
// service returns once that batch committed. Its error is Render's: the
// batch is then not to be committed. A nil Key records nothing.
func (k *Key) Finish(b *storage.Batch, objectID string, o Outcome, v any) error {
	if k == nil {
		return nil
	}
	if k.Render == nil {
		return errors.New("idempotency: Finish of a Key without Render")
	}
	status, body, err := k.Render(o, v)
	if err != nil {
		return err
	}
	body = append(body[:len(body):len(body)], '\n')
	k.progress(b, storage.IdempotencyProgressParams{
		StoreID: k.StoreID, Key: k.Key, LockToken: k.LockToken, RecoveryPoint: Done, ObjectID: objectID,
		Status: status, Body: body,
	})
	b.OnCommit(func() { k.answered, k.object, k.status, k.body = true, v, status, body })
	return nil
}

// Began reports whether a batch with a Step or Finish of a Key with Begin
// set committed, and with it the lock on the key.
func (k *Key) Began() bool { return k != nil && k.began }

// Busy reports whether the commit of a batch with a Step or Finish found
// the key held or answered by another run ([ErrKeyBusy]).
func (k *Key) Busy() bool { return k != nil && k.busy }

// Answer returns the answer Finish stored with the object v: its status
// and body, with the final newline. ok is false when Finish stored no
// answer, or stored it for another object (v is not the same pointer, or
// an equal value): a service returns the object it gave Finish only once
// Finish's transaction committed, and returns another one (a version that
// another process committed first) when it rolled back. A caller that
// answers with the stored answer when ok has nothing left to store.
func (k *Key) Answer(v any) (status int, body []byte, ok bool) {
	if k == nil || !k.answered || !sameObject(k.object, v) {
		return 0, nil, false
	}
	return k.status, k.body, true
}

// sameObject reports whether a and b are the same pointer, or equal
// values of a comparable type.
func sameObject(a, b any) bool {
	ta, tb := reflect.TypeOf(a), reflect.TypeOf(b)
	if ta == nil || ta != tb || !ta.Comparable() {
		return false
	}
	return a == b
}

// progress records step p in b (with its answer when p.Status > 0). A
// Key with Begin takes the key with every step, in one statement: the
// first takes it, and the later ones find it held by this run. So a batch
// that took it and rolled back (a failed change) takes it again with the
// next step.
func (k *Key) progress(b *storage.Batch, p storage.IdempotencyProgressParams) {
	if k.Begin == nil {
		b.IdempotencyProgress(p)
		return
	}
	i := b.Len()
	b.IdempotencyTake(storage.IdempotencyTakeParams{
		IdempotencyBeginParams: *k.Begin,
		RecoveryPoint:          p.RecoveryPoint, ObjectID: p.ObjectID, Status: p.Status, Body: p.Body,
	})
	// A run of the batch that failed may be followed by one that
	// committed (an adapter runs a group commit again): what committed
	// decides.
	b.OnCommit(func() { k.began, k.busy = true, false })
	b.OnFail(func(we *storage.WriteError) {
		if we.Index == i && errors.Is(we, ErrKeyBusy) {
			k.busy = true
		}
	})
}
