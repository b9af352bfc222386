package postgrestest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
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

// skipped counts the tests of this test binary that DSN skipped.
var skipped atomic.Int64

// DSN returns the DSN in KEELPAY_TEST_POSTGRES. When there is none it
// skips the test, or fails it when KEELPAY_REQUIRE_POSTGRES=1. It is the one
// place that decides whether a PostgreSQL test runs.
func DSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(EnvDSN)
	if dsn == "" {
		if os.Getenv(EnvRequire) == "1" {
			t.Fatal(EnvDSN + " is not set and " + EnvRequire + "=1: PostgreSQL tests cannot run")
		}
		skipped.Add(1)
		t.Skip(EnvDSN + " is not set: PostgreSQL tests skipped")
	}
	return dsn
}

// Skipped is how many tests of this test binary DSN has skipped so far.
func Skipped() int64 { return skipped.Load() }

// Run runs the tests of a package (call it from TestMain, as
// os.Exit(postgrestest.Run(m))) and then, when DSN skipped any of them,
// says so in one line that names the package and KEELPAY_TEST_POSTGRES.
//
// The go command keeps the output of a package whose tests passed to
// itself (go test ./... prints only "ok"), so the line goes to the test
// output, shown by go test -v, -json and on failure, and also to the
// terminal (/dev/tty) when there is one and -v is off, where a plain
// go test ./... shows it. A result the go command takes from its cache is
// printed without running the tests, and without the line.
func Run(m *testing.M) int {
	code := m.Run()
	if n := Skipped(); n > 0 {
		line := skipLine(packageDir(), n)
		fmt.Fprint(os.Stdout, line)
		if !testing.Verbose() {
			if tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
				fmt.Fprint(tty, line)
				tty.Close()
			}
		}
	}
	return code
}

// skipLine is Run's report of n skipped tests in the package at dir.
func skipLine(dir string, n int64) string {
	tests := "tests"
	if n == 1 {
		tests = "test"
	}
	return fmt.Sprintf("%s: %d PostgreSQL %s skipped: %s is not set (%s=1 makes them fail)\n", dir, n, tests, EnvDSN, EnvRequire)
}

// packageDir is the directory of the package under test (the test
// binary's working directory) from the module's root, such as
// storage/postgres.
func packageDir() string {
	wd, err := os.Getwd()
	if err != nil {
		return "this package"
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			if rel, err := filepath.Rel(dir, wd); err == nil {
				return filepath.ToSlash(rel)
			}
			return wd
		}
		if filepath.Dir(dir) == dir {
			return wd
		}
	}
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
