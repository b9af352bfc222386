package storagetest

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/storage"
)

func testTx(t *testing.T, newStorage NewStorage) {
	ctx := context.Background()

	t.Run("RollbackOnError", func(t *testing.T) {
		t.Parallel()
		db := newStorage(t)
		s := NewStoreRecord(t0)
		boom := errors.New("boom")
		err := db.WithTx(ctx, func(ctx context.Context, tx storage.Executor) error {
			if err := tx.StoreInsert(ctx, s); err != nil {
				return err
			}
			// Visible inside the transaction.
			if _, err := tx.StoreGetByID(ctx, s.ID); err != nil {
				return err
			}
			return boom
		})
		require.ErrorIs(t, err, boom)
		_, err = db.StoreGetByID(ctx, s.ID)
		require.ErrorIs(t, err, storage.ErrNotFound)
	})

	t.Run("PanicRollsBackAndPropagates", func(t *testing.T) {
		t.Parallel()
		db := newStorage(t)
		s := NewStoreRecord(t0)
		require.PanicsWithValue(t, "boom", func() {
			_ = db.WithTx(ctx, func(ctx context.Context, tx storage.Executor) error {
				if err := tx.StoreInsert(ctx, s); err != nil {
					return err
				}
				panic("boom")
			})
		})
		_, err := db.StoreGetByID(ctx, s.ID)
		require.ErrorIs(t, err, storage.ErrNotFound)
		// The database is still usable.
		require.NoError(t, db.StoreInsert(ctx, NewStoreRecord(t0)))
	})

	t.Run("ConcurrentTransactionsAreIsolated", func(t *testing.T) {
		// Many transactions at once, half failing: exactly the
		// successful ones are committed (group commit must not mix them up).
		t.Parallel()
		db := newStorage(t)
		const n = 64
		stores := make([]*keelpay.Store, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			stores[i] = NewStoreRecord(t0)
			wg.Go(func() {
				errs[i] = db.WithTx(ctx, func(ctx context.Context, tx storage.Executor) error {
					if err := tx.StoreInsert(ctx, stores[i]); err != nil {
						return err
					}
					if i%2 == 1 {
						return errors.New("odd")
					}
					return nil
				})
			})
		}
		wg.Wait()
		for i := range n {
			_, err := db.StoreGetByID(ctx, stores[i].ID)
			if i%2 == 0 {
				require.NoError(t, errs[i])
				require.NoError(t, err)
			} else {
				require.Error(t, errs[i])
				require.ErrorIs(t, err, storage.ErrNotFound)
			}
		}
	})
}

// testPing: an open database answers Ping; a Ping whose context has ended
// fails rather than reporting a database it did not reach.
func testPing(t *testing.T, newStorage NewStorage) {
	db := newStorage(t)
	require.NoError(t, db.Ping(context.Background()))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.Error(t, db.Ping(ctx))
}
