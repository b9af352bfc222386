package main

import (
	"bufio"
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay/keyring"
	"github.com/keelpay/keelpay/keyring/keyringtest"
	"github.com/keelpay/keelpay/provider/sandbox"
	"github.com/keelpay/keelpay/storage/postgres/postgrestest"
)

// The soak: a reference server under a steady mix of traffic while the
// sandbox clock moves through a day and a bit, sampled every few seconds
// for what grows when something leaks: memory, goroutines, open files and
// the database. docs/operating.md ("A day of traffic") says how to run it
// and what the figures mean.
const (
	// soakClock is how far the sandbox clock moves over the run: a day, so
	// that webhook retries come due on their schedule (up to 24 hours
	// apart) and retention passes through many windows, and two hours
	// more, so that the intents left unconfirmed in the first two hours
	// expire (24 hours after creation).
	soakClock = 26 * time.Hour
	// soakRetention and soakSessionRetention are the server's retention
	// periods: short (service.RetentionMin, an hour, is the least
	// allowed), so that a run passes through many windows of each.
	soakRetention        = "2h"
	soakSessionRetention = "1h"
	// soakOpsPerSecond paces the traffic: a steady load (rather than as
	// fast as the machine goes) keeps the samples comparable from start to
	// end and leaves the machine's other work its share. One operation is
	// one to eight requests, three on average.
	soakOpsPerSecond = 40
	soakWorkers      = 4
	// soakCustomers is the pool of customers whose cards are saved,
	// listed and deleted: bounded, as a shop's returning buyers are.
	soakCustomers = 20
	// soakWebhookFailEvery: every so many deliveries the receiver answers
	// 503, so retries happen all along (on the retry schedule the clock
	// moves through); no delivery fails for good, as the receiver's next
	// answer is a success.
	soakWebhookFailEvery = 5
)

// Growth limits: the least-squares slope of each figure over the second
// half of the run, per API request (the x axis is the number of requests
// made so far, so the limits do not depend on how fast the machine is).
// The first half is left out: SQLite's page caches (2 MB a connection by
// default, https://www.sqlite.org/pragma.html#pragma_cache_size) and the
// heap's target fill up while a server warms, and the database holds
// events until the first retention window has passed.
//
// A figure fails when its slope is above the limit per request AND the
// fitted growth over the half (slope × requests in the half) is above the
// floor. The floor is the noise of a level that is flat: memory breathes
// with the collector and the caches, goroutines and connections come and
// go with the deliveries and requests in flight, and a short run has few
// requests to spread that noise over. The limit per request is what a
// leak looks like on a long run: a 10-minute run makes about 75,000
// requests, 38,000 in its second half.
//
//   - Memory (RSS): 512 bytes per request, floor 16 MiB. A leak of 2 KiB
//     a request is 75 MiB over the half. A real run's RSS stays between
//     41 and 45 MiB through its second half (slopes of -0.4 and 7 bytes
//     a request in two runs); in the first minutes it climbs from 35 to
//     51 MiB as the caches fill, which a short run's half may still see:
//     under the floor.
//   - Goroutines: one per 500 requests, floor 25. A goroutine left behind
//     by one request in a hundred fails; a real run's count moves
//     between 37 and 61 with the deliveries and requests in flight.
//   - Open files: one per 1,000 requests, floor 15. A connection or file
//     left open by one request in a hundred fails; a real run's count
//     stays between 31 and 38.
//   - Database size (on SQLite; PostgreSQL below): checked only when the
//     second half starts after the first retention window has passed.
//     The database is not flat: payment intents, refunds and cards are
//     kept for good (what a business keeps grows with it), 255 bytes a
//     request of this mix on SQLite. What must stop growing is the
//     events, their deliveries and attempts, the card sessions that saved
//     no card and the idempotency answers, which retention deletes: with
//     retention off (KEELPAY_RETENTION=forever) the same mix grows the
//     file by 570 bytes a request. The limit, 400 bytes a request, lies
//     between the two; the floor, 1 MiB, is above the write-ahead log's
//     steps.
func soakLimits(backend string) []growthLimit {
	limits := []growthLimit{
		{name: "rss_bytes", perRequest: 512, floor: 16 << 20},
		{name: "goroutines", perRequest: 1.0 / 500, floor: 25},
		{name: "open_fds", perRequest: 1.0 / 1000, floor: 15},
	}
	switch backend {
	case "sqlite":
		limits = append(limits, growthLimit{name: "db_bytes", perRequest: 400, floor: 1 << 20, afterRetention: true})
	case "postgres":
		// PostgreSQL reuses the space of deleted rows only once they
		// are vacuumed, and autovacuum runs when it sees fit
		// (https://www.postgresql.org/docs/current/routine-vacuuming.html),
		// or never when it is off, as on the test machines, where the
		// schema grew by 766 bytes a request with retention on and 821
		// with it off on 1-minute runs, and by 743 and 894 with it on on
		// two 10-minute runs: no table was vacuumed. Its size is
		// reported, and judged only as growth far beyond those.
		limits = append(limits, growthLimit{name: "db_bytes", perRequest: 4 << 10, floor: 8 << 20, afterRetention: true})
	}
	return limits
}

// growthLimit is the most one figure may grow over the second half of a
// run.
type growthLimit struct {
	name string
	// perRequest is the slope allowed, in the figure's unit per request.
	perRequest float64
	// floor is the fitted growth over the half that is still noise.
	floor float64
	// afterRetention: checked only when the half starts after the first
	// retention window has passed (the database's size).
	afterRetention bool
}

// soakSample is one row of the table.
type soakSample struct {
	elapsed    time.Duration
	requests   int64   // API requests made so far
	clock      float64 // sandbox clock offset, hours
	rssBytes   int64
	heapBytes  int64 // go_memstats_heap_inuse_bytes: RSS less this is mostly SQLite's caches
	goroutines int64
	openFDs    int64
	dbBytes    int64
	pending    int64 // keelpay_webhook_deliveries{status="pending"}
	window     int   // requests answered in the window
	p99        time.Duration
	failures   int64 // unexpected answers so far
}

func (s soakSample) value(name string) float64 {
	switch name {
	case "rss_bytes":
		return float64(s.rssBytes)
	case "goroutines":
		return float64(s.goroutines)
	case "open_fds":
		return float64(s.openFDs)
	case "db_bytes":
		return float64(s.dbBytes)
	}
	panic("no figure " + name)
}

// slope is the least-squares slope of ys over xs.
func slope(xs, ys []float64) float64 {
	n := float64(len(xs))
	var sx, sy, sxx, sxy float64
	for i := range xs {
		sx += xs[i]
		sy += ys[i]
		sxx += xs[i] * xs[i]
		sxy += xs[i] * ys[i]
	}
	d := n*sxx - sx*sx
	if d == 0 {
		return 0
	}
	return (n*sxy - sx*sy) / d
}

// growth is one figure's fit over the second half of a run.
type growth struct {
	limit    growthLimit
	slope    float64 // per request
	fitted   float64 // slope × requests over the half
	skipped  string  // why it was not checked
	exceeded bool
}

func (g growth) String() string {
	s := fmt.Sprintf("%-10s %12.4f /request, %14.1f over the half (limit %.4f /request and %.0f)",
		g.limit.name, g.slope, g.fitted, g.limit.perRequest, g.limit.floor)
	switch {
	case g.skipped != "":
		s += ": not checked, " + g.skipped
	case g.exceeded:
		s += ": GROWS"
	}
	return s
}

// checkGrowth fits every limit's figure over the samples of the second half
// of the run (from the middle of the run's time on). retentionAt is the
// time into the run when the first retention window was over (0: never).
func checkGrowth(samples []soakSample, limits []growthLimit, retentionAt time.Duration) []growth {
	var half []soakSample
	if len(samples) > 0 {
		mid := samples[len(samples)-1].elapsed / 2
		for _, s := range samples {
			if s.elapsed >= mid {
				half = append(half, s)
			}
		}
	}
	out := make([]growth, 0, len(limits))
	for _, l := range limits {
		g := growth{limit: l}
		switch {
		case len(half) < 3:
			g.skipped = fmt.Sprintf("%d samples in the second half", len(half))
		case l.afterRetention && (retentionAt == 0 || retentionAt > half[0].elapsed):
			g.skipped = "the first retention window was not over when the second half started"
		}
		if g.skipped == "" {
			xs, ys := make([]float64, len(half)), make([]float64, len(half))
			for i, s := range half {
				xs[i], ys[i] = float64(s.requests), s.value(l.name)
			}
			g.slope = slope(xs, ys)
			g.fitted = g.slope * (xs[len(xs)-1] - xs[0])
			g.exceeded = g.slope > l.perRequest && g.fitted > l.floor
		}
		out = append(out, g)
	}
	return out
}

// TestSoakGrowthCheck shows the check on series whose answer is known: a
// level that is flat with noise passes, and leaks of a few KiB, a
// goroutine or a file now and then per request fail. The soak itself
// cannot be made to leak without a switch in the server, which it must not
// have.
func TestSoakGrowthCheck(t *testing.T) {
	t.Parallel()
	// A 10-minute run: 120 samples 5 s apart, 100,000 requests.
	series := func(seed uint64, f func(s *soakSample, requests float64, noise float64)) []soakSample {
		r := rand.New(rand.NewPCG(seed, 0))
		out := make([]soakSample, 120)
		for i := range out {
			s := &out[i]
			s.elapsed = time.Duration(i+1) * 5 * time.Second
			s.requests = int64(i+1) * 100_000 / 120
			// The steady level, with noise as big as a real run's.
			s.rssBytes = 60<<20 + int64(r.NormFloat64()*(4<<20))
			s.goroutines = 40 + int64(r.NormFloat64()*8)
			s.openFDs = 20 + int64(r.NormFloat64()*3)
			// The database: 255 bytes kept for good per request, events
			// that come and go with retention, the write-ahead log's
			// steps.
			s.dbBytes = 8<<20 + s.requests*255 + int64(r.NormFloat64()*(256<<10))
			f(s, float64(s.requests), r.NormFloat64())
		}
		return out
	}
	exceeded := func(gs []growth) []string {
		var names []string
		for _, g := range gs {
			if g.exceeded {
				names = append(names, g.limit.name)
			}
		}
		return names
	}
	retentionAt := 30 * time.Second
	sqliteLimits := soakLimits("sqlite")

	for seed := range uint64(20) {
		flat := series(seed, func(*soakSample, float64, float64) {})
		require.Empty(t, exceeded(checkGrowth(flat, sqliteLimits, retentionAt)), "flat, seed %d", seed)
		// A warm-up in the first half is left out: the heap grows by
		// 100 MiB in the first minute, then stays.
		warm := series(seed, func(s *soakSample, _, _ float64) {
			s.rssBytes += min(int64(s.elapsed/time.Second), 60) * 100 << 20 / 60
		})
		require.Empty(t, exceeded(checkGrowth(warm, sqliteLimits, retentionAt)), "warm-up, seed %d", seed)
	}

	leaks := map[string]func(s *soakSample, requests, noise float64){
		// 2 KiB of memory per request.
		"rss_bytes": func(s *soakSample, requests, _ float64) { s.rssBytes += int64(requests * 2048) },
		// A goroutine left behind by one request in a hundred.
		"goroutines": func(s *soakSample, requests, _ float64) { s.goroutines += int64(requests / 100) },
		// A file left open by one request in a hundred.
		"open_fds": func(s *soakSample, requests, _ float64) { s.openFDs += int64(requests / 100) },
		// Retention that deletes nothing: events pile up on top of
		// what is kept for good, 570 bytes a request in all.
		"db_bytes": func(s *soakSample, requests, _ float64) { s.dbBytes += int64(requests * (570 - 255)) },
	}
	for name, leak := range leaks {
		for seed := range uint64(20) {
			require.Equal(t, []string{name}, exceeded(checkGrowth(series(seed, leak), sqliteLimits, retentionAt)), "seed %d", seed)
		}
	}

	// The database is not judged before retention has run through a
	// window: a run too short for that says so.
	g := checkGrowth(series(1, leaks["db_bytes"]), sqliteLimits, 0)
	require.False(t, g[3].exceeded)
	require.Contains(t, g[3].skipped, "retention")
	// Nor with too few samples.
	g = checkGrowth(series(1, leaks["rss_bytes"])[:3], sqliteLimits, retentionAt)
	require.Contains(t, g[0].skipped, "samples")

	// The slope itself.
	require.InDelta(t, 2.5, slope([]float64{0, 1, 2, 3}, []float64{1, 3.5, 6, 8.5}), 1e-9)
	require.Zero(t, slope([]float64{1, 1}, []float64{0, 5}))
}

// TestSoak runs the soak when KEELPAY_SOAK gives its length: on SQLite,
// and on PostgreSQL too with KEELPAY_SOAK_POSTGRES=1 and
// KEELPAY_TEST_POSTGRES set. It writes the table as CSV to the file
// KEELPAY_SOAK_OUT names, if any.
func TestSoak(t *testing.T) {
	v := os.Getenv("KEELPAY_SOAK")
	if v == "" {
		t.Skip("the soak runs only when asked: KEELPAY_SOAK=10m go test -count=1 -run TestSoak -timeout 20m ./cmd/refserver/ " +
			"(KEELPAY_SOAK_POSTGRES=1 with KEELPAY_TEST_POSTGRES adds PostgreSQL; KEELPAY_SOAK_OUT=file.csv writes the table)")
	}
	d, err := time.ParseDuration(v)
	require.NoError(t, err, "KEELPAY_SOAK must be a duration such as 10m")
	require.GreaterOrEqual(t, d, 30*time.Second, "KEELPAY_SOAK: a soak shorter than 30s has too few samples to fit")

	var rows [][]string
	t.Run("sqlite", func(t *testing.T) {
		dir := t.TempDir()
		db := filepath.Join(dir, "keelpay.db")
		s := start(t, dir, soakEnv(), "-db", db)
		runSoak(t, s, d, "sqlite", &rows, func() (int64, error) {
			// The database is the file and its write-ahead log
			// (https://www.sqlite.org/wal.html: committed pages live in
			// the -wal file until a checkpoint copies them back).
			var n int64
			for _, p := range []string{db, db + "-wal"} {
				fi, err := os.Stat(p)
				if err != nil && !os.IsNotExist(err) {
					return 0, err
				}
				if err == nil {
					n += fi.Size()
				}
			}
			return n, nil
		})
	})
	if os.Getenv("KEELPAY_SOAK_POSTGRES") == "1" {
		t.Run("postgres", func(t *testing.T) {
			base := postgrestest.DSN(t)
			schema := postgrestest.NewSchema(t)
			conn, err := pgx.Connect(context.Background(), base)
			require.NoError(t, err)
			t.Cleanup(func() { _ = conn.Close(context.Background()) })
			env := append(soakEnv(), "KEELPAY_ENCRYPTION_KEY="+keyring.Format(keyringtest.Key()))
			s := start(t, t.TempDir(), env, "-db", dsnIn(t, base, schema))
			// Where the space went, for a reader of the figures: the
			// largest tables, their live and dead rows and autovacuum's
			// runs on them (pg_stat_user_tables,
			// https://www.postgresql.org/docs/current/monitoring-stats.html#MONITORING-PG-STAT-ALL-TABLES-VIEW).
			// A cleanup, so that it runs when the run failed too, before
			// the schema is dropped.
			t.Cleanup(func() {
				var autovacuum string
				if err := conn.QueryRow(context.Background(), `SHOW autovacuum`).Scan(&autovacuum); err != nil {
					autovacuum = err.Error()
				}
				rows, err := conn.Query(context.Background(), `SELECT relname, pg_total_relation_size(relid), n_live_tup, n_dead_tup, autovacuum_count
					FROM pg_stat_user_tables WHERE schemaname = $1 ORDER BY 2 DESC LIMIT 8`, schema)
				if err != nil {
					t.Logf("postgres: tables: %v", err)
					return
				}
				var b strings.Builder
				fmt.Fprintf(&b, "(autovacuum: %s)\n", autovacuum)
				fmt.Fprintln(&b, "table\tbytes\tlive\tdead\tautovacuums")
				defer rows.Close()
				for rows.Next() {
					var name string
					var size, live, dead, vacuums int64
					if err := rows.Scan(&name, &size, &live, &dead, &vacuums); err != nil {
						t.Logf("postgres: tables: %v", err)
						return
					}
					fmt.Fprintf(&b, "%s\t%d\t%d\t%d\t%d\n", name, size, live, dead, vacuums)
				}
				if err := rows.Err(); err != nil {
					t.Logf("postgres: tables: %v", err)
				}
				t.Logf("postgres: the largest tables at the end:\n%s", b.String())
			})
			runSoak(t, s, d, "postgres", &rows, func() (int64, error) {
				// Every table of the schema with its indexes and TOAST
				// (https://www.postgresql.org/docs/current/functions-admin.html#FUNCTIONS-ADMIN-DBSIZE:
				// pg_total_relation_size).
				var n int64
				err := conn.QueryRow(context.Background(), `SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint
					FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
					WHERE n.nspname = $1 AND c.relkind = 'r'`, schema).Scan(&n)
				return n, err
			})
		})
	}
	if out := os.Getenv("KEELPAY_SOAK_OUT"); out != "" && len(rows) > 0 {
		f, err := os.Create(out)
		require.NoError(t, err)
		w := csv.NewWriter(f)
		require.NoError(t, w.Write(soakHeader))
		require.NoError(t, w.WriteAll(rows))
		require.NoError(t, f.Close())
		t.Logf("table written to %s", out)
	}
}

// soakEnv configures the soak's servers: retention on, at its shortest.
func soakEnv() []string {
	return []string{"KEELPAY_ADDR=127.0.0.1:0", "KEELPAY_RETENTION=" + soakRetention,
		"KEELPAY_CARD_SESSION_RETENTION=" + soakSessionRetention}
}

var soakHeader = []string{"backend", "elapsed_s", "requests", "clock_h", "rss_mb", "heap_mb", "goroutines", "open_fds",
	"db_mb", "pending_deliveries", "window_requests", "p99_ms", "failures"}

func (s soakSample) row(backend string) []string {
	return []string{backend, strconv.Itoa(int(s.elapsed.Seconds())), strconv.FormatInt(s.requests, 10),
		strconv.FormatFloat(s.clock, 'f', 1, 64), strconv.FormatFloat(float64(s.rssBytes)/(1<<20), 'f', 1, 64),
		strconv.FormatFloat(float64(s.heapBytes)/(1<<20), 'f', 1, 64),
		strconv.FormatInt(s.goroutines, 10), strconv.FormatInt(s.openFDs, 10),
		strconv.FormatFloat(float64(s.dbBytes)/(1<<20), 'f', 2, 64), strconv.FormatInt(s.pending, 10),
		strconv.Itoa(s.window), strconv.FormatFloat(float64(s.p99.Microseconds())/1000, 'f', 1, 64),
		strconv.FormatInt(s.failures, 10)}
}

// soak is one run's traffic and what it saw.
type soak struct {
	s    *started
	shop shop
	pid  int

	requests atomic.Int64
	mu       sync.Mutex
	window   []time.Duration // latencies answered since the last sample
	failures []string        // unexpected answers: the first of each kind
	kinds    map[string]int  // unexpected answers by what and status
	failed   int64
	recent   []string // ids of recent intents, for reads
	events   []string // ids of recent events

	clockOffset atomic.Int64 // seconds
}

// runSoak drives s for d and adds the table's rows to rows.
func runSoak(t *testing.T, s *started, d time.Duration, backend string, rows *[][]string, dbSize func() (int64, error)) {
	// The receiver answers 503 to every soakWebhookFailEvery-th delivery.
	var deliveries atomic.Int64
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if deliveries.Add(1)%soakWebhookFailEvery == 0 {
			http.Error(w, "soak: failing on purpose", http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(receiver.Close)

	k := &soak{s: s, pid: s.Cmd.Process.Pid, kinds: map[string]int{}, shop: setupShop(t, s, "app_soak_"+backend, receiver.URL+"/webhooks")}
	interval := min(max(d/120, 2*time.Second), 10*time.Second)
	t.Logf("%s: soak for %v, a sample every %v, the sandbox clock moving %v", backend, d, interval, soakClock)

	ctx, cancel := context.WithTimeout(context.Background(), d)
	var wg sync.WaitGroup
	// A run that fails early stops its traffic before the server goes.
	defer func() { cancel(); wg.Wait() }()
	// The traffic, paced: each tick lets one operation start.
	ops := make(chan struct{})
	wg.Go(func() {
		defer close(ops)
		tick := time.NewTicker(time.Second / soakOpsPerSecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				select {
				case ops <- struct{}{}:
				case <-ctx.Done():
					return
				}
			}
		}
	})
	for w := range soakWorkers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 1))
			for range ops {
				k.operation(r)
			}
		})
	}
	// The clock: moved once a second so that it has moved soakClock when
	// the run ends. Each move runs what became due before it answers.
	began := time.Now()
	var retentionAt atomic.Int64                        // nanoseconds into the run
	retention, err := time.ParseDuration(soakRetention) // the flag takes Go durations too
	require.NoError(t, err)
	wg.Go(func() {
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			target := int64(soakClock.Seconds() * min(time.Since(began).Seconds()/d.Seconds(), 1))
			step := target - k.clockOffset.Load()
			if step < 1 {
				continue
			}
			r, err := send("POST", s.URL+"/sandbox/clock", "", map[string]any{"advance_seconds": step})
			if err != nil || r.Status != http.StatusOK {
				k.fail("clock", r, err)
				continue
			}
			off, _ := r.Body["offset_seconds"].(float64)
			k.clockOffset.Store(int64(off))
			// The first retention window is over once the clock has
			// moved twice the retention period: what the first period
			// made has been deleted by the moves' retention passes, and
			// the events of the second are being deleted as the third's
			// are made.
			if time.Duration(off)*time.Second >= 2*retention {
				retentionAt.CompareAndSwap(0, int64(time.Since(began)))
			}
		}
	})

	var samples []soakSample
	tick := time.NewTicker(interval)
	defer tick.Stop()
sampling:
	for {
		select {
		case <-ctx.Done():
			break sampling
		case <-tick.C:
			sm, err := k.sample(time.Since(began), dbSize)
			require.NoError(t, err)
			samples = append(samples, sm)
		}
	}
	wg.Wait()
	final := k.metrics(t)

	// The table.
	var b strings.Builder
	fmt.Fprintln(&b, strings.Join(soakHeader, "\t"))
	for _, sm := range samples {
		*rows = append(*rows, sm.row(backend))
		fmt.Fprintln(&b, strings.Join(sm.row(backend), "\t"))
	}
	t.Logf("%s:\n%s", backend, b.String())
	t.Logf("%s: %d webhook deliveries received, %d answered 503; deleted by retention: %v events, %v card sessions; "+
		"intents canceled (expired and canceled): %v; 3D Secure challenges timed out: %v",
		backend, deliveries.Load(), deliveries.Load()/soakWebhookFailEvery,
		final[`keelpay_retention_deleted_total{kind="event"}`], final[`keelpay_retention_deleted_total{kind="card_session"}`],
		final[`keelpay_payment_intents{status="canceled"}`], final[`keelpay_payment_attempts_total{code="authentication_expired",outcome="failed"}`])

	// The server shuts down cleanly after all that.
	require.NoError(t, s.Cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, s.Cmd.Wait(), "exit after the soak: %s", lastLines(s.Stderr.String(), 20))

	// Unexpected answers, growth, then what the run covered.
	at := time.Duration(retentionAt.Load())
	var grew []string
	for _, g := range checkGrowth(samples, soakLimits(backend), at) {
		t.Logf("%s: slope %s", backend, g)
		if g.exceeded {
			grew = append(grew, g.limit.name)
		}
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.failed > 0 {
		t.Logf("%s: the server's warnings and errors:\n%s", backend, soakLogProblems(s.Stderr.String(), 40))
	}
	require.Zero(t, k.failed, "unexpected answers %v, the first of each: %s", k.kinds, strings.Join(k.failures, "\n"))
	require.Empty(t, grew, "grows without bound over the second half of the run")
	require.Greater(t, final[`keelpay_retention_deleted_total{kind="event"}`], 0.0, "retention deleted events")
	require.Greater(t, final[`keelpay_retention_deleted_total{kind="card_session"}`], 0.0, "retention deleted card sessions")
	require.Greater(t, final[`keelpay_webhook_attempts_total{outcome="http_status"}`], 0.0, "deliveries failed and were retried")
}

// soakLogProblems is the first n lines of the server's log at level WARN
// or ERROR.
func soakLogProblems(log string, n int) string {
	var out []string
	for line := range strings.Lines(log) {
		if strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR") {
			if out = append(out, strings.TrimSpace(line)); len(out) == n {
				break
			}
		}
	}
	return strings.Join(out, "\n")
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// sample reads the server's figures now, and the latencies of the window
// since the last sample.
func (k *soak) sample(elapsed time.Duration, dbSize func() (int64, error)) (soakSample, error) {
	sm := soakSample{elapsed: elapsed, requests: k.requests.Load(), clock: float64(k.clockOffset.Load()) / 3600}
	// VmRSS of /proc/PID/status, in kB (proc_pid_status(5)).
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", k.pid))
	if err != nil {
		return sm, err
	}
	for line := range strings.Lines(string(status)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				return sm, fmt.Errorf("VmRSS %q: %w", v, err)
			}
			sm.rssBytes = kb << 10
		}
	}
	// Goroutines and open files from the server's own metrics (the Go and
	// process collectors).
	m, err := k.scrape()
	if err != nil {
		return sm, err
	}
	figures := map[string]*int64{
		"go_goroutines":                                &sm.goroutines,
		"process_open_fds":                             &sm.openFDs,
		"go_memstats_heap_inuse_bytes":                 &sm.heapBytes,
		`keelpay_webhook_deliveries{status="pending"}`: &sm.pending,
	}
	for name, p := range figures {
		v, ok := m[name]
		if !ok {
			return sm, fmt.Errorf("/metrics has no %s", name)
		}
		*p = int64(v)
	}
	if sm.dbBytes, err = dbSize(); err != nil {
		return sm, fmt.Errorf("database size: %w", err)
	}
	k.mu.Lock()
	w := k.window
	k.window = nil
	sm.failures = k.failed
	k.mu.Unlock()
	sm.window = len(w)
	if len(w) > 0 {
		slices.Sort(w)
		sm.p99 = w[min(len(w)-1, int(math.Ceil(0.99*float64(len(w))))-1)]
	}
	return sm, nil
}

// scrape reads /metrics: each sample line's value by its name and labels
// as written.
func (k *soak) scrape() (map[string]float64, error) {
	resp, err := client.Get(k.s.URL + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("/metrics: %s", resp.Status)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		if v, err := strconv.ParseFloat(line[i+1:], 64); err == nil {
			out[line[:i]] = v
		}
	}
	return out, sc.Err()
}

func (k *soak) metrics(t *testing.T) map[string]float64 {
	t.Helper()
	m, err := k.scrape()
	require.NoError(t, err)
	return m
}

// call makes one API request of the traffic and times it; a failure to
// get an answer, a 5xx, or a status not among ok is recorded as
// unexpected.
func (k *soak) call(op, method, path, key string, body any, ok ...int) (reply, bool) {
	u := path
	if strings.HasPrefix(path, "/") {
		u = k.s.URL + path
	}
	r, err := k.do(method, u, key, body)
	if err != nil || !slices.Contains(ok, r.Status) {
		k.fail(op+" "+method+" "+path, r, err)
		return r, false
	}
	return r, true
}

// do is send, counted and timed for the table.
func (k *soak) do(method, u, key string, body any, header ...string) (reply, error) {
	began := time.Now()
	r, err := send(method, u, key, body, header...)
	took := time.Since(began)
	k.requests.Add(1)
	k.mu.Lock()
	k.window = append(k.window, took)
	k.mu.Unlock()
	return r, err
}

func (k *soak) fail(what string, r reply, err error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.failed++
	kind := fmt.Sprintf("%s: %d", what, r.Status)
	if k.kinds[kind]++; k.kinds[kind] == 1 && len(k.failures) < 20 {
		k.failures = append(k.failures, fmt.Sprintf("%s %v %v", kind, r.Body, err))
	}
}

// remember keeps the id among the recent ones (at most 200) of list.
func (k *soak) remember(list *[]string, id string) {
	if id == "" {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	*list = append(*list, id)
	if len(*list) > 200 {
		*list = slices.Delete(*list, 0, len(*list)-200)
	}
}

func (k *soak) pick(r *rand.Rand, list *[]string) string {
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(*list) == 0 {
		return ""
	}
	return (*list)[r.IntN(len(*list))]
}

// operation runs one operation of the mix, chosen at random by weight.
func (k *soak) operation(r *rand.Rand) {
	n := r.IntN(100)
	switch {
	case n < 30:
		k.payNewCard(r)
	case n < 40:
		k.pay3DS(r)
	case n < 52:
		k.savedCard(r)
	case n < 55:
		k.abandoned(r)
	case n < 80:
		k.reads(r)
	default:
		k.eventPages(r)
	}
}

func (k *soak) customer(r *rand.Rand) map[string]any {
	i := r.IntN(soakCustomers)
	return map[string]any{"id": fmt.Sprintf("cus_soak_%d", i), "name": "Soak Buyer",
		"email": fmt.Sprintf("buyer%d@shop.example", i), "phone": fmt.Sprintf("+35840%07d", i)}
}

// createIntent creates an intent, every other one with an Idempotency-Key
// (whose answers retention deletes after 24 hours).
func (k *soak) createIntent(r *rand.Rand, op string, body map[string]any) (reply, bool) {
	if body == nil {
		body = map[string]any{"amount": 100 + r.IntN(100_000), "currency": "EUR", "customer": k.customer(r)}
	}
	var header []string
	if r.IntN(2) == 0 {
		header = []string{"Idempotency-Key", fmt.Sprintf("soak-%d-%d", r.Uint64(), time.Now().UnixNano())}
	}
	res, err := k.do("POST", k.s.URL+"/v1/payment_intents", k.shop.sk, body, header...)
	if err != nil || res.Status != http.StatusCreated {
		k.fail(op+" create", res, err)
		return res, false
	}
	k.remember(&k.recent, res.Str("id"))
	return res, true
}

// payNewCard pays with a new card as the card field does: mostly cards
// that pay, some declined, some whose outcome is unknown until the clock
// moves; two in five paid intents are refunded, some refunds rejected.
func (k *soak) payNewCard(r *rand.Rand) {
	intent, ok := k.createIntent(r, "pay", nil)
	if !ok {
		return
	}
	cards := []string{sandbox.CardVisa, sandbox.CardVisa, sandbox.CardVisa, sandbox.CardMastercard, sandbox.CardVisa,
		sandbox.CardDeclined, sandbox.CardInsufficientFunds, sandbox.CardOutcomeUnknown, sandbox.CardRefundRejected, sandbox.CardVisa}
	paid, ok := k.call("pay", "POST", "/v1/payment_intents/"+intent.Str("id")+"/confirm", k.shop.pk,
		confirmBody(intent, cards[r.IntN(len(cards))]), http.StatusOK)
	if !ok || paid.Str("status") != "succeeded" || r.IntN(5) >= 2 {
		return
	}
	k.call("refund", "POST", "/v1/refunds", k.shop.sk,
		map[string]any{"payment_intent": paid.Str("id"), "reason": "soak: returned"}, http.StatusCreated)
}

// pay3DS confirms with the 3D Secure card; the buyer completes most
// challenges, fails some and leaves some, which time out after 10
// minutes on the clock.
func (k *soak) pay3DS(r *rand.Rand) {
	intent, ok := k.createIntent(r, "3ds", nil)
	if !ok {
		return
	}
	res, ok := k.call("3ds", "POST", "/v1/payment_intents/"+intent.Str("id")+"/confirm", k.shop.pk,
		confirmBody(intent, sandbox.CardThreeDSecure), http.StatusOK)
	if !ok {
		return
	}
	next, _ := res.Body["next_action"].(map[string]any)
	challenge, _ := next["url"].(string)
	if res.Str("status") != "requires_action" || challenge == "" {
		// The clock moves minutes a second: when a move falls between
		// the confirm's recording of its attempt and its call to the
		// provider, the attempt's send window (15 s of the clock,
		// payments.SendWindow) is over, the confirm does not send it,
		// and the attempt ends as provider_error, as it would in a
		// process paused for that long.
		if le, _ := res.Body["last_error"].(map[string]any); le["code"] != "provider_error" {
			k.fail("3ds: not requires_action", res, nil)
		}
		return
	}
	result := []string{"complete", "complete", "complete", "fail", ""}[r.IntN(5)]
	if result == "" {
		return
	}
	// The clock moves fast: a challenge may already have timed out when
	// the buyer answers, and the page then says so (409).
	k.call("3ds", "POST", challenge, "", url.Values{"result": {result}}, http.StatusOK, http.StatusConflict)
	k.call("3ds", "GET", "/v1/payment_intents/"+intent.Str("id"), k.shop.sk, nil, http.StatusOK)
}

// savedCard saves a card for a customer of the pool, lists the customer's
// cards, pays with the new card, and deletes the customer's cards beyond
// the newest three. One session in five saves nothing and expires.
func (k *soak) savedCard(r *rand.Rand) {
	cust := k.customer(r)
	session, ok := k.call("card", "POST", "/v1/card_sessions", k.shop.sk,
		map[string]any{"customer": cust, "page_origins": []string{"https://shop.example"}}, http.StatusCreated)
	if !ok || r.IntN(5) == 0 {
		return
	}
	// A session is open for 30 minutes of the clock, which a short run
	// moves through in seconds: a capture may find it expired (409).
	card, ok := k.call("card", "POST", "/v1/card_sessions/"+session.Str("id")+"/cards", k.shop.pk, map[string]any{
		"client_secret": session.Str("client_secret"), "number": sandbox.CardVisa, "exp_month": 12, "exp_year": 2035, "cvc": "123"},
		http.StatusCreated, http.StatusConflict)
	if !ok || card.Status != http.StatusCreated {
		return
	}
	list, ok := k.call("card", "GET", "/v1/cards?limit=20&customer="+url.QueryEscape(cust["id"].(string)), k.shop.sk, nil, http.StatusOK)
	if !ok {
		return
	}
	intent, ok := k.createIntent(r, "card", map[string]any{"amount": 100 + r.IntN(10_000), "currency": "EUR",
		"customer": cust, "payment_method": card.Str("id")})
	if ok {
		k.call("card", "POST", "/v1/payment_intents/"+intent.Str("id")+"/confirm", k.shop.sk, nil, http.StatusOK)
	}
	data, _ := list.Body["data"].([]any)
	for i, c := range data {
		if i < 3 {
			continue
		}
		id, _ := c.(map[string]any)["id"].(string)
		// Another worker may be deleting the same customer's card.
		k.call("card", "DELETE", "/v1/cards/"+id, k.shop.sk, nil, http.StatusOK, http.StatusNotFound)
	}
}

// abandoned creates intents that are never confirmed (they expire after
// 24 hours) or are canceled at once.
func (k *soak) abandoned(r *rand.Rand) {
	intent, ok := k.createIntent(r, "abandon", nil)
	if ok && r.IntN(2) == 0 {
		k.call("abandon", "POST", "/v1/payment_intents/"+intent.Str("id")+"/cancel", k.shop.sk,
			map[string]any{"cancellation_reason": "abandoned"}, http.StatusOK)
	}
}

// reads reads an intent, a page of intents (some filtered), and a page
// of refunds.
func (k *soak) reads(r *rand.Rand) {
	if id := k.pick(r, &k.recent); id != "" {
		k.call("read", "GET", "/v1/payment_intents/"+id, k.shop.sk, nil, http.StatusOK)
	}
	q := []string{"", "&status=succeeded", "&customer=" + k.customer(r)["id"].(string)}[r.IntN(3)]
	k.call("read", "GET", "/v1/payment_intents?limit=20"+q, k.shop.sk, nil, http.StatusOK)
	k.call("read", "GET", "/v1/refunds?limit=10", k.shop.sk, nil, http.StatusOK)
}

// eventPages walks up to three pages of events, reads one event and its
// attempts, and now and then redelivers it. An event may have been
// deleted by retention between the list and the read (404).
func (k *soak) eventPages(r *rand.Rand) {
	after := ""
	for range 1 + r.IntN(3) {
		path := "/v1/events?limit=50"
		if after != "" {
			path += "&starting_after=" + after
		}
		page, ok := k.call("events", "GET", path, k.shop.sk, nil, http.StatusOK, http.StatusBadRequest)
		if !ok || page.Status != http.StatusOK {
			// A cursor retention deleted meanwhile is no longer an event
			// of the store (invalid_starting_after).
			return
		}
		data, _ := page.Body["data"].([]any)
		if len(data) == 0 {
			break
		}
		after, _ = data[len(data)-1].(map[string]any)["id"].(string)
		k.remember(&k.events, after)
		if more, _ := page.Body["has_more"].(bool); !more {
			break
		}
	}
	id := k.pick(r, &k.events)
	if id == "" {
		return
	}
	k.call("events", "GET", "/v1/events/"+id, k.shop.sk, nil, http.StatusOK, http.StatusNotFound)
	k.call("events", "GET", "/v1/events/"+id+"/attempts", k.shop.sk, nil, http.StatusOK, http.StatusNotFound)
	if r.IntN(10) == 0 {
		k.call("events", "POST", "/v1/events/"+id+"/redeliver", k.shop.sk, nil, http.StatusOK, http.StatusNotFound)
	}
}
