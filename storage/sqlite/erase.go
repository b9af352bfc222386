package sqlite

import (
	"context"
	"fmt"

	"github.com/keelpay/keelpay/storage"
)

// CustomerErase implements storage.Executor: the core's erasure, and then,
// outside a transaction, a checkpoint that empties the write-ahead log. The
// pages the erasure rewrote no longer hold the data (secure_delete), but
// the log still holds the earlier versions of those pages, written when
// the rows were inserted or changed, until it is overwritten: after the
// checkpoint (TRUNCATE) neither the database file nor its log holds them.
// Inside a transaction the log is emptied at the next erasure, or at the
// next checkpoint SQLite makes of its own.
func (q *queries) CustomerErase(ctx context.Context, storeID, customerID string) (storage.CustomerErasure, error) {
	e, err := q.Queries.CustomerErase(ctx, storeID, customerID)
	if err != nil || q.w != nil {
		return e, err
	}
	return e, q.db.truncateLog(ctx)
}

// truncateLog checkpoints the write-ahead log into the database file and
// truncates it. It waits, up to the busy timeout, for readers that still
// use the log; one still reading then makes it fail.
func (db *DB) truncateLog(ctx context.Context) error {
	var busy, logPages, checkpointed int
	err := db.r.QueryRowContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &logPages, &checkpointed)
	if err != nil {
		return fmt.Errorf("sqlite: checkpoint after erasure: %w", mapErr(err))
	}
	if busy != 0 {
		return fmt.Errorf("sqlite: checkpoint after erasure: readers kept the log: %w", storage.ErrConflict)
	}
	return nil
}
