package storage

import (
	"context"
	"errors"
	"slices"
)

// Sentinel errors. Adapters wrap them; callers test with errors.Is.
var (
	// ErrNotFound: no such row (for the store asked about).
	ErrNotFound = errors.New("storage: not found")
	// ErrDuplicate: a unique key already exists.
	ErrDuplicate = errors.New("storage: duplicate")
	// ErrConflict: the row changed since it was read (version mismatch),
	// or the database could not serialise the transaction. A caller may
	// read again and retry.
	ErrConflict = errors.New("storage: conflict")
	// ErrIdempotencyKeyLost: the idempotency key is no longer held by the
	// lock token presented (its lock lapsed and another run took it over,
	// or it was answered).
	ErrIdempotencyKeyLost = errors.New("idempotency key taken over by a retry")
	// ErrIdempotencyKeyBusy: the idempotency key is held by another run,
	// answered already, or left with progress by a run that did not
	// finish.
	ErrIdempotencyKeyBusy = errors.New("idempotency key already in use")
)

// Storage is an open database.
type Storage interface {
	Executor

	// WithTx runs fn in one transaction and commits it when fn returns
	// nil: for a transaction that reads what it then writes. fn must only
	// talk to the database through tx: it may be run again after a
	// serialisation failure, so it must not call the provider, send
	// anything or change memory outside the transaction. An error from fn
	// rolls the transaction back and is returned as is.
	//
	// Each call on tx returns its own outcome: a write's error comes from
	// the write (a failed write leaves the transaction to be rolled back:
	// fn returns its error), and a nil error means the write was made in
	// the transaction, which commits when WithTx returns nil.
	WithTx(ctx context.Context, fn func(ctx context.Context, tx Executor) error) error

	// Commit makes the writes of b, in order, in one transaction, and
	// then calls b's OnCommit functions. When a write fails nothing of b
	// is kept, and the error is the *WriteError of that write (its index
	// and operation, wrapping its own error); any other error is the
	// commit's or the connection's. An empty batch sends nothing (its
	// OnCommit functions are called). A database server gets a batch in
	// one round trip.
	Commit(ctx context.Context, b *Batch) error

	// Ping reports whether the database answers: a cheap round trip that
	// touches no keelpay table and takes no lock. It returns nil when it
	// does, and an error when the database cannot be reached or does not
	// answer before ctx ends; callers bound it with ctx (readiness checks
	// give it 2 seconds).
	Ping(ctx context.Context) error

	// Close releases the database.
	Close() error
}

// Executor is every query keelpay makes. Outside a transaction each call
// is its own transaction. Its method set follows the services' needs and
// may change in any version (see the package's Stability section).
type Executor interface {
	StoreQueries
	RateLimitQueries
	EventQueries
	DeliveryQueries
	PaymentQueries
	RefundQueries
	IdempotencyQueries
	RetentionQueries
}

// Stats counts the work of an adapter since it opened. An adapter that
// keeps them has a Stats() Stats method.
type Stats struct {
	// Transactions is the write transactions committed: WithTx calls and
	// writes made outside a transaction.
	Transactions int64
	// Commits is the commits made for them, each one durable write to
	// disk: fewer than Transactions where the adapter commits several
	// transactions together.
	Commits int64
	// RoundTrips is the requests the adapter sent to a database server
	// and waited for the answer of: a statement, a pipeline of
	// statements, a commit or a rollback each. 0 for an embedded
	// database, which has no server.
	RoundTrips int64
}

// Page finishes a list query for an adapter. The adapter fetches limit+1
// rows in the direction of travel (newest first, or oldest first for an
// ending_before cursor, then ascending is true); Page drops the extra row,
// reports whether there was one, and returns the page newest first.
func Page[T any](rows []T, limit int, ascending bool) ([]T, bool) {
	hasMore := len(rows) > limit
	if hasMore {
		rows = rows[:limit]
	}
	if ascending {
		slices.Reverse(rows)
	}
	return rows, hasMore
}
