package sqlite

import (
	"context"
	"time"

	"github.com/keelpay/keelpay/storage"
)

func (q *queries) RateLimitTake(ctx context.Context, now time.Time, limits ...storage.RateLimit) (time.Duration, error) {
	var wait time.Duration
	err := q.write(ctx, func(w querier) error {
		wait = 0
		for _, l := range limits {
			since := micros(now.Add(-l.Window))
			if _, err := w.ExecContext(ctx, `DELETE FROM rate_limit_hits WHERE key = ? AND at <= ?`, l.Key, since); err != nil {
				return mapErr(err)
			}
			// The hit that must leave the window before there is room:
			// the limit-th newest one.
			var oldest int64
			err := w.QueryRowContext(ctx, `SELECT at FROM rate_limit_hits WHERE key = ? AND at > ?
				ORDER BY at DESC LIMIT 1 OFFSET ?`, l.Key, since, l.Limit-1).Scan(&oldest)
			if err == nil {
				wait = max(wait, fromMicros(oldest).Add(l.Window).Sub(now))
			} else if err = mapErr(err); err != storage.ErrNotFound {
				return err
			}
		}
		if wait > 0 {
			return nil
		}
		for _, l := range limits {
			if _, err := w.ExecContext(ctx, `INSERT INTO rate_limit_hits (key, at, expires_at) VALUES (?, ?, ?)`,
				l.Key, micros(now), micros(now.Add(l.Window))); err != nil {
				return mapErr(err)
			}
		}
		return nil
	})
	return wait, err
}
