package postgres_test

import (
	"context"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay/internal/faultproxy"
	"github.com/keelpay/keelpay/keyring/keyringtest"
	"github.com/keelpay/keelpay/storage"
	"github.com/keelpay/keelpay/storage/postgres"
	"github.com/keelpay/keelpay/storage/postgres/postgrestest"
	"github.com/keelpay/keelpay/storage/storagetest"
)

// dsnWith returns the test server's DSN with the parameters of params
// added, and, when proxy is set, its host and port replaced by a fault
// proxy's in front of the server.
func dsnWith(t *testing.T, params url.Values, proxy bool) (string, *faultproxy.Proxy) {
	t.Helper()
	u, err := url.Parse(postgrestest.DSN(t))
	require.NoError(t, err)
	q := u.Query()
	for k, v := range params {
		q[k] = v
	}
	// pgx reads a query's "+" as itself, not as a space.
	u.RawQuery = strings.ReplaceAll(q.Encode(), "+", "%20")
	var p *faultproxy.Proxy
	if proxy {
		target := u.Host
		if u.Port() == "" {
			target += ":5432"
		}
		p = faultproxy.New(t, target)
		u.Host = p.Addr()
	}
	return u.String(), p
}

func open(t *testing.T, cfg postgres.Config) *postgres.DB {
	t.Helper()
	cfg.Keyring = keyringtest.Keyring()
	if cfg.MaxConns == 0 {
		cfg.MaxConns = 2
	}
	db, err := postgres.Open(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	return db
}

// show returns a setting of a pooled connection of db.
func show(t *testing.T, db *postgres.DB, name string) string {
	t.Helper()
	var v string
	require.NoError(t, postgres.Pool(db).QueryRow(context.Background(), "SELECT current_setting($1)", name).Scan(&v))
	return v
}

// TestSessionBackstops: keelpay's connections come with the database-side
// time-outs, and a DSN that sets one keeps its own value.
func TestSessionBackstops(t *testing.T) {
	t.Parallel()
	schema := postgrestest.NewSchema(t)

	dsn, _ := dsnWith(t, nil, false)
	db := open(t, postgres.Config{DSN: dsn, Schema: schema})
	require.Equal(t, "30s", show(t, db, "idle_in_transaction_session_timeout"))
	require.Equal(t, "30000", show(t, db, "tcp_user_timeout"), "milliseconds")
	require.Equal(t, "30", show(t, db, "tcp_keepalives_idle"))
	require.Equal(t, "10", show(t, db, "tcp_keepalives_interval"))
	require.Equal(t, "3", show(t, db, "tcp_keepalives_count"))

	db = open(t, postgres.Config{DSN: dsn, Schema: schema, IdleInTransactionTimeout: 1500 * time.Millisecond})
	require.Equal(t, "1500ms", show(t, db, "idle_in_transaction_session_timeout"))

	dsn, _ = dsnWith(t, url.Values{"idle_in_transaction_session_timeout": {"5s"}, "tcp_user_timeout": {"1000"}}, false)
	db = open(t, postgres.Config{DSN: dsn, Schema: schema, IdleInTransactionTimeout: time.Second})
	require.Equal(t, "5s", show(t, db, "idle_in_transaction_session_timeout"), "the DSN's value wins")
	require.Equal(t, "1000", show(t, db, "tcp_user_timeout"), "the DSN's value wins")
	require.Equal(t, "30", show(t, db, "tcp_keepalives_idle"))

	dsn, _ = dsnWith(t, url.Values{"options": {"-c idle_in_transaction_session_timeout=7s"}}, false)
	db = open(t, postgres.Config{DSN: dsn, Schema: schema})
	require.Equal(t, "7s", show(t, db, "idle_in_transaction_session_timeout"), "the DSN's options win")

	dsn, _ = dsnWith(t, nil, false)
	db = open(t, postgres.Config{DSN: dsn, Schema: schema, IdleInTransactionTimeout: -1})
	plain, err := pgx.Connect(context.Background(), postgrestest.DSN(t)) // no parameters of keelpay's
	require.NoError(t, err)
	defer plain.Close(context.Background())
	var server string
	require.NoError(t, plain.QueryRow(context.Background(), "SELECT current_setting('idle_in_transaction_session_timeout')").Scan(&server))
	require.Equal(t, server, show(t, db, "idle_in_transaction_session_timeout"), "negative: the server's setting")
}

// TestStalledTransactionLosesItsLocks: a server whose connection to the
// database stalls in the middle of a transaction (a paused process, a
// partition) does not keep its row locks: the database ends the idle
// transaction after IdleInTransactionTimeout, another server's write of
// the same row goes through, and the stalled transaction's commit fails
// when the connection comes back.
func TestStalledTransactionLosesItsLocks(t *testing.T) {
	t.Parallel()
	schema := postgrestest.NewSchema(t)
	other := postgrestest.Open(t, schema)
	ctx := context.Background()
	s := storagetest.NewStoreRecord(t0)
	require.NoError(t, other.StoreInsert(ctx, s))

	dsn, proxy := dsnWith(t, nil, true)
	db := open(t, postgres.Config{DSN: dsn, Schema: schema, IdleInTransactionTimeout: time.Second})

	locked, release := make(chan struct{}), make(chan struct{})
	var releaseOnce sync.Once
	// On failure too: the transaction ends and its connection flows
	// again before the pool is closed.
	t.Cleanup(func() { releaseOnce.Do(func() { close(release) }); proxy.Resume() })
	done := make(chan error, 1)
	go func() {
		done <- db.WithTx(ctx, func(ctx context.Context, tx storage.Executor) error {
			mine := *s
			mine.WebhookURL = "https://stalled.example/hooks"
			if err := tx.StoreUpdate(ctx, &mine, 1); err != nil {
				return err
			}
			close(locked)
			<-release
			return nil
		})
	}()
	select {
	case <-locked:
	case err := <-done:
		t.Fatalf("the transaction ended early: %v", err)
	}
	proxy.Stall() // the row stays locked by a session nobody talks to

	// The other server's write waits for the row lock until the database
	// ends the idle transaction. Without the time-out it would wait
	// until its own deadline.
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	theirs := *s
	theirs.WebhookURL = "https://other.example/hooks"
	require.NoError(t, other.StoreUpdate(wctx, &theirs, 1))

	releaseOnce.Do(func() { close(release) })
	proxy.Resume()
	select {
	case err := <-done:
		require.Error(t, err, "the commit of a transaction the database ended cannot succeed")
	case <-time.After(30 * time.Second):
		t.Fatal("the stalled transaction's commit did not return after the connection came back")
	}
	got, err := other.StoreGetByID(ctx, s.ID)
	require.NoError(t, err)
	require.Equal(t, "https://other.example/hooks", got.WebhookURL)
	require.EqualValues(t, 2, got.Version)

	// The pool replaced the connection the database ended.
	_, err = db.StoreGetByID(ctx, s.ID)
	require.NoError(t, err)
}
