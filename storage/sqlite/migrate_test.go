package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"io/fs"
	"path/filepath"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay/keyring/keyringtest"
	"github.com/keelpay/keelpay/storage"
	"github.com/keelpay/keelpay/storage/sqlite"
)

// rawDB opens the file with database/sql, as another tool would.
func rawDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	return db
}

// migrationFiles are the numbered files of sqlite.Migrations, in order.
func migrationFiles(t *testing.T) []string {
	t.Helper()
	names, err := fs.Glob(sqlite.Migrations, "migration/*.sql")
	require.NoError(t, err)
	require.NotEmpty(t, names)
	sort.Strings(names)
	return names
}

func appliedVersions(t *testing.T, db *sql.DB, table string) int {
	t.Helper()
	var n int
	require.NoError(t, db.QueryRow(`SELECT count(*) FROM `+table).Scan(&n))
	return n
}

// works opens the file with keelpay and reads from it.
func works(t *testing.T, cfg sqlite.Config) {
	t.Helper()
	db, err := sqlite.Open(context.Background(), cfg)
	require.NoError(t, err)
	defer db.Close()
	_, err = db.StoreGetByID(context.Background(), "store_nope")
	require.True(t, errors.Is(err, storage.ErrNotFound), "%v", err)
}

func TestMigrateThenOpen(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "keelpay.db")
	require.NoError(t, sqlite.Migrate(context.Background(), sqlite.Config{Keyring: keyringtest.Keyring(), Path: path}))
	require.NoError(t, sqlite.Migrate(context.Background(), sqlite.Config{Keyring: keyringtest.Keyring(), Path: path}), "a second run changes nothing")
	require.Equal(t, len(migrationFiles(t)), appliedVersions(t, rawDB(t, path), sqlite.MigrationsTable))
	works(t, sqlite.Config{Keyring: keyringtest.Keyring(), Path: path})
}

// A file shared with golang-migrate, whose own table is schema_migrations
// (version, dirty): keelpay opens it and leaves that table alone.
func TestOpenBesideGolangMigrate(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "app.db")
	raw := rawDB(t, path)
	_, err := raw.Exec(`CREATE TABLE schema_migrations (version uint64, dirty bool);
		CREATE UNIQUE INDEX version_unique ON schema_migrations (version);
		INSERT INTO schema_migrations (version, dirty) VALUES (20260101120000, false);
		CREATE TABLE app_orders (id INTEGER PRIMARY KEY)`)
	require.NoError(t, err)

	works(t, sqlite.Config{Keyring: keyringtest.Keyring(), Path: path})
	var version int64
	var dirty bool
	require.NoError(t, raw.QueryRow(`SELECT version, dirty FROM schema_migrations`).Scan(&version, &dirty))
	require.Equal(t, int64(20260101120000), version)
	require.False(t, dirty)
	require.Equal(t, len(migrationFiles(t)), appliedVersions(t, raw, sqlite.MigrationsTable))
}

// A database keelpay created when its table was still schema_migrations:
// the table is moved under its new name and nothing is applied twice.
func TestOpenMovesTheOldMigrationsTable(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "keelpay.db")
	require.NoError(t, sqlite.Migrate(context.Background(), sqlite.Config{Keyring: keyringtest.Keyring(), Path: path}))
	raw := rawDB(t, path)
	_, err := raw.Exec(`ALTER TABLE ` + sqlite.MigrationsTable + ` RENAME TO schema_migrations`)
	require.NoError(t, err)

	works(t, sqlite.Config{Keyring: keyringtest.Keyring(), Path: path})
	require.Equal(t, len(migrationFiles(t)), appliedVersions(t, raw, sqlite.MigrationsTable))
	var n int
	require.NoError(t, raw.QueryRow(`SELECT count(*) FROM sqlite_schema WHERE name = 'schema_migrations'`).Scan(&n))
	require.Zero(t, n)
}

// A team applies the SQL of sqlite.Migrations with its own tool and opens
// the database with SkipMigrations.
func TestOwnToolAppliesTheMigrations(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "keelpay.db")
	raw := rawDB(t, path)
	for _, name := range migrationFiles(t) {
		body, err := sqlite.Migrations.ReadFile(name)
		require.NoError(t, err)
		_, err = raw.Exec(string(body))
		require.NoError(t, err, name)
	}
	works(t, sqlite.Config{Keyring: keyringtest.Keyring(), Path: path, SkipMigrations: true})
	var n int
	require.NoError(t, raw.QueryRow(`SELECT count(*) FROM sqlite_schema WHERE name = ?`, sqlite.MigrationsTable).Scan(&n))
	require.Zero(t, n, "SkipMigrations creates no table of its own")
}
