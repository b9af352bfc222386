package postgres

import (
	"cmp"
	"context"
	"embed"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"net"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"go.opentelemetry.io/otel/trace"

	"github.com/keelpay/keelpay/keyring"
	"github.com/keelpay/keelpay/storage"
	"github.com/keelpay/keelpay/storage/internal/atrest"
	"github.com/keelpay/keelpay/storage/internal/core"
)

// Migrations holds keelpay's schema as numbered SQL files,
// migration/NNN_name.sql, each applied once, in the order of its number, in
// a transaction of its own, and recorded in [MigrationsTable]. A team that
// runs migrations with its own tool takes them from here (and opens the
// database with Config.SkipMigrations); everyone else lets [Open] or
// [Migrate] apply them.
//
//go:embed migration/*.sql
var Migrations embed.FS

// MigrationsTable is the table, in keelpay's schema, that records which
// migrations were applied.
const MigrationsTable = "keelpay_migrations"

// SchemaDefault is the schema keelpay's tables go to when neither
// Config.Schema nor the DSN's search_path names one.
const SchemaDefault = "keelpay"

// Config configures Open. The zero value of every field but DSN (or Pool)
// and Keyring is its default.
type Config struct {
	// DSN is the database to open, as a URL
	// (postgres://user:password@host:5432/db?sslmode=disable) or in
	// key=value form; pgxpool's pool_* parameters are honoured. Required
	// unless Pool is set.
	DSN string
	// Pool, when set, is the pool keelpay works on instead of one of its
	// own: a pool the application already has, with its own limits and
	// hooks. DSN, MaxConns and TracerProvider must then be unset (set
	// them on the pool), and Schema, when set, must be the pool's current
	// schema. keelpay does not close it: Close leaves it open.
	//
	// keelpay sets nothing on such a pool's connections, so what it sets
	// on its own becomes the pool's owner's choice: the session's
	// idle_in_transaction_session_timeout and the TCP keepalives and user
	// timeout of both ends (see IdleInTransactionTimeout and
	// sessionBackstops' constants: a connection whose peer stopped may
	// hold row locks until they end it); the search_path (keelpay's
	// tables are in the pool's current schema); and the pool's
	// BeforeClose, which should call [BeforeClose] (without it, the
	// status counts of each closed connection stay in a row of their
	// own until the next Open folds them; the counts stay exact). The
	// migrations still run unless SkipMigrations, on a connection taken
	// from the pool and closed after. The listener of store changes
	// connects with the pool's connection configuration, outside the
	// pool.
	Pool *pgxpool.Pool
	// Keyring seals the secrets kept in the database (webhook secrets,
	// client secrets of card sessions and payment intents, stored
	// responses) and customers' personal data (names, emails, phones,
	// billing details), and opens them. Required: a database sealed under other
	// keys fails to open. Every process on one database needs the same
	// keys. See docs/security.md.
	Keyring *keyring.Keyring
	// MaxConns is the most connections the pool opens. Default: the DSN's
	// pool_max_conns, else max(MaxConnsDefault, runtime.NumCPU()).
	//
	// A payment spends much of its database time waiting for its commits
	// to be flushed, not using the database's CPU, so 8 connections keep
	// a database of two cores busy where pgxpool's own default, 4 there,
	// left it waiting: keyed payments ran at about 1.5 to 2 times the rate
	// with 8 connections as with 4, and no faster with 16
	// (bench/pgstatements.sh with POOL=4, 8 and 16). For a fleet, the
	// database's max_connections must hold every server's pool, the
	// listener's connection of each, and room for the operators.
	MaxConns int32
	// Schema, when set, is the only schema on the search_path of every
	// connection: keelpay's tables are created and used there. It must
	// exist (as must a schema the DSN's search_path names: Open fails
	// naming it). Default: the search_path of the DSN when it sets one; else
	// [SchemaDefault] ("keelpay"), created if missing, except for a
	// database whose keelpay tables were created before that default, in
	// the server's search_path (usually public): they stay there.
	Schema string
	// SkipMigrations leaves the schema alone: set it when the migrations
	// of [Migrations] are applied by a tool of your own. Default false:
	// Open applies those it has not seen, as [Migrate] does.
	SkipMigrations bool
	// TracerProvider, when set, gets a span for each statement, batch and
	// new connection, through pgx's tracer hooks: the statement's text
	// (its values are parameters, never recorded) and the SQLSTATE of a
	// failure. Default nil: no hooks.
	TracerProvider trace.TracerProvider
	// TxAttempts is how many times WithTx runs its function when the
	// database keeps reporting a serialisation failure, deadlock or lock
	// timeout (1: never again). Default TxAttemptsDefault.
	TxAttempts int
	// IdleInTransactionTimeout is the idle_in_transaction_session_timeout
	// of keelpay's connections: the database ends a session whose
	// transaction has waited that long for its next statement, rolling it
	// back and freeing its row locks. keelpay's transactions never wait
	// between statements for anything but the database, so only a server
	// that stopped mid-transaction (paused, cut off, hung) reaches it.
	// Default IdleInTransactionTimeoutDefault; negative: the database
	// server's own setting. A DSN that sets the parameter (as a parameter
	// or in options) keeps its value.
	IdleInTransactionTimeout time.Duration
	// AllowAsyncStandby lets Open go on when the primary has standbys
	// that keelpay's commits do not wait for. A failover to such a
	// standby loses the latest commits: answers keelpay gave, and the
	// records of charges it made. A retried confirm or refund then sends
	// the same idempotency key as the lost one, so the provider does not
	// charge or pay out twice; but an intent whose charge was lost and
	// that is never confirmed again holds a charge no record names.
	// Default false: Open fails with ErrAsyncStandby. See
	// docs/operating.md.
	AllowAsyncStandby bool
}

// Defaults of Config, and the TCP time-outs of keelpay's connections.
const (
	MaxConnsDefault                 = 8
	TxAttemptsDefault               = 5
	IdleInTransactionTimeoutDefault = 30 * time.Second

	// A connection whose peer stops answering is ended after
	// TCPKeepAliveIdle without traffic and TCPKeepAliveCount unanswered
	// probes TCPKeepAliveInterval apart, or once data it sent has gone
	// unacknowledged for TCPUserTimeout: on keelpay's side (the socket's
	// options) and on the database's (tcp_keepalives_idle,
	// tcp_keepalives_interval, tcp_keepalives_count, tcp_user_timeout,
	// unless the DSN sets them).
	TCPKeepAliveIdle     = 30 * time.Second
	TCPKeepAliveInterval = 10 * time.Second
	TCPKeepAliveCount    = 3
	TCPUserTimeout       = 30 * time.Second
)

// WithDefaults returns a copy of c with defaults filled in.
func (c Config) WithDefaults() Config {
	c.TxAttempts = cmp.Or(max(c.TxAttempts, 0), TxAttemptsDefault)
	if c.IdleInTransactionTimeout == 0 {
		c.IdleInTransactionTimeout = IdleInTransactionTimeoutDefault
	}
	return c
}

// DB is an open PostgreSQL database. It implements [storage.Storage] and is
// safe to share between goroutines and between processes: every guarantee
// of the storage contract holds across processes on one database.
type DB struct {
	*queries // the executor outside a transaction

	pool    *pgxpool.Pool
	cfg     Config
	schema  string       // the schema the tables are in; it scopes advisory locks
	records core.Records // the mapping of rows, with the keyring's codec
	txs     atomic.Int64 // write transactions committed
	trips   atomic.Int64 // round trips to the server (see counted)

	listener storeListener // see StoreEpoch

	replication Replication // what Open saw; see Replication
}

var _ storage.Storage = (*DB)(nil)

// Stats returns the write transactions committed since Open; each is a
// commit of its own (PostgreSQL may flush several commits at once). Round
// trips count the statements, batches, commits and rollbacks of storage
// calls, not those of migrations, pings or the store-change listener.
func (db *DB) Stats() storage.Stats {
	n := db.txs.Load()
	return storage.Stats{Transactions: n, Commits: n, RoundTrips: db.trips.Load()}
}

// Open connects to the database, applies the migrations it has not seen
// unless Config.SkipMigrations (one process at a time: concurrent Opens
// wait for each other) and returns a pool. An unreachable database is an
// error.
func Open(ctx context.Context, cfg Config) (*DB, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.check(); err != nil {
		return nil, err
	}
	codec := atrest.Codec{KR: cfg.Keyring}
	pool, schema, err := openPool(ctx, cfg, codec)
	if err != nil {
		return nil, err
	}
	db := &DB{pool: pool, cfg: cfg, schema: schema, records: core.Records{D: dialect{}, Codec: codec}}
	db.queries = newQueries(db, pool, false)
	// Counts left in the slots of connections that ended without folding
	// them (a process that was killed) join slot 0.
	if _, err := pool.Exec(ctx, `SELECT fold_status_counts(false)`); err != nil {
		if cfg.Pool == nil {
			pool.Close()
		}
		return nil, fmt.Errorf("postgres: fold status counts: %w", mapErr(err))
	}
	rep, err := readReplication(ctx, pool)
	if err == nil {
		err = checkReplication(rep, cfg.AllowAsyncStandby)
	}
	if err != nil {
		if cfg.Pool == nil {
			pool.Close()
		}
		return nil, err
	}
	db.replication = rep
	return db, nil
}

// Replication returns what Open saw of the primary's replication.
func (db *DB) Replication() Replication { return db.replication }

// OpenPool is Open on pool, a pool of the application's (see
// Config.Pool): cfg.Pool is set to pool.
func OpenPool(ctx context.Context, pool *pgxpool.Pool, cfg Config) (*DB, error) {
	cfg.Pool = pool
	return Open(ctx, cfg)
}

// openPool returns the pool of cfg, the caller's or a new one, once the
// migrations ran on it (unless cfg.SkipMigrations), and the schema of
// keelpay's tables.
func openPool(ctx context.Context, cfg Config, codec atrest.Codec) (*pgxpool.Pool, string, error) {
	run := migrate
	if cfg.SkipMigrations {
		run = func(ctx context.Context, conn *pgx.Conn, _ atrest.Codec) (string, error) {
			return currentSchema(ctx, conn)
		}
	}
	if cfg.Pool != nil {
		schema, err := onPoolConn(ctx, cfg.Pool, func(conn *pgx.Conn) (string, error) { return run(ctx, conn, codec) })
		if err == nil && cfg.Schema != "" && cfg.Schema != schema {
			err = fmt.Errorf("postgres: Config.Schema is %q, the pool's current schema %q", cfg.Schema, schema)
		}
		return cfg.Pool, schema, err
	}
	pcfg, err := poolConfig(ctx, cfg)
	if err != nil {
		return nil, "", err
	}
	if t := newPgxTracer(cfg.TracerProvider); t != nil {
		pcfg.ConnConfig.Tracer = t
	}
	schema, err := onConn(ctx, pcfg.ConnConfig.Copy(), func(conn *pgx.Conn) (string, error) { return run(ctx, conn, codec) })
	if err != nil {
		return nil, "", err
	}
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, "", fmt.Errorf("postgres: %w", err)
	}
	return pool, schema, nil
}

// onConn runs fn on a connection of its own, closed after.
func onConn(ctx context.Context, cc *pgx.ConnConfig, fn func(*pgx.Conn) (string, error)) (string, error) {
	conn, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		return "", fmt.Errorf("postgres: connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	return fn(conn)
}

// onPoolConn runs fn on a connection taken from pool, which it closes
// after instead of giving it back: what fn leaves in the session (a
// migration's lock, after a failure) ends with it.
func onPoolConn(ctx context.Context, pool *pgxpool.Pool, fn func(*pgx.Conn) (string, error)) (string, error) {
	pc, err := pool.Acquire(ctx)
	if err != nil {
		return "", fmt.Errorf("postgres: connect: %w", mapErr(err))
	}
	conn := pc.Hijack()
	defer conn.Close(context.WithoutCancel(ctx))
	return fn(conn)
}

// BeforeClose moves a connection's status counts into slot 0 as the pool
// closes it: without it every connection the pool ever opened would leave
// a row of counts that metrics add up. A connection that cannot run it
// leaves them to the next Open's fold. keelpay's own pool calls it; set it
// as the pgxpool.Config.BeforeClose of a pool given in Config.Pool (or
// call it from that pool's own BeforeClose).
func BeforeClose(c *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, _ = c.Exec(ctx, `SELECT fold_status_counts(true)`)
}

// Migrate applies the migrations of [Migrations] that the database has not
// seen, in the schema Open would use, and disconnects. Run it from a
// deployment step when the application opens the database with
// Config.SkipMigrations; [Open] without it does the same itself.
//
// Migrate needs the keyring too: after the migrations it checks the keys
// against the database and seals what an older version left in plain text
// or another key sealed, as Open does.
func Migrate(ctx context.Context, cfg Config) error {
	cfg = cfg.WithDefaults()
	if err := cfg.check(); err != nil {
		return err
	}
	codec := atrest.Codec{KR: cfg.Keyring}
	if cfg.Pool != nil {
		_, err := onPoolConn(ctx, cfg.Pool, func(conn *pgx.Conn) (string, error) { return migrate(ctx, conn, codec) })
		return err
	}
	pcfg, err := poolConfig(ctx, cfg)
	if err != nil {
		return err
	}
	_, err = onConn(ctx, pcfg.ConnConfig, func(conn *pgx.Conn) (string, error) { return migrate(ctx, conn, codec) })
	return err
}

// check reports a missing required field of c.
func (c Config) check() error {
	if c.Pool != nil {
		switch {
		case c.DSN != "":
			return errors.New("postgres: Config.DSN and Config.Pool are both set")
		case c.MaxConns != 0:
			return errors.New("postgres: Config.MaxConns has no effect with Config.Pool: set the pool's")
		case c.TracerProvider != nil:
			return errors.New("postgres: Config.TracerProvider has no effect with Config.Pool: set the pool's tracer")
		}
	} else if c.DSN == "" {
		return errors.New("postgres: Config.DSN is required")
	}
	if c.Keyring == nil {
		return fmt.Errorf("postgres: %w", atrest.ErrNoKeyring)
	}
	return nil
}

// poolConfig parses the DSN and chooses the schema (see Config.Schema).
func poolConfig(ctx context.Context, cfg Config) (*pgxpool.Config, error) {
	pcfg, err := pgxpool.ParseConfig(cfg.DSN)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	switch {
	case cfg.MaxConns > 0:
		pcfg.MaxConns = cfg.MaxConns
	case !strings.Contains(cfg.DSN, "pool_max_conns"):
		pcfg.MaxConns = int32(max(MaxConnsDefault, runtime.NumCPU()))
	}
	pcfg.BeforeClose = BeforeClose
	params := pcfg.ConnConfig.RuntimeParams
	sessionBackstops(pcfg.ConnConfig, cfg)
	switch {
	case cfg.Schema != "":
		params["search_path"] = pgx.Identifier{cfg.Schema}.Sanitize()
	case params["search_path"] != "" || strings.Contains(params["options"], "search_path"):
		// The DSN chose.
	default:
		useDefault, err := defaultSchema(ctx, pcfg.ConnConfig.Copy(), !cfg.SkipMigrations)
		if err != nil {
			return nil, err
		}
		if useDefault {
			params["search_path"] = pgx.Identifier{SchemaDefault}.Sanitize()
		}
	}
	return pcfg, nil
}

// sessionBackstops gives every connection time-outs on both ends, so that
// neither a keelpay server that stopped (SIGSTOP, a partition, a hung
// host) nor a database that vanished holds anything for long: the
// database ends an idle transaction after Config.IdleInTransactionTimeout
// and a connection whose peer is gone after its TCP time-outs; keelpay's
// sockets do the same for a database that is gone. Parameters the DSN
// sets are left as they are.
func sessionBackstops(cc *pgx.ConnConfig, cfg Config) {
	params := cc.RuntimeParams
	set := func(name, value string) {
		if _, ok := params[name]; ok || strings.Contains(params["options"], name) {
			return // the DSN chose
		}
		params[name] = value
	}
	if cfg.IdleInTransactionTimeout > 0 {
		set("idle_in_transaction_session_timeout", strconv.FormatInt(max(cfg.IdleInTransactionTimeout.Milliseconds(), 1), 10))
	}
	set("tcp_keepalives_idle", strconv.Itoa(int(TCPKeepAliveIdle.Seconds())))
	set("tcp_keepalives_interval", strconv.Itoa(int(TCPKeepAliveInterval.Seconds())))
	set("tcp_keepalives_count", strconv.Itoa(TCPKeepAliveCount))
	set("tcp_user_timeout", strconv.FormatInt(TCPUserTimeout.Milliseconds(), 10))

	d := &net.Dialer{
		Timeout: cc.ConnectTimeout, // the DSN's connect_timeout, if any
		KeepAliveConfig: net.KeepAliveConfig{
			Enable:   true,
			Idle:     TCPKeepAliveIdle,
			Interval: TCPKeepAliveInterval,
			Count:    TCPKeepAliveCount,
		},
		Control: setTCPUserTimeout,
	}
	cc.DialFunc = d.DialContext
}

// defaultSchema reports whether keelpay's tables belong in SchemaDefault,
// creating it when create is set: they do unless keelpay's tables already
// exist in the server's search_path (a database set up before the
// default).
func defaultSchema(ctx context.Context, cc *pgx.ConnConfig, create bool) (bool, error) {
	conn, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		return false, fmt.Errorf("postgres: connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var earlier bool
	if err := conn.QueryRow(ctx, `SELECT to_regclass('`+MigrationsTable+`') IS NOT NULL`).Scan(&earlier); err != nil {
		return false, fmt.Errorf("postgres: %w", mapErr(err))
	}
	if earlier {
		return false, nil
	}
	if !create {
		return true, nil
	}
	// Concurrent Opens would race on the catalogue: one at a time.
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, lockID(SchemaDefault, "create schema")); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS `+pgx.Identifier{SchemaDefault}.Sanitize())
		return err
	})
	if err != nil {
		return false, fmt.Errorf("postgres: create schema %s: %w", SchemaDefault, mapErr(err))
	}
	return true, nil
}

// currentSchema returns the schema conn works in.
func currentSchema(ctx context.Context, conn *pgx.Conn) (string, error) {
	var schema string
	if err := conn.QueryRow(ctx, `SELECT coalesce(current_schema(), '')`).Scan(&schema); err != nil {
		return "", fmt.Errorf("postgres: %w", mapErr(err))
	}
	if schema == "" {
		return "", missingSchema(ctx, conn)
	}
	return schema, nil
}

// missingSchema is the error of a search_path none of whose schemas
// exists (a DSN's &search_path=<schema>, or Config.Schema, naming a schema
// not created yet): it names the schema and says how to create it. keelpay
// creates only its own default schema: a schema named by hand is not
// created, so that a misspelt name fails instead of starting an empty
// database beside the real one.
func missingSchema(ctx context.Context, conn *pgx.Conn) error {
	var path string
	if err := conn.QueryRow(ctx, `SELECT current_setting('search_path')`).Scan(&path); err != nil {
		return fmt.Errorf("postgres: no schema of the search_path exists: %w", mapErr(err))
	}
	var first string
	for part := range strings.SplitSeq(path, ",") {
		if part = strings.TrimSpace(part); part != "" && part != `"$user"` && part != "$user" {
			first = part
			break
		}
	}
	if first == "" {
		return fmt.Errorf("postgres: no schema of the search_path (%s) exists", path)
	}
	return fmt.Errorf("postgres: the schema %s of the search_path (%s) does not exist, and keelpay creates only its own default schema %q: "+
		"create it first (CREATE SCHEMA %s; for example psql \"$DB\" -c 'CREATE SCHEMA %s'), "+
		"or leave search_path out of the DSN for the schema %q, created when missing", first, path, SchemaDefault, first, first, SchemaDefault)
}

// Ping checks that a pooled connection answers, with an empty statement.
// When every connection is busy it waits for one, as a query would, until
// ctx ends.
func (db *DB) Ping(ctx context.Context) error {
	if err := db.pool.Ping(ctx); err != nil {
		return fmt.Errorf("postgres: ping: %w", err)
	}
	return nil
}

// Close closes the pool, waiting for the connections in use to be
// released, and the connection that listens for store changes. A pool
// given in Config.Pool is left open: its owner closes it.
func (db *DB) Close() error {
	db.stopListening()
	if db.cfg.Pool == nil {
		db.pool.Close()
	}
	return nil
}

// migrate applies the embedded migrations on conn, a connection of its
// own that the caller closes after, under a session advisory lock, and
// returns the schema they went to. Closing the connection releases the
// lock whatever happened.
func migrate(ctx context.Context, conn *pgx.Conn, codec atrest.Codec) (string, error) {
	schema, err := currentSchema(ctx, conn)
	if err != nil {
		return "", err
	}
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, lockID(schema, "migrate")); err != nil {
		return "", fmt.Errorf("postgres: migration lock: %w", mapErr(err))
	}
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+MigrationsTable+` (
		version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return "", fmt.Errorf("postgres: migrations table: %w", mapErr(err))
	}
	rows, err := conn.Query(ctx, `SELECT version FROM `+MigrationsTable)
	if err != nil {
		return "", fmt.Errorf("postgres: migrations table: %w", mapErr(err))
	}
	applied, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		return "", fmt.Errorf("postgres: migrations table: %w", mapErr(err))
	}
	migrations, err := core.Migrations(Migrations)
	if err != nil {
		return "", fmt.Errorf("postgres: %w", err)
	}
	for _, m := range migrations {
		if slices.Contains(applied, m.Version) {
			continue
		}
		err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, m.Body); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `INSERT INTO `+MigrationsTable+` (version) VALUES ($1)`, m.Version)
			return err
		})
		if err != nil {
			return "", fmt.Errorf("postgres: migration %s: %w", m.Name, mapErr(err))
		}
	}
	if err := sealAtRest(ctx, conn, codec); err != nil {
		return "", err
	}
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_unlock($1)`, lockID(schema, "migrate")); err != nil {
		return "", fmt.Errorf("postgres: migration lock: %w", mapErr(err))
	}
	return schema, nil
}

// sealAtRest is the step at Open after the migrations, under the
// migration lock (core.SealAtRest).
//
// PostgreSQL keeps the old row versions until they are vacuumed: after an
// upgrade that sealed existing values, run VACUUM (docs/security.md).
func sealAtRest(ctx context.Context, c *pgx.Conn, codec atrest.Codec) error {
	begin := func(ctx context.Context, fn func(tx core.Conn) error) error {
		return pgx.BeginFunc(ctx, c, func(tx pgx.Tx) error { return fn(&conn{q: tx}) })
	}
	_, err := core.SealAtRest(ctx, &conn{q: c}, begin, dialect{}, codec, func(col atrest.Column, prefixLen int) string {
		n := strconv.Itoa(prefixLen)
		if col.Blob {
			return `length(` + col.Name + `) > 0 AND substring(` + col.Name + ` from 1 for ` + n + `) <> $1::bytea`
		}
		return col.Name + ` <> '' AND left(` + col.Name + `, ` + n + `) <> $1`
	})
	return err
}

// lockID names an advisory lock of the tables in schema, so that keelpay
// databases in several schemas of one PostgreSQL database do not share
// locks.
func lockID(schema string, name ...string) int64 {
	h := fnv.New64a()
	h.Write([]byte("keelpay\x00" + schema))
	for _, n := range name {
		h.Write([]byte("\x00" + n))
	}
	return int64(h.Sum64())
}

// WithTx runs fn in a READ COMMITTED transaction and commits it. Exclusive
// state changes do not rely on the isolation level: they are conditional
// updates (on a version or status), row locks, or advisory locks. When the
// database reports a serialisation failure, deadlock or lock timeout, the
// transaction is rolled back and fn is run again, up to
// [Config.TxAttempts] times in all, after a short random pause. The
// commit is not interrupted by ctx, so that a canceled caller is not left
// unsure whether it committed.
func (db *DB) WithTx(ctx context.Context, fn func(ctx context.Context, tx storage.Executor) error) error {
	return db.retry(ctx, func() error {
		conn, err := db.pool.Acquire(ctx)
		if err != nil {
			return mapErr(err)
		}
		defer conn.Release()
		// BEGIN goes with the first statement (lazyTx). After a commit
		// the rollback does nothing; after an error or a panic in fn it
		// rolls back.
		tx := &lazyTx{conn: conn, trips: &db.trips}
		defer tx.rollback(context.WithoutCancel(ctx))
		q := newQueries(db, tx, true)
		// A transaction that wrote a store moves the store epoch once it
		// has ended, before WithTx returns.
		defer func() {
			if q.wroteStores {
				db.listener.epoch.Bump()
			}
		}()
		if err := fn(ctx, q); err != nil {
			return err
		}
		begun, err := tx.commit(context.WithoutCancel(ctx))
		if err != nil {
			return mapErr(err)
		}
		if begun {
			db.txs.Add(1)
		}
		return nil
	})
}

// retry runs fn until it succeeds, fails for good, or has run
// cfg.TxAttempts times.
func (db *DB) retry(ctx context.Context, fn func() error) error {
	for attempt := 1; ; attempt++ {
		err := fn()
		if err == nil || attempt >= db.cfg.TxAttempts || !core.IsTransient(err) {
			return err
		}
		// Exponential backoff from 2ms, capped at 64ms, with jitter so that
		// the transactions that collided do not collide again.
		ceiling := time.Millisecond << min(attempt, 6)
		pause := ceiling/2 + rand.N(ceiling/2)
		timer := time.NewTimer(pause)
		select {
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return err
		}
	}
}

// querier is what a pool and a transaction have in common.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

// queries implements storage.Executor on the pool or, inside WithTx, on a
// transaction. Each method is one statement or one batch (which PostgreSQL
// runs as one implicit transaction), so it is atomic on the pool too.
type queries struct {
	core.Queries
	db   *DB
	q    querier
	c    conn // q, for the core
	inTx bool
	// wroteStores marks a transaction that wrote a store (see
	// storesWritten).
	wroteStores bool
}

// newQueries returns the executor on q, a transaction's when inTx.
func newQueries(db *DB, q querier, inTx bool) *queries {
	q = counted{q, &db.trips}
	x := &queries{db: db, q: q, c: conn{q: q}, inTx: inTx}
	x.Queries = core.NewQueries(db.records, sqlText, &x.c, x)
	return x
}

// Commit sends the writes of b in one pipeline, without BEGIN or COMMIT:
// PostgreSQL runs it as one implicit transaction, committed at its end,
// and each conditional write carries its check (checkedWrite), so the
// first that fails aborts the rest and its error is reported as that
// write's. One round trip; an empty batch sends nothing. A serialisation
// failure, deadlock or lock timeout sends the batch again, as WithTx runs
// its function again.
func (db *DB) Commit(ctx context.Context, b *storage.Batch) error {
	if b.Len() == 0 {
		b.Committed()
		return nil
	}
	var wroteStores bool
	err := db.retry(ctx, func() error {
		pipe := &pipeline{}
		x := &queries{db: db, q: noStatements{}, c: conn{q: noStatements{}, pipe: pipe}, inTx: true}
		x.Queries = core.NewQueries(db.records, sqlText, &x.c, x)
		if err := b.Walk(ctx, x, func(i int) { pipe.cur = i }); err != nil {
			return err
		}
		wroteStores = x.wroteStores
		c, err := db.pool.Acquire(ctx)
		if err != nil {
			return mapErr(err)
		}
		defer c.Release()
		// The pipeline is the commit: not interrupted by ctx, so that a
		// canceled caller is not left unsure whether it committed.
		db.trips.Add(1)
		i, err := pipe.send(context.WithoutCancel(ctx), c)
		if i >= 0 {
			return b.Err(i, err)
		}
		return err
	})
	if wroteStores {
		// Whether it committed or not, as WithTx.
		db.listener.epoch.Bump()
	}
	if err != nil {
		return err
	}
	db.txs.Add(1)
	b.Committed()
	return nil
}

// Write implements core.Writer, as write.
func (q *queries) Write(ctx context.Context, fn func(w core.Conn) error) error {
	return q.write(ctx, func(querier) error { return fn(&q.c) })
}

// WriteStores implements core.Writer: the store epoch moves once the
// statement, or the transaction, has ended.
func (q *queries) WriteStores(ctx context.Context, fn func(w core.Conn) error) error {
	defer q.storesWritten()
	return q.Write(ctx, fn)
}

// InTx implements core.Writer.
func (q *queries) InTx() bool { return q.inTx }

// storesWritten is deferred by every write of stores: outside a
// transaction it moves the store epoch now that the statement has ended;
// inside one it leaves that to WithTx.
func (q *queries) storesWritten() {
	if q.inTx {
		q.wroteStores = true
		return
	}
	q.db.listener.epoch.Bump()
}

// write runs a statement or batch that changes something. Outside a
// transaction it is retried after a transient failure; inside one, the
// failure goes to WithTx, which runs the whole transaction again.
func (q *queries) write(ctx context.Context, fn func(q querier) error) error {
	if q.inTx {
		return fn(q.q)
	}
	err := q.db.retry(ctx, func() error { return fn(q.q) })
	if err == nil {
		q.db.txs.Add(1)
	}
	return err
}
