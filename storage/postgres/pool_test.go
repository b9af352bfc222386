package postgres_test

import (
	"context"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay/keyring/keyringtest"
	"github.com/keelpay/keelpay/storage"
	"github.com/keelpay/keelpay/storage/postgres"
	"github.com/keelpay/keelpay/storage/postgres/postgrestest"
	"github.com/keelpay/keelpay/storage/storagetest"
)

// callersPool is a pool an application made itself, on schema, with a
// hook of its own; it is closed when the test ends, after keelpay's DB.
func callersPool(t *testing.T, schema string) (*pgxpool.Pool, *atomic.Int64) {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(postgrestest.DSN(t))
	require.NoError(t, err)
	cfg.MaxConns = 4
	cfg.ConnConfig.RuntimeParams["search_path"] = pgx.Identifier{schema}.Sanitize()
	connects := new(atomic.Int64)
	cfg.AfterConnect = func(context.Context, *pgx.Conn) error { connects.Add(1); return nil }
	cfg.BeforeClose = postgres.BeforeClose
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool, connects
}

func TestConformanceOnCallersPool(t *testing.T) {
	t.Parallel()
	postgrestest.DSN(t)
	storagetest.Run(t, func(t *testing.T) storage.Storage {
		pool, _ := callersPool(t, postgrestest.NewSchema(t))
		db, err := postgres.OpenPool(context.Background(), pool, postgres.Config{Keyring: keyringtest.Keyring()})
		require.NoError(t, err)
		t.Cleanup(func() { db.Close() })
		return db
	})
}

func TestCloseLeavesCallersPoolOpen(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	schema := postgrestest.NewSchema(t)
	pool, connects := callersPool(t, schema)
	db, err := postgres.OpenPool(ctx, pool, postgres.Config{Keyring: keyringtest.Keyring(), Schema: schema})
	require.NoError(t, err)
	s := storagetest.NewStoreRecord(t0)
	require.NoError(t, db.StoreInsert(ctx, s))
	require.NoError(t, db.Close())

	// The pool, its hook and keelpay's tables are still there.
	var n int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM stores WHERE id = $1`, s.ID).Scan(&n))
	require.Equal(t, 1, n)
	require.Positive(t, connects.Load())

	// Opening again finds the migrations applied and the store.
	again, err := postgres.OpenPool(ctx, pool, postgres.Config{Keyring: keyringtest.Keyring(), SkipMigrations: true})
	require.NoError(t, err)
	defer again.Close()
	got, err := again.StoreGetByID(ctx, s.ID)
	require.NoError(t, err)
	require.Equal(t, s.ClientID, got.ClientID)
}

func TestCallersPoolConfigErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	schema := postgrestest.NewSchema(t)
	pool, _ := callersPool(t, schema)
	kr := keyringtest.Keyring()
	_, err := postgres.OpenPool(ctx, pool, postgres.Config{Keyring: kr, DSN: postgrestest.DSN(t)})
	require.ErrorContains(t, err, "DSN and Config.Pool")
	_, err = postgres.OpenPool(ctx, pool, postgres.Config{Keyring: kr, MaxConns: 2})
	require.ErrorContains(t, err, "MaxConns")
	_, err = postgres.OpenPool(ctx, pool, postgres.Config{Keyring: kr, Schema: "kp_elsewhere"})
	require.ErrorContains(t, err, "current schema")
	_, err = postgres.OpenPool(ctx, pool, postgres.Config{})
	require.ErrorContains(t, err, "Keyring is required")
	// Migrate works on the pool too.
	require.NoError(t, postgres.Migrate(ctx, postgres.Config{Keyring: kr, Pool: pool}))
}

// TestReplicationOfALoneServer: a server without standbys passes Open, and
// Replication says what Open read (the test server has no standby and
// synchronous_standby_names is empty). The refusal of a primary with an
// asynchronous standby is exercised against a real standby by
// cmd/refserver's failover test.
func TestReplicationOfALoneServer(t *testing.T) {
	t.Parallel()
	db := postgrestest.NewDB(t)
	r := db.Replication()
	require.Zero(t, r.Standbys, "%+v", r)
	require.False(t, r.Waits, "%+v", r)
}

// TestPoolSizeDefault: a pool keelpay opens holds MaxConnsDefault
// connections (or one per CPU, when there are more), unless the DSN's
// pool_max_conns or Config.MaxConns says otherwise.
func TestPoolSizeDefault(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn := postgrestest.DSN(t)
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	for _, c := range []struct {
		name string
		dsn  string
		max  int32
		want int32
	}{
		{"default", dsn, 0, int32(max(postgres.MaxConnsDefault, runtime.NumCPU()))},
		{"DSN", dsn + sep + "pool_max_conns=3", 0, 3},
		{"Config", dsn + sep + "pool_max_conns=3", 5, 5},
	} {
		db, err := postgres.Open(ctx, postgres.Config{DSN: c.dsn, MaxConns: c.max, Keyring: keyringtest.Keyring(), Schema: postgrestest.NewSchema(t)})
		require.NoError(t, err, c.name)
		require.Equal(t, c.want, postgres.Pool(db).Config().MaxConns, c.name)
		require.NoError(t, db.Close())
	}
}
