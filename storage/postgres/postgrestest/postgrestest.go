package postgrestest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/keelpay/keelpay/keyring/keyringtest"
	"github.com/keelpay/keelpay/storage/postgres"
)

// Environment variables.
const (
	// EnvDSN names the server tests run against.
	EnvDSN = "KEELPAY_TEST_POSTGRES"
	// EnvRequire, set to 1, fails the tests that would be skipped for
	// want of EnvDSN.
	EnvRequire = "KEELPAY_REQUIRE_POSTGRES"
)

// DSN returns the DSN in KEELPAY_TEST_POSTGRES. When there is none it
// skips the test, or fails it when KEELPAY_REQUIRE_POSTGRES=1.
func DSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(EnvDSN)
	if dsn == "" {
		if os.Getenv(EnvRequire) == "1" {
			t.Fatal(EnvDSN + " is not set and " + EnvRequire + "=1: PostgreSQL tests cannot run")
		}
		t.Skip(EnvDSN + " is not set: PostgreSQL tests skipped")
	}
	return dsn
}

// NewSchema creates an empty schema with a random name (kp_...) and drops
// it, with everything in it, when the test ends.
func NewSchema(t testing.TB) string {
	t.Helper()
	dsn := DSN(t)
	var b [8]byte
	_, _ = rand.Read(b[:])
	schema := "kp_" + hex.EncodeToString(b[:])
	exec(t, dsn, `CREATE SCHEMA `+pgx.Identifier{schema}.Sanitize())
	t.Cleanup(func() { exec(t, dsn, `DROP SCHEMA `+pgx.Identifier{schema}.Sanitize()+` CASCADE`) })
	return schema
}

// Open opens the database in schema (migrating it if needed) and closes it
// when the test ends.
func Open(t testing.TB, schema string) *postgres.DB {
	t.Helper()
	// A small pool: many tests share the server's connections.
	db, err := postgres.Open(context.Background(), postgres.Config{DSN: DSN(t), Keyring: keyringtest.Keyring(), MaxConns: 4, Schema: schema})
	if err != nil {
		t.Fatalf("postgrestest: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// NewDB returns a migrated, empty database in a schema of its own that
// lives until the test ends.
func NewDB(t testing.TB) *postgres.DB {
	t.Helper()
	return Open(t, NewSchema(t))
}

func exec(t testing.TB, dsn, sql string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("postgrestest: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql); err != nil {
		t.Fatalf("postgrestest: %s: %v", sql, err)
	}
}
