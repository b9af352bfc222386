package sandbox

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"time"

	_ "modernc.org/sqlite" // the sandbox's own SQLite file

	"github.com/keelpay/keelpay/provider"
)

// The sandbox keeps its whole state in its own SQLite database: cards by
// token, charges and refunds by merchant and attempt id. No full card
// number and no CVC are stored: a card is its behaviour name, brand, last4
// and expiry. Every answer is committed before it is returned, so a sandbox
// reopened on the same file after a crash answers every lookup as before.
const schema = `
CREATE TABLE IF NOT EXISTS sandbox_cards (
	token       TEXT PRIMARY KEY,
	merchant_id TEXT NOT NULL,
	behavior    TEXT NOT NULL,
	brand       TEXT NOT NULL,
	last4       TEXT NOT NULL,
	exp_month   INTEGER NOT NULL,
	exp_year    INTEGER NOT NULL
) STRICT;
CREATE TABLE IF NOT EXISTS sandbox_payment_methods (
	id          TEXT PRIMARY KEY,
	merchant_id TEXT NOT NULL,
	behavior    TEXT NOT NULL,
	brand       TEXT NOT NULL,
	last4       TEXT NOT NULL,
	exp_month   INTEGER NOT NULL,
	exp_year    INTEGER NOT NULL
) STRICT;
CREATE TABLE IF NOT EXISTS sandbox_charges (
	merchant_id       TEXT NOT NULL,
	attempt_id        TEXT NOT NULL,
	card_token        TEXT,
	challenge_id      TEXT UNIQUE,
	is_open           INTEGER NOT NULL,
	deadline          INTEGER NOT NULL,
	made              INTEGER NOT NULL,
	voided            INTEGER NOT NULL,
	refund_attempt_id TEXT,
	result            TEXT NOT NULL,
	PRIMARY KEY (merchant_id, attempt_id)
) STRICT;
CREATE INDEX IF NOT EXISTS sandbox_charges_attempt ON sandbox_charges (attempt_id);
CREATE INDEX IF NOT EXISTS sandbox_charges_due ON sandbox_charges (deadline) WHERE is_open = 1;
CREATE TABLE IF NOT EXISTS sandbox_refunds (
	merchant_id TEXT NOT NULL,
	attempt_id  TEXT NOT NULL,
	is_open     INTEGER NOT NULL,
	deadline    INTEGER NOT NULL,
	paid        INTEGER NOT NULL,
	result      TEXT NOT NULL,
	PRIMARY KEY (merchant_id, attempt_id)
) STRICT;
CREATE INDEX IF NOT EXISTS sandbox_refunds_attempt ON sandbox_refunds (attempt_id);
CREATE INDEX IF NOT EXISTS sandbox_refunds_due ON sandbox_refunds (deadline) WHERE is_open = 1;
`

// openDB opens (and creates) the sandbox database at path, or a private
// in-memory one when path is "". The sandbox serialises its work under its
// mutex, so one connection is enough; it also keeps an in-memory database
// alive. The connection to a file is closed after idle unused (when idle
// is positive).
//
// The file is in WAL mode with synchronous=NORMAL: a committed answer is
// in the operating system's hands before it is given out, so it survives
// the death of the process (the crash tests kill it with SIGKILL), but
// it is not flushed to disk at each commit, and the loss of the machine
// may lose the latest answers. The sandbox stands for a remote provider,
// whose durability is its own: an fsync per charge, taken under the
// sandbox's mutex, made every payment wait in one line for the disk.
// keelpay's own database keeps synchronous=FULL.
func openDB(ctx context.Context, path string, idle time.Duration) (*sql.DB, error) {
	dsn := "file::memory:"
	if path != "" {
		q := url.Values{}
		q.Add("_pragma", "journal_mode(WAL)")
		q.Add("_pragma", "synchronous(NORMAL)")
		q.Add("_pragma", "busy_timeout(5000)")
		dsn = "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + q.Encode()
	}
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	if path != "" && idle > 0 {
		db.SetConnMaxIdleTime(idle)
	}
	if _, err := db.ExecContext(ctx, schema); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// tx is one unit of the sandbox's work. It is used under the sandbox's
// mutex only.
type tx struct {
	*sql.Tx
	ctx   context.Context
	stmts map[string]*sql.Stmt
}

const chargeColumns = `merchant_id, attempt_id, card_token, challenge_id, deadline, made, refund_attempt_id, result`

// The statements of every card, charge and refund.
const (
	qSaveCard = `INSERT INTO sandbox_cards (token, merchant_id, behavior, brand, last4, exp_month, exp_year)
		VALUES (?, ?, ?, ?, ?, ?, ?)`
	qDetachCard = `UPDATE sandbox_cards SET behavior = ? WHERE token = ? AND merchant_id = ?`
	qCard       = `SELECT merchant_id, behavior, brand, last4, exp_month, exp_year FROM sandbox_cards WHERE token = ?`
	qSavePM     = `INSERT INTO sandbox_payment_methods (id, merchant_id, behavior, brand, last4, exp_month, exp_year)
		VALUES (?, ?, ?, ?, ?, ?, ?)`
	qPM         = `SELECT merchant_id, behavior, brand, last4, exp_month, exp_year FROM sandbox_payment_methods WHERE id = ?`
	qSaveCharge = `INSERT INTO sandbox_charges
		(merchant_id, attempt_id, card_token, challenge_id, is_open, deadline, made, voided, refund_attempt_id, result)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (merchant_id, attempt_id) DO UPDATE SET
			is_open = excluded.is_open, deadline = excluded.deadline, made = excluded.made, voided = excluded.voided,
			refund_attempt_id = excluded.refund_attempt_id, result = excluded.result`
	qCharge            = `SELECT ` + chargeColumns + ` FROM sandbox_charges WHERE merchant_id = ? AND attempt_id = ?`
	qChargeByChallenge = `SELECT ` + chargeColumns + ` FROM sandbox_charges WHERE challenge_id = ?`
	qDueCharges        = `SELECT merchant_id, attempt_id FROM sandbox_charges WHERE is_open = 1 AND deadline <= ?`
	qDueRefunds        = `SELECT merchant_id, attempt_id FROM sandbox_refunds WHERE is_open = 1 AND deadline <= ?`
	qSaveRefund        = `INSERT INTO sandbox_refunds (merchant_id, attempt_id, is_open, deadline, paid, result)
		VALUES (?, ?, ?, ?, ?, ?)
		ON CONFLICT (merchant_id, attempt_id) DO UPDATE SET
			is_open = excluded.is_open, deadline = excluded.deadline, paid = excluded.paid, result = excluded.result`
	qRefund = `SELECT deadline, paid, result FROM sandbox_refunds WHERE merchant_id = ? AND attempt_id = ?`
)

// prepare prepares the statements above once. modernc's driver otherwise
// parses and plans a statement again at every execution: about a third of
// the sandbox's CPU under a payments load. A statement is re-prepared by
// database/sql when the connection it was prepared on has been closed
// (after idle).
func prepare(ctx context.Context, db *sql.DB) (map[string]*sql.Stmt, error) {
	stmts := map[string]*sql.Stmt{}
	for _, q := range []string{qSaveCard, qDetachCard, qCard, qSavePM, qPM, qSaveCharge, qCharge, qChargeByChallenge, qDueCharges, qDueRefunds, qSaveRefund, qRefund} {
		st, err := db.PrepareContext(ctx, q)
		if err != nil {
			for _, st := range stmts {
				st.Close()
			}
			return nil, err
		}
		stmts[q] = st
	}
	return stmts, nil
}

// ExecContext, QueryContext and QueryRowContext run a prepared statement
// when query is one, and the query text otherwise.

func (t tx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if st := t.stmts[query]; st != nil {
		return t.StmtContext(ctx, st).ExecContext(ctx, args...)
	}
	return t.Tx.ExecContext(ctx, query, args...)
}

func (t tx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if st := t.stmts[query]; st != nil {
		return t.StmtContext(ctx, st).QueryContext(ctx, args...)
	}
	return t.Tx.QueryContext(ctx, query, args...)
}

func (t tx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if st := t.stmts[query]; st != nil {
		return t.StmtContext(ctx, st).QueryRowContext(ctx, args...)
	}
	return t.Tx.QueryRowContext(ctx, query, args...)
}

// inTx runs f in a transaction and commits it; the answer f produced is
// given out only once committed. An error from f rolls the transaction
// back and is returned; a failure of the database is
// [provider.KindUnavailable]: nothing was done.
func (s *Sandbox) inTx(f func(t tx) error) error {
	// The work runs to its end whatever the caller's context: the answer is
	// decided once it starts.
	ctx := context.Background()
	sqlTx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return storageError(err)
	}
	defer sqlTx.Rollback() //nolint:errcheck // a no-op after Commit
	if err := f(tx{Tx: sqlTx, ctx: ctx, stmts: s.stmts}); err != nil {
		var dbErr *dbError
		if errors.As(err, &dbErr) {
			return storageError(dbErr.err)
		}
		return err
	}
	if err := sqlTx.Commit(); err != nil {
		return storageError(err)
	}
	return nil
}

// onceInTx is the transaction of a send made once per attempt (a charge, a
// refund): the record of key, or a new one from send when there is none,
// brought up to now with settle. It is saved when it is new or settling
// changed it, so a repeated call returns the stored outcome.
func onceInTx[R any](s *Sandbox, key attempt, now time.Time,
	load func(tx, attempt) (*R, error), send func(tx) (*R, error),
	settle func(*R, time.Time) bool, save func(tx, *R) error) (*R, error) {
	var rec *R
	err := s.inTx(func(t tx) (err error) {
		rec, err = load(t, key)
		switch {
		case err != nil:
			return err
		case rec == nil:
			if rec, err = send(t); err != nil {
				return err
			}
			settle(rec, now)
		case !settle(rec, now):
			return nil
		}
		return save(t, rec)
	})
	return rec, err
}

// dbError marks a failure of the sandbox's database inside a transaction.
type dbError struct{ err error }

func (e *dbError) Error() string { return e.err.Error() }

func dbErr(err error) error {
	if err == nil {
		return nil
	}
	return &dbError{err}
}

func storageError(err error) error {
	return &provider.Error{Kind: provider.KindUnavailable, Message: fmt.Sprintf("the sandbox's storage failed: %v", err), RetryAfter: UnavailableRetryAfter}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// nanos is t in Unix nanoseconds, 0 for the zero time (no deadline).
func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

func nullString(s string) sql.NullString { return sql.NullString{String: s, Valid: s != ""} }

func (t tx) saveCard(c *card) error {
	_, err := t.ExecContext(t.ctx, qSaveCard,
		c.saved.Token, c.merchantID, string(c.behavior), c.saved.Brand, c.saved.Last4, c.saved.ExpMonth, c.saved.ExpYear)
	return dbErr(err)
}

// card returns the card of token, or nil.
func (t tx) card(token string) (*card, error) {
	c := &card{saved: provider.SavedCard{Token: token}}
	var b string
	err := t.QueryRowContext(t.ctx, qCard, token).
		Scan(&c.merchantID, &b, &c.saved.Brand, &c.saved.Last4, &c.saved.ExpMonth, &c.saved.ExpYear)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	c.behavior = behavior(b)
	return c, dbErr(err)
}

// savePaymentMethod keeps a card the sandbox's element captured, as a
// card is kept: its behaviour, brand, last4 and expiry, under its id.
func (t tx) savePaymentMethod(id string, c *card) error {
	_, err := t.ExecContext(t.ctx, qSavePM,
		id, c.merchantID, string(c.behavior), c.saved.Brand, c.saved.Last4, c.saved.ExpMonth, c.saved.ExpYear)
	return dbErr(err)
}

// paymentMethod returns the payment method id, or nil. Its saved.Token is
// empty.
func (t tx) paymentMethod(id string) (*card, error) {
	c := &card{}
	var b string
	err := t.QueryRowContext(t.ctx, qPM, id).
		Scan(&c.merchantID, &b, &c.saved.Brand, &c.saved.Last4, &c.saved.ExpMonth, &c.saved.ExpYear)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	c.behavior = behavior(b)
	return c, dbErr(err)
}

// chargeRow is a charge's result column: the outcome, and the state of a
// void that does not hold at once (absent in files written before).
type chargeRow struct {
	provider.ChargeResult
	VoidPending    bool `json:"void_pending,omitempty"`
	VoidFailsLater bool `json:"void_fails_later,omitempty"`
	VoidFailed     bool `json:"void_failed,omitempty"`
}

func (t tx) saveCharge(c *charge) error {
	res := c.res
	res.ActionURL = "" // follows the base URL
	body, err := json.Marshal(chargeRow{ChargeResult: res, VoidPending: c.voidPending, VoidFailsLater: c.voidFailsLater, VoidFailed: c.voidFailed})
	if err != nil {
		return err
	}
	var token string
	if c.card != nil {
		token = c.card.saved.Token
	}
	open := c.res.Status == provider.ChargePending || c.res.Status == provider.ChargeRequiresAction || c.voidPending || c.voidFailsLater
	_, err = t.ExecContext(t.ctx, qSaveCharge,
		c.key.merchantID, c.key.attemptID, nullString(token), nullString(c.challengeID), boolInt(open),
		nanos(c.deadline), c.made, boolInt(c.res.Voided), nullString(c.refundAttemptID), string(body))
	return dbErr(err)
}

// charge returns the charge of key, or nil.
func (t tx) charge(key attempt) (*charge, error) {
	return t.scanCharge(t.QueryRowContext(t.ctx, qCharge, key.merchantID, key.attemptID))
}

// chargeByChallenge returns the charge of a 3D Secure challenge, or nil.
func (t tx) chargeByChallenge(id string) (*charge, error) {
	return t.scanCharge(t.QueryRowContext(t.ctx, qChargeByChallenge, id))
}

func (t tx) scanCharge(row interface{ Scan(...any) error }) (*charge, error) {
	c := &charge{}
	var token, challengeID, refundID sql.NullString
	var deadline int64
	var body string
	err := row.Scan(&c.key.merchantID, &c.key.attemptID, &token, &challengeID, &deadline, &c.made, &refundID, &body)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, dbErr(err)
	}
	c.challengeID, c.refundAttemptID = challengeID.String, refundID.String
	c.deadline = fromNanos(deadline)
	var stored chargeRow
	if err := json.Unmarshal([]byte(body), &stored); err != nil {
		return nil, dbErr(err)
	}
	c.res, c.voidPending, c.voidFailsLater, c.voidFailed = stored.ChargeResult, stored.VoidPending, stored.VoidFailsLater, stored.VoidFailed
	if token.Valid {
		if c.card, err = t.card(token.String); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// dueCharges returns the keys of the charges whose pending outcome or open
// challenge is due at now.
func (t tx) dueCharges(now time.Time) ([]attempt, error) {
	return t.keys(qDueCharges, now.UnixNano())
}

func (t tx) dueRefunds(now time.Time) ([]attempt, error) {
	return t.keys(qDueRefunds, now.UnixNano())
}

func (t tx) keys(query string, args ...any) ([]attempt, error) {
	rows, err := t.QueryContext(t.ctx, query, args...)
	if err != nil {
		return nil, dbErr(err)
	}
	defer rows.Close()
	var keys []attempt
	for rows.Next() {
		var k attempt
		if err := rows.Scan(&k.merchantID, &k.attemptID); err != nil {
			return nil, dbErr(err)
		}
		keys = append(keys, k)
	}
	return keys, dbErr(rows.Err())
}

// refundRow is a refund's result column: the outcome, and whether a paid
// send fails later (absent in files written before that existed).
type refundRow struct {
	provider.RefundResult
	FailsLater bool `json:"fails_later,omitempty"`
}

func (t tx) saveRefund(rf *refund) error {
	body, err := json.Marshal(refundRow{RefundResult: rf.res, FailsLater: rf.failsLater})
	if err != nil {
		return err
	}
	open := rf.res.Status == provider.RefundPending || rf.failsLater
	_, err = t.ExecContext(t.ctx, qSaveRefund,
		rf.key.merchantID, rf.key.attemptID, boolInt(open), nanos(rf.deadline), rf.paid, string(body))
	return dbErr(err)
}

// refund returns the refund send of key, or nil.
func (t tx) refund(key attempt) (*refund, error) {
	rf := &refund{key: key}
	var deadline int64
	var body string
	err := t.QueryRowContext(t.ctx, qRefund, key.merchantID, key.attemptID).Scan(&deadline, &rf.paid, &body)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, dbErr(err)
	}
	rf.deadline = fromNanos(deadline)
	var row refundRow
	if err := json.Unmarshal([]byte(body), &row); err != nil {
		return nil, dbErr(err)
	}
	rf.res, rf.failsLater = row.RefundResult, row.FailsLater
	return rf, nil
}

// countByAttempt sums column per attempt id of table where it is not 0.
func (t tx) countByAttempt(table, column string) (map[string]int, error) {
	rows, err := t.QueryContext(t.ctx, `SELECT attempt_id, SUM(`+column+`) FROM `+table+` WHERE `+column+` > 0 GROUP BY attempt_id`)
	if err != nil {
		return nil, dbErr(err)
	}
	defer rows.Close()
	m := map[string]int{}
	for rows.Next() {
		var id string
		var n int
		if err := rows.Scan(&id, &n); err != nil {
			return nil, dbErr(err)
		}
		m[id] = n
	}
	return m, dbErr(rows.Err())
}

func (t tx) count(query string, args ...any) (int, error) {
	var n int
	err := t.QueryRowContext(t.ctx, query, args...).Scan(&n)
	return n, dbErr(err)
}
