package events_test

import (
	"context"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/events"
	"github.com/keelpay/keelpay/keyring/keyringtest"
	"github.com/keelpay/keelpay/storage/postgres"
	"github.com/keelpay/keelpay/storage/postgres/postgrestest"
)

// slowCommitDSN is dsn with every commit of its sessions made slow, as a
// synchronous standby makes it (the commit waits for the standby while
// the transaction keeps its row locks): commit_delay waits that many
// microseconds before each commit's WAL flush, and commit_siblings 0
// makes it wait whatever else runs. Both may be set per session by a
// superuser (https://www.postgresql.org/docs/15/runtime-config-wal.html,
// commit_delay and commit_siblings); pgx sends query parameters it does
// not know as run-time parameters of the session
// (https://pkg.go.dev/github.com/jackc/pgx/v5/pgconn#ParseConfig).
func slowCommitDSN(t *testing.T, dsn string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	require.NoError(t, err)
	q := u.Query()
	q.Set("commit_delay", "20000") // 20 ms
	q.Set("commit_siblings", "0")
	u.RawQuery = q.Encode()
	return u.String()
}

// TestSlowCommitsLoseNoDeliveryRecord runs three dispatchers (three
// processes) on one PostgreSQL schema whose commits are slow, with events
// coming in all the time. A claim locks the rows it passes over that
// changed under it (another claim leased them) and keeps them locked until
// its commit ends; a result recorded meanwhile must wait for that commit
// and be recorded, not be skipped: a skipped result leaves the delivery
// leased, with no attempt recorded, and it is sent again when the lease
// lapses, a minute after its first delivery. Once every event arrived and
// the dispatchers stopped (each records what it attempted before Run
// returns), every delivery must be recorded as succeeded with one attempt.
func TestSlowCommitsLoseNoDeliveryRecord(t *testing.T) {
	t.Parallel()
	schema := postgrestest.NewSchema(t)
	dsn := slowCommitDSN(t, postgrestest.DSN(t))
	var dbs []*postgres.DB
	for range 3 {
		db, err := postgres.Open(context.Background(), postgres.Config{DSN: dsn, Keyring: keyringtest.Keyring(), MaxConns: 4, Schema: schema})
		require.NoError(t, err)
		t.Cleanup(func() { db.Close() })
		dbs = append(dbs, db)
	}
	rc, store := newReceiver(t, dbs[0], false)
	var stops []func()
	var ds []*events.Dispatcher
	for _, db := range dbs {
		d := mustNew(events.NewDispatcher(events.DispatcherConfig{AllowInsecureWebhooks: true, Logger: quiet, Storage: db}))
		ds = append(ds, d)
		stops = append(stops, runDispatcher(t, d))
	}

	// Events come in on the three processes at once, each waking its own
	// dispatcher as a committed event does, so that the claims of the
	// three overlap all the time.
	ids := make([][]string, len(dbs))
	var load sync.WaitGroup
	for i, db := range dbs {
		load.Go(func() {
			for range 200 {
				ids[i] = append(ids[i], insertEvents(t, db, store, 1, time.Now().UTC())...)
				ds[i].Notify()
			}
		})
	}
	load.Wait()
	total := 0
	for _, l := range ids {
		total += len(l)
	}
	rc.await("every event", func() bool { return len(rc.got) == total })
	for _, stop := range stops {
		stop()
	}

	conn, err := pgx.Connect(context.Background(), postgrestest.DSN(t))
	require.NoError(t, err)
	defer conn.Close(context.Background())
	rows, err := conn.Query(context.Background(), `SELECT event_id, status, attempts FROM `+
		pgx.Identifier{schema, "deliveries"}.Sanitize()+` WHERE status <> $1 OR attempts <> 1`, string(keelpay.DeliverySucceeded))
	require.NoError(t, err)
	type lost struct {
		id, status string
		attempts   int
	}
	var unrecorded []lost
	for rows.Next() {
		var l lost
		require.NoError(t, rows.Scan(&l.id, &l.status, &l.attempts))
		unrecorded = append(unrecorded, l)
	}
	require.NoError(t, rows.Err())
	require.Empty(t, unrecorded, "of %d deliveries made, these were not recorded (each would be sent again when its lease lapses)", total)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for id, n := range rc.got {
		require.Equal(t, 1, n, "deliveries of %s", id)
	}
}
