package service

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/storage"
)

// Clock synchronisation (docs/operating.md, "Clocks").
const (
	// ClockSyncInterval is how often a DatabaseClock is measured again
	// while the Service runs.
	ClockSyncInterval = 30 * time.Second
	// ClockOffsetWarn is the offset between this machine's clock and the
	// database's beyond which every measurement is logged as a warning.
	// keelpay itself runs on the database's clock; the warning is for
	// what does not (logs, webhook signatures' timestamps, TLS).
	ClockOffsetWarn = time.Second
	// clockMeasureTimeout bounds one measurement.
	clockMeasureTimeout = 5 * time.Second
)

// DatabaseTimer is a storage that reads its database server's clock, as
// storage/postgres's DB does (SELECT clock_timestamp()). SQLite has none:
// its database is on the one machine that uses it, with that machine's
// clock.
type DatabaseTimer interface {
	DatabaseTime(ctx context.Context) (time.Time, error)
}

// DatabaseClock is the database server's clock as seen from this process:
// the Service's default clock when its Storage is a DatabaseTimer.
//
// Every time that decides which of several servers may act is written by
// one server and compared by another: the lapse of an idempotency key's
// lock, a delivery's lease and its next attempt, a payment attempt's send
// and reach windows, a 3D Secure wait, the reconcilers' schedule, rate
// limits. Servers whose machine clocks disagree by two minutes would take
// over keys and leases still held, send webhooks before their time and
// close attempts that can still reach the provider. So keelpay reads one
// clock for all of them, the database's: the one thing they share.
//
// Reading it in each statement (now() in the SQL of every lease and lock)
// would need every time in every query to come from the database, and
// the times kept in Go (the send window of a confirm, a retry's delay)
// would still be the machine's. Instead this clock measures its offset
// from the database once, then advances by Go's monotonic clock
// (time.Since), which a step of the machine's wall clock (an NTP step, an
// operator's date -s) does not move; it is measured again every
// ClockSyncInterval, to follow the drift between the two. Every part of the
// Service reads it through keelpay.Clock, as before, and nothing else
// changes.
//
// A measurement reads clock_timestamp() (storage/postgres) and takes the
// time it names to be the middle of the round trip: its error is at most
// half the round trip. Of three reads, the one with the shortest round
// trip counts. The clock never moves back: a measurement that would set it
// back holds it until it catches up.
//
// It is safe for concurrent use.
type DatabaseClock struct {
	db      DatabaseTimer
	machine keelpay.Clock

	mu     sync.Mutex
	dbAt   time.Time     // the database's time at anchor
	anchor time.Time     // time.Now() at that instant, with its monotonic reading
	offset time.Duration // the database's clock minus the machine's, at the last measurement
	rtt    time.Duration // the round trip of the last measurement
	last   time.Time     // the latest time Now returned
}

// NewDatabaseClock measures db's clock and returns a clock that follows
// it. machine is this machine's clock (nil: keelpay.SystemClock); it is
// read only to tell how far it is off the database's (Offset), never for
// the time itself.
func NewDatabaseClock(ctx context.Context, db DatabaseTimer, machine keelpay.Clock) (*DatabaseClock, error) {
	if machine == nil {
		machine = keelpay.SystemClock{}
	}
	c := &DatabaseClock{db: db, machine: machine}
	if err := c.Sync(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// Now returns the database's time: its time at the last measurement plus
// the time since on Go's monotonic clock, in UTC.
func (c *DatabaseClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := c.dbAt.Add(time.Since(c.anchor))
	if t.Before(c.last) {
		t = c.last
	}
	c.last = t
	return t
}

// Sync measures the database's clock again. A failed measurement changes
// nothing: the clock goes on from the last one.
func (c *DatabaseClock) Sync(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, clockMeasureTimeout)
	defer cancel()
	var (
		best          time.Duration = -1
		dbAt, anchor  time.Time
		machineAtBest time.Time
	)
	for range 3 {
		sent := time.Now()
		t, err := c.db.DatabaseTime(ctx)
		back := time.Now()
		machine := c.machine.Now()
		if err != nil {
			return fmt.Errorf("service: measure the database's clock: %w", err)
		}
		if rtt := back.Sub(sent); best < 0 || rtt < best {
			best, dbAt, anchor, machineAtBest = rtt, t.UTC().Add(rtt/2), back, machine
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dbAt, c.anchor, c.rtt = dbAt, anchor, best
	c.offset = dbAt.Sub(machineAtBest)
	return nil
}

// Offset returns, as of the last measurement, how far the database's clock
// was ahead of this machine's (negative: behind), and the round trip of
// that measurement (the offset is right to within half of it).
func (c *DatabaseClock) Offset() (offset, roundTrip time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.offset, c.rtt
}

// BaseClock returns the clock servers sharing db must agree on: a
// DatabaseClock measured now when db is a DatabaseTimer (PostgreSQL), and
// machine (nil: keelpay.SystemClock) otherwise (SQLite: one machine, one
// clock). A reference server composes its sandbox clock on it
// (keelpay.OffsetClock's Base).
func BaseClock(ctx context.Context, db storage.Storage, machine keelpay.Clock) (keelpay.Clock, error) {
	if dt, ok := db.(DatabaseTimer); ok {
		return NewDatabaseClock(ctx, dt, machine)
	}
	if machine == nil {
		return keelpay.SystemClock{}, nil
	}
	return machine, nil
}

// databaseClock returns the DatabaseClock c is, or that it moves (a
// keelpay.OffsetClock whose Base is one), or nil.
func databaseClock(c keelpay.Clock) *DatabaseClock {
	switch c := c.(type) {
	case *DatabaseClock:
		return c
	case *keelpay.OffsetClock:
		if d, ok := c.Base.(*DatabaseClock); ok {
			return d
		}
	}
	return nil
}

// clockWorker measures the database's clock again on each pass and tells
// the operator how far this machine's clock is off: a gauge always, a
// warning past ClockOffsetWarn.
type clockWorker struct {
	clock  *DatabaseClock
	log    *slog.Logger
	passes int // one worker runs them, one after the other
}

func newClockWorker(c *DatabaseClock, reg prometheus.Registerer, log *slog.Logger) (*clockWorker, error) {
	err := reg.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "keelpay_clock_offset_seconds",
		Help: "The database's clock minus this machine's at the last measurement; keelpay runs on the database's clock.",
	}, func() float64 {
		o, _ := c.Offset()
		return o.Seconds()
	}))
	if err != nil {
		return nil, err
	}
	return &clockWorker{clock: c, log: log}, nil
}

// pass measures once and logs the result.
func (w *clockWorker) pass(ctx context.Context) error {
	if err := w.clock.Sync(ctx); err != nil {
		return err
	}
	offset, rtt := w.clock.Offset()
	attrs := []any{slog.Duration("offset", offset), slog.Duration("round_trip", rtt)}
	w.passes++
	switch {
	case offset >= ClockOffsetWarn || offset <= -ClockOffsetWarn:
		w.log.WarnContext(ctx, "this machine's clock is off the database's; keelpay keeps to the database's clock, but fix the machine's time sync (NTP)", attrs...)
	case w.passes == 1:
		w.log.InfoContext(ctx, "running on the database's clock", attrs...)
	default:
		w.log.DebugContext(ctx, "database clock measured", attrs...)
	}
	return nil
}
