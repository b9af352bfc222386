package service_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/provider/sandbox"
	"github.com/keelpay/keelpay/service"
	"github.com/keelpay/keelpay/storage/postgres/postgrestest"
)

// clockSlack is how far a DatabaseClock may be off the database's clock in
// these tests: its measurement is right to within half a round trip on
// loopback; the machine's clocks in them are hours off.
const clockSlack = time.Second

// between asserts that t is within the database's readings before and
// after it, give or take clockSlack.
func between(tb testing.TB, before, t, after time.Time, msg string) {
	tb.Helper()
	require.False(tb, t.Before(before.Add(-clockSlack)), "%s: %v is before the database's %v", msg, t, before)
	require.False(tb, t.After(after.Add(clockSlack)), "%s: %v is after the database's %v", msg, t, after)
}

// TestDatabaseClockKeepsToTheDatabase measures PostgreSQL's clock from a
// machine whose clock is two hours ahead: the clock reads the database's
// time and says how far the machine is off; a jump of the machine's clock
// (three hours back) changes nothing until the next measurement reports
// the new offset, and the time still does not move.
func TestDatabaseClockKeepsToTheDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := postgrestest.NewDB(t)
	dbNow := func() time.Time {
		t.Helper()
		n, err := db.DatabaseTime(ctx)
		require.NoError(t, err)
		return n
	}
	machine := keelpay.NewManualClock(dbNow().Add(2 * time.Hour))
	c, err := service.NewDatabaseClock(ctx, db, machine)
	require.NoError(t, err)
	offset, rtt := c.Offset()
	require.InDelta(t, float64(-2*time.Hour), float64(offset), float64(clockSlack), "offset %v (round trip %v)", offset, rtt)
	before := dbNow()
	now := c.Now()
	between(t, before, now, dbNow(), "measured")
	require.Equal(t, time.UTC, now.Location())

	machine.Advance(-3 * time.Hour) // an NTP step, an operator's date -s
	before = dbNow()
	later := c.Now()
	between(t, before, later, dbNow(), "after the machine's clock jumped")
	require.False(t, later.Before(now), "the clock never moves back")
	o, _ := c.Offset()
	require.Equal(t, offset, o, "the offset is the last measurement's")

	require.NoError(t, c.Sync(ctx))
	o, _ = c.Offset()
	require.InDelta(t, float64(time.Hour), float64(o), float64(clockSlack), "measured again: the machine is now an hour behind")
	before = dbNow()
	between(t, before, c.Now(), dbNow(), "measured again")
}

// scrape returns the metrics a Service serves.
func scrape(t *testing.T, svc *service.Service) string {
	t.Helper()
	srv := httptest.NewServer(svc.MetricsHandler())
	t.Cleanup(srv.Close)
	res, err := http.Get(srv.URL)
	require.NoError(t, err)
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return string(body)
}

// TestServiceRunsOnTheDatabaseClock: with PostgreSQL and no Clock, a
// Service keeps to the database's clock and serves the measured offset;
// with SQLite (one machine, one clock) it has no offset to serve.
func TestServiceRunsOnTheDatabaseClock(t *testing.T) {
	t.Parallel()
	svc, err := service.New(service.Config{Provider: sandbox.New(sandbox.Config{}), Storage: postgrestest.NewDB(t)})
	require.NoError(t, err)
	require.Contains(t, scrape(t, svc), "\nkeelpay_clock_offset_seconds ")

	svc, err = service.New(service.Config{Provider: sandbox.New(sandbox.Config{}), Storage: openDB(t)})
	require.NoError(t, err)
	require.NotContains(t, scrape(t, svc), "keelpay_clock_offset_seconds")
}

// TestBaseClock: what a reference server moves with its sandbox clock is
// the database's clock on PostgreSQL, and the machine's on SQLite.
func TestBaseClock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	machine := keelpay.NewManualClock(time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC))
	c, err := service.BaseClock(ctx, openDB(t), machine)
	require.NoError(t, err)
	require.Same(t, machine, c)

	c, err = service.BaseClock(ctx, postgrestest.NewDB(t), machine)
	require.NoError(t, err)
	require.IsType(t, &service.DatabaseClock{}, c)
	require.True(t, c.Now().After(machine.Now().Add(24*time.Hour)), "the database's time, not the machine's: %v", c.Now())
}

// logBuffer collects log lines; it is safe for concurrent use.
type logBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestServiceWarnsOfAnOffMachineClock: a Service on a sandbox clock that
// moves the database's (as the reference server's) keeps it measured, and
// warns while the machine's clock is a second or more off; the offset is
// served as a metric.
func TestServiceWarnsOfAnOffMachineClock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := postgrestest.NewDB(t)
	now, err := db.DatabaseTime(ctx)
	require.NoError(t, err)
	dbc, err := service.NewDatabaseClock(ctx, db, keelpay.NewManualClock(now.Add(-90*time.Second)))
	require.NoError(t, err)
	clock := &keelpay.OffsetClock{Base: dbc}
	logs := &logBuffer{}
	svc, err := service.New(service.Config{
		Clock:    clock,
		Logger:   slog.New(slog.NewTextHandler(logs, nil)),
		Provider: sandbox.New(sandbox.Config{Clock: clock}),
		Storage:  db,
	})
	require.NoError(t, err)
	require.NoError(t, svc.Start(ctx))
	t.Cleanup(func() { require.NoError(t, svc.Stop(context.Background())) })
	require.Eventually(t, func() bool {
		return strings.Contains(logs.String(), "this machine's clock is off the database's")
	}, 10*time.Second, 10*time.Millisecond, "logs: %s", logs)
	require.Contains(t, logs.String(), "offset=1m30")
	// 90 s, plus the time between the read of the database's time above
	// and the clock's own measurement (a loaded machine takes a moment).
	require.Regexp(t, `(?m)^keelpay_clock_offset_seconds 9[0-4](\.\d+)?$`, scrape(t, svc))
}
