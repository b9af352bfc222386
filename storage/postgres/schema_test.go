package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io/fs"
	"net/url"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay/keyring/keyringtest"
	"github.com/keelpay/keelpay/storage/postgres"
	"github.com/keelpay/keelpay/storage/postgres/postgrestest"
)

// newDatabase creates an empty database of its own on the test server (so
// that its public schema and a "keelpay" schema belong to this test alone)
// and returns a DSN to it that sets no search_path. The database is dropped
// when the test ends.
func newDatabase(t *testing.T) string {
	t.Helper()
	dsn := postgrestest.DSN(t)
	u, err := url.Parse(dsn)
	require.NoError(t, err, "KEELPAY_TEST_POSTGRES must be a URL for this test")
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "kp_db_" + hex.EncodeToString(b[:])
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	defer admin.Close(ctx)
	_, err = admin.Exec(ctx, `CREATE DATABASE `+pgx.Identifier{name}.Sanitize())
	require.NoError(t, err)
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), dsn)
		if err == nil {
			_, _ = c.Exec(context.Background(), `DROP DATABASE IF EXISTS `+pgx.Identifier{name}.Sanitize()+` WITH (FORCE)`)
			c.Close(context.Background())
		}
	})
	u.Path = "/" + name
	q := u.Query()
	q.Del("search_path")
	u.RawQuery = q.Encode()
	return u.String()
}

func currentSchema(t *testing.T, db *postgres.DB) string {
	t.Helper()
	var s string
	require.NoError(t, postgres.Pool(db).QueryRow(context.Background(), `SELECT current_schema()`).Scan(&s))
	return s
}

func countIn(t *testing.T, db *postgres.DB, schema string) int {
	t.Helper()
	var n int
	require.NoError(t, postgres.Pool(db).QueryRow(context.Background(),
		`SELECT count(*) FROM information_schema.tables WHERE table_schema = $1`, schema).Scan(&n))
	return n
}

// Without Schema and without a search_path in the DSN, keelpay's tables go
// to a schema of keelpay's own, not to public.
func TestDefaultSchemaIsKeelpays(t *testing.T) {
	t.Parallel()
	dsn := newDatabase(t)
	ctx := context.Background()
	db, err := postgres.Open(ctx, postgres.Config{Keyring: keyringtest.Keyring(), DSN: dsn, MaxConns: 2})
	require.NoError(t, err)
	defer db.Close()
	require.Equal(t, postgres.SchemaDefault, currentSchema(t, db))
	require.Positive(t, countIn(t, db, postgres.SchemaDefault))
	require.Zero(t, countIn(t, db, "public"))

	// Opening again, or migrating, finds it there.
	require.NoError(t, postgres.Migrate(ctx, postgres.Config{Keyring: keyringtest.Keyring(), DSN: dsn}))
	again, err := postgres.Open(ctx, postgres.Config{Keyring: keyringtest.Keyring(), DSN: dsn, MaxConns: 2})
	require.NoError(t, err)
	defer again.Close()
	require.Equal(t, postgres.SchemaDefault, currentSchema(t, again))
}

// A database whose keelpay tables were created in public, before keelpay
// had a default schema, keeps working where it is.
func TestEarlierTablesInPublicStay(t *testing.T) {
	t.Parallel()
	dsn := newDatabase(t)
	ctx := context.Background()
	require.NoError(t, postgres.Migrate(ctx, postgres.Config{Keyring: keyringtest.Keyring(), DSN: dsn, Schema: "public"}))
	db, err := postgres.Open(ctx, postgres.Config{Keyring: keyringtest.Keyring(), DSN: dsn, MaxConns: 2})
	require.NoError(t, err)
	defer db.Close()
	require.Equal(t, "public", currentSchema(t, db))
	var n int
	require.NoError(t, postgres.Pool(db).QueryRow(ctx,
		`SELECT count(*) FROM pg_namespace WHERE nspname = $1`, postgres.SchemaDefault).Scan(&n))
	require.Zero(t, n, "no empty keelpay schema beside the tables in public")
}

// A team applies the SQL of postgres.Migrations with its own tool, in a
// schema it chose, and opens the database with SkipMigrations.
func TestOwnToolAppliesTheMigrations(t *testing.T) {
	t.Parallel()
	schema := postgrestest.NewSchema(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, postgrestest.DSN(t))
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, `SET search_path TO `+pgx.Identifier{schema}.Sanitize())
	require.NoError(t, err)
	names, err := fs.Glob(postgres.Migrations, "migration/*.sql")
	require.NoError(t, err)
	require.NotEmpty(t, names)
	for _, name := range names {
		body, err := postgres.Migrations.ReadFile(name)
		require.NoError(t, err)
		_, err = conn.Exec(ctx, string(body))
		require.NoError(t, err, name)
	}
	db, err := postgres.Open(ctx, postgres.Config{Keyring: keyringtest.Keyring(), DSN: postgrestest.DSN(t), MaxConns: 2, Schema: schema, SkipMigrations: true})
	require.NoError(t, err)
	defer db.Close()
	_, err = db.StoreGetByID(ctx, "store_nope")
	require.Error(t, err)
	var exists bool
	require.NoError(t, conn.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, schema+"."+postgres.MigrationsTable).Scan(&exists))
	require.False(t, exists, "SkipMigrations creates no table of its own")
}

// A DSN whose search_path names a schema that does not exist fails to
// open with an error that names the schema and says how to create it; the
// schema is not created (a misspelt name must not start an empty keelpay
// beside the real one). Once created, the same DSN opens.
func TestMissingSearchPathSchemaIsNamed(t *testing.T) {
	t.Parallel()
	dsn := newDatabase(t)
	u, err := url.Parse(dsn)
	require.NoError(t, err)
	q := u.Query()
	q.Set("search_path", "payments")
	u.RawQuery = q.Encode()
	withSchema := u.String()
	ctx := context.Background()

	_, err = postgres.Open(ctx, postgres.Config{Keyring: keyringtest.Keyring(), DSN: withSchema, MaxConns: 2})
	require.Error(t, err)
	require.Contains(t, err.Error(), "the schema payments of the search_path (payments) does not exist")
	require.Contains(t, err.Error(), "CREATE SCHEMA payments")
	require.NotContains(t, err.Error(), u.Host, "the DSN is not in the error")
	// Config.Schema is the same rule.
	_, err = postgres.Open(ctx, postgres.Config{Keyring: keyringtest.Keyring(), DSN: dsn, Schema: "payments", MaxConns: 2})
	require.ErrorContains(t, err, "CREATE SCHEMA")

	conn, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	defer conn.Close(ctx)
	var n int
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM pg_namespace WHERE nspname = 'payments'`).Scan(&n))
	require.Zero(t, n, "the schema is not created for the DSN")
	_, err = conn.Exec(ctx, `CREATE SCHEMA payments`)
	require.NoError(t, err)
	db, err := postgres.Open(ctx, postgres.Config{Keyring: keyringtest.Keyring(), DSN: withSchema, MaxConns: 2})
	require.NoError(t, err)
	defer db.Close()
	require.Equal(t, "payments", currentSchema(t, db))
}
