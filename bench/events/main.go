// Command events fills a fresh database with N events of one store, for
// measuring GET /v1/events (and anything else that must not grow with the
// data) against a real reference server on that database.
//
//	go run ./bench/events -db /tmp/ev/keelpay.db -n 10000000
//	KEELPAY_ENCRYPTION_KEY=... go run ./bench/events -db 'postgres://...&search_path=ev' -n 1000000
//
// The store is set up through the stores service (its row, sealed webhook
// secret and secret key hash are what POST /v1/setup writes); a SQLite
// database gets its key file beside it (<db>.key) as the reference server
// makes it, so `refserver -db <db>` opens it as it is. Each event's body is
// the envelope the services build (events.NewEvent over the public form of a
// card, a payment intent or a refund, as the services emit them), about
// 370 to 820 bytes; its delivery is what the dispatcher records after an
// attempt the receiver accepted (or, for 1 in 1,000, after the last of
// seven refused attempts), with that attempt history. The mix, by
// position in a cycle of 20: 2 card.created, 14 payment_intent.succeeded,
// 2 payment_intent.payment_failed, 1 refund.succeeded, 1
// payment_intent.canceled; the newest 20 deliveries are still pending.
//
// The rows are written directly, in large transactions, through the
// schema's own tables, indexes and triggers (the status counts stay
// right). SQLite is filled without a journal (a fresh file: a crash means
// filling again) and switched back to WAL at the end.
//
// It prints one line of shell assignments for the benchmark script:
// STORE, SK (the store's secret key: a benchmark store's, printed on
// purpose), MIDDLE (the id of the event in the middle, a deep cursor),
// IDS (a file of 1,000 event ids spread evenly over the store, the
// cursors of bench/pages.lua), EVENTS and FILL_SECONDS.
package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
	_ "modernc.org/sqlite"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/events"
	"github.com/keelpay/keelpay/internal/render"
	"github.com/keelpay/keelpay/keyring"
	"github.com/keelpay/keelpay/provider/sandbox"
	"github.com/keelpay/keelpay/storage"
	"github.com/keelpay/keelpay/storage/postgres"
	"github.com/keelpay/keelpay/storage/sqlite"
	"github.com/keelpay/keelpay/stores"
)

func main() {
	path := flag.String("db", "events.db", "SQLite file (must not exist) or postgres:// URL of an empty schema")
	n := flag.Int("n", 1000000, "events of the store")
	perTx := flag.Int("tx", 100000, "events per transaction")
	attempts := flag.Bool("attempts", true, "write each delivery's attempt history (the events list does not read it)")
	cacheMB := flag.Int("cache-mb", 1024, "SQLite page cache of the fill, MiB")
	idsPath := flag.String("ids", "", "file for the ids of 1,000 events spread evenly over the store, one a line (cursors for bench/pages.lua); default <db>.ids for SQLite")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the fill to this file")
	flag.Parse()
	ctx := context.Background()
	pg := strings.HasPrefix(*path, "postgres://") || strings.HasPrefix(*path, "postgresql://")

	var kr *keyring.Keyring
	var err error
	if pg {
		if kr, err = keyring.Parse(os.Getenv("KEELPAY_ENCRYPTION_KEY")); err != nil {
			log.Fatalf("KEELPAY_ENCRYPTION_KEY (the reference server's key for this database): %v", err)
		}
	} else {
		if _, err := os.Stat(*path); !errors.Is(err, os.ErrNotExist) {
			log.Fatalf("%s exists: give a new file", *path)
		}
		// The key file the reference server reads beside its database.
		if kr, _, err = keyring.ReadOrCreateFile(*path+".key", "k1"); err != nil {
			log.Fatal(err)
		}
	}
	var db storage.Storage
	if pg {
		db, err = postgres.Open(ctx, postgres.Config{DSN: *path, Keyring: kr})
	} else {
		db, err = sqlite.Open(ctx, sqlite.Config{Path: *path, Keyring: kr})
	}
	if err != nil {
		log.Fatal(err)
	}
	store, sk := setupStore(ctx, db)
	if err := db.Close(); err != nil {
		log.Fatal(err)
	}

	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			log.Fatal(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			log.Fatal(err)
		}
		defer pprof.StopCPUProfile()
	}
	start := time.Now()
	gen := &generator{store: store, n: *n, attempts: *attempts, cacheKiB: *cacheMB << 10,
		t0: time.Now().UTC().Truncate(time.Second).Add(-time.Duration(*n+60) * time.Second)}
	if pg {
		err = fillPostgres(ctx, *path, gen, *perTx)
	} else {
		err = fillSQLite(ctx, *path, gen, *perTx)
	}
	if err != nil {
		log.Fatal(err)
	}
	if *idsPath == "" && !pg {
		*idsPath = *path + ".ids"
	}
	if *idsPath != "" {
		if err := os.WriteFile(*idsPath, []byte(strings.Join(gen.cursors, "\n")+"\n"), 0o644); err != nil {
			log.Fatal(err)
		}
	}
	took := time.Since(start)
	log.Printf("%d events of store %s written in %s", *n, store.ID, took.Round(time.Second))
	fmt.Printf("STORE=%s SK=%s MIDDLE=%s IDS=%s EVENTS=%d FILL_SECONDS=%.0f\n", store.ID, sk, gen.middle, *idsPath, *n, took.Seconds())
}

// setupStore sets a store up as POST /v1/setup does, against an in-memory
// sandbox, and returns it with its secret key.
func setupStore(ctx context.Context, db storage.Storage) (*keelpay.Store, string) {
	sb, err := sandbox.Open(ctx, sandbox.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer sb.Close()
	st, err := stores.New(stores.Config{Storage: db, Provider: sb, AllowInsecureWebhooks: true})
	if err != nil {
		log.Fatal(err)
	}
	res, err := st.Setup(ctx, stores.SetupParams{
		ClientID: "app_bench_events", ClientSecret: "secret_bench_events", WebhookURL: "http://127.0.0.1:9/hooks",
	})
	if err != nil {
		log.Fatal(err)
	}
	return res.Store, res.SecretKey
}

// row is one event with its delivery and attempts, as the service leaves
// them.
type row struct {
	event    *keelpay.Event
	delivery keelpay.Delivery
	attempts []keelpay.DeliveryAttempt
}

// generator makes the rows of a store, oldest first, one second apart and
// ending about now.
type generator struct {
	store    *keelpay.Store
	n        int
	t0       time.Time
	attempts bool // write the attempt history
	cacheKiB int  // SQLite page cache of the fill

	// Written by the goroutine of batches, read once it is done.
	middle  string   // the id of event n/2
	cursors []string // the ids of 1,000 events spread evenly
}

// row i of the store. Ids are fresh random ids of the service's form.
func (g *generator) row(i int) row {
	at := g.t0.Add(time.Duration(i) * time.Second)
	pos := i % 20
	cus := keelpay.Customer{ID: fmt.Sprintf("cus_%07d", i/20)}
	pm := &keelpay.PaymentMethod{Brand: "visa", Last4: "4242", ExpMonth: 12, ExpYear: 2035, Saved: true}
	pi := &keelpay.PaymentIntent{
		ID: keelpay.NewID(keelpay.PrefixPaymentIntent), StoreID: g.store.ID, Amount: int64(500 + i%20000),
		Currency: g.store.Currency, Customer: cus, Reference: fmt.Sprintf("order-%d", i),
		Metadata: map[string]string{"order_id": fmt.Sprintf("%d", i)}, CardID: keelpay.NewID(keelpay.PrefixCard),
		PaymentMethod: pm, CreatedAt: at.Add(-2 * time.Second), ExpiresAt: at.Add(24*time.Hour - 2*time.Second),
	}
	var typ keelpay.EventType
	var obj any
	switch {
	case pos == 0 || pos == 10:
		typ = keelpay.EventCardCreated
		obj = json.RawMessage(render.Card(&keelpay.Card{ID: pi.CardID, StoreID: g.store.ID, CustomerID: cus.ID,
			CardSessionID: keelpay.NewID(keelpay.PrefixCardSession), Brand: "visa", Last4: "4242", ExpMonth: 12, ExpYear: 2035,
			Status: keelpay.CardActive, CreatedAt: at}))
	case pos == 9 || pos == 17:
		typ = keelpay.EventPaymentIntentPaymentFailed
		pi.Status = keelpay.IntentRequiresPaymentMethod
		pi.LastError = &keelpay.LastError{Code: "card_declined", DeclineCode: "insufficient_funds", Message: "The card has insufficient funds."}
		obj = json.RawMessage(render.AppendIntent(nil, pi, false))
	case pos == 18:
		typ = keelpay.EventRefundSucceeded
		obj = json.RawMessage(render.Refund(&keelpay.Refund{ID: keelpay.NewID(keelpay.PrefixRefund), StoreID: g.store.ID,
			PaymentIntentID: pi.ID, Amount: pi.Amount, Currency: pi.Currency, Reason: "Returned within 30 days",
			Status: keelpay.RefundSucceeded, Attempts: 1, SucceededAt: at, CreatedAt: at.Add(-time.Second)}))
	case pos == 19:
		typ = keelpay.EventPaymentIntentCanceled
		pi.Status = keelpay.IntentCanceled
		pi.CardID, pi.PaymentMethod = "", nil
		pi.CancellationReason = "requested_by_customer"
		obj = json.RawMessage(render.AppendIntent(nil, pi, false))
	default:
		typ = keelpay.EventPaymentIntentSucceeded
		pi.Status = keelpay.IntentSucceeded
		pi.AuthorizationCode = fmt.Sprintf("A%05d", i%100000)
		pi.OrderID = keelpay.NewID("ord_")
		pi.SucceededAt = at
		obj = json.RawMessage(render.AppendIntent(nil, pi, false))
	}
	e, err := events.NewEvent(g.store.ID, typ, obj, at)
	if err != nil {
		log.Fatal(err)
	}
	if i == g.n/2 {
		g.middle = e.ID
	}
	if step := max(g.n/1000, 1); i%step == 0 && len(g.cursors) < 1000 {
		g.cursors = append(g.cursors, e.ID)
	}
	r := row{event: e}
	sent := at.Add(3 * time.Millisecond)
	attempt := func(k int, code int, failure keelpay.DeliveryFailure, body string) keelpay.DeliveryAttempt {
		return keelpay.DeliveryAttempt{ID: keelpay.NewID(keelpay.PrefixAttempt), EventID: e.ID, StoreID: e.StoreID,
			StartedAt: sent.Add(time.Duration(k) * time.Minute), Duration: 4 * time.Millisecond,
			StatusCode: code, Failure: failure, ResponseBody: body}
	}
	switch {
	case i >= g.n-20:
		// Not yet attempted.
		r.delivery = keelpay.Delivery{Status: keelpay.DeliveryPending, NextAttemptAt: at}
	case i%1000 == 999:
		for k := range events.MaxAttempts {
			r.attempts = append(r.attempts, attempt(k, 500, keelpay.FailureHTTPStatus, `{"error":"internal"}`))
		}
		last := r.attempts[len(r.attempts)-1]
		r.delivery = keelpay.Delivery{Status: keelpay.DeliveryFailed, Attempts: events.MaxAttempts,
			LastAttemptAt: last.StartedAt, LastStatusCode: 500, LastFailure: keelpay.FailureHTTPStatus}
	default:
		r.attempts = []keelpay.DeliveryAttempt{attempt(0, 204, "", "")}
		r.delivery = keelpay.Delivery{Status: keelpay.DeliverySucceeded, Attempts: 1, LastAttemptAt: sent, LastStatusCode: 204}
	}
	if !g.attempts {
		r.attempts = nil
	}
	return r
}

// batches makes the rows in batches of per, on another goroutine (the
// JSON and the ids cost a good part of what the inserts cost).
func (g *generator) batches(per int) <-chan []row {
	ch := make(chan []row, 16)
	go func() {
		defer close(ch)
		for lo := 0; lo < g.n; lo += per {
			b := make([]row, 0, min(per, g.n-lo))
			for i := lo; i < lo+cap(b); i++ {
				b = append(b, g.row(i))
			}
			ch <- b
		}
	}()
	return ch
}

func micros(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMicro()
}

// fillSQLite writes the rows with multi-row INSERTs in transactions of
// perTx events, on one connection without a journal.
func fillSQLite(ctx context.Context, path string, g *generator, perTx int) error {
	raw, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		return err
	}
	defer raw.Close()
	raw.SetMaxOpenConns(1)
	// One connection (the pragmas below are its own), its statements
	// prepared once.
	conn, err := raw.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	for _, p := range []string{"PRAGMA journal_mode=OFF", "PRAGMA synchronous=OFF", "PRAGMA locking_mode=EXCLUSIVE",
		fmt.Sprintf("PRAGMA cache_size=-%d", g.cacheKiB), "PRAGMA foreign_keys=OFF"} {
		if _, err := conn.ExecContext(ctx, p); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
	}
	// The secondary indexes and the triggers of the three tables are
	// dropped and made again afterwards from their own SQL: building an
	// index from sorted rows is many times faster than inserting into it
	// row by row, and the schema ends as the migrations made it.
	var schema []string
	rows, err := conn.QueryContext(ctx, `SELECT type, name, sql FROM sqlite_master
		WHERE tbl_name IN ('events', 'deliveries', 'delivery_attempts') AND type IN ('index', 'trigger') AND sql IS NOT NULL
		ORDER BY type, name`)
	if err != nil {
		return err
	}
	var drops []string
	for rows.Next() {
		var typ, name, q string
		if err := rows.Scan(&typ, &name, &q); err != nil {
			return err
		}
		drops = append(drops, "DROP "+strings.ToUpper(typ)+" "+name)
		schema = append(schema, q)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for _, q := range drops {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	done := 0
	stmts := map[string]*sql.Stmt{}
	defer func() {
		for _, st := range stmts {
			st.Close()
		}
	}()
	// The rows come in chunks of one statement; a transaction holds perTx
	// events. Small chunks keep the Go heap small.
	const chunk = 400
	inTx := 0
	var ev, dl, at []any
	for b := range g.batches(chunk) {
		ev, dl, at = ev[:0], dl[:0], at[:0]
		for _, r := range b {
			e, d := r.event, r.delivery
			ev = append(ev, e.ID, e.StoreID, string(e.Type), []byte(e.Body), micros(e.CreatedAt))
			dl = append(dl, e.ID, e.StoreID, string(d.Status), d.Attempts, micros(d.LastAttemptAt), micros(d.NextAttemptAt),
				d.LastStatusCode, string(d.LastFailure))
			for _, a := range r.attempts {
				at = append(at, a.ID, a.EventID, a.StoreID, micros(a.StartedAt), a.Duration.Microseconds(), a.StatusCode,
					string(a.Failure), a.ResponseBody)
			}
			done++
		}
		if inTx == 0 {
			if _, err := conn.ExecContext(ctx, "BEGIN"); err != nil {
				return err
			}
		}
		for _, t := range []struct {
			into string
			k    int
			args []any
		}{
			{"events (id, store_id, type, body, created_at)", 5, ev},
			{"deliveries (event_id, store_id, status, attempts, last_attempt_at, next_attempt_at, last_status_code, last_failure)", 8, dl},
			{"delivery_attempts (id, event_id, store_id, started_at, duration_us, status_code, failure, response_body)", 8, at},
		} {
			if err := insertRows(ctx, conn, stmts, t.into, t.k, t.args); err != nil {
				return err
			}
		}
		inTx += len(b)
		if inTx >= perTx || done == g.n {
			if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
				return err
			}
			inTx = 0
			log.Printf("%d events", done)
		}
	}
	t := time.Now()
	for _, q := range schema {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	// What the triggers would have counted (the database had no
	// deliveries before).
	if _, err := conn.ExecContext(ctx, `INSERT INTO status_counts (kind, status, n)
		SELECT 'delivery', status, count(*) FROM deliveries WHERE true GROUP BY status
		ON CONFLICT (kind, status) DO UPDATE SET n = excluded.n`); err != nil {
		return err
	}
	log.Printf("indexes and triggers made again in %s", time.Since(t).Round(time.Second))
	if _, err := conn.ExecContext(ctx, "PRAGMA journal_mode=WAL"); err != nil {
		return err
	}
	return nil
}

// insertRows inserts rows of k values each (args, row after row) with
// multi-row INSERTs of at most 400 rows (SQLite takes at most 32,766
// parameters a statement).
func insertRows(ctx context.Context, conn *sql.Conn, stmts map[string]*sql.Stmt, into string, k int, args []any) error {
	const per = 400
	for len(args) > 0 {
		rows := min(per, len(args)/k)
		q := multiInsert(into, k, rows)
		st, ok := stmts[q]
		if !ok {
			var err error
			if st, err = conn.PrepareContext(ctx, q); err != nil {
				return err
			}
			if rows == per {
				stmts[q] = st
			} else {
				defer st.Close()
			}
		}
		if _, err := st.ExecContext(ctx, args[:rows*k]...); err != nil {
			return fmt.Errorf("insert into %s: %w", into, err)
		}
		args = args[rows*k:]
	}
	return nil
}

// multiInsert is an INSERT of rows rows of k columns each.
func multiInsert(into string, k, rows int) string {
	one := "(" + strings.TrimSuffix(strings.Repeat("?,", k), ",") + ")"
	return "INSERT INTO " + into + " VALUES " + strings.TrimSuffix(strings.Repeat(one+",", rows), ",")
}

// fillPostgres copies the rows in, perTx events a transaction.
func fillPostgres(ctx context.Context, dsn string, g *generator, perTx int) error {
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		return err
	}
	defer pool.Close()
	done := 0
	for b := range g.batches(perTx) {
		var ev, dl, at [][]any
		for _, r := range b {
			e, d := r.event, r.delivery
			ev = append(ev, []any{e.ID, e.StoreID, string(e.Type), []byte(e.Body), e.CreatedAt})
			dl = append(dl, []any{e.ID, e.StoreID, string(d.Status), d.Attempts, pgTime(d.LastAttemptAt), pgTime(d.NextAttemptAt),
				d.LastStatusCode, string(d.LastFailure)})
			for _, a := range r.attempts {
				at = append(at, []any{a.ID, a.EventID, a.StoreID, a.StartedAt, a.Duration.Microseconds(), a.StatusCode,
					string(a.Failure), a.ResponseBody})
			}
			done++
		}
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			for _, c := range []struct {
				table string
				cols  []string
				rows  [][]any
			}{
				{"events", []string{"id", "store_id", "type", "body", "created_at"}, ev},
				{"deliveries", []string{"event_id", "store_id", "status", "attempts", "last_attempt_at", "next_attempt_at", "last_status_code", "last_failure"}, dl},
				{"delivery_attempts", []string{"id", "event_id", "store_id", "started_at", "duration_us", "status_code", "failure", "response_body"}, at},
			} {
				if _, err := tx.CopyFrom(ctx, pgx.Identifier{c.table}, c.cols, pgx.CopyFromRows(c.rows)); err != nil {
					return fmt.Errorf("copy %s: %w", c.table, err)
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		log.Printf("%d events", done)
	}
	_, err = pool.Exec(ctx, "ANALYZE events; ANALYZE deliveries; ANALYZE delivery_attempts")
	return err
}

// pgTime is how the PostgreSQL adapter stores a zero time.
func pgTime(t time.Time) pgtype.Timestamptz {
	if t.IsZero() {
		return pgtype.Timestamptz{InfinityModifier: pgtype.NegativeInfinity, Valid: true}
	}
	return pgtype.Timestamptz{Time: t, Valid: true}
}
