package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/storage"
	"github.com/keelpay/keelpay/storage/internal/storewatch"
)

var _ storage.StoreWatcher = (*DB)(nil)

// storesChannel is the channel on which the trigger of migration 010
// announces every change of the stores table, with the table's schema as
// the payload.
const storesChannel = "keelpay_stores"

// Timings of the listening connection.
const (
	// listenQuiet is how long the connection may stay silent before it
	// proves again that it hears (see listen), within listenPingTimeout: a
	// connection that died without a word is given up within both.
	listenQuiet       = 5 * time.Second
	listenPingTimeout = 3 * time.Second
	// listenConnectTimeout bounds a connection attempt when the DSN has
	// no connect_timeout of its own.
	listenConnectTimeout = 10 * time.Second
	// Reconnection waits from listenRetryMin, doubling up to
	// listenRetryMax while attempts fail.
	listenRetryMin = 50 * time.Millisecond
	listenRetryMax = 5 * time.Second
)

// storeListener hears the changes of stores made by every process on the
// database, on a connection of its own, outside the pool.
type storeListener struct {
	epoch  storewatch.Epoch
	once   sync.Once
	cancel context.CancelFunc // nil until started
	done   chan struct{}
}

// StoreEpoch implements [storage.StoreWatcher]. The first call starts a
// connection of its own that listens for the announcements of migration
// 010's trigger (so a DB that never authenticates keys holds no extra
// connection); ok is true only while that connection hears them. The epoch
// moves with every announcement of a change in this DB's schema, whichever
// process made it, and whenever the connection starts or stops hearing, so
// nothing read while changes could go unheard survives. A change committed
// through this DB also moves it before its write returns, without waiting
// for the announcement.
//
// The connection proves that it hears before ok turns true, and again
// after every 5 quiet seconds: the trigger must be there and enabled, and
// a probe it announces itself must come back within 3 seconds. A lost
// connection is reconnected after a pause that grows from 50 ms to 5 s
// while attempts fail. So ok stays false while the schema has no enabled
// stores_changed trigger (SkipMigrations and migration 010 not yet
// applied, or the trigger disabled), and through a pooler that does not
// keep LISTEN's session (PgBouncer's transaction pooling).
func (db *DB) StoreEpoch() (uint64, bool) {
	db.listener.once.Do(db.startListening)
	return db.listener.epoch.Load()
}

func (db *DB) startListening() {
	cc := db.pool.Config().ConnConfig.Copy()
	// Named so that it can be found in pg_stat_activity.
	name := "keelpay stores " + db.schema
	if len(name) > 63 {
		name = name[:63]
	}
	cc.RuntimeParams["application_name"] = name
	if cc.ConnectTimeout == 0 {
		cc.ConnectTimeout = listenConnectTimeout
	}
	ctx, cancel := context.WithCancel(context.Background())
	db.listener.cancel = cancel
	db.listener.done = make(chan struct{})
	go db.listener.run(ctx, cc, db.schema)
}

// stopListening ends the listening connection, if it was started, and
// keeps it from starting later.
func (db *DB) stopListening() {
	db.listener.once.Do(func() {})
	if db.listener.cancel != nil {
		db.listener.cancel()
		<-db.listener.done
	}
}

func (l *storeListener) run(ctx context.Context, cc *pgx.ConnConfig, schema string) {
	defer close(l.done)
	wait := listenRetryMin
	for {
		up, _ := l.listen(ctx, cc, schema)
		if ctx.Err() != nil {
			return
		}
		if up {
			wait = listenRetryMin
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		wait = min(2*wait, listenRetryMax)
	}
}

// listen connects, listens and hears announcements until the connection
// fails, stops hearing, or ctx is done. up reports whether it got as far
// as listening.
//
// The connection proves that it hears before it counts as listening, and
// again whenever it has been quiet for listenQuiet: it checks the trigger
// and announces a probe of its own on the channel, which must come back
// within listenPingTimeout. So a connection that LISTEN does not reach
// (through a pooler that hands each transaction another server
// connection), or one that died without a word, never serves a cache for
// long.
func (l *storeListener) listen(ctx context.Context, cc *pgx.ConnConfig, schema string) (up bool, err error) {
	conn, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		return false, err
	}
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = conn.Close(closeCtx)
	}()
	if _, err := conn.Exec(ctx, `LISTEN `+storesChannel); err != nil {
		return false, err
	}
	defer l.epoch.SetLive(false)
	var probe string       // the probe on its way back, or ""
	var deadline time.Time // when it must be back, or when to send the next
	check := func() error {
		checkCtx, cancel := context.WithTimeout(ctx, listenPingTimeout)
		defer cancel()
		if err := announced(checkCtx, conn, schema); err != nil {
			return err
		}
		probe = keelpay.NewID("probe_")
		deadline = time.Now().Add(listenPingTimeout)
		_, err := conn.Exec(checkCtx, `SELECT pg_notify($1, $2)`, storesChannel, probe)
		return err
	}
	if err := check(); err != nil {
		return false, err
	}
	for {
		waitCtx, cancel := context.WithDeadline(ctx, deadline)
		n, err := conn.WaitForNotification(waitCtx)
		due := errors.Is(waitCtx.Err(), context.DeadlineExceeded)
		cancel()
		if n != nil && n.Channel == storesChannel {
			switch n.Payload {
			case schema:
				l.epoch.Bump()
			case probe:
				probe, deadline = "", time.Now().Add(listenQuiet)
				if !up {
					// Hearing from here on: whatever was read before
					// belongs to an older epoch.
					up = true
					l.epoch.SetLive(true)
				}
			}
		}
		switch {
		case err == nil:
		case ctx.Err() != nil:
			return up, ctx.Err()
		case due && probe != "":
			return up, errors.New("postgres: the stores listener did not hear its own probe")
		case due && !conn.IsClosed():
			if err := check(); err != nil {
				return up, err
			}
		default:
			return up, err
		}
	}
}

// announced returns an error unless the trigger of migration 010 is there
// and fires, so that every change of a store is announced.
func announced(ctx context.Context, conn *pgx.Conn, schema string) error {
	var fires bool
	err := conn.QueryRow(ctx, `SELECT coalesce((SELECT tgenabled IN ('O', 'A') FROM pg_trigger
		WHERE tgrelid = to_regclass('stores') AND tgname = 'stores_changed'), false)`).Scan(&fires)
	if err != nil {
		return err
	}
	if !fires {
		return fmt.Errorf("postgres: the stores of schema %s are not announced: trigger stores_changed (migration 010) missing or disabled", schema)
	}
	return nil
}
