package keelpaytest_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/keelpaytest"
	"github.com/keelpay/keelpay/provider/sandbox"
	"github.com/keelpay/keelpay/storage/postgres"
	"github.com/keelpay/keelpay/storage/postgres/postgrestest"
)

func TestMain(m *testing.M) {
	// postgrestest.Run reports the tests skipped for want of PostgreSQL.
	os.Exit(postgrestest.Run(m))
}

// checkout is a store's checkout as its tests would run it: a card paid
// at once, one after 3D Secure, one whose outcome is known only after the
// clock moved, and a refund, each with its webhook.
func checkout(t *testing.T, kp *keelpaytest.Kit) {
	store := kp.Store(t)
	card := store.SaveCard(t, sandbox.CardVisa)
	pi := store.Pay(t, card, 1999, "eur")
	require.Equal(t, keelpay.IntentSucceeded, pi.Status)
	kp.RequireEvent(t, keelpay.EventPaymentIntentSucceeded, pi.ID)

	challenged := store.Pay(t, store.SaveCard(t, sandbox.CardThreeDSecure), 2500, "eur")
	require.Equal(t, keelpay.IntentRequiresAction, challenged.Status)
	require.Equal(t, keelpay.IntentSucceeded, store.Answer3DS(t, challenged.ID, true).Status)
	kp.RequireEvent(t, keelpay.EventPaymentIntentSucceeded, challenged.ID)

	unknown := store.Pay(t, store.SaveCard(t, sandbox.CardOutcomeUnknown), 700, "eur")
	require.Equal(t, keelpay.IntentProcessing, unknown.Status)
	kp.Advance(t, 2*time.Minute)
	kp.RequireEvent(t, keelpay.EventPaymentIntentSucceeded, unknown.ID)

	refund := store.Refund(t, pi.ID, "requested_by_customer")
	kp.RequireEvent(t, keelpay.EventRefundSucceeded, refund.ID)
	store.RequireIntentStatus(t, pi.ID, keelpay.IntentSucceeded)
}

// TestCheckoutOnSQLiteAndPostgreSQL runs the same checkout on the kit's
// SQLite database and, with WithPostgres, in a PostgreSQL schema of the
// test's own, which is dropped when the test ends.
func TestCheckoutOnSQLiteAndPostgreSQL(t *testing.T) {
	t.Parallel()
	t.Run("SQLite", func(t *testing.T) {
		t.Parallel()
		checkout(t, keelpaytest.Start(t))
	})
	t.Run("PostgreSQL", func(t *testing.T) {
		t.Parallel()
		dsn := postgrestest.DSN(t)
		var schema string
		t.Run("checkout", func(t *testing.T) {
			kp := keelpaytest.Start(t, keelpaytest.WithPostgres(dsn))
			schema = keelpaytest.SchemaOf(kp)
			require.Regexp(t, `^kp_[0-9a-f]{16}$`, schema)
			require.NotEqual(t, postgres.SchemaDefault, schema)
			checkout(t, kp)
			require.Equal(t, 1, schemaCount(t, dsn, schema), "the kit's tables are in its schema")
		})
		require.Zero(t, schemaCount(t, dsn, schema), "the schema is dropped when the test ends")
	})
}

// TestPostgresNeedsADSN: an empty DSN is a mistake of the test, which
// should have skipped; the kit says so rather than opening SQLite.
func TestPostgresNeedsADSN(t *testing.T) {
	t.Parallel()
	msg := failure(t, func(tb testing.TB) { keelpaytest.Start(tb, keelpaytest.WithPostgres("")) })
	require.Contains(t, msg, "WithPostgres: the DSN is empty")
}

// schemaCount is how many schemas named schema the database has (0 or
// 1), and the number of keelpay's tables in it when there is one.
func schemaCount(t *testing.T, dsn, schema string) int {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	defer conn.Close(ctx)
	var n int
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM pg_namespace WHERE nspname = $1`, schema).Scan(&n))
	if n == 1 {
		var tables int
		require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM pg_tables WHERE schemaname = $1`, schema).Scan(&tables))
		require.NotZero(t, tables, "keelpay's tables are in %s", schema)
	}
	return n
}
