package sqlite_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/storage"
	"github.com/keelpay/keelpay/storage/storagetest"
)

// fakeClaim is a storage.CommitClaim that records what the writer asked
// and gave.
type fakeClaim struct {
	mu       sync.Mutex
	refuse   bool
	caps     []storage.StoreCap
	reserved int
	claimed  [][]*storage.DeliveryJob
}

func (f *fakeClaim) Reserve() (storage.DeliveryClaimParams, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.refuse {
		return storage.DeliveryClaimParams{}, false
	}
	f.reserved++
	now := storagetestNow()
	return storage.DeliveryClaimParams{Now: now, LeaseUntil: now.Add(time.Minute), Limit: 10, PerStore: 10,
		StoreCaps: f.caps, LeaseToken: keelpay.NewID("lease_")}, true
}

func (f *fakeClaim) Claimed(p storage.DeliveryClaimParams, jobs []*storage.DeliveryJob) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.claimed = append(f.claimed, jobs)
}

func (f *fakeClaim) state() (int, [][]*storage.DeliveryJob) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reserved, f.claimed
}

// A batch that inserts an event claims due deliveries in its own commit:
// the jobs are handed over before the writer answers, and the delivery is
// leased, so no other claim takes it. Batches without an event claim
// nothing; a refused Reserve, a store at a cap of 0 and a transaction that
// rolls back leave the delivery to the ordinary claim.
func TestCommitClaimRidesOnTheEventsCommit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := open(t, filepath.Join(t.TempDir(), "keelpay.db"))
	now := storagetestNow()
	s := storagetest.NewStoreRecord(now)
	require.NoError(t, db.StoreInsert(ctx, s))
	f := &fakeClaim{}
	db.SetCommitClaim(f)
	otherClaim := func() []*storage.DeliveryJob {
		t.Helper()
		jobs, err := db.DeliveryClaimDue(ctx, storage.DeliveryClaimParams{Now: now, LeaseUntil: now.Add(time.Minute),
			Limit: 10, PerStore: 10, LeaseToken: keelpay.NewID("lease_")})
		require.NoError(t, err)
		return jobs
	}

	// No event: no claim.
	require.NoError(t, db.StoreInsert(ctx, storagetest.NewStoreRecord(now)))
	n, claimed := f.state()
	require.Zero(t, n)
	require.Empty(t, claimed)

	// An event in a transaction, and one inserted on its own.
	for i, insert := range []func(e *keelpay.Event) error{
		func(e *keelpay.Event) error {
			return db.WithTx(ctx, func(ctx context.Context, tx storage.Executor) error { return tx.EventInsert(ctx, e) })
		},
		func(e *keelpay.Event) error { return db.EventInsert(ctx, e) },
	} {
		e := storagetest.NewEventRecord(s.ID, keelpay.EventPaymentIntentSucceeded, now)
		require.NoError(t, insert(e))
		n, claimed = f.state()
		require.Equal(t, i+1, n)
		require.Len(t, claimed, i+1)
		require.Len(t, claimed[i], 1)
		require.Equal(t, e.ID, claimed[i][0].EventID)
		require.Empty(t, otherClaim(), "the delivery is leased by the claim that rode on its commit")
	}

	// A transaction that rolls back claims nothing.
	e := storagetest.NewEventRecord(s.ID, keelpay.EventPaymentIntentSucceeded, now)
	failed := errors.New("no")
	require.ErrorIs(t, db.WithTx(ctx, func(ctx context.Context, tx storage.Executor) error {
		require.NoError(t, tx.EventInsert(ctx, e))
		return failed
	}), failed)
	n, claimed = f.state()
	require.Equal(t, 2, n)
	require.Len(t, claimed, 2)

	// The store's cap holds: a cap of 0 claims none of its deliveries.
	f.mu.Lock()
	f.caps = []storage.StoreCap{{StoreID: s.ID, Cap: 0}}
	f.mu.Unlock()
	e = storagetest.NewEventRecord(s.ID, keelpay.EventPaymentIntentSucceeded, now)
	require.NoError(t, db.EventInsert(ctx, e))
	n, claimed = f.state()
	require.Equal(t, 3, n)
	require.Len(t, claimed, 3)
	require.Empty(t, claimed[2])
	jobs := otherClaim()
	require.Len(t, jobs, 1)
	require.Equal(t, e.ID, jobs[0].EventID)

	// Refused: the ordinary claim takes the delivery.
	f.mu.Lock()
	f.refuse = true
	f.mu.Unlock()
	e = storagetest.NewEventRecord(s.ID, keelpay.EventPaymentIntentSucceeded, now)
	require.NoError(t, db.EventInsert(ctx, e))
	n, claimed = f.state()
	require.Equal(t, 3, n)
	require.Len(t, claimed, 3)
	jobs = otherClaim()
	require.Len(t, jobs, 1)
	require.Equal(t, e.ID, jobs[0].EventID)

	// Removed: no more claims.
	db.SetCommitClaim(nil)
	require.NoError(t, db.EventInsert(ctx, storagetest.NewEventRecord(s.ID, keelpay.EventPaymentIntentSucceeded, now)))
	require.Len(t, otherClaim(), 1)
}
