package postgres_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/storage/postgres"
	"github.com/keelpay/keelpay/storage/postgres/postgrestest"
	"github.com/keelpay/keelpay/storage/storagetest"
)

// TestOlderPersonalDataIsSealedAtOpen: a schema of the migration level
// before personal data was sealed, whose intents and card sessions hold
// their customers' name, email, phone and billing details in plain text,
// is sealed at Open: the values read back as they were, and no live row
// holds them in clear any more.
func TestOlderPersonalDataIsSealedAtOpen(t *testing.T) {
	t.Parallel()
	schema := postgrestest.NewSchema(t)
	ctx := context.Background()
	db := postgrestest.Open(t, schema)
	s := storagetest.NewStoreRecord(t0)
	require.NoError(t, db.StoreInsert(ctx, s))
	customer := keelpay.Customer{ID: "cus_older", Name: "Philippa Olderrow-Plaintext", Email: "philippa@older.example", Phone: "+35840999888777"}
	billing := keelpay.Billing{Country: "FI", State: "Pirkanmaa-Older", PostalCode: "OLD33100"}
	pi := storagetest.NewIntentRecord(s.ID, t0)
	pi.Customer, pi.Billing = customer, &billing
	require.NoError(t, db.PaymentIntentInsert(ctx, pi))
	cs := &keelpay.CardSession{
		ID: keelpay.NewID(keelpay.PrefixCardSession), StoreID: s.ID, ClientSecret: keelpay.NewID("cs_secret_"),
		Customer: customer, PageOrigins: []string{"https://shop.example"}, Status: keelpay.CardSessionOpen,
		ExpiresAt: t0.Add(time.Hour), CreatedAt: t0,
	}
	require.NoError(t, db.CardSessionInsert(ctx, cs))

	// The rows as the version before migration 018 wrote them.
	pool := postgres.Pool(db)
	_, err := pool.Exec(ctx, `UPDATE payment_intents SET customer_name = $1, customer_email = $2, customer_phone = $3,
		billing_country = $4, billing_state = $5, billing_postal_code = $6 WHERE id = $7`,
		customer.Name, customer.Email, customer.Phone, billing.Country, billing.State, billing.PostalCode, pi.ID)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `UPDATE card_sessions SET customer_name = $1, customer_email = $2, customer_phone = $3 WHERE id = $4`,
		customer.Name, customer.Email, customer.Phone, cs.ID)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `DELETE FROM `+postgres.MigrationsTable+` WHERE version = 18`)
	require.NoError(t, err)
	plain := []string{customer.Name, customer.Email, customer.Phone, billing.State, billing.PostalCode}
	rows := func() string {
		var all []string
		for _, table := range []string{"payment_intents", "card_sessions"} {
			r, err := pool.Query(ctx, `SELECT t::text FROM `+pgx.Identifier{schema, table}.Sanitize()+` t`)
			require.NoError(t, err)
			texts, err := pgx.CollectRows(r, pgx.RowTo[string])
			require.NoError(t, err)
			all = append(all, texts...)
		}
		return strings.Join(all, "\n")
	}
	for _, v := range plain {
		require.Contains(t, rows(), v, "the test sees the older rows")
	}
	db.Close()

	db = postgrestest.Open(t, schema)
	got, err := db.PaymentIntentGet(ctx, s.ID, pi.ID)
	require.NoError(t, err)
	require.Equal(t, customer, got.Customer)
	require.Equal(t, &billing, got.Billing)
	gotCS, err := db.CardSessionGet(ctx, s.ID, cs.ID)
	require.NoError(t, err)
	require.Equal(t, customer, gotCS.Customer)
	require.Equal(t, cs.ClientSecret, gotCS.ClientSecret)

	pool = postgres.Pool(db)
	for _, v := range plain {
		require.NotContains(t, rows(), v)
	}
	require.Contains(t, rows(), "enc:v1:test:")
	var applied int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM `+postgres.MigrationsTable+` WHERE version = 18`).Scan(&applied))
	require.Equal(t, 1, applied)
}
