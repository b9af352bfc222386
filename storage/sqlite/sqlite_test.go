package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay/keelpaytest"
	"github.com/keelpay/keelpay/storage"
	"github.com/keelpay/keelpay/storage/sqlite"
	"github.com/keelpay/keelpay/storage/storagetest"
)

func open(t *testing.T, path string) *sqlite.DB {
	t.Helper()
	db, err := sqlite.Open(context.Background(), sqlite.Config{Keyring: keelpaytest.Keyring(), Path: path})
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	return db
}

func TestConformance(t *testing.T) {
	t.Parallel()
	storagetest.Run(t, func(t *testing.T) storage.Storage {
		return open(t, filepath.Join(t.TempDir(), "keelpay.db"))
	})
}

func TestReopenKeepsDataAndSkipsAppliedMigrations(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "keelpay.db")
	db, err := sqlite.Open(ctx, sqlite.Config{Keyring: keelpaytest.Keyring(), Path: path})
	require.NoError(t, err)
	s := storagetest.NewStoreRecord(storagetestNow())
	require.NoError(t, db.StoreInsert(ctx, s))
	require.NoError(t, db.Close())

	db2 := open(t, path)
	got, err := db2.StoreGetByID(ctx, s.ID)
	require.NoError(t, err)
	require.Equal(t, s.ClientID, got.ClientID)
}

func storagetestNow() (t time.Time) { return time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC) }

func TestNestedWithTxPanicsInsteadOfDeadlocking(t *testing.T) {
	t.Parallel()
	db := open(t, filepath.Join(t.TempDir(), "keelpay.db"))
	ctx := context.Background()
	require.Panics(t, func() {
		_ = db.WithTx(ctx, func(ctx context.Context, tx storage.Executor) error {
			// The mistake: writing through db, not tx.
			return db.StoreInsert(ctx, storagetest.NewStoreRecord(storagetestNow()))
		})
	})
	// The writer is still alive.
	require.NoError(t, db.StoreInsert(ctx, storagetest.NewStoreRecord(storagetestNow())))
}
