package storagetest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/storage"
)

// testBatch pins where a write's error comes from: inside WithTx from the
// write itself, and from Commit as the WriteError of the write that
// failed, with nothing of the batch kept.
func testBatch(t *testing.T, newStorage NewStorage) {
	ctx := context.Background()

	t.Run("WithTxWriteReturnsItsOwnError", func(t *testing.T) {
		t.Parallel()
		db := newStorage(t)
		s := insertStore(t, db)
		pi := NewIntentRecord(s.ID, t0)
		require.NoError(t, db.PaymentIntentInsert(ctx, pi))
		var read *keelpay.Store
		var readErr, updateErr error
		err := db.WithTx(ctx, func(ctx context.Context, tx storage.Executor) error {
			read, readErr = tx.StoreGetByID(ctx, s.ID)
			if readErr != nil {
				return readErr
			}
			stale := *pi
			stale.Description = "stale"
			updateErr = tx.PaymentIntentUpdate(ctx, &stale, pi.Version+5)
			return updateErr
		})
		require.NoError(t, readErr, "the read before the write returned its own result")
		require.Equal(t, s.ID, read.ID)
		require.ErrorIs(t, updateErr, storage.ErrConflict, "the stale update's error comes from the update")
		require.ErrorIs(t, err, storage.ErrConflict)

		// A write that succeeds inside WithTx has happened: a read after
		// it in the transaction sees it.
		err = db.WithTx(ctx, func(ctx context.Context, tx storage.Executor) error {
			next := *pi
			next.Description = "changed"
			if err := tx.PaymentIntentUpdate(ctx, &next, pi.Version); err != nil {
				return err
			}
			got, err := tx.PaymentIntentGet(ctx, s.ID, pi.ID)
			if err != nil {
				return err
			}
			require.Equal(t, "changed", got.Description)
			return nil
		})
		require.NoError(t, err)
	})

	t.Run("CommitNamesTheFailedWriteAndKeepsNothing", func(t *testing.T) {
		t.Parallel()
		db := newStorage(t)
		s := insertStore(t, db)
		b := NewIntentRecord(s.ID, t0)
		require.NoError(t, db.PaymentIntentInsert(ctx, b))
		a, c := NewIntentRecord(s.ID, t0), NewIntentRecord(s.ID, t0)

		var batch storage.Batch
		batch.PaymentIntentInsert(a)
		stale := *b
		stale.Description = "stale"
		batch.PaymentIntentUpdate(&stale, b.Version+5)
		batch.PaymentIntentInsert(c)
		committed := 0
		batch.OnCommit(func() { committed++ })
		var failed []*storage.WriteError
		batch.OnFail(func(we *storage.WriteError) { failed = append(failed, we) })
		require.Equal(t, 3, batch.Len())

		err := db.Commit(ctx, &batch)
		require.ErrorIs(t, err, storage.ErrConflict)
		var we *storage.WriteError
		require.ErrorAs(t, err, &we)
		require.Equal(t, 1, we.Index)
		require.Equal(t, "PaymentIntentUpdate", we.Op)
		require.Contains(t, we.Error(), "PaymentIntentUpdate")
		require.Zero(t, committed, "OnCommit runs only after a commit")
		// Once for each time the adapter ran the batch (SQLite runs a
		// group commit again when one of its transactions fails).
		require.NotEmpty(t, failed)
		require.Same(t, we, failed[len(failed)-1], "OnFail gets the error Commit returns")
		for _, pi := range []*keelpay.PaymentIntent{a, c} {
			_, err := db.PaymentIntentGet(ctx, s.ID, pi.ID)
			require.ErrorIs(t, err, storage.ErrNotFound, "nothing of a failed batch is kept")
		}
		got, err := db.PaymentIntentGet(ctx, s.ID, b.ID)
		require.NoError(t, err)
		require.Equal(t, b.Description, got.Description)

		// A missing row is ErrNotFound, named the same way.
		var missing storage.Batch
		missing.PaymentIntentInsert(a)
		missing.CardUpdateStatus(s.ID, "card_missing", keelpay.CardUnavailable)
		err = db.Commit(ctx, &missing)
		require.ErrorIs(t, err, storage.ErrNotFound)
		require.ErrorAs(t, err, &we)
		require.Equal(t, 1, we.Index)
		require.Equal(t, "CardUpdateStatus", we.Op)
		_, err = db.PaymentIntentGet(ctx, s.ID, a.ID)
		require.ErrorIs(t, err, storage.ErrNotFound)
	})

	t.Run("CommitStoresAllThenRunsOnCommit", func(t *testing.T) {
		t.Parallel()
		db := newStorage(t)
		s := insertStore(t, db)
		b := NewIntentRecord(s.ID, t0)
		require.NoError(t, db.PaymentIntentInsert(ctx, b))
		a, c := NewIntentRecord(s.ID, t0), NewIntentRecord(s.ID, t0)
		e := NewEventRecord(s.ID, keelpay.EventWebhookTest, t0)

		var batch storage.Batch
		batch.PaymentIntentInsert(a)
		next := *b
		next.Description = "changed"
		batch.PaymentIntentUpdate(&next, b.Version)
		batch.PaymentIntentInsert(c)
		batch.EventInsert(e)
		committed := 0
		batch.OnCommit(func() {
			committed++
			// Called once the writes committed: visible to any reader.
			got, err := db.PaymentIntentGet(ctx, s.ID, c.ID)
			require.NoError(t, err, "OnCommit ran before the commit")
			require.Equal(t, c.ID, got.ID)
		})
		require.NoError(t, db.Commit(ctx, &batch))
		require.Equal(t, 1, committed)
		require.Equal(t, b.Version+1, next.Version, "the update set the version it wrote")

		for _, pi := range []*keelpay.PaymentIntent{a, c} {
			_, err := db.PaymentIntentGet(ctx, s.ID, pi.ID)
			require.NoError(t, err)
		}
		got, err := db.PaymentIntentGet(ctx, s.ID, b.ID)
		require.NoError(t, err)
		require.Equal(t, "changed", got.Description)
		require.Equal(t, b.Version+1, got.Version)
		ev, err := db.EventGet(ctx, s.ID, e.ID)
		require.NoError(t, err)
		require.Equal(t, keelpay.DeliveryPending, ev.Delivery.Status)

		// An empty batch commits nothing and still runs its functions.
		var empty storage.Batch
		ran := false
		empty.OnCommit(func() { ran = true })
		require.NoError(t, db.Commit(ctx, &empty))
		require.True(t, ran)
	})

	t.Run("ApplyInsideWithTx", func(t *testing.T) {
		t.Parallel()
		db := newStorage(t)
		s := insertStore(t, db)
		a := NewIntentRecord(s.ID, t0)
		var batch storage.Batch
		batch.PaymentIntentInsert(a)
		batch.CardUpdateStatus(s.ID, "card_missing", keelpay.CardUnavailable)
		var applyErr error
		err := db.WithTx(ctx, func(ctx context.Context, tx storage.Executor) error {
			if _, err := tx.StoreGetByID(ctx, s.ID); err != nil {
				return err
			}
			applyErr = batch.Apply(ctx, tx)
			return applyErr
		})
		var we *storage.WriteError
		require.ErrorAs(t, applyErr, &we, "Apply returns the failed write's error itself")
		require.Equal(t, 1, we.Index)
		require.ErrorIs(t, err, storage.ErrNotFound)
		_, err = db.PaymentIntentGet(ctx, s.ID, a.ID)
		require.ErrorIs(t, err, storage.ErrNotFound)
	})

	t.Run("ClaimRecordsFirst", func(t *testing.T) {
		t.Parallel()
		db := newStorage(t)
		s := insertStore(t, db)
		var ids []string
		for i := range 3 {
			e := NewEventRecord(s.ID, keelpay.EventWebhookTest, t0.Add(time.Duration(i)*time.Millisecond))
			require.NoError(t, db.EventInsert(ctx, e))
			ids = append(ids, e.ID)
		}
		now := t0.Add(time.Second)
		p := claimParams(now, 10)
		p.PerStore = 2
		jobs, err := db.DeliveryClaimDue(ctx, p)
		require.NoError(t, err)
		require.Len(t, jobs, 2)
		// Outside a transaction, the record and the claim are one call:
		// the recorded delivery's lease is released for the claim.
		done := keelpay.Delivery{Status: keelpay.DeliverySucceeded, Attempts: 1, LastAttemptAt: now, LastStatusCode: 204}
		p2 := claimParams(now, 10)
		p2.PerStore = 2
		p2.Record = []storage.DeliveryResult{{EventID: jobs[0].EventID, LeaseToken: p.LeaseToken, Delivery: done}}
		again, err := db.DeliveryClaimDue(ctx, p2)
		require.NoError(t, err)
		require.Len(t, again, 1)
		require.Equal(t, ids[2], again[0].EventID)
		got, err := db.EventGet(ctx, s.ID, jobs[0].EventID)
		require.NoError(t, err)
		require.Equal(t, done, got.Delivery)
	})
}
