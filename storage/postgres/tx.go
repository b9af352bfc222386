package postgres

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// lazyTx is a transaction on one pooled connection that sends as few
// round trips as its statements allow:
//
//   - its BEGIN travels with its first statement, in one pipeline (pgx's
//     Batch.BeginTx), instead of a round trip of its own;
//   - a write whose only result is its error (see conn.Send) is held back
//     and sent with the next statement, or with the COMMIT;
//   - a transaction of held writes only sends them in one pipeline
//     without BEGIN or COMMIT: PostgreSQL runs a pipeline as one implicit
//     transaction, committed at its end.
//
// So a transaction of writes costs one round trip, and a transaction that
// made no statement sends nothing at all. A held write carries its own
// check (keelpay_fail): one that fails aborts the transaction, and the
// COMMIT behind it in the pipeline is not run.
//
// It is used by one goroutine, like a pgx.Tx.
type lazyTx struct {
	conn      *pgxpool.Conn
	tx        pgx.Tx        // nil until a statement began it
	held      []heldWrite   // writes not sent yet
	committed bool          // the transaction ended with a commit (or its implicit one)
	trips     *atomic.Int64 // counts COMMIT and ROLLBACK (see counted)
}

var _ querier = (*lazyTx)(nil)

// heldWrite is a write held back by a lazyTx: its statement, with its
// check, and the errors its check raises.
type heldWrite struct {
	sql            string
	args           []any
	gone, conflict error
}

// Codes keelpay_fail raises for a held write's check (migration 014).
const (
	codeGone     = "KP404"
	codeConflict = "KP409"
)

// checkedWrite returns write with its check (see core.Conn.Send): a
// statement that raises codeGone or codeConflict through keelpay_fail when
// write changes no row. Without gone, write is returned as is.
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
func (w heldWrite) mapErr(err error) error {
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

// hold keeps w to send with the transaction's next statement or commit.
func (t *lazyTx) hold(w heldWrite) { t.held = append(t.held, w) }

// send sends the held writes and the queries of b in one pipeline, with
// BEGIN in front when the transaction has not begun, and returns the
// results positioned at b's first query. The first held write that fails
// fails the whole batch with its own error.
func (t *lazyTx) send(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	nb := &pgx.Batch{}
	begin := t.tx == nil
	if begin {
		nb.BeginTx(pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	}
	held := t.held
	t.held = nil
	queueHeld(nb, held)
	nb.QueuedQueries = append(nb.QueuedQueries, b.QueuedQueries...)
	var br pgx.BatchResults
	if begin {
		br = t.conn.SendBatch(ctx, nb)
		t.tx = br.Tx()
		// BEGIN's result is read here, so that the caller's results start
		// with its own first query.
		if _, err := br.Exec(); err != nil {
			return pgx.FailedBatchResults(b, errors.Join(err, br.Close()))
		}
	} else {
		br = t.tx.SendBatch(ctx, nb)
	}
	if err := readHeld(br, held); err != nil {
		_ = br.Close()
		return pgx.FailedBatchResults(b, err)
	}
	return br
}

// queueHeld queues the held writes in b.
func queueHeld(b *pgx.Batch, held []heldWrite) {
	for _, w := range held {
		b.Queue(w.sql, w.args...)
	}
}

// readHeld reads the results of the held writes at the front of br and
// returns the first one's error, mapped.
func readHeld(br pgx.BatchResults, held []heldWrite) error {
	for _, w := range held {
		if _, err := br.Exec(); err != nil {
			return w.mapErr(err)
		}
	}
	return nil
}

// direct reports whether a statement can go straight to the begun
// transaction: nothing is held back to go before it.
func (t *lazyTx) direct() bool { return t.tx != nil && len(t.held) == 0 }

// one sends a query with what must go before it and returns the results
// positioned at that query's.
func (t *lazyTx) one(ctx context.Context, sql string, args []any) pgx.BatchResults {
	b := &pgx.Batch{}
	b.Queue(sql, args...)
	return t.send(ctx, b)
}

func (t *lazyTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if t.direct() {
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
	if t.direct() {
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
	if t.direct() {
		return t.tx.QueryRow(ctx, sql, args...)
	}
	rows, err := t.Query(ctx, sql, args...)
	if err != nil {
		return errRow{err}
	}
	return rowOf{rows}
}

func (t *lazyTx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	if t.direct() {
		return t.tx.SendBatch(ctx, b)
	}
	return t.send(ctx, b)
}

// commit commits the transaction, sending the writes held back with it;
// one that made no statement has nothing to commit. begun reports which.
// A held write that fails rolls the transaction back and is the error.
func (t *lazyTx) commit(ctx context.Context) (begun bool, err error) {
	switch {
	case t.tx == nil && len(t.held) == 0:
		return false, nil
	case t.tx == nil:
		// Only held writes: one pipeline, which PostgreSQL runs as one
		// implicit transaction and commits at its end (or rolls back, on
		// a failure: nothing is left open either way).
		t.trips.Add(1)
		t.committed = true
		b := &pgx.Batch{}
		queueHeld(b, t.held)
		br := t.conn.SendBatch(ctx, b)
		err := readHeld(br, t.held)
		if cerr := br.Close(); err == nil {
			err = mapErr(cerr)
		}
		return true, err
	case len(t.held) == 0:
		t.trips.Add(1)
		t.committed = true
		return true, t.tx.Commit(ctx)
	}
	t.trips.Add(1)
	b := &pgx.Batch{}
	queueHeld(b, t.held)
	b.Queue("COMMIT")
	br := t.tx.SendBatch(ctx, b)
	err = readHeld(br, t.held)
	if err == nil {
		_, err = br.Exec()
		err = mapErr(err)
	}
	if cerr := br.Close(); err == nil {
		err = mapErr(cerr)
	}
	// After a failure the server skipped the COMMIT and the transaction
	// waits for its ROLLBACK (see rollback); a COMMIT that failed ended it.
	t.committed = t.conn.Conn().PgConn().TxStatus() == 'I'
	return true, err
}

// rollback rolls back a transaction that began and was not committed;
// after a commit it does nothing.
func (t *lazyTx) rollback(ctx context.Context) {
	if t.tx != nil && !t.committed {
		t.trips.Add(1)
		_ = t.tx.Rollback(ctx)
	}
}

// counted is a querier that counts its round trips to the server in n:
// each statement and each batch is one (a lazyTx's first statement
// carries its BEGIN along).
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
