package postgres

import (
	"context"
	"fmt"
	"time"
)

// DatabaseTime returns the database server's clock: clock_timestamp(), the
// time when the statement reads it, not now(), which is the start of the
// transaction (https://www.postgresql.org/docs/current/functions-datetime.html#FUNCTIONS-DATETIME-CURRENT).
// Several servers on one database measure their offset from it, so that
// key locks, leases and attempt windows are judged on one clock whatever
// the machines' clocks say (service.DatabaseClock).
func (db *DB) DatabaseTime(ctx context.Context) (time.Time, error) {
	var t time.Time
	if err := db.pool.QueryRow(ctx, "SELECT clock_timestamp()").Scan(&t); err != nil {
		return time.Time{}, fmt.Errorf("postgres: read the database's clock: %w", err)
	}
	return t.UTC(), nil
}
