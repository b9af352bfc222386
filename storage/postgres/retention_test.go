package postgres_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay/storage/postgres"
	"github.com/keelpay/keelpay/storage/postgres/postgrestest"
	"github.com/keelpay/keelpay/storage/storagetest"
)

// A retention pass must cost the batch it deletes, whatever the backlog
// and however many recent events stay: on a table of 20,000 events of
// which 500 are old, the lookup walks events_created_at from the oldest
// row, and the deletions find attempts, deliveries and card sessions by
// index. A sequential scan here would read the whole table on every pass.
func TestRetentionQueriesUseIndexes(t *testing.T) {
	t.Parallel()
	db := postgrestest.NewDB(t)
	ctx := context.Background()
	pool := postgres.Pool(db)
	s := storagetest.NewStoreRecord(t0)
	require.NoError(t, db.StoreInsert(ctx, s))
	cutoff := t0.Add(30 * 24 * time.Hour)
	// Events a second apart from 500 s before the cut-off: 500 old ones,
	// the rest recent; every delivery succeeded, with one attempt. Card
	// sessions likewise.
	for _, q := range []string{
		`INSERT INTO events (id, store_id, type, body, created_at)
			SELECT 'evt_' || i, $1, 'webhook.test', '\x7b7d', $2::timestamptz + (i - 500) * interval '1 second' FROM generate_series(1, 20000) i`,
		`INSERT INTO deliveries (event_id, store_id, status, attempts)
			SELECT 'evt_' || i, $1, 'succeeded', 1 FROM generate_series(1, 20000) i WHERE $2::timestamptz IS NOT NULL`,
		`INSERT INTO delivery_attempts (id, event_id, store_id, started_at, duration_us, status_code, failure, response_body)
			SELECT 'whatt_' || i, 'evt_' || i, $1, $2, 1000, 204, '', '' FROM generate_series(1, 20000) i`,
		`INSERT INTO card_sessions (id, store_id, client_secret, customer_id, customer_name, customer_email, customer_phone,
				page_origins, status, expires_at, created_at)
			SELECT 'cs_' || i, $1, '', '', '', '', '', '{}', CASE WHEN i % 2 = 0 THEN 'completed' ELSE 'expired' END,
				$2::timestamptz + (i - 500) * interval '1 second', $2 FROM generate_series(1, 20000) i`,
	} {
		_, err := pool.Exec(ctx, q, s.ID, cutoff)
		require.NoError(t, err)
	}
	_, err := pool.Exec(ctx, `ANALYZE events, deliveries, delivery_attempts, card_sessions`)
	require.NoError(t, err)

	// The planner picks by cost, and on a table this small reading it
	// whole is cheap; with those plans switched off, what is left shows
	// that the indexes can serve each step by key or range. (The retention
	// benchmark shows the plans chosen at a million events.)
	plan := func(query string, args ...any) string {
		t.Helper()
		var lines []string
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			for _, off := range []string{"enable_seqscan", "enable_sort", "enable_hashjoin", "enable_mergejoin", "enable_bitmapscan"} {
				if _, err := tx.Exec(ctx, "SET LOCAL "+off+" = off"); err != nil {
					return err
				}
			}
			rows, err := tx.Query(ctx, "EXPLAIN "+query, args...)
			if err != nil {
				return err
			}
			lines, err = pgx.CollectRows(rows, pgx.RowTo[string])
			return err
		})
		require.NoError(t, err)
		got := strings.Join(lines, "\n")
		t.Logf("%s\n%s", query, got)
		require.NotContains(t, got, "Seq Scan")
		require.NotContains(t, got, "Sort")
		return got
	}
	got := plan(postgres.EventPurge, cutoff, 1000)
	require.Contains(t, got, "Index Scan using events_created_at on events e")
	require.Contains(t, got, "Index Cond: (created_at < ")
	require.Regexp(t, `Index Scan using deliveries_pkey on deliveries d [^\n]*\n\s+Index Cond: \(event_id = e\.id\)`, got)
	require.Regexp(t, `Index (Only )?Scan using delivery_attempts_event_seq on delivery_attempts [^\n]*\n\s+Index Cond: \(event_id = `, got)
	require.Regexp(t, `Index Scan using deliveries_pkey on deliveries [^\n]*\n\s+Index Cond: \(event_id = `, got)
	require.Regexp(t, `Index Scan using events_id_key on events [^\n]*\n\s+Index Cond: \(id = `, got)
	got = plan(postgres.CardSessionPurge, cutoff, 1000)
	require.Contains(t, got, "Index Scan using card_sessions_unused_expiry on card_sessions")
	require.Contains(t, got, "Index Cond: (expires_at < ")
	require.Regexp(t, `Index Scan using card_sessions_pkey on card_sessions [^\n]*\n\s+Index Cond: \(id = ANY `, got)

	// And the statements do what they plan: 500 old events leave, in
	// batches, with their deliveries and attempts.
	var deleted []int
	for {
		n, err := db.EventDeleteBefore(ctx, cutoff, 200)
		require.NoError(t, err)
		deleted = append(deleted, n)
		if n < 200 {
			break
		}
	}
	require.Equal(t, []int{200, 200, 99}, deleted) // the event at i = 500 is at the cut-off, not before
	var events, deliveries, attempts int
	require.NoError(t, pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM events), (SELECT count(*) FROM deliveries),
		(SELECT count(*) FROM delivery_attempts)`).Scan(&events, &deliveries, &attempts))
	require.Equal(t, [3]int{19501, 19501, 19501}, [3]int{events, deliveries, attempts})
}
