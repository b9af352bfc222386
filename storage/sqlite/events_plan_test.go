package sqlite

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/keyring/keyringtest"
	"github.com/keelpay/keelpay/storage"
	"github.com/keelpay/keelpay/storage/storagetest"
)

// Every page of GET /v1/events is a walk of an index from its cursor:
// each filter combination the API allows (a type or not; starting_after,
// ending_before or neither) must be planned as index searches with no
// scan and no sort, or a page would cost in proportion to the store's
// events.
func TestEventListQueriesSearchAnIndex(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := Open(ctx, Config{Keyring: keyringtest.Keyring(), Path: filepath.Join(t.TempDir(), "keelpay.db")})
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	at := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	s := storagetest.NewStoreRecord(at)
	require.NoError(t, db.StoreInsert(ctx, s))
	e := storagetest.NewEventRecord(s.ID, keelpay.EventWebhookTest, at)
	require.NoError(t, db.EventInsert(ctx, e))

	plan := func(query string, args ...any) string {
		t.Helper()
		return queryPlan(t, db, query, args...)
	}

	got := plan(sqlText.EventSeq, s.ID, e.ID)
	require.Contains(t, got, "SEARCH events USING INDEX sqlite_autoindex_events_1 (id=?)")

	for _, typ := range []keelpay.EventType{"", keelpay.EventWebhookTest} {
		for _, cursor := range []string{"", "starting_after", "ending_before"} {
			p := storage.EventListParams{StoreID: s.ID, Type: typ, Limit: 100}
			switch cursor {
			case "starting_after":
				p.StartingAfter = e.ID
			case "ending_before":
				p.EndingBefore = e.ID
			}
			query, args, _ := eventListQuery(p, 1)
			got := plan(query, args...)
			t.Logf("type %q, cursor %q:\n%s", typ, cursor, got)
			index, search := "events_store_seq", "store_id=?"
			if typ != "" {
				index, search = "events_store_type_seq", "store_id=? AND type=?"
			}
			switch cursor {
			case "starting_after":
				search += " AND seq<?"
			case "ending_before":
				search += " AND seq>?"
			}
			require.Contains(t, got, "SEARCH e USING INDEX "+index+" ("+search+")")
			require.Contains(t, got, "SEARCH d USING INDEX sqlite_autoindex_deliveries_1 (event_id=?)")
			require.NotContains(t, got, "SCAN")
			require.NotContains(t, got, "TEMP B-TREE")
		}
	}
}
