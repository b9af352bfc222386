package storage

import (
	"context"
	"time"

	"github.com/keelpay/keelpay"
)

// RefundListParams selects a page of a store's refunds. The filters that
// are set are combined (AND); the cursors page within them.
type RefundListParams struct {
	StoreID string
	// PaymentIntentID and Status, when set, keep only the refunds of that
	// intent or with that status.
	PaymentIntentID string
	Status          keelpay.RefundStatus
	// CreatedGTE and CreatedLT, when not zero, keep only the refunds
	// created at or after CreatedGTE and before CreatedLT.
	CreatedGTE time.Time
	CreatedLT  time.Time
	// Limit is the most refunds returned (1 to 100).
	Limit int
	// StartingAfter and EndingBefore are refund ids (at most one is set):
	// the page after (older than) or before (newer than) that refund.
	StartingAfter string
	EndingBefore  string
}

// RefundQueries reads and writes refunds.
//
// Reads that serve a client take the store id. The reconciler's queries
// range over every store.
type RefundQueries interface {
	// RefundInsert adds a refund. ErrDuplicate when the intent already has
	// a refund (one refund per intent), so two concurrent first sends
	// cannot both create one.
	RefundInsert(ctx context.Context, r *keelpay.Refund) error
	// RefundGet returns a refund of a store, or ErrNotFound.
	RefundGet(ctx context.Context, storeID, id string) (*keelpay.Refund, error)
	// RefundGetByIntent returns the refund of a store's payment intent, or
	// ErrNotFound.
	RefundGetByIntent(ctx context.Context, storeID, paymentIntentID string) (*keelpay.Refund, error)
	// RefundGetByAttempt returns the refund whose last send has this
	// attempt id, of any store, or ErrNotFound. It serves the provider's
	// refund notifications, which name only the merchant and the send's
	// attempt id.
	RefundGetByAttempt(ctx context.Context, attemptID string) (*keelpay.Refund, error)
	// RefundUpdate writes r (every field but ID, StoreID, PaymentIntentID
	// and CreatedAt) when the stored version is still expectedVersion, and
	// sets r.Version to expectedVersion+1. ErrConflict when the version
	// moved, ErrNotFound when the store has no such refund.
	RefundUpdate(ctx context.Context, r *keelpay.Refund, expectedVersion int64) error
	// RefundDelete removes a refund at expectedVersion (a first send the
	// provider could not take: nothing is kept). ErrConflict when the
	// version moved, ErrNotFound when the store has no such refund.
	RefundDelete(ctx context.Context, storeID, id string, expectedVersion int64) error
	// RefundList returns a page of a store's refunds that match the
	// filters, newest first (by created_at, then by insertion), and
	// whether there are more beyond it in the direction of travel. A
	// cursor that is not a refund of the store is ErrNotFound.
	RefundList(ctx context.Context, p RefundListParams) (refunds []*keelpay.Refund, hasMore bool, err error)
	// RefundListReconcileDue returns at most limit pending refunds whose
	// ReconcileAt is set and at or before now, earliest first.
	RefundListReconcileDue(ctx context.Context, now time.Time, limit int) ([]*keelpay.Refund, error)
}
