package storage

import (
	"context"
	"time"

	"github.com/keelpay/keelpay"
)

// EventListParams selects events for GET /v1/events.
type EventListParams struct {
	StoreID string
	// Type, when set, keeps only events of that type.
	Type keelpay.EventType
	// Limit is the most events returned (1 to 100).
	Limit int
	// StartingAfter and EndingBefore are event ids (at most one is set):
	// the page after (older than) or before (newer than) that event.
	StartingAfter string
	EndingBefore  string
}

// EventQueries writes events with their deliveries (the outbox) and reads
// them back.
type EventQueries interface {
	// EventInsert adds an event and its pending delivery, due at once.
	// Call it in the transaction of the change that the event reports.
	EventInsert(ctx context.Context, e *keelpay.Event) error
	// EventGet returns an event of a store with its delivery, or
	// ErrNotFound.
	EventGet(ctx context.Context, storeID, id string) (*keelpay.Event, error)
	// EventList returns a page of a store's events, newest first, and
	// whether there are more beyond it in the direction of travel. A
	// cursor that is not an event of the store is ErrNotFound.
	EventList(ctx context.Context, p EventListParams) (events []*keelpay.Event, hasMore bool, err error)
}

// DeliveryJob is a claimed delivery: what the dispatcher needs to make one
// attempt. The webhook URL and secret are the store's current ones, read at
// claim time, so an attempt after a rotation is signed with the new secret.
type DeliveryJob struct {
	EventID       string
	StoreID       string
	Type          keelpay.EventType
	Body          []byte
	Attempts      int // attempts made before this one
	WebhookURL    string
	WebhookSecret string
	// LeaseToken identifies this claim; only its holder can record the
	// attempt.
	LeaseToken string
}

// DeliveryClaimParams says what to claim.
type DeliveryClaimParams struct {
	Now time.Time
	// LeaseUntil is when the claim lapses: a delivery whose attempt was
	// not recorded by then is due again (its process died).
	LeaseUntil time.Time
	// Limit is the most deliveries claimed.
	Limit int
	// PerStore is the most deliveries of one store leased at once, across
	// every process, so that a slow receiver cannot take every worker. A
	// claim counts the leases committed before it: where claims can run
	// at the same moment (PostgreSQL), each may fill a store to its cap.
	PerStore int
	// StoreCaps gives the stores listed a cap of their own in place of
	// PerStore, lower or higher; a cap of 0 claims none of the store's
	// deliveries. The dispatcher lowers the cap of a store whose receiver
	// fails or times out. Each store is listed at most once.
	StoreCaps []StoreCap
	// LeaseToken marks the claimed rows.
	LeaseToken string
	// Record, for DeliveryClaimDue, is attempt results recorded first,
	// in the same transaction, as DeliveryRecord records them: a
	// dispatcher records what it sent and claims what it sends next in
	// one call. A failure to record fails the claim.
	Record []DeliveryResult
}

// StoreCap is one store's cap in a claim: the most of its deliveries
// leased at once, counting the leases already out.
type StoreCap struct {
	StoreID string
	Cap     int
}

// DeliveryResult records one attempt.
type DeliveryResult struct {
	EventID    string
	LeaseToken string
	Delivery   keelpay.Delivery
	// Attempt, when set, is added to the event's attempt history in the
	// same transaction, only when the lease still matches.
	Attempt *keelpay.DeliveryAttempt
}

// AttemptsKept is the most attempts kept per event: the newest ones. A
// delivery makes at most seven scheduled attempts; each redelivery can add
// seven more, so the history of an event redelivered often keeps its
// latest AttemptsKept attempts and forgets the oldest.
const AttemptsKept = 50

// DeliveryAttemptListParams selects attempts for GET
// /v1/events/{id}/attempts.
type DeliveryAttemptListParams struct {
	StoreID string
	EventID string
	// Limit is the most attempts returned (1 to 100).
	Limit int
	// StartingAfter and EndingBefore are attempt ids of the event (at most
	// one is set): the page after (older than) or before (newer than) it.
	StartingAfter string
	EndingBefore  string
}

// DeliveryRedeliverManyParams selects the events whose deliveries a bulk
// redelivery queues again.
type DeliveryRedeliverManyParams struct {
	StoreID string
	// Status is the delivery status to match (required).
	Status keelpay.DeliveryStatus
	// Type, when set, keeps only events of that type.
	Type keelpay.EventType
	// CreatedAfter and CreatedBefore, when not zero, keep only events
	// created strictly after and strictly before them.
	CreatedAfter  time.Time
	CreatedBefore time.Time
	// StartingAfter, when set, is an event id of the store: only events
	// created after it (in creation order) match.
	StartingAfter string
	// Limit is the most deliveries queued.
	Limit int
	// Now is when the queued deliveries become due.
	Now time.Time
}

// A CommitClaimer is a Storage that can claim due deliveries inside the
// commit of a transaction that inserted events, so that their webhooks
// leave as soon as that commit is made instead of after a claim of their
// own, which would commit later, behind the writes that arrived
// meanwhile (storage/sqlite, whose one writer commits the transactions
// waiting for it together). The claim is an ordinary DeliveryClaimDue
// with the parameters the CommitClaim gives: the same leases, per-store
// caps and order; it commits, or not, with the transaction it rides on.
type CommitClaimer interface {
	// SetCommitClaim installs c (nil removes it); one at a time.
	SetCommitClaim(c CommitClaim)
}

// CommitClaim is what a dispatcher gives a CommitClaimer. Both methods
// are called by the storage's writer, inside a commit, and must not
// block nor touch the storage.
type CommitClaim interface {
	// Reserve returns the parameters of a claim made now, in a
	// transaction that inserted events, or ok false to claim nothing.
	Reserve() (p DeliveryClaimParams, ok bool)
	// Claimed is called once for each Reserve that returned ok, when the
	// transaction ended: jobs are the deliveries it leased, nil when
	// the claim failed or the transaction did not commit.
	Claimed(p DeliveryClaimParams, jobs []*DeliveryJob)
}

// DeliveryQueries claims due deliveries and records their attempts.
type DeliveryQueries interface {
	// DeliveryClaimDue leases pending deliveries whose next attempt is due
	// (and whose lease, if any, lapsed), oldest due first.
	DeliveryClaimDue(ctx context.Context, p DeliveryClaimParams) ([]*DeliveryJob, error)
	// DeliveryClaimEvent leases one event's pending delivery, due or not,
	// when no live lease holds it (p.Limit and p.PerStore are ignored);
	// ErrNotFound otherwise. A caller that creates an event and wants to
	// make its first attempt itself claims it in the same transaction.
	DeliveryClaimEvent(ctx context.Context, eventID string, p DeliveryClaimParams) (*DeliveryJob, error)
	// DeliveryRecord stores attempt results and releases their leases. A
	// result whose lease token no longer matches is ignored (another
	// process claimed the delivery after the lease lapsed).
	DeliveryRecord(ctx context.Context, results []DeliveryResult) error
	// DeliveryAttemptList returns a page of an event's attempts, newest
	// first, and whether there are more beyond it in the direction of
	// travel. An event of another store has no attempts; a cursor that is
	// not an attempt of the event is ErrNotFound.
	DeliveryAttemptList(ctx context.Context, p DeliveryAttemptListParams) (attempts []*keelpay.DeliveryAttempt, hasMore bool, err error)
	// DeliveryRedeliver makes an event's delivery pending again, due at
	// now, with a fresh attempt count; ErrNotFound when the store has no
	// such event.
	DeliveryRedeliver(ctx context.Context, storeID, eventID string, now time.Time) (*keelpay.Event, error)
	// DeliveryRedeliverMany makes the deliveries of the store's matching
	// events pending again, due at p.Now with a fresh attempt count, oldest
	// event first and at most p.Limit of them. It returns how many it
	// queued and, when more matched beyond them, the id of the last one
	// queued (the cursor of the next call); "" when none are left. A
	// StartingAfter that is not an event of the store is ErrNotFound.
	DeliveryRedeliverMany(ctx context.Context, p DeliveryRedeliverManyParams) (queued int, next string, err error)
	// DeliveryNextDue returns when the earliest-due pending delivery can be
	// claimed (its due time, or its lease's end when it is leased), so the
	// dispatcher can sleep until then; zero when none is pending. It is a
	// hint: other leased deliveries may lapse sooner.
	DeliveryNextDue(ctx context.Context) (time.Time, error)
	// DeliveryCounts returns how many deliveries are pending and failed.
	DeliveryCounts(ctx context.Context) (pending, failed int, err error)
}
