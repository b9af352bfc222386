package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver, no cgo

	"github.com/keelpay/keelpay/webhooks"
)

// schema: the ids of the events seen, and the orders fulfilled, one row per
// payment intent. processed_at stays NULL for an event that was answered with
// 204 but whose processing failed or was cut short: the service will not
// deliver it again, so such an event is fetched with GET /v1/events/{id}.
const schema = `
CREATE TABLE IF NOT EXISTS seen_events (
	event_id     TEXT PRIMARY KEY,
	received_at  TEXT NOT NULL,
	processed_at TEXT
) STRICT;
CREATE TABLE IF NOT EXISTS orders_fulfilled (
	payment_intent TEXT PRIMARY KEY,
	reference      TEXT,
	amount         INTEGER NOT NULL,
	currency       TEXT NOT NULL,
	event_id       TEXT NOT NULL,
	fulfilled_at   TEXT NOT NULL
) STRICT;`

// openDB opens (creating if needed) the receiver's SQLite file in WAL mode and
// creates its tables.
func openDB(ctx context.Context, path string) (*sql.DB, error) {
	q := url.Values{}
	// busy_timeout first: the other pragmas may have to wait for a lock.
	q.Add("_pragma", "busy_timeout(5000)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(FULL)")
	// Transactions take the write lock when they begin, so two of them never
	// both read and then fail to write.
	q.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, err
	}
	// SQLite has one writer at a time; a few connections are enough.
	db.SetMaxOpenConns(4)
	if _, err := db.ExecContext(ctx, schema); err != nil {
		db.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return db, nil
}

// receiver processes the deliveries of one store.
type receiver struct {
	db  *sql.DB
	log *slog.Logger

	inflight sync.WaitGroup // requests whose handling has not finished
}

var _ webhooks.Seen = (*receiver)(nil)

// SeenBefore records eventID and reports whether it was recorded before, in
// one statement: of concurrent calls with the same id, in this process or
// another one sharing the file, exactly one inserts the row.
func (r *receiver) SeenBefore(ctx context.Context, eventID string) (bool, error) {
	res, err := r.db.ExecContext(ctx,
		`INSERT INTO seen_events (event_id, received_at) VALUES (?, ?) ON CONFLICT (event_id) DO NOTHING`,
		eventID, now())
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, err
	}
	return n == 0, nil
}

// newHandler returns the handler to mount at the webhook_url. done, if not
// nil, is called when a request has been handled completely, including the
// processing of its event; tests wait with it.
func (r *receiver) newHandler(v *webhooks.Verifier, done func()) http.Handler {
	h := webhooks.NewHandler(v, r.process, webhooks.WithSeen(r), webhooks.WithDone(func() {
		r.inflight.Done()
		if done != nil {
			done()
		}
	}))
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.inflight.Add(1)
		defer func() {
			// A handler that panics has not called done, nor started
			// processing: count the request as finished, then let net/http
			// deal with the panic.
			if p := recover(); p != nil {
				r.inflight.Done()
				panic(p)
			}
		}()
		h.ServeHTTP(w, req)
	})
}

// wait waits until the requests handled so far, and their events, are
// finished. It is called once the server has stopped taking requests.
func (r *receiver) wait() { r.inflight.Wait() }

// paymentIntent is what the receiver reads of a payment intent (docs/api.md).
type paymentIntent struct {
	ID        string  `json:"id"`
	Object    string  `json:"object"`
	Status    string  `json:"status"`
	Amount    int64   `json:"amount"`
	Currency  string  `json:"currency"`
	Reference *string `json:"reference"`
}

// object is the id and status of any other object.
type object struct {
	ID     string `json:"id"`
	Status string `json:"status"`
}

// process handles an event the first time it arrives. Events arrive in any
// order, so the decision rests on the status of the object they carry, not
// on their type or order.
func (r *receiver) process(ctx context.Context, e webhooks.Event, _ []byte) {
	log := r.log.With("event_id", e.ID, "type", e.Type)
	var err error
	switch {
	case strings.HasPrefix(e.Type, "payment_intent."):
		err = r.paymentIntentEvent(ctx, log, e)
	case strings.HasPrefix(e.Type, "refund."):
		var o object
		if json.Unmarshal(e.Data.Object, &o) != nil {
			log.Warn("event object is not a refund")
		} else if o.Status == "failed" {
			log.Warn("refund failed", "refund", o.ID)
		} else {
			log.Info("refund", "refund", o.ID, "status", o.Status)
		}
		err = markProcessed(ctx, r.db, e.ID)
	default: // card.created, webhook.test and types added later
		log.Info("event received")
		err = markProcessed(ctx, r.db, e.ID)
	}
	if err != nil {
		// The service has its 204 and will not deliver the event again; its
		// processed_at stays NULL for a reconciliation with GET /v1/events.
		log.Error("event not processed", "err", err)
	}
}

// paymentIntentEvent fulfils the order when the intent has succeeded,
// whichever payment_intent event says so, and logs the other outcomes.
func (r *receiver) paymentIntentEvent(ctx context.Context, log *slog.Logger, e webhooks.Event) error {
	var pi paymentIntent
	if err := json.Unmarshal(e.Data.Object, &pi); err != nil || pi.Object != "payment_intent" || pi.ID == "" {
		log.Warn("event object is not a payment intent")
		return markProcessed(ctx, r.db, e.ID)
	}
	log = log.With("payment_intent", pi.ID, "status", pi.Status)
	switch pi.Status {
	case "succeeded":
		return r.fulfil(ctx, log, e.ID, pi)
	case "canceled":
		log.Info("payment canceled")
	default:
		if e.Type == "payment_intent.payment_failed" {
			log.Warn("payment failed")
		} else {
			// Among them a payment_intent.succeeded whose object has another
			// status: nothing is fulfilled.
			log.Info("payment intent not succeeded")
		}
	}
	return markProcessed(ctx, r.db, e.ID)
}

// fulfil records the order of pi as fulfilled unless it already is, and the
// event as processed, in one transaction. The primary key on payment_intent
// makes a second fulfilment impossible, even from another event about the same
// intent or from another process sharing the file.
func (r *receiver) fulfil(ctx context.Context, log *slog.Logger, eventID string, pi paymentIntent) error {
	tx, err := r.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, `INSERT INTO orders_fulfilled
		(payment_intent, reference, amount, currency, event_id, fulfilled_at) VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (payment_intent) DO NOTHING`,
		pi.ID, pi.Reference, pi.Amount, pi.Currency, eventID, now())
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	// A real store changes its order here, in tx, and leaves anything outside
	// the database (an e-mail, a shipment request) to be done after the commit
	// from what the transaction recorded.
	if err := markProcessed(ctx, tx, eventID); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	if n == 1 {
		log.Info("order fulfilled")
	} else {
		log.Info("order already fulfilled")
	}
	return nil
}

type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

func markProcessed(ctx context.Context, db execer, eventID string) error {
	_, err := db.ExecContext(ctx, `UPDATE seen_events SET processed_at = ? WHERE event_id = ?`, now(), eventID)
	return err
}

// warnUnprocessed logs the events answered with 204 whose processing never
// finished, for example because the process stopped: the service will not
// deliver them again.
func (r *receiver) warnUnprocessed(ctx context.Context) error {
	rows, err := r.db.QueryContext(ctx, `SELECT event_id FROM seen_events WHERE processed_at IS NULL ORDER BY received_at`)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return err
		}
		r.log.Warn("event accepted but not processed; fetch it with GET /v1/events/{id}", "event_id", id)
	}
	return rows.Err()
}

// now is the current time in UTC with a fixed width, so that it sorts as text.
func now() string { return time.Now().UTC().Format("2006-01-02T15:04:05.000000Z") }

// parseSecrets splits the value of KEELPAY_WEBHOOK_SECRET: one secret, or
// several separated by commas while the secret rotates.
func parseSecrets(s string) []string {
	var secrets []string
	for part := range strings.SplitSeq(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			secrets = append(secrets, part)
		}
	}
	return secrets
}
