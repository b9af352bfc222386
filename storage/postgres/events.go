package postgres

import (
	"cmp"
	"context"
	"math"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/keelpay/keelpay/storage"
	"github.com/keelpay/keelpay/storage/internal/core"
)

// claimDueQuery leases the deliveries a claim takes and returns their
// jobs (see core.SQL.DeliveryClaimDueJobs).
//
// A claim is this one statement, and it takes no lock that other
// claims need: it locks the rows it claims, and only those, FOR
// UPDATE SKIP LOCKED, so it passes over rows that other
// transactions hold (a claim or a record under way, an event
// claimed in the transaction that creates it) instead of waiting
// for them. A process that stops in the middle of a claim, with its
// transaction open, holds back only the deliveries it claimed.
//
// The per-store cap counts the leases that other claims committed.
// Two claims running at the same moment do not see each other's
// leases, so each may fill a store up to its cap: across processes
// the cap is exact between claims and may be exceeded while claims
// overlap, by at most one cap per overlapping claim (a dispatcher
// runs at most two at once). Claims last milliseconds, and the
// surplus ends with its attempts.
//
// The work is bounded whatever the backlog: the stores with pending
// deliveries are found by skipping through the by-store index (one
// seek per store), a store at its cap is passed over, and each other
// store gives at most its room under the cap (its own when
// StoreCaps lists it), earliest due first.
// The stores take turns: every store's first due delivery comes
// before any store's second, so a store with a backlog cannot fill
// a claim while another has one delivery due. The turns are taken
// without locks (ranked), which sets each store's share of the
// claim; the share is then locked, passing over rows that others
// hold, so that no row is locked that the claim does not lease.
const claimDueQuery = `WITH RECURSIVE pending_stores AS (
		(SELECT store_id FROM deliveries WHERE status = 'pending' ORDER BY store_id LIMIT 1)
		UNION ALL
		SELECT (SELECT d.store_id FROM deliveries d
			WHERE d.status = 'pending' AND d.store_id > pending_stores.store_id
			ORDER BY d.store_id LIMIT 1)
		FROM pending_stores WHERE pending_stores.store_id IS NOT NULL
	), leased AS (
		SELECT store_id, count(*) AS n FROM deliveries
		WHERE lease_token <> '' AND status = 'pending' AND lease_until > @now
		GROUP BY store_id
	), caps AS (
		SELECT * FROM unnest(@caps::text[], @caps_more::int[]) AS c(store_id, cap)
	), room AS (
		SELECT ps.store_id, coalesce(k.cap, @per_store) - coalesce(l.n, 0) AS n
		FROM pending_stores ps LEFT JOIN leased l ON l.store_id = ps.store_id
		LEFT JOIN caps k ON k.store_id = ps.store_id
		WHERE ps.store_id IS NOT NULL AND coalesce(l.n, 0) < coalesce(k.cap, @per_store)
	), ranked AS (
		SELECT r.store_id FROM room r
		CROSS JOIN LATERAL (
			SELECT event_id, next_attempt_at FROM deliveries
			WHERE store_id = r.store_id AND status = 'pending' AND next_attempt_at <= @now AND lease_until <= @now
			ORDER BY next_attempt_at, event_id
			LIMIT r.n
		) c
		ORDER BY row_number() OVER (PARTITION BY r.store_id ORDER BY c.next_attempt_at, c.event_id),
			c.next_attempt_at, c.event_id
		LIMIT @limit
	), shares AS (
		SELECT store_id, count(*) AS n FROM ranked GROUP BY store_id
	), picked AS (
		SELECT c.event_id FROM shares sh CROSS JOIN LATERAL (
			SELECT event_id FROM deliveries
			WHERE store_id = sh.store_id AND status = 'pending' AND next_attempt_at <= @now AND lease_until <= @now
			ORDER BY next_attempt_at, event_id
			LIMIT sh.n
			FOR UPDATE SKIP LOCKED
		) c
	)
	UPDATE deliveries d SET lease_token = @lease_token, lease_until = @lease_until
	FROM picked, events e, stores s
	WHERE d.event_id = picked.event_id AND e.id = d.event_id AND s.id = d.store_id
	RETURNING ` + core.JobColumns + `, d.next_attempt_at`

// claimCaps returns p.StoreCaps as the two arrays the claim reads
// (core.SQL.ClaimCaps).
func claimCaps(p storage.DeliveryClaimParams) (any, any, error) {
	stores, caps := make([]string, len(p.StoreCaps)), make([]int32, len(p.StoreCaps))
	for i, c := range p.StoreCaps {
		stores[i], caps[i] = c.StoreID, int32(min(c.Cap, math.MaxInt32))
	}
	return stores, caps, nil
}

// recordable finds the delivery $7 if it is still leased with $8, for
// DeliveryRecord: waiting for a transaction that holds it while the lease
// runs, passing it over once the lease lapsed.
const recordable = `coalesce(
		(SELECT event_id FROM deliveries WHERE event_id = $7 AND lease_token = $8 AND lease_until > now()
			FOR UPDATE),
		(SELECT event_id FROM deliveries WHERE event_id = $7 AND lease_token = $8
			FOR UPDATE SKIP LOCKED))`

func (q *queries) DeliveryRecord(ctx context.Context, results []storage.DeliveryResult) error {
	if len(results) == 0 {
		return nil
	}
	// In event order, so that two overlapping records cannot deadlock.
	//
	// A delivery that another transaction holds is waited for while its
	// lease still runs, and passed over once the lease lapsed:
	//
	//   - once it lapsed, another process may claim it again, and the
	//     transaction that holds it may be that claim: the delivery is not
	//     the recorder's any more, the record would be ignored anyway, and
	//     a paused process holding it would stall this one;
	//   - while it runs, no claim takes it, yet a claim may hold it: under
	//     READ COMMITTED, FOR UPDATE locks the newest version of a row
	//     that changed since its statement began and then checks the WHERE
	//     clause again on it
	//     (https://www.postgresql.org/docs/15/transaction-iso.html#XACT-READ-COMMITTED,
	//     https://www.postgresql.org/docs/15/explicit-locking.html#LOCKING-ROWS),
	//     and SKIP LOCKED passes over only the rows locked at that moment.
	//     So a claim whose statement began while the recorder's own claim
	//     was committing may reach the delivery that claim leased just
	//     after it committed, lock it, leave it out, and keep it locked
	//     until its own commit ends, which a synchronous standby makes
	//     longer. Passed over, the result would be lost: the delivery
	//     stays leased with no attempt recorded and is sent again when the
	//     lease lapses (events' TestSlowCommitsLoseNoDeliveryRecord). The
	//     wait lasts one claim's commit; the lease is checked again after
	//     it (FOR UPDATE does so).
	//
	// Leases are compared with the database's clock (now()): the
	// dispatchers' clocks are the system clock too, unless a sandbox moved
	// its service clock, and then a record only waits where it could
	// have passed over.
	b := &pgx.Batch{}
	for _, w := range q.deliveryWrites(results) {
		b.Queue(w.sql, w.args...)
	}
	return q.write(ctx, func(w querier) error {
		return mapErr(w.SendBatch(ctx, b).Close())
	})
}

// DeliveryClaimDue implements storage.Executor: the records of p.Record
// travel in front of the claim, in one pipeline (one round trip, and one
// implicit transaction outside WithTx).
func (q *queries) DeliveryClaimDue(ctx context.Context, p storage.DeliveryClaimParams) ([]*storage.DeliveryJob, error) {
	pre := q.deliveryWrites(p.Record)
	if len(pre) == 0 {
		return q.Queries.DeliveryClaimDue(ctx, p)
	}
	p.Record = nil
	var jobs []*storage.DeliveryJob
	err := q.write(ctx, func(w querier) error {
		// The claim's statements run on a queries of their own, on w
		// with the records in front; q.write has already made this a
		// write (retried and counted, or the transaction's).
		x := &queries{db: q.db, q: &prefixed{querier: w, pre: pre}, inTx: true}
		x.c = conn{q: x.q}
		x.Queries = core.NewQueries(q.db.records, sqlText, &x.c, x)
		var err error
		jobs, err = x.Queries.DeliveryClaimDue(ctx, p)
		return err
	})
	return jobs, err
}

// asyncCommit makes the transaction it runs in commit without waiting
// for its WAL to reach the disk (or a synchronous standby): SET LOCAL
// synchronous_commit = off, as a statement a pipeline can carry.
//
// Claims and records of deliveries commit this way when they are a
// transaction of their own (not inside a caller's WithTx, whose other
// writes must stay durable). Delivery is at least once, so what a crash
// of the database can take back costs a repeat, never a loss
// (https://www.postgresql.org/docs/15/wal-async-commit.html): the last
// few hundred milliseconds of such commits (wal_writer_delay, three
// times at most) may vanish, and then
//   - a claim's lease vanishes: the delivery is due again and is claimed
//     again, and its webhook may be sent a second time;
//   - a recorded result vanishes: the delivery is pending again and is
//     sent again; its attempt drops out of the history.
//
// Nothing else is lost. Events commit with the change they report, in
// the change's own durable commit; and a durable commit flushes the WAL
// of every commit before it, so a later write that read a delivery's
// state (retention deleting an event whose delivery ended, a redelivery)
// makes that state durable first. The database never answers a client
// from a commit that could vanish: no API call waits on one.
var asyncCommit = checked{sql: `SELECT set_config('synchronous_commit', 'off', true)`}

// deliveryWrites returns the statements that record results. Outside
// WithTx they commit on their own, with the claim that may follow them
// (DeliveryClaimDue), so asyncCommit goes in front, even of no results.
func (q *queries) deliveryWrites(results []storage.DeliveryResult) []checked {
	if q.inTx {
		return recordWrites(results)
	}
	return append([]checked{asyncCommit}, recordWrites(results)...)
}

// recordWrites returns the statements of DeliveryRecord for results.
func recordWrites(results []storage.DeliveryResult) []checked {
	results = slices.Clone(results)
	slices.SortFunc(results, func(a, b storage.DeliveryResult) int { return cmp.Compare(a.EventID, b.EventID) })
	var out []checked
	add := func(sql string, args ...any) { out = append(out, checked{sql: sql, args: args}) }
	for _, r := range results {
		d := r.Delivery
		if r.Attempt == nil {
			add(`UPDATE deliveries SET status = $1, attempts = $2, last_attempt_at = $3,
					next_attempt_at = $4, last_status_code = $5, last_failure = $6, lease_token = '', lease_until = '-infinity'
					WHERE event_id = `+recordable+``,
				d.Status, d.Attempts, ts(d.LastAttemptAt), ts(d.NextAttemptAt), d.LastStatusCode, d.LastFailure,
				r.EventID, r.LeaseToken)
			continue
		}
		// Only the lease holder's attempt joins the history.
		a := r.Attempt
		add(`WITH u AS (
					UPDATE deliveries SET status = $1, attempts = $2, last_attempt_at = $3,
						next_attempt_at = $4, last_status_code = $5, last_failure = $6, lease_token = '', lease_until = '-infinity'
					WHERE event_id = `+recordable+`
					RETURNING event_id, store_id)
				INSERT INTO delivery_attempts (id, event_id, store_id, started_at, duration_us, status_code, failure, response_body)
				SELECT $9, event_id, store_id, $10, $11, $12, $13, $14 FROM u`,
			d.Status, d.Attempts, ts(d.LastAttemptAt), ts(d.NextAttemptAt), d.LastStatusCode, d.LastFailure,
			r.EventID, r.LeaseToken,
			a.ID, ts(a.StartedAt), a.Duration.Microseconds(), a.StatusCode, a.Failure, a.ResponseBody)
		add(`DELETE FROM delivery_attempts WHERE event_id = $1 AND seq <= (
				SELECT seq FROM delivery_attempts WHERE event_id = $1 ORDER BY seq DESC OFFSET $2 LIMIT 1)`,
			r.EventID, storage.AttemptsKept)
	}
	return out
}
