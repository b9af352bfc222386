package storagetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/storage"
)

func newAttemptCheck(storeID string, checkAt time.Time) *storage.AttemptCheck {
	return &storage.AttemptCheck{
		AttemptID:       keelpay.NewID("att_"),
		StoreID:         storeID,
		PaymentIntentID: keelpay.NewID(keelpay.PrefixPaymentIntent),
		MerchantID:      "merch_1",
		ClosedAt:        t0,
		CheckAt:         checkAt,
		Until:           t0.Add(24 * time.Hour),
	}
}

func testAttemptChecks(t *testing.T, newStorage NewStorage) {
	ctx := context.Background()

	t.Run("DueInOrderAndKeptWhole", func(t *testing.T) {
		t.Parallel()
		db := newStorage(t)
		s := insertStore(t, db)
		late := newAttemptCheck(s.ID, t0.Add(5*time.Minute))
		early := newAttemptCheck(s.ID, t0.Add(time.Minute))
		future := newAttemptCheck(s.ID, t0.Add(time.Hour))
		for _, c := range []*storage.AttemptCheck{late, early, future} {
			require.NoError(t, db.AttemptCheckInsert(ctx, c))
		}
		due, err := db.AttemptCheckListDue(ctx, t0.Add(5*time.Minute), 10)
		require.NoError(t, err)
		require.Empty(t, cmp.Diff([]*storage.AttemptCheck{early, late}, due))

		due, err = db.AttemptCheckListDue(ctx, t0.Add(5*time.Minute), 1)
		require.NoError(t, err)
		require.Empty(t, cmp.Diff([]*storage.AttemptCheck{early}, due))
	})

	t.Run("InsertTwiceKeepsTheFirst", func(t *testing.T) {
		t.Parallel()
		db := newStorage(t)
		s := insertStore(t, db)
		c := newAttemptCheck(s.ID, t0.Add(time.Minute))
		require.NoError(t, db.AttemptCheckInsert(ctx, c))
		again := *c
		again.CheckAt = t0.Add(time.Hour)
		require.NoError(t, db.AttemptCheckInsert(ctx, &again))
		due, err := db.AttemptCheckListDue(ctx, t0.Add(time.Minute), 10)
		require.NoError(t, err)
		require.Empty(t, cmp.Diff([]*storage.AttemptCheck{c}, due))
	})

	t.Run("RescheduleAndDelete", func(t *testing.T) {
		t.Parallel()
		db := newStorage(t)
		s := insertStore(t, db)
		c := newAttemptCheck(s.ID, t0.Add(time.Minute))
		require.NoError(t, db.AttemptCheckInsert(ctx, c))
		require.NoError(t, db.AttemptCheckReschedule(ctx, c.AttemptID, t0.Add(15*time.Minute), 1))
		due, err := db.AttemptCheckListDue(ctx, t0.Add(14*time.Minute), 10)
		require.NoError(t, err)
		require.Empty(t, due, "a rescheduled check is not due before its new time")
		due, err = db.AttemptCheckListDue(ctx, t0.Add(15*time.Minute), 10)
		require.NoError(t, err)
		require.Len(t, due, 1)
		require.Equal(t, 1, due[0].Checks)
		require.True(t, due[0].CheckAt.Equal(t0.Add(15*time.Minute)))

		got, err := db.AttemptCheckGet(ctx, c.AttemptID)
		require.NoError(t, err)
		want := *c
		want.CheckAt, want.Checks = t0.Add(15*time.Minute), 1
		require.Empty(t, cmp.Diff(&want, got))

		require.NoError(t, db.AttemptCheckDelete(ctx, c.AttemptID))
		require.NoError(t, db.AttemptCheckDelete(ctx, c.AttemptID), "deleting what is gone changes nothing")
		_, err = db.AttemptCheckGet(ctx, c.AttemptID)
		require.ErrorIs(t, err, storage.ErrNotFound)
		due, err = db.AttemptCheckListDue(ctx, t0.Add(48*time.Hour), 10)
		require.NoError(t, err)
		require.Empty(t, due)
		err = db.AttemptCheckReschedule(ctx, c.AttemptID, t0, 2)
		require.True(t, errors.Is(err, storage.ErrNotFound), "%v", err)
	})

	t.Run("InsertRollsBackWithItsTransaction", func(t *testing.T) {
		t.Parallel()
		db := newStorage(t)
		s := insertStore(t, db)
		c := newAttemptCheck(s.ID, t0)
		boom := errors.New("boom")
		err := db.WithTx(ctx, func(ctx context.Context, tx storage.Executor) error {
			require.NoError(t, tx.AttemptCheckInsert(ctx, c))
			return boom
		})
		require.ErrorIs(t, err, boom)
		due, err := db.AttemptCheckListDue(ctx, t0.Add(time.Hour), 10)
		require.NoError(t, err)
		require.Empty(t, due)
	})
}
