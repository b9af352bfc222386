package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/keyring/keyringtest"
	"github.com/keelpay/keelpay/storage"
	"github.com/keelpay/keelpay/storage/internal/core"
)

// Every page of GET /v1/payment_intents and GET /v1/refunds, with any one
// filter, a creation-time range or not, and either cursor or none, must be
// planned as a search of one index in the list's order (created_at, seq):
// no scan of the table and no sort, or a page would cost in proportion to
// the store's objects.
func TestListQueriesSearchAnIndex(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := Open(ctx, Config{Keyring: keyringtest.Keyring(), Path: filepath.Join(t.TempDir(), "keelpay.db")})
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	plan := func(query string, args ...any) string {
		t.Helper()
		return queryPlan(t, db, query, args...)
	}
	requireIndexWalk := func(t *testing.T, name, got, table, index string) {
		t.Helper()
		t.Logf("%s:\n%s", name, got)
		require.Regexp(t, `^SEARCH `+table+` USING (COVERING )?INDEX `+index+` \(store_id=\?`, got, name)
		require.NotContains(t, got, "\n", name+": one step")
		require.NotContains(t, got, "TEMP B-TREE", name)
		require.NotContains(t, got, "SCAN", name)
	}
	at := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	ranges := []struct{ gte, lt time.Time }{{}, {gte: at}, {lt: at}, {gte: at, lt: at.Add(time.Hour)}}
	cursors := []string{"", "starting_after", "ending_before"}
	withCursor := func(cursor string) (after, before string) {
		switch cursor {
		case "starting_after":
			return "pi_x", ""
		case "ending_before":
			return "", "pi_x"
		}
		return "", ""
	}

	require.Contains(t, plan(sqlText.IntentSeq, "s", "pi_x"), "USING INDEX sqlite_autoindex_payment_intents_1 (id=?)")
	require.Contains(t, plan(sqlText.RefundSeq, "s", "re_x"), "USING INDEX sqlite_autoindex_refunds_1 (id=?)")

	intentFilters := []struct {
		p     storage.PaymentIntentListParams
		index string
	}{
		{storage.PaymentIntentListParams{}, "payment_intents_store_created"},
		{storage.PaymentIntentListParams{CustomerID: "cus_1"}, "payment_intents_store_customer"},
		{storage.PaymentIntentListParams{Status: keelpay.IntentSucceeded}, "payment_intents_store_status"},
		{storage.PaymentIntentListParams{Reference: "order-1"}, "payment_intents_store_reference"},
		// Two filters: one index, the other filter checked on its rows.
		{storage.PaymentIntentListParams{CustomerID: "cus_1", Reference: "order-1"}, "payment_intents_store_reference"},
		{storage.PaymentIntentListParams{CustomerID: "cus_1", Status: keelpay.IntentSucceeded}, "payment_intents_store_customer"},
	}
	for _, f := range intentFilters {
		for _, r := range ranges {
			for _, cursor := range cursors {
				p := f.p
				p.StoreID, p.Limit, p.CreatedGTE, p.CreatedLT = "s", 10, r.gte, r.lt
				p.StartingAfter, p.EndingBefore = withCursor(cursor)
				query, args, _ := core.ListSQL(dialect{}, db.queries.IntentListQuery(p), core.Cursor{Created: at, Seq: 7})
				name := fmt.Sprintf("intents %+v", p)
				requireIndexWalk(t, name, plan(query, args...), "payment_intents", f.index)
			}
		}
	}

	refundFilters := []struct {
		p     storage.RefundListParams
		index string
	}{
		{storage.RefundListParams{}, "refunds_store_created"},
		{storage.RefundListParams{Status: keelpay.RefundPending}, "refunds_store_status"},
	}
	for _, f := range refundFilters {
		for _, r := range ranges {
			for _, cursor := range cursors {
				p := f.p
				p.StoreID, p.Limit, p.CreatedGTE, p.CreatedLT = "s", 10, r.gte, r.lt
				p.StartingAfter, p.EndingBefore = withCursor(cursor)
				query, args, _ := core.ListSQL(dialect{}, db.queries.RefundListQuery(p), core.Cursor{Created: at, Seq: 7})
				requireIndexWalk(t, fmt.Sprintf("refunds %+v", p), plan(query, args...), "refunds", f.index)
			}
		}
	}
	// A refund's intent is one row of the unique index.
	query, args, _ := core.ListSQL(dialect{}, db.queries.RefundListQuery(storage.RefundListParams{
		StoreID: "s", PaymentIntentID: "pi_x", Limit: 10}), core.Cursor{})
	got := plan(query, args...)
	t.Logf("refunds of an intent:\n%s", got)
	require.Contains(t, got, "USING INDEX sqlite_autoindex_refunds_2 (payment_intent_id=?)")
	require.NotContains(t, got, "SCAN")
}
