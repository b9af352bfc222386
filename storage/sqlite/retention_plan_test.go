package sqlite

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay/keyring/keyringtest"
)

// A retention pass must cost the batch it deletes, whatever the backlog
// and however many recent events stay: the lookup by time walks an index
// from the oldest row, and each deletion searches by key. A scan or a
// sort here would read the whole table on every pass.
func TestRetentionQueriesSearchAnIndex(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := Open(ctx, Config{Keyring: keyringtest.Keyring(), Path: filepath.Join(t.TempDir(), "keelpay.db")})
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	before := micros(time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC))

	plan := func(query string, args ...any) string {
		t.Helper()
		// The reader pool is query_only: EXPLAIN QUERY PLAN of a DELETE
		// only plans it.
		got := queryPlan(t, db, query, args...)
		t.Logf("%s\n%s", query, got)
		require.NotContains(t, got, "TEMP B-TREE")
		return got
	}
	noScanOf := func(t *testing.T, got string, tables ...string) {
		t.Helper()
		for _, table := range tables {
			require.NotContains(t, got, "SCAN "+table+" ")
			require.False(t, strings.HasSuffix(got, "SCAN "+table), got)
		}
	}

	// searches requires a search of table on index, covering or not.
	searches := func(t *testing.T, got, table, index, cond string) {
		t.Helper()
		for _, line := range strings.Split(got, "\n") {
			if strings.HasPrefix(line, "SEARCH "+table+" USING ") && strings.HasSuffix(line, "INDEX "+index+" ("+cond+")") {
				return
			}
		}
		t.Fatalf("no search of %s on %s (%s) in the plan:\n%s", table, index, cond, got)
	}

	got := plan(eventPurgeQuery, before, 1000)
	searches(t, got, "e", "events_created_at", "created_at<?")
	searches(t, got, "d", "sqlite_autoindex_deliveries_1", "event_id=?")
	noScanOf(t, got, "e", "d")

	got = plan(eventPurgeAttempts, `["evt_1"]`)
	searches(t, got, "delivery_attempts", "delivery_attempts_event_seq", "event_id=?")
	noScanOf(t, got, "delivery_attempts")
	got = plan(eventPurgeDeliveries, `["evt_1"]`)
	searches(t, got, "deliveries", "sqlite_autoindex_deliveries_1", "event_id=?")
	noScanOf(t, got, "deliveries")
	got = plan(eventPurgeEvents, `["evt_1"]`)
	searches(t, got, "events", "sqlite_autoindex_events_1", "id=?")
	noScanOf(t, got, "events")

	got = plan(sqlText.CardSessionPurge, before, 1000)
	searches(t, got, "card_sessions", "card_sessions_unused_expiry", "expires_at<?")
	noScanOf(t, got, "card_sessions")
}
