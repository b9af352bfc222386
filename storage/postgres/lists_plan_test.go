package postgres_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/storage"
	"github.com/keelpay/keelpay/storage/postgres"
	"github.com/keelpay/keelpay/storage/postgres/postgrestest"
	"github.com/keelpay/keelpay/storage/storagetest"
)

// A filtered page of GET /v1/payment_intents is a backward (or, before a
// cursor, forward) walk of the filter's index, with no sort: on 3,000
// analysed intents each filter, with a creation-time range and a cursor,
// must be planned as an index scan of payment_intents with no Sort node
// and no sequential scan. (A simple check: the planner's statistics are
// those of a small table; bench/intentlists measures SQLite at scale.)
func TestIntentListQueriesUseIndexes(t *testing.T) {
	t.Parallel()
	db := postgrestest.NewDB(t)
	ctx := context.Background()
	s := storagetest.NewStoreRecord(t0)
	require.NoError(t, db.StoreInsert(ctx, s))
	statuses := []keelpay.PaymentIntentStatus{keelpay.IntentSucceeded, keelpay.IntentSucceeded, keelpay.IntentSucceeded,
		keelpay.IntentRequiresPaymentMethod, keelpay.IntentCanceled}
	require.NoError(t, db.WithTx(ctx, func(ctx context.Context, tx storage.Executor) error {
		for i := range 3000 {
			pi := storagetest.NewIntentRecord(s.ID, t0.Add(time.Duration(i)*time.Minute))
			pi.Customer.ID = fmt.Sprintf("cus_%03d", i%300)
			pi.Reference = fmt.Sprintf("order-%d", i)
			pi.Status = statuses[i%len(statuses)]
			if err := tx.PaymentIntentInsert(ctx, pi); err != nil {
				return err
			}
		}
		return nil
	}))
	pool := postgres.Pool(db)
	_, err := pool.Exec(ctx, "ANALYZE payment_intents")
	require.NoError(t, err)

	mid := t0.Add(1500 * time.Minute)
	for _, f := range []struct {
		p     storage.PaymentIntentListParams
		index string
	}{
		{storage.PaymentIntentListParams{}, "payment_intents_store_created"},
		{storage.PaymentIntentListParams{CustomerID: "cus_042"}, "payment_intents_store_customer"},
		{storage.PaymentIntentListParams{Reference: "order-42"}, "payment_intents_store_reference"},
		{storage.PaymentIntentListParams{CustomerID: "cus_042", Reference: "order-42"}, "payment_intents_store_reference"},
		{storage.PaymentIntentListParams{Status: keelpay.IntentCanceled, CreatedGTE: mid.Add(-2 * time.Hour), CreatedLT: mid.Add(2 * time.Hour)}, "payment_intents_store_status"},
		{storage.PaymentIntentListParams{Status: keelpay.IntentCanceled, StartingAfter: "pi_x"}, "payment_intents_store_status"},
		{storage.PaymentIntentListParams{CustomerID: "cus_042", EndingBefore: "pi_x"}, "payment_intents_store_customer"},
	} {
		p := f.p
		p.StoreID, p.Limit = s.ID, 10
		query, args := postgres.IntentListSQL(db, p, mid, 1500)
		rows, err := pool.Query(ctx, "EXPLAIN "+query, args...)
		require.NoError(t, err)
		lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err)
		plan := strings.Join(lines, "\n")
		t.Logf("%+v:\n%s", p, plan)
		require.Contains(t, plan, "using "+f.index+" on payment_intents", "%+v", p)
		require.NotContains(t, plan, "Sort", "%+v", p)
		require.NotContains(t, plan, "Seq Scan", "%+v", p)
	}
}
