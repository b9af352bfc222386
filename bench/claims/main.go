// Command claims measures one delivery claim against a large backlog: N due
// deliveries of one store that is at its per-store cap, and one due delivery
// of another store. A claim must find the other store's delivery with
// bounded work whatever N. The anchor, in the same run on the same rows, is
// the claim's previous shape: a window of the due index that skips stores
// at their cap (read only, as a SELECT).
//
//	go run ./bench/claims -db /tmp/claims.db -n 1000000
//	go run ./bench/claims -db 'postgres://...&search_path=claims' -n 1000000
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"log"
	"slices"
	"strings"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/events"
	"github.com/keelpay/keelpay/keyring/keyringtest"
	"github.com/keelpay/keelpay/storage"
	"github.com/keelpay/keelpay/storage/postgres"
	"github.com/keelpay/keelpay/storage/sqlite"
	"github.com/keelpay/keelpay/storage/storagetest"
)

// perStore is the cap a store reaches while its receiver answers.
const perStore = events.PerStoreDefault

func main() {
	path := flag.String("db", "claims.db", "SQLite file or postgres:// URL (a fresh database or schema)")
	n := flag.Int("n", 100000, "due deliveries of the store at its cap")
	rounds := flag.Int("rounds", 9, "claims measured")
	flag.Parse()
	ctx := context.Background()
	pg := strings.HasPrefix(*path, "postgres")
	var db storage.Storage
	var raw *sql.DB
	var err error
	if pg {
		db, err = postgres.Open(ctx, postgres.Config{DSN: *path, Keyring: keyringtest.Keyring()})
		if err == nil {
			raw, err = sql.Open("pgx", *path)
		}
	} else {
		db, err = sqlite.Open(ctx, sqlite.Config{Path: *path, Keyring: keyringtest.Keyring()})
		if err == nil {
			raw, err = sql.Open("sqlite", "file:"+*path+"?_pragma=busy_timeout(10000)")
		}
	}
	if err != nil {
		log.Fatal(err)
	}
	t0 := time.Now().UTC().Truncate(time.Second).Add(-time.Hour)
	big, other := storagetest.NewStoreRecord(t0), storagetest.NewStoreRecord(t0)
	for _, s := range []*keelpay.Store{big, other} {
		if err := db.StoreInsert(ctx, s); err != nil {
			log.Fatal(err)
		}
	}
	start := time.Now()
	if err := fill(ctx, raw, pg, big.ID, *n, t0); err != nil {
		log.Fatal(err)
	}
	log.Printf("%d due deliveries of one store written in %s", *n, time.Since(start).Round(time.Second))
	now := t0.Add(30 * time.Minute)
	lease := func(limit int) []*storage.DeliveryJob {
		jobs, err := db.DeliveryClaimDue(ctx, storage.DeliveryClaimParams{
			Now: now, LeaseUntil: now.Add(time.Hour), Limit: limit, PerStore: perStore, LeaseToken: keelpay.NewID("lease_"),
		})
		if err != nil {
			log.Fatal(err)
		}
		return jobs
	}
	if got := len(lease(perStore)); got != perStore {
		log.Fatalf("leased %d of the big store, want %d", got, perStore)
	}
	e := storagetest.NewEventRecord(other.ID, keelpay.EventWebhookTest, now.Add(-time.Second))
	if err := db.EventInsert(ctx, e); err != nil {
		log.Fatal(err)
	}
	var claim, anchor []time.Duration
	for range *rounds {
		t := time.Now()
		jobs := lease(256)
		claim = append(claim, time.Since(t))
		if len(jobs) != 1 || jobs[0].EventID != e.ID {
			log.Fatalf("claimed %d jobs, want the other store's one", len(jobs))
		}
		// Due again at once, for the next round.
		err := db.DeliveryRecord(ctx, []storage.DeliveryResult{{EventID: e.ID, LeaseToken: jobs[0].LeaseToken,
			Delivery: keelpay.Delivery{Status: keelpay.DeliveryPending, Attempts: 1, LastAttemptAt: now, NextAttemptAt: now.Add(-time.Second)}}})
		if err != nil {
			log.Fatal(err)
		}
		t = time.Now()
		if err := oldShape(ctx, raw, pg, now); err != nil {
			log.Fatal(err)
		}
		anchor = append(anchor, time.Since(t))
	}
	slices.Sort(claim)
	slices.Sort(anchor)
	kind := "SQLite"
	if pg {
		kind = "PostgreSQL"
	}
	fmt.Printf("%s, %d due deliveries of a store at its cap (%d): claim median %s (min %s, max %s); previous shape median %s (min %s, max %s); ratio %.4f\n",
		kind, *n, perStore, r(claim[len(claim)/2]), r(claim[0]), r(claim[len(claim)-1]),
		r(anchor[len(anchor)/2]), r(anchor[0]), r(anchor[len(anchor)-1]),
		float64(claim[len(claim)/2])/float64(anchor[len(anchor)/2]))
}

func r(d time.Duration) time.Duration { return d.Round(10 * time.Microsecond) }

// fill writes n events and their pending deliveries, due one millisecond
// apart from t0, in batches of one statement each, a transaction each. On
// PostgreSQL a batch is smaller: the status counts' trigger updates one
// row once per inserted row, and each update walks the versions the
// earlier ones in its transaction left, so a transaction's cost grows
// with the square of its rows (200,000 took over ten minutes).
func fill(ctx context.Context, raw *sql.DB, pg bool, storeID string, n int, t0 time.Time) error {
	batch := 200000
	if pg {
		batch = 10000
	}
	for lo := 0; lo < n; lo += batch {
		hi := min(lo+batch, n)
		var stmts []string
		if pg {
			stmts = []string{
				fmt.Sprintf(`INSERT INTO events (id, store_id, type, body, created_at)
					SELECT 'evt_bulk' || i, '%s', 'webhook.test', convert_to('{"id":"evt_bulk' || i || '"}', 'UTF8'), $1::timestamptz + i * interval '1 millisecond'
					FROM generate_series(%d, %d) i`, storeID, lo, hi-1),
				fmt.Sprintf(`INSERT INTO deliveries (event_id, store_id, status, next_attempt_at)
					SELECT 'evt_bulk' || i, '%s', 'pending', $1::timestamptz + i * interval '1 millisecond'
					FROM generate_series(%d, %d) i`, storeID, lo, hi-1),
			}
		} else {
			series := fmt.Sprintf(`WITH RECURSIVE s(i) AS (SELECT %d UNION ALL SELECT i + 1 FROM s WHERE i < %d) `, lo, hi-1)
			stmts = []string{
				series + fmt.Sprintf(`INSERT INTO events (id, store_id, type, body, created_at)
					SELECT 'evt_bulk' || i, '%s', 'webhook.test', CAST('{"id":"evt_bulk' || i || '"}' AS BLOB), ? + i * 1000 FROM s`, storeID),
				series + fmt.Sprintf(`INSERT INTO deliveries (event_id, store_id, status, next_attempt_at)
					SELECT 'evt_bulk' || i, '%s', 'pending', ? + i * 1000 FROM s`, storeID),
			}
		}
		tx, err := raw.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		for _, q := range stmts {
			var arg any = t0.UnixMicro()
			if pg {
				arg = t0
			}
			if _, err := tx.ExecContext(ctx, q, arg); err != nil {
				tx.Rollback()
				return err
			}
		}
		if err := tx.Commit(); err != nil {
			return err
		}
	}
	return nil
}

// oldShape runs the candidate window of the claim as it was before the
// by-store index: the due index in order, skipping stores at their cap.
func oldShape(ctx context.Context, raw *sql.DB, pg bool, now time.Time) error {
	q := `WITH leased AS (
			SELECT store_id, count(*) AS n FROM deliveries
			WHERE lease_token <> '' AND lease_until > $1 AND status = 'pending' GROUP BY store_id
		)
		SELECT count(*) FROM (SELECT event_id FROM deliveries
			WHERE status = 'pending' AND next_attempt_at <= $1 AND lease_until <= $1
				AND store_id NOT IN (SELECT store_id FROM leased WHERE n >= $2)
			ORDER BY next_attempt_at, event_id LIMIT 1024) c`
	var arg any = now
	if !pg {
		q = strings.ReplaceAll(strings.ReplaceAll(q, "$1", "?1"), "$2", "?2")
		q = strings.Replace(q, "FROM deliveries\n\t\t\tWHERE status", "FROM deliveries INDEXED BY deliveries_due\n\t\t\tWHERE status", 1)
		arg = now.UnixMicro()
	}
	var c int
	return raw.QueryRowContext(ctx, q, arg, perStore).Scan(&c)
}
