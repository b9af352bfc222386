package sqlite

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	msqlite "modernc.org/sqlite"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/keyring/keyringtest"
	"github.com/keelpay/keelpay/storage"
	"github.com/keelpay/keelpay/storage/storagetest"
)

func openIdle(t *testing.T, idle time.Duration) *DB {
	t.Helper()
	db, err := Open(context.Background(), Config{Keyring: keyringtest.Keyring(),
		Path: filepath.Join(t.TempDir(), "keelpay.db"), Readers: 4, IdleTime: idle})
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	return db
}

func TestIdleTimeDefaults(t *testing.T) {
	t.Parallel()
	require.Equal(t, IdleTimeDefault, Config{}.WithDefaults().IdleTime)
	require.Equal(t, -time.Second, Config{IdleTime: -time.Second}.WithDefaults().IdleTime)
}

// A reader connection left idle for IdleTime is closed, which frees its
// page cache, statements and schema; the next read opens one again.
func TestIdleReadersAreClosed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openIdle(t, 50*time.Millisecond)
	s := storagetest.NewStoreRecord(time.Now())
	require.NoError(t, db.StoreInsert(ctx, s))

	// Four reads at once: four reader connections.
	var held []interface{ Close() error }
	for range 4 {
		c, err := db.r.Conn(ctx)
		require.NoError(t, err)
		require.NoError(t, c.PingContext(ctx))
		held = append(held, c)
	}
	require.Equal(t, 4, db.r.Stats().OpenConnections)
	for _, c := range held {
		require.NoError(t, c.Close())
	}
	require.Eventually(t, func() bool {
		st := db.r.Stats()
		return st.OpenConnections == 0 && st.MaxIdleTimeClosed >= 4
	}, 10*time.Second, 10*time.Millisecond)

	got, err := db.StoreGetByID(ctx, s.ID)
	require.NoError(t, err)
	require.Equal(t, s.ClientID, got.ClientID)
}

// writerCache is the bytes of the writer's page cache, read between
// transactions on the writer.
func writerCache(t *testing.T, db *DB) int {
	t.Helper()
	var used int
	err := db.WithTx(context.Background(), func(ctx context.Context, tx storage.Executor) error {
		return db.wconn.Raw(func(dc any) error {
			var err error
			used, _, err = dc.(msqlite.DBStatus).Status(msqlite.DBStatusCacheUsed, false)
			return err
		})
	})
	require.NoError(t, err)
	return used
}

// Once the writer has changed no row for IdleTime it empties its page
// cache (without it, the cache stays as long as the connection).
func TestIdleWriterReleasesItsPageCache(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openIdle(t, 50*time.Millisecond)
	s := storagetest.NewStoreRecord(time.Now())
	require.NoError(t, db.StoreInsert(ctx, s))
	var full int
	err := db.WithTx(ctx, func(ctx context.Context, tx storage.Executor) error {
		for range 2000 {
			e := storagetest.NewEventRecord(s.ID, keelpay.EventWebhookTest, time.Now())
			if err := tx.EventInsert(ctx, e); err != nil {
				return err
			}
		}
		return db.wconn.Raw(func(dc any) error {
			var err error
			full, _, err = dc.(msqlite.DBStatus).Status(msqlite.DBStatusCacheUsed, false)
			return err
		})
	})
	require.NoError(t, err)
	require.Greater(t, full, 256<<10, "the inserts filled the writer's cache")

	// Each look is itself a transaction, one that changes no row: those
	// do not keep the cache.
	require.Eventually(t, func() bool { return writerCache(t, db) < 32<<10 }, 10*time.Second, 10*time.Millisecond)
}
