package postgres

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/keelpay/keelpay/storage/internal/core"
)

// lazyTx is a transaction on one pooled connection whose BEGIN travels
// with its first statement, in one pipeline (pgx's Batch.BeginTx), instead
// of a round trip of its own; a transaction that made no statement sends
// nothing at all. Every statement is sent when it is made, so each call
// returns its own outcome.
//
// It is used by one goroutine, like a pgx.Tx.
type lazyTx struct {
	conn      *pgxpool.Conn
	tx        pgx.Tx        // nil until a statement began it
	committed bool          // the transaction ended with a commit
	trips     *atomic.Int64 // counts COMMIT and ROLLBACK (see counted)
}

var _ querier = (*lazyTx)(nil)

// checked is a write with its check (see checkedWrite): its statement
// and the errors its check raises.
type checked struct {
	sql            string
	args           []any
	gone, conflict error
	// scan, when set, makes this a read (core.Conn.SendRead): its row is
	// scanned with scan.
	scan func(core.Row) error
}

// Codes keelpay_fail raises for a checked write (migration 014).
const (
	codeGone     = "KP404"
	codeConflict = "KP409"
)

// checkedWrite returns write with its check (see core.Conn.Send): a
// statement that raises codeGone or codeConflict through keelpay_fail when
// write changes no row, so that the write fails as a statement does and a
// pipeline behind it is not run. Without gone, write is returned as is.
func checkedWrite(write, exists string, gone, conflict error) string {
	head := `WITH w AS (` + write + ` RETURNING 1) SELECT keelpay_fail(`
	switch {
	case gone == nil:
		return write
	case exists == "":
		return head + `'` + codeGone + `') WHERE NOT EXISTS (SELECT FROM w)`
	case conflict == nil:
		// A row that did not qualify is no error.
		return head + `'` + codeGone + `') WHERE NOT EXISTS (SELECT FROM w) AND NOT EXISTS (` + exists + `)`
	}
	return head + `CASE WHEN EXISTS (` + exists + `) THEN '` + codeConflict + `' ELSE '` + codeGone + `' END)
		WHERE NOT EXISTS (SELECT FROM w)`
}

// mapErr maps the error of w's statement: its check's codes to its
// errors, anything else as every driver error is.
func (w checked) mapErr(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case codeGone:
			return w.gone
		case codeConflict:
			return w.conflict
		}
	}
	return mapErr(err)
}

// begin sends b with BEGIN in front, when the transaction has not begun,
// and returns the results positioned at b's first query.
func (t *lazyTx) begin(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	nb := &pgx.Batch{}
	nb.BeginTx(pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	nb.QueuedQueries = append(nb.QueuedQueries, b.QueuedQueries...)
	br := t.conn.SendBatch(ctx, nb)
	t.tx = br.Tx()
	// BEGIN's result is read here, so that the caller's results start
	// with its own first query.
	if _, err := br.Exec(); err != nil {
		return pgx.FailedBatchResults(b, errors.Join(err, br.Close()))
	}
	return br
}

// one sends a query with BEGIN in front and returns the results
// positioned at that query's.
func (t *lazyTx) one(ctx context.Context, sql string, args []any) pgx.BatchResults {
	b := &pgx.Batch{}
	b.Queue(sql, args...)
	return t.begin(ctx, b)
}

func (t *lazyTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if t.tx != nil {
		return t.tx.Exec(ctx, sql, args...)
	}
	br := t.one(ctx, sql, args)
	tag, err := br.Exec()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return tag, err
}

func (t *lazyTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if t.tx != nil {
		return t.tx.Query(ctx, sql, args...)
	}
	br := t.one(ctx, sql, args)
	rows, err := br.Query()
	if err != nil {
		return nil, errors.Join(err, br.Close())
	}
	return &batchRows{Rows: rows, br: br}, nil
}

func (t *lazyTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if t.tx != nil {
		return t.tx.QueryRow(ctx, sql, args...)
	}
	rows, err := t.Query(ctx, sql, args...)
	if err != nil {
		return errRow{err}
	}
	return rowOf{rows}
}

func (t *lazyTx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	if t.tx != nil {
		return t.tx.SendBatch(ctx, b)
	}
	return t.begin(ctx, b)
}

// commit commits the transaction; one that made no statement has nothing
// to commit. begun reports which.
func (t *lazyTx) commit(ctx context.Context) (begun bool, err error) {
	if t.tx == nil {
		return false, nil
	}
	t.trips.Add(1)
	t.committed = true
	return true, t.tx.Commit(ctx)
}

// rollback rolls back a transaction that began and was not committed;
// after a commit it does nothing.
func (t *lazyTx) rollback(ctx context.Context) {
	if t.tx != nil && !t.committed {
		t.trips.Add(1)
		_ = t.tx.Rollback(ctx)
	}
}

// pipeline collects the statements of a storage.Batch (conn.Send queues
// them here instead of sending them) to send them in one round trip
// without BEGIN or COMMIT: PostgreSQL runs a pipeline as one implicit
// transaction, committed at its end, and a statement that fails (a
// checked write's keelpay_fail) aborts it, the statements behind it not
// run. Each statement is tagged with the index of the batch's write that
// made it, so that a failure is reported as that write's.
type pipeline struct {
	cur   int // the index of the write being recorded
	stmts []pipedStmt
}

type pipedStmt struct {
	checked
	index int
}

func (p *pipeline) add(w checked) { p.stmts = append(p.stmts, pipedStmt{checked: w, index: p.cur}) }

// send sends the statements on q in one pipeline and returns the index of
// the write whose statement failed, with its error mapped, or -1.
func (p *pipeline) send(ctx context.Context, q querier) (int, error) {
	b := &pgx.Batch{}
	for _, s := range p.stmts {
		b.Queue(s.sql, s.args...)
	}
	br := q.SendBatch(ctx, b)
	// The first error of a read's own scan: the server ran the read, and
	// the statements behind it, so it is reported once they are all read.
	scanIndex, scanErr := -1, error(nil)
	for _, s := range p.stmts {
		var err error
		if s.scan != nil {
			row := &seenRow{row: br.QueryRow()}
			if serr := s.scan(row); serr != nil {
				var pe *pgconn.PgError
				if !errors.As(row.err, &pe) {
					// The server ran it (its other failures, the
					// connection's, show in the statements behind it
					// or in Close).
					if scanIndex < 0 {
						scanIndex, scanErr = s.index, serr
					}
					continue
				}
				err = row.err
			}
		} else {
			_, err = br.Exec()
		}
		if err != nil {
			_ = br.Close()
			var pe *pgconn.PgError
			if !errors.As(err, &pe) {
				// The connection's failure, no write's.
				return -1, mapErr(err)
			}
			return s.index, s.mapErr(err)
		}
	}
	if err := br.Close(); err != nil {
		return -1, mapErr(err)
	}
	return scanIndex, scanErr
}

// seenRow is a row of a pipeline's read that keeps the driver's own
// error of its Scan, to tell the statement's failure from the scan's.
type seenRow struct {
	row pgx.Row
	err error
}

func (r *seenRow) Scan(dst ...any) error {
	r.err = r.row.Scan(dst...)
	return r.err
}

// noStatements is the querier of a batch being committed: the writes of
// a storage.Batch are checked writes (conn.Send), which the pipeline
// collects, and any other statement is a mistake of the core.
type noStatements struct{}

var errNotBatchable = errors.New("postgres: a write of a batch made a statement other than a checked write")

func (noStatements) Exec(context.Context, string, ...any) (pgconn.CommandTag, error) {
	return pgconn.CommandTag{}, errNotBatchable
}
func (noStatements) Query(context.Context, string, ...any) (pgx.Rows, error) {
	return nil, errNotBatchable
}
func (noStatements) QueryRow(context.Context, string, ...any) pgx.Row { return errRow{errNotBatchable} }
func (noStatements) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	return pgx.FailedBatchResults(b, errNotBatchable)
}

// prefixed is a querier that sends writes in front of the first statement
// made on it, in the same pipeline: a storage call that does both (a
// delivery claim that records results first) is one round trip, and one
// implicit transaction outside WithTx. The first write that fails fails
// the statement with its own error.
type prefixed struct {
	querier
	pre []checked
}

// batch returns the results of b sent behind the writes, positioned at
// b's first query.
func (p *prefixed) batch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	pre := p.pre
	p.pre = nil
	if len(pre) == 0 {
		return p.querier.SendBatch(ctx, b)
	}
	nb := &pgx.Batch{}
	for _, w := range pre {
		nb.Queue(w.sql, w.args...)
	}
	nb.QueuedQueries = append(nb.QueuedQueries, b.QueuedQueries...)
	br := p.querier.SendBatch(ctx, nb)
	for _, w := range pre {
		if _, err := br.Exec(); err != nil {
			_ = br.Close()
			return pgx.FailedBatchResults(b, w.mapErr(err))
		}
	}
	return br
}

func (p *prefixed) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	b := &pgx.Batch{}
	b.Queue(sql, args...)
	br := p.batch(ctx, b)
	tag, err := br.Exec()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return tag, err
}

func (p *prefixed) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	b := &pgx.Batch{}
	b.Queue(sql, args...)
	br := p.batch(ctx, b)
	rows, err := br.Query()
	if err != nil {
		return nil, errors.Join(err, br.Close())
	}
	return &batchRows{Rows: rows, br: br}, nil
}

func (p *prefixed) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	rows, err := p.Query(ctx, sql, args...)
	if err != nil {
		return errRow{err}
	}
	return rowOf{rows}
}

func (p *prefixed) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	return p.batch(ctx, b)
}

// counted is a querier that counts its round trips to the server in n:
// each statement and each batch is one (a lazyTx's first statement
// carries its BEGIN along, a prefixed one its writes).
type counted struct {
	querier
	n *atomic.Int64
}

func (c counted) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	c.n.Add(1)
	return c.querier.Exec(ctx, sql, args...)
}

func (c counted) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	c.n.Add(1)
	return c.querier.Query(ctx, sql, args...)
}

func (c counted) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	c.n.Add(1)
	return c.querier.QueryRow(ctx, sql, args...)
}

func (c counted) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	c.n.Add(1)
	return c.querier.SendBatch(ctx, b)
}

// batchRows closes the batch its rows came from when they are closed.
type batchRows struct {
	pgx.Rows
	br pgx.BatchResults
}

func (r *batchRows) Close() {
	r.Rows.Close()
	_ = r.br.Close()
}

// rowOf is pgx.Row for the first row of rows, as pgx's own QueryRow.
type rowOf struct{ rows pgx.Rows }

func (r rowOf) Scan(dest ...any) error {
	defer r.rows.Close()
	if !r.rows.Next() {
		if err := r.rows.Err(); err != nil {
			return err
		}
		return pgx.ErrNoRows
	}
	if err := r.rows.Scan(dest...); err != nil {
		return err
	}
	r.rows.Close()
	return r.rows.Err()
}

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }
