package postgres

import (
	"context"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/keelpay/keelpay/storage"
)

func (q *queries) RateLimitTake(ctx context.Context, now time.Time, limits ...storage.RateLimit) (time.Duration, error) {
	if len(limits) == 0 {
		return 0, nil
	}
	keys := make([]string, len(limits))
	counts := make([]int, len(limits))
	since := make([]pgtype.Timestamptz, len(limits))
	expires := make([]pgtype.Timestamptz, len(limits))
	for i, l := range limits {
		keys[i], counts[i], since[i], expires[i] = l.Key, max(l.Limit, 1), ts(now.Add(-l.Window)), ts(now.Add(l.Window))
	}
	var wait time.Duration
	err := q.write(ctx, func(w querier) error {
		wait = 0
		b := &pgx.Batch{}
		// Takes of one key queue on its advisory lock (locked in key order,
		// so takes of several keys cannot deadlock) until the transaction
		// before them ends; each statement after it sees what that one
		// committed. So count and insert are one step across processes.
		locks := slices.Clone(keys)
		slices.Sort(locks)
		for _, k := range slices.Compact(locks) {
			b.Queue(`SELECT pg_advisory_xact_lock($1)`, lockID(q.db.schema, "rate_limit", k))
		}
		b.Queue(`DELETE FROM rate_limit_hits h USING unnest($1::text[], $2::timestamptz[]) AS l (key, since)
			WHERE h.key = l.key AND h.at <= l.since`, keys, since)
		// For each full limit, the hit that must leave its window before
		// there is room (the limit-th newest); the hits are recorded only
		// when no limit is full.
		b.Queue(`WITH l AS (
				SELECT * FROM unnest($1::text[], $2::integer[], $3::timestamptz[], $5::timestamptz[])
					WITH ORDINALITY AS l (key, n, since, expires_at, i)
			), full_limits AS (
				SELECT l.i, h.at FROM l CROSS JOIN LATERAL (
					SELECT at FROM rate_limit_hits h WHERE h.key = l.key AND h.at > l.since
					ORDER BY at DESC OFFSET l.n - 1 LIMIT 1) h
			), hits AS (
				INSERT INTO rate_limit_hits (key, at, expires_at)
				SELECT key, $4::timestamptz, expires_at FROM l WHERE NOT EXISTS (SELECT FROM full_limits)
			)
			SELECT i, at FROM full_limits`, keys, counts, since, ts(now), expires).Query(func(rows pgx.Rows) error {
			for rows.Next() {
				var i int
				var oldest time.Time
				if err := rows.Scan(&i, tsDst(&oldest)); err != nil {
					return err
				}
				wait = max(wait, oldest.Add(limits[i-1].Window).Sub(now))
			}
			return rows.Err()
		})
		return mapErr(w.SendBatch(ctx, b).Close())
	})
	return wait, err
}
