package storage

import (
	"context"
	"time"
)

// IdempotencyRecord is one Idempotency-Key of a store: the fingerprint of
// the request that first used it and, once that request finished, its
// response. While the request runs, the record is locked: Status is 0 and
// only the holder of LockToken may complete or release it.
type IdempotencyRecord struct {
	StoreID string
	Key     string
	// Fingerprint identifies the request (httpapi: SHA-256 of method, path
	// and body); the same key with another fingerprint is a client error.
	Fingerprint []byte
	// LockToken identifies the run that holds (or held) the key.
	LockToken string
	// LockedUntil is when an unfinished run counts as abandoned (its
	// process died) and another run with the same fingerprint may take the
	// key over. Zero once completed.
	LockedUntil time.Time
	CreatedAt   time.Time
	// ExpiresAt is when the record stops counting: from then on it is
	// ignored, overwritten by the next use of the key and deleted by
	// IdempotencyDeleteExpired.
	ExpiresAt time.Time
	// Status and Body are the stored response; Status is 0 (and Body nil)
	// while the request runs.
	Status int
	Body   []byte
	// RecoveryPoint is the last step the request committed (empty before
	// its first change), and ObjectID the object that step created or
	// acted on. They are written in the transaction of the change itself
	// (IdempotencyProgress), so a run that takes over an abandoned key
	// resumes from there instead of repeating committed work.
	RecoveryPoint string
	ObjectID      string
}

// Completed reports whether the record holds a response.
func (r *IdempotencyRecord) Completed() bool { return r.Status != 0 }

// IdempotencyBeginParams locks a key for one run.
type IdempotencyBeginParams struct {
	StoreID     string
	Key         string
	Fingerprint []byte
	// LockToken identifies this run (random, unique); IdempotencyComplete
	// and IdempotencyRelease must present it.
	LockToken   string
	Now         time.Time
	LockedUntil time.Time
	ExpiresAt   time.Time
}

// IdempotencyCompleteParams stores the response of a run.
type IdempotencyCompleteParams struct {
	StoreID   string
	Key       string
	LockToken string
	Status    int
	Body      []byte
}

// IdempotencyProgressParams records a step of the run that holds a key.
type IdempotencyProgressParams struct {
	StoreID       string
	Key           string
	LockToken     string
	RecoveryPoint string
	ObjectID      string
	// Status, when > 0, completes the run with the step: the response
	// (Status and Body) is stored and the key unlocked, as by
	// IdempotencyComplete, in the same statement.
	Status int
	Body   []byte
}

// IdempotencyTakeParams takes a key inside the transaction of a run's
// first change, with that change's step.
type IdempotencyTakeParams struct {
	IdempotencyBeginParams
	RecoveryPoint string
	ObjectID      string
	// Status, when > 0, stores the response at once (Body), completing
	// the record: a run whose first change is also its last.
	Status int
	Body   []byte
}

// IdempotencyQueries keeps the responses of requests made with an
// Idempotency-Key, so that a retry with the same key is answered with the
// first response instead of running again. The rows are the truth across
// every process on one database; keys are scoped per store.
type IdempotencyQueries interface {
	// IdempotencyBegin locks (StoreID, Key) for the run p.LockToken and
	// returns began true with the new record, atomically, when the key is
	// free: no record, an expired record (ExpiresAt <= Now, whatever its
	// fingerprint or state), or an unfinished record whose lock lapsed
	// (LockedUntil <= Now) with the same fingerprint. A record taken over
	// keeps its RecoveryPoint and ObjectID (an expired one starts empty),
	// so the new run resumes the old one. Otherwise it changes
	// nothing and returns the existing record with began false: completed,
	// still locked, or abandoned under another fingerprint. Of concurrent
	// calls for one free key exactly one begins.
	IdempotencyBegin(ctx context.Context, p IdempotencyBeginParams) (rec *IdempotencyRecord, began bool, err error)
	// IdempotencyTake locks (StoreID, Key) for the run p.LockToken with
	// the step p.RecoveryPoint already reached (and, with p.Status > 0,
	// completed with its response), in one statement, for a run that
	// takes its key in the transaction of its first change. It takes the
	// key when it is free with nothing to resume (no record, an expired
	// one, or an unfinished one whose lock lapsed with the same
	// fingerprint and no recovery point), and records the step when the
	// key is already held by p.LockToken and unfinished (a later change of
	// the same run). Otherwise it changes nothing and returns
	// ErrIdempotencyKeyBusy (the run then goes through IdempotencyBegin,
	// which tells it what holds the key).
	IdempotencyTake(ctx context.Context, p IdempotencyTakeParams) error
	// IdempotencyGet returns the record of (storeID, key) as it is, or
	// ErrNotFound. It locks nothing: IdempotencyBegin decides who runs.
	IdempotencyGet(ctx context.Context, storeID, key string) (*IdempotencyRecord, error)
	// IdempotencyProgress records, for the run that holds the key, the
	// step it reached. Call it inside the transaction of that step's
	// change: when the key is no longer held by p.LockToken (it lapsed and
	// was taken over, or was completed) it returns ErrIdempotencyKeyLost, and the
	// change must roll back with it, so that a run that lost its key
	// commits nothing.
	IdempotencyProgress(ctx context.Context, p IdempotencyProgressParams) error
	// IdempotencyComplete stores the response (p.Status > 0) of the run
	// that holds the key and unlocks it; ExpiresAt stays as Begin set it.
	// It may be called inside the transaction of the run's last change.
	// Completing a record that p.LockToken already completed changes
	// nothing and succeeds. ErrNotFound when the key is held by another
	// run or was released.
	IdempotencyComplete(ctx context.Context, p IdempotencyCompleteParams) error
	// IdempotencyRelease frees the key of a run that stores no response:
	// a record without a RecoveryPoint (nothing was committed) is deleted;
	// one with a RecoveryPoint is unlocked and kept, so the next run with
	// the same request resumes it. ErrNotFound when the key is not locked
	// by lockToken.
	IdempotencyRelease(ctx context.Context, storeID, key, lockToken string) error
	// IdempotencyDeleteExpired deletes up to limit records, of any store,
	// whose ExpiresAt <= now, and returns how many it deleted.
	IdempotencyDeleteExpired(ctx context.Context, now time.Time, limit int) (int, error)
}
