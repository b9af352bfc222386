// Command retention measures the retention of events and card sessions on
// a database (a SQLite file, or a PostgreSQL schema).
//
// -mode steady writes, cycle after cycle, what payments leave behind that
// retention deletes: per payment an event whose delivery is over (one
// attempt that succeeded; every 20th fails after seven attempts) and a card
// session that expires (every other one saves a card, which adds a
// card.created event). Each cycle is one day of the clock; after it the
// clock moves a day and a retention pass deletes what is older than -keep
// days. It prints the database's size after every pass: the SQLite file
// (and its WAL, and the free pages in it), or the total size of the
// schema's tables in PostgreSQL. PostgreSQL reuses the space of deleted
// rows only once they are vacuumed; on a server with autovacuum off, pass
// -vacuum and the command runs VACUUM on the four tables after each pass
// (it says so in its output).
//
// -mode backlog fills -backlog events whose delivery is over, all older
// than the retention period, and -recent newer ones, with SQL of its own
// (one attempt each), then works the backlog off through the adapter in
// batches of -batch and prints the time of each batch: the first ones, the
// median and the slowest over the whole backlog.
//
//	go run ./bench/retention -mode steady -db /tmp/ret.db -per-cycle 20000 -cycles 12
//	go run ./bench/retention -mode steady -vacuum -db 'postgres://...&search_path=ret' -per-cycle 20000 -cycles 12
//	go run ./bench/retention -mode backlog -db /tmp/backlog.db -backlog 1000000 -recent 100000
//	go run ./bench/retention -mode backlog -db 'postgres://...&search_path=ret' -backlog 1000000 -recent 100000
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"log"
	"os"
	"slices"
	"strings"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/keyring/keyringtest"
	"github.com/keelpay/keelpay/storage"
	"github.com/keelpay/keelpay/storage/postgres"
	"github.com/keelpay/keelpay/storage/sqlite"
	"github.com/keelpay/keelpay/storage/storagetest"
)

const day = 24 * time.Hour

// tables are those retention deletes from.
var tables = []string{"events", "deliveries", "delivery_attempts", "card_sessions"}

type bench struct {
	ctx  context.Context
	path string
	pg   bool
	db   storage.Storage
	raw  *sql.DB
}

func main() {
	mode := flag.String("mode", "steady", "steady or backlog")
	path := flag.String("db", "retention.db", "SQLite file or postgres:// URL (a fresh database or schema)")
	perCycle := flag.Int("per-cycle", 20000, "steady: payments a cycle (a day)")
	cycles := flag.Int("cycles", 12, "steady: cycles")
	keep := flag.Int("keep", 3, "steady: days kept")
	vacuum := flag.Bool("vacuum", false, "steady, PostgreSQL: run VACUUM on the tables after each pass (for a server with autovacuum off)")
	backlog := flag.Int("backlog", 100000, "backlog: old events whose delivery is over")
	recent := flag.Int("recent", 100000, "backlog: recent events, which stay")
	batch := flag.Int("batch", 1000, "events (or card sessions) deleted a transaction")
	flag.Parse()
	ctx := context.Background()
	b := &bench{ctx: ctx, path: *path, pg: strings.HasPrefix(*path, "postgres")}
	var err error
	if b.pg {
		b.db, err = postgres.Open(ctx, postgres.Config{DSN: *path, Keyring: keyringtest.Keyring()})
		if err == nil {
			b.raw, err = sql.Open("pgx", *path)
		}
	} else {
		b.db, err = sqlite.Open(ctx, sqlite.Config{Path: *path, Keyring: keyringtest.Keyring()})
		if err == nil {
			b.raw, err = sql.Open("sqlite", "file:"+*path+"?_pragma=busy_timeout(10000)")
		}
	}
	if err != nil {
		log.Fatal(err)
	}
	defer b.db.Close()
	switch *mode {
	case "steady":
		b.steady(*perCycle, *cycles, *keep, *batch, *vacuum)
	case "backlog":
		b.backlog(*backlog, *recent, *batch)
	default:
		log.Fatalf("unknown -mode %q", *mode)
	}
}

// body is an event body of a realistic size: a payment intent is about
// 1.2 KB of JSON.
func body(id string) []byte {
	return fmt.Appendf(nil, `{"id":%q,"object":"event","type":"payment_intent.succeeded","data":{"object":{"description":%q}}}`,
		id, strings.Repeat("x", 1100))
}

// deliver claims e's delivery and records attempts, the last one final.
func deliver(ctx context.Context, tx storage.Executor, e *keelpay.Event, fail bool) error {
	n := 1
	if fail {
		n = 7
	}
	for i := range n {
		at := e.CreatedAt.Add(time.Duration(i) * time.Minute)
		p := storage.DeliveryClaimParams{Now: at, LeaseUntil: at.Add(time.Minute), Limit: 1, PerStore: 1, LeaseToken: keelpay.NewID("lease_")}
		if _, err := tx.DeliveryClaimEvent(ctx, e.ID, p); err != nil {
			return err
		}
		d := keelpay.Delivery{Status: keelpay.DeliverySucceeded, Attempts: i + 1, LastAttemptAt: at, LastStatusCode: 200}
		a := &keelpay.DeliveryAttempt{ID: keelpay.NewID(keelpay.PrefixAttempt), EventID: e.ID, StoreID: e.StoreID,
			StartedAt: at, Duration: 3 * time.Millisecond, StatusCode: 200, ResponseBody: `{"received":true}`}
		if fail {
			d = keelpay.Delivery{Status: keelpay.DeliveryPending, Attempts: i + 1, LastAttemptAt: at, NextAttemptAt: at.Add(time.Minute),
				LastStatusCode: 503, LastFailure: keelpay.FailureHTTPStatus}
			if i == n-1 {
				d.Status, d.NextAttemptAt = keelpay.DeliveryFailed, time.Time{}
			}
			a.StatusCode, a.Failure, a.ResponseBody = 503, keelpay.FailureHTTPStatus, "<html>Service Unavailable</html>"
		}
		if err := tx.DeliveryRecord(ctx, []storage.DeliveryResult{{EventID: e.ID, LeaseToken: p.LeaseToken, Delivery: d, Attempt: a}}); err != nil {
			return err
		}
	}
	return nil
}

// payments writes n payments' events and card sessions created from start
// over one day, 200 payments a transaction.
func (b *bench) payments(storeID string, start time.Time, n, seq int) int {
	step := day / time.Duration(n)
	for i := 0; i < n; {
		err := b.db.WithTx(b.ctx, func(ctx context.Context, tx storage.Executor) error {
			for j := i; j < min(i+200, n); j++ {
				at := start.Add(time.Duration(j) * step)
				seq++
				cs := &keelpay.CardSession{ID: keelpay.NewID(keelpay.PrefixCardSession), StoreID: storeID, ClientSecret: "cs_secret",
					Customer:    keelpay.Customer{ID: "cus_1", Name: "Jane Roe", Email: "jane@example.com", Phone: "+4915112345678"},
					PageOrigins: []string{"https://shop.example"}, Status: keelpay.CardSessionOpen, ExpiresAt: at.Add(30 * time.Minute), CreatedAt: at}
				if err := tx.CardSessionInsert(ctx, cs); err != nil {
					return err
				}
				types := []keelpay.EventType{keelpay.EventPaymentIntentSucceeded}
				if seq%2 == 0 {
					if err := tx.CardSessionComplete(ctx, storeID, cs.ID, keelpay.NewID(keelpay.PrefixCard), at); err != nil {
						return err
					}
					types = append(types, keelpay.EventCardCreated)
				}
				for _, typ := range types {
					id := keelpay.NewID(keelpay.PrefixEvent)
					e := &keelpay.Event{ID: id, StoreID: storeID, Type: typ, Body: body(id), CreatedAt: at}
					if err := tx.EventInsert(ctx, e); err != nil {
						return err
					}
					if err := deliver(ctx, tx, e, seq%20 == 0); err != nil {
						return err
					}
				}
			}
			return nil
		})
		if err != nil {
			log.Fatal(err)
		}
		i = min(i+200, n)
	}
	return seq
}

// drain calls del until it deletes less than a batch and returns the rows
// deleted, the calls and the slowest call.
func (b *bench) drain(del func(context.Context, time.Time, int) (int, error), before time.Time, batch int) (rows, calls int, slowest time.Duration) {
	for {
		t := time.Now()
		n, err := del(b.ctx, before, batch)
		if err != nil {
			log.Fatal(err)
		}
		slowest = max(slowest, time.Since(t))
		rows += n
		calls++
		if n < batch {
			return rows, calls, slowest
		}
	}
}

func (b *bench) steady(perCycle, cycles, keep, batch int, vacuum bool) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	st := storagetest.NewStoreRecord(t0)
	if err := b.db.StoreInsert(b.ctx, st); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("steady: %d payments a day, %d days kept, batches of %d", perCycle, keep, batch)
	if b.pg && vacuum {
		fmt.Printf("; VACUUM %s after each pass (run by this command: autovacuum is off on this server)", strings.Join(tables, ", "))
	}
	if !b.pg {
		var av, jm string
		b.scan(&av, "PRAGMA auto_vacuum")
		b.scan(&jm, "PRAGMA journal_mode")
		fmt.Printf("; auto_vacuum=%s (0: none), journal_mode=%s", av, jm)
	}
	fmt.Println()
	fmt.Println("day  write   deleted ev/cs     batches  pass     slowest  events kept  size")
	seq := 0
	for c := range cycles {
		start := t0.Add(time.Duration(c) * day)
		w := time.Now()
		seq = b.payments(st.ID, start, perCycle, seq)
		write := time.Since(w)
		before := start.Add(day).Add(-time.Duration(keep) * day)
		p := time.Now()
		ev, evCalls, evSlow := b.drain(b.db.EventDeleteBefore, before, batch)
		cs, csCalls, csSlow := b.drain(b.db.CardSessionDeleteExpiredBefore, before, batch)
		pass := time.Since(p)
		held := ""
		if b.pg && vacuum {
			b.exec("VACUUM " + strings.Join(tables, ", "))
			// Rows deleted after the oldest snapshot of another session
			// on the server stay until a later VACUUM.
			var dead int64
			b.scan(&dead, `SELECT n_dead_tup FROM pg_stat_user_tables WHERE schemaname = current_schema() AND relname = 'events'`)
			held = fmt.Sprintf("; %d deleted events left by VACUUM", dead)
		}
		var kept int
		b.scan(&kept, "SELECT count(*) FROM events")
		fmt.Printf("%3d  %5.1fs  %7d/%-7d  %7d  %6.0fms  %5.1fms  %11d  %s%s\n", c+1, write.Seconds(), ev, cs, evCalls+csCalls,
			ms(pass), ms(max(evSlow, csSlow)), kept, b.size(), held)
	}
}

func (b *bench) backlog(old, recent, batch int) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	st := storagetest.NewStoreRecord(t0)
	if err := b.db.StoreInsert(b.ctx, st); err != nil {
		log.Fatal(err)
	}
	before := t0.Add(60 * day)
	fill := time.Now()
	b.fill(st.ID, "o", old, t0)
	b.fill(st.ID, "r", recent, before)
	if b.pg {
		// Fresh rows: set their hint bits and statistics before timing.
		b.exec("VACUUM (ANALYZE) " + strings.Join(tables, ", "))
	}
	fmt.Printf("backlog: %d old events and %d recent ones, each with its delivery (succeeded) and one attempt, filled in %.0fs; %s\n",
		old, recent, time.Since(fill).Seconds(), b.size())
	var idx0, seq0 int64
	if b.pg {
		idx0, seq0 = b.scanStats()
	}
	var times []time.Duration
	start := time.Now()
	for {
		t := time.Now()
		n, err := b.db.EventDeleteBefore(b.ctx, before, batch)
		if err != nil {
			log.Fatal(err)
		}
		times = append(times, time.Since(t))
		if n < batch {
			break
		}
	}
	total := time.Since(start)
	var idle []time.Duration
	for range 20 {
		t := time.Now()
		if _, err := b.db.EventDeleteBefore(b.ctx, before, batch); err != nil {
			log.Fatal(err)
		}
		idle = append(idle, time.Since(t))
	}
	if b.pg {
		// Read before this command's own count below, a sequential scan.
		idx1, seq1 := b.scanStats()
		defer fmt.Printf("PostgreSQL statistics over the purge: %d index scans of events_created_at, %d sequential scans of %s\n",
			idx1-idx0, seq1-seq0, strings.Join(tables[:3], ", "))
	}
	var left int
	b.scan(&left, "SELECT count(*) FROM events")
	first := []string{}
	for _, t := range times[:min(5, len(times))] {
		first = append(first, fmt.Sprintf("%.1f", ms(t)))
	}
	last := times[max(0, len(times)-5):]
	lastS := []string{}
	for _, t := range last {
		lastS = append(lastS, fmt.Sprintf("%.1f", ms(t)))
	}
	sorted := slices.Clone(times)
	slices.Sort(sorted)
	q := func(f float64) float64 { return ms(sorted[min(len(sorted)-1, int(f*float64(len(sorted))))]) }
	fmt.Printf("worked off in %d batches of %d, %.1fs: ms a batch: first %s; last %s; median %.1f, p90 %.1f, p99 %.1f, max %.1f\n",
		len(times), batch, total.Seconds(), strings.Join(first, " "), strings.Join(lastS, " "), q(0.5), q(0.9), q(0.99), q(1))
	slices.Sort(idle)
	fmt.Printf("a pass with nothing old left: median %.2f ms; %d events left (the recent ones); %s\n", ms(idle[len(idle)/2]), left, b.size())

}

// fill inserts n events created a millisecond apart from start, each
// with a delivery that succeeded and one attempt: 100,000 a statement on
// SQLite, 1,000 on PostgreSQL, where each inserted delivery updates its
// connection's count row once more in the statement's transaction.
func (b *bench) fill(storeID, tag string, n int, start time.Time) {
	chunk := 100000
	if b.pg {
		chunk = 1000
	}
	for lo := 0; lo < n; lo += chunk {
		hi := min(lo+chunk, n)
		var stmts []string
		if b.pg {
			stmts = []string{
				`INSERT INTO events (id, store_id, type, body, created_at)
					SELECT 'evt_` + tag + `' || i, $1, 'payment_intent.succeeded', convert_to(repeat('x', 1200), 'UTF8'),
						$2::timestamptz + i * interval '1 millisecond' FROM generate_series($3::int, $4::int) i`,
				`INSERT INTO deliveries (event_id, store_id, status, attempts, last_attempt_at, last_status_code)
					SELECT 'evt_` + tag + `' || i, $1, 'succeeded', 1, $2::timestamptz, 200 FROM generate_series($3::int, $4::int) i`,
				`INSERT INTO delivery_attempts (id, event_id, store_id, started_at, duration_us, status_code, failure, response_body)
					SELECT 'att_` + tag + `' || i, 'evt_` + tag + `' || i, $1, $2::timestamptz, 3000, 200, '', '{"received":true}'
					FROM generate_series($3::int, $4::int) i`,
			}
		} else {
			series := `WITH RECURSIVE s(i) AS (SELECT ?3 UNION ALL SELECT i + 1 FROM s WHERE i < ?4) `
			stmts = []string{
				series + `INSERT INTO events (id, store_id, type, body, created_at)
					SELECT 'evt_` + tag + `' || i, ?1, 'payment_intent.succeeded', CAST(substr(hex(zeroblob(600)), 1, 1200) AS BLOB),
						?2 + i * 1000 FROM s`,
				series + `INSERT INTO deliveries (event_id, store_id, status, attempts, last_attempt_at, last_status_code)
					SELECT 'evt_` + tag + `' || i, ?1, 'succeeded', 1, ?2, 200 FROM s`,
				series + `INSERT INTO delivery_attempts (id, event_id, store_id, started_at, duration_us, status_code, failure, response_body)
					SELECT 'att_` + tag + `' || i, 'evt_` + tag + `' || i, ?1, ?2, 3000, 200, '', '{"received":true}' FROM s`,
			}
		}
		var at any = start
		if !b.pg {
			at = start.UnixMicro()
		}
		for _, q := range stmts {
			if _, err := b.raw.ExecContext(b.ctx, q, storeID, at, lo, hi-1); err != nil {
				log.Fatal(err)
			}
		}
	}
}

func (b *bench) exec(q string) {
	if _, err := b.raw.ExecContext(b.ctx, q); err != nil {
		log.Fatal(err)
	}
}

func (b *bench) scan(dst any, q string) {
	if err := b.raw.QueryRowContext(b.ctx, q).Scan(dst); err != nil {
		log.Fatal(err)
	}
}

// size is the database's size: the SQLite file, its WAL and its free
// pages; or PostgreSQL's tables (with their indexes and TOAST).
func (b *bench) size() string {
	if b.pg {
		var all, ours int64
		b.scan(&all, `SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
			WHERE n.nspname = current_schema() AND c.relkind = 'r'`)
		b.scan(&ours, `SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
			WHERE n.nspname = current_schema() AND c.relname IN ('`+strings.Join(tables, "', '")+`')`)
		return fmt.Sprintf("tables %.1f MB (of which events, deliveries, attempts, card sessions %.1f MB)", mb(all), mb(ours))
	}
	var pages, free, pageSize int64
	b.scan(&pages, "PRAGMA page_count")
	b.scan(&free, "PRAGMA freelist_count")
	b.scan(&pageSize, "PRAGMA page_size")
	fi, err := os.Stat(b.path)
	if err != nil {
		log.Fatal(err)
	}
	var wal int64
	if wi, err := os.Stat(b.path + "-wal"); err == nil {
		wal = wi.Size()
	}
	var events, sessions int64
	b.scan(&events, `SELECT coalesce(sum(d.pgsize), 0) FROM dbstat d JOIN sqlite_schema s ON s.name = d.name
		WHERE s.tbl_name IN ('events', 'deliveries', 'delivery_attempts')`)
	b.scan(&sessions, `SELECT coalesce(sum(d.pgsize), 0) FROM dbstat d JOIN sqlite_schema s ON s.name = d.name
		WHERE s.tbl_name = 'card_sessions'`)
	return fmt.Sprintf("file %.1f MB (events, deliveries, attempts %.1f MB; card sessions %.1f MB; free pages %.1f MB), WAL %.1f MB",
		mb(fi.Size()), mb(events), mb(sessions), mb(free*pageSize), mb(wal))
}

// scanStats reads PostgreSQL's counts of index scans of events_created_at
// and of sequential scans of the event tables, after the other backends
// (the adapter's connections, idle by now) have flushed theirs.
func (b *bench) scanStats() (idx, seq int64) {
	time.Sleep(11 * time.Second) // an idle backend flushes its statistics within 10 s
	b.scan(&idx, `SELECT coalesce(sum(idx_scan), 0) FROM pg_stat_user_indexes WHERE schemaname = current_schema() AND indexrelname = 'events_created_at'`)
	b.scan(&seq, `SELECT coalesce(sum(seq_scan), 0) FROM pg_stat_user_tables WHERE schemaname = current_schema()
		AND relname IN ('events', 'deliveries', 'delivery_attempts')`)
	return idx, seq
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
func mb(n int64) float64         { return float64(n) / (1 << 20) }
