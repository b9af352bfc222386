package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/storage"
	"github.com/keelpay/keelpay/storage/internal/core"
)

// EventList implements storage.Executor in place of the core's: its page
// is read by scanEventPage, on one of the texts of eventListQuery.
func (q *queries) EventList(ctx context.Context, p storage.EventListParams) ([]*keelpay.Event, bool, error) {
	var seq int64
	if cursor := cmp.Or(p.EndingBefore, p.StartingAfter); cursor != "" {
		err := q.r.QueryRowContext(ctx, sqlText.EventSeq, p.StoreID, cursor).Scan(&seq)
		if err != nil {
			return nil, false, mapErr(err)
		}
	}
	query, args, asc := eventListQuery(p, seq)
	rows, err := q.r.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, false, mapErr(err)
	}
	events, err := scanEventPage(rows, p.StoreID, p.Limit+1)
	if err != nil {
		return nil, false, err
	}
	events, hasMore := storage.Page(events, p.Limit, asc)
	return events, hasMore, nil
}

// eventPageColumns are eventColumns without the store, which a page's
// query fixes.
const eventPageColumns = `e.id, e.type, e.body, e.created_at,
	d.status, d.attempts, d.last_attempt_at, d.next_attempt_at, d.last_status_code, d.last_failure`

// scanEventPage reads a page of at most n events of a store and closes
// rows. The events are allocated together and their bodies share one
// buffer: scanned one by one, each body was copied twice (out of SQLite,
// then again by database/sql) into an allocation of its own, most of a
// page's garbage.
func scanEventPage(rows *sql.Rows, storeID string, n int) ([]*keelpay.Event, error) {
	defer rows.Close()
	events := make([]keelpay.Event, 0, n) // never grows: the query's LIMIT is n
	var bodies []byte
	var body sql.RawBytes
	for rows.Next() {
		if len(events) == n {
			return nil, fmt.Errorf("sqlite: more than %d events in a page", n)
		}
		events = append(events, keelpay.Event{StoreID: storeID})
		e := &events[len(events)-1]
		var created, lastAt, nextAt int64
		err := rows.Scan(&e.ID, &e.Type, &body, &created,
			&e.Delivery.Status, &e.Delivery.Attempts, &lastAt, &nextAt, &e.Delivery.LastStatusCode, &e.Delivery.LastFailure)
		if err != nil {
			return nil, mapErr(err)
		}
		if len(bodies)+len(body) > cap(bodies) {
			// A new buffer; the bodies already read keep the old one.
			bodies = make([]byte, 0, max(len(body)*(n-len(events)+1)*5/4, len(body)))
		}
		bodies = append(bodies, body...)
		e.Body = bodies[len(bodies)-len(body) : len(bodies) : len(bodies)]
		e.CreatedAt = fromMicros(created)
		e.Delivery.LastAttemptAt = fromMicros(lastAt)
		if e.Delivery.Status == keelpay.DeliveryPending {
			e.Delivery.NextAttemptAt = fromMicros(nextAt)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, mapErr(err)
	}
	out := make([]*keelpay.Event, len(events))
	for i := range events {
		out[i] = &events[i]
	}
	return out, nil
}

// eventListQuery is the query of a page of events: one of eight texts
// (type or not; after, before or neither cursor, whose seq is given),
// each a walk of the (store_id, seq) or (store_id, type, seq) index from
// the cursor, so a page reads about Limit rows whatever the store's
// number of events. asc is true when it reads oldest first (a page
// before a cursor).
func eventListQuery(p storage.EventListParams, seq int64) (query string, args []any, asc bool) {
	var where strings.Builder
	args = []any{p.StoreID}
	where.WriteString("e.store_id = ?")
	if p.Type != "" {
		where.WriteString(" AND e.type = ?")
		args = append(args, p.Type)
	}
	order := "DESC"
	switch {
	case p.EndingBefore != "":
		order = "ASC"
		where.WriteString(" AND e.seq > ?")
		args = append(args, seq)
	case p.StartingAfter != "":
		where.WriteString(" AND e.seq < ?")
		args = append(args, seq)
	}
	args = append(args, p.Limit+1)
	return `SELECT ` + eventPageColumns + `
		FROM events e JOIN deliveries d ON d.event_id = e.id
		WHERE ` + where.String() + ` ORDER BY e.seq ` + order + ` LIMIT ?`, args, order == "ASC"
}

// claimDueQuery leases the deliveries a claim takes (see
// core.SQL.DeliveryClaimDue).
//
// Each store gets at most its cap of leases at once (PerStore, or
// its own when StoreCaps lists it), counting the ones already out,
// so one slow receiver cannot take every worker.
// The work is bounded whatever the backlog: the stores with pending
// deliveries are found by skipping through the by-store index (one
// seek per store), a store at its cap is passed over, and each other
// store gives at most its cap of its earliest due deliveries. The
// stores take turns: every store's first due delivery comes before
// any store's second, so a store with a backlog cannot fill a claim
// while another has one delivery due.
//
// The limits are written "@caps_more + 0" and "@limit + 0", not as bare
// parameters: SQLite plans a LIMIT of a bare parameter with its
// value and prepares the statement again whenever the value
// changes, and the dispatcher's limit (its free slots) changes
// from one claim to the next. Preparing this statement cost more
// than running it.
const claimDueQuery = `UPDATE deliveries SET lease_token = @lease_token, lease_until = @lease_until
	WHERE event_id IN (
		WITH RECURSIVE pending_stores(store_id) AS (
			SELECT min(store_id) FROM deliveries INDEXED BY deliveries_store_due WHERE status = 'pending'
			UNION ALL
			SELECT (SELECT min(store_id) FROM deliveries INDEXED BY deliveries_store_due
				WHERE status = 'pending' AND store_id > pending_stores.store_id)
			FROM pending_stores WHERE pending_stores.store_id IS NOT NULL
		), leased AS (
			SELECT store_id, count(*) AS n FROM deliveries INDEXED BY deliveries_leased
			WHERE lease_token <> '' AND lease_until > @now AND status = 'pending'
			GROUP BY store_id
		), caps(store_id, cap) AS MATERIALIZED (
			SELECT value ->> 's', value ->> 'c' FROM json_each(@caps)
		), room AS (
			SELECT ps.store_id, coalesce(k.cap, @per_store) - coalesce(l.n, 0) AS n
			FROM pending_stores ps LEFT JOIN leased l ON l.store_id = ps.store_id
			LEFT JOIN caps k ON k.store_id = ps.store_id
			WHERE ps.store_id IS NOT NULL
		), candidates AS (
			SELECT d.event_id, d.next_attempt_at, r.n,
				row_number() OVER (PARTITION BY d.store_id ORDER BY d.next_attempt_at, d.event_id) AS rn
			FROM room r
			JOIN deliveries d ON d.event_id IN (
				SELECT event_id FROM deliveries INDEXED BY deliveries_store_due
				WHERE store_id = r.store_id AND status = 'pending' AND next_attempt_at <= @now AND lease_until <= @now
				ORDER BY next_attempt_at, event_id LIMIT @caps_more + 0)
			WHERE r.n > 0
		)
		SELECT event_id FROM candidates WHERE rn <= n
		ORDER BY rn, next_attempt_at, event_id
		LIMIT @limit + 0
	)`

// storeCaps returns p.StoreCaps as the JSON array the claim reads, and the
// highest cap of the claim (core.SQL.ClaimCaps).
func storeCaps(p storage.DeliveryClaimParams) (any, any, error) {
	most := p.PerStore
	if len(p.StoreCaps) == 0 {
		return "[]", most, nil
	}
	type storeCap struct {
		StoreID string `json:"s"`
		Cap     int    `json:"c"`
	}
	caps := make([]storeCap, len(p.StoreCaps))
	for i, c := range p.StoreCaps {
		caps[i] = storeCap{c.StoreID, c.Cap}
		most = max(most, c.Cap)
	}
	b, err := json.Marshal(caps)
	return string(b), most, err
}

// recordRow is one result as DeliveryRecord passes it to SQLite, in a JSON
// array read with json_each: one statement for a whole batch instead of
// three for each result.
type recordRow struct {
	EventID    string `json:"e"`
	LeaseToken string `json:"l"`
	Status     string `json:"s"`
	Attempts   int    `json:"n"`
	LastAt     int64  `json:"la"`
	NextAt     int64  `json:"na"`
	StatusCode int    `json:"c"`
	Failure    string `json:"f"`
}

// attemptRow is one attempt of the history, likewise.
type attemptRow struct {
	ID         string `json:"i"`
	EventID    string `json:"e"`
	StartedAt  int64  `json:"t"`
	DurationUS int64  `json:"d"`
	StatusCode int    `json:"c"`
	Failure    string `json:"f"`
	Body       string `json:"b"`
}

// DeliveryClaimDue implements storage.Executor: the records of p.Record,
// then the claim, in one transaction.
func (q *queries) DeliveryClaimDue(ctx context.Context, p storage.DeliveryClaimParams) ([]*storage.DeliveryJob, error) {
	if len(p.Record) == 0 {
		return q.Queries.DeliveryClaimDue(ctx, p)
	}
	if q.w == nil {
		var jobs []*storage.DeliveryJob
		err := q.db.WithTx(ctx, func(ctx context.Context, tx storage.Executor) error {
			var err error
			jobs, err = tx.DeliveryClaimDue(ctx, p)
			return err
		})
		return jobs, err
	}
	if err := q.DeliveryRecord(ctx, p.Record); err != nil {
		return nil, err
	}
	p.Record = nil
	return q.Queries.DeliveryClaimDue(ctx, p)
}

func (q *queries) DeliveryRecord(ctx context.Context, results []storage.DeliveryResult) error {
	if len(results) == 0 {
		return nil
	}
	rows := make([]recordRow, len(results))
	for i, r := range results {
		d := r.Delivery
		rows[i] = recordRow{EventID: r.EventID, LeaseToken: r.LeaseToken, Status: string(d.Status), Attempts: d.Attempts,
			LastAt: micros(d.LastAttemptAt), NextAt: micros(d.NextAttemptAt), StatusCode: d.LastStatusCode, Failure: string(d.LastFailure)}
	}
	rowsJSON, err := json.Marshal(rows)
	if err != nil {
		return err
	}
	return q.write(ctx, func(w querier) error {
		// Every result in one statement; the rows whose lease still
		// matches come back, and only their attempts join the history.
		matched, err := w.QueryContext(ctx, `UPDATE deliveries SET status = r.value ->> 's', attempts = r.value ->> 'n',
			last_attempt_at = r.value ->> 'la', next_attempt_at = r.value ->> 'na', last_status_code = r.value ->> 'c',
			last_failure = r.value ->> 'f', lease_token = '', lease_until = 0
			FROM json_each(?) AS r
			WHERE deliveries.event_id = r.value ->> 'e' AND deliveries.lease_token = r.value ->> 'l'
			RETURNING deliveries.event_id`, rowsJSON)
		if err != nil {
			return mapErr(err)
		}
		held, err := collect(matched, nil, func(row core.Row) (string, error) {
			var id string
			return id, mapErr(row.Scan(&id))
		})
		if err != nil {
			return err
		}
		if len(held) == 0 {
			return nil
		}
		kept := make(map[string]bool, len(held))
		for _, id := range held {
			kept[id] = true
		}
		var attempts []attemptRow
		var events []string
		for _, r := range results {
			if a := r.Attempt; a != nil && kept[r.EventID] {
				attempts = append(attempts, attemptRow{ID: a.ID, EventID: r.EventID, StartedAt: micros(a.StartedAt),
					DurationUS: a.Duration.Microseconds(), StatusCode: a.StatusCode, Failure: string(a.Failure), Body: a.ResponseBody})
				events = append(events, r.EventID)
			}
		}
		if len(attempts) == 0 {
			return nil
		}
		attemptsJSON, err := json.Marshal(attempts)
		if err != nil {
			return err
		}
		eventsJSON, err := json.Marshal(events)
		if err != nil {
			return err
		}
		if _, err := w.ExecContext(ctx, `INSERT INTO delivery_attempts
			(id, event_id, store_id, started_at, duration_us, status_code, failure, response_body)
			SELECT a.value ->> 'i', d.event_id, d.store_id, a.value ->> 't', a.value ->> 'd', a.value ->> 'c',
				a.value ->> 'f', a.value ->> 'b'
			FROM json_each(?) AS a JOIN deliveries d ON d.event_id = a.value ->> 'e'`, attemptsJSON); err != nil {
			return mapErr(err)
		}
		// Each event keeps its newest AttemptsKept attempts.
		_, err = w.ExecContext(ctx, `DELETE FROM delivery_attempts WHERE seq IN (
			SELECT a.seq FROM (
				SELECT e.value AS event_id, (SELECT seq FROM delivery_attempts WHERE event_id = e.value
					ORDER BY seq DESC LIMIT 1 OFFSET ?2) AS cut
				FROM json_each(?1) AS e
			) c JOIN delivery_attempts a ON a.event_id = c.event_id AND a.seq <= c.cut)`,
			eventsJSON, storage.AttemptsKept)
		return mapErr(err)
	})
}

// EventInsert implements storage.Executor. The batch that commits the
// event claims due deliveries in its commit, when a CommitClaim is
// installed (claimInBatch).
func (q *queries) EventInsert(ctx context.Context, e *keelpay.Event) error {
	if q.w == nil {
		return q.db.WithTx(ctx, func(ctx context.Context, tx storage.Executor) error {
			return tx.EventInsert(ctx, e)
		})
	}
	if err := q.Queries.EventInsert(ctx, e); err != nil {
		return err
	}
	q.db.eventsWritten++
	return nil
}
