package postgres

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// lazyTx is a transaction on one pooled connection whose BEGIN travels
// with its first statement, in one pipeline (pgx's Batch.BeginTx), instead
// of a round trip of its own: a payment's three transactions save three
// round trips. A transaction that made no statement sends nothing at all.
//
// It is used by one goroutine, like a pgx.Tx.
type lazyTx struct {
	conn      *pgxpool.Conn
	tx        pgx.Tx        // nil until the first statement
	committed bool          // commit was sent
	trips     *atomic.Int64 // counts COMMIT and ROLLBACK (see counted)
}

var _ querier = (*lazyTx)(nil)

// first sends BEGIN and the queries of b in one pipeline. The results
// start with BEGIN's.
func (t *lazyTx) first(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	nb := &pgx.Batch{}
	nb.BeginTx(pgx.TxOptions{IsoLevel: pgx.ReadCommitted})
	nb.QueuedQueries = append(nb.QueuedQueries, b.QueuedQueries...)
	br := t.conn.SendBatch(ctx, nb)
	t.tx = br.Tx()
	return br
}

// one sends BEGIN with one query and returns the results positioned at
// that query's.
func (t *lazyTx) one(ctx context.Context, sql string, args []any) (pgx.BatchResults, error) {
	b := &pgx.Batch{}
	b.Queue(sql, args...)
	br := t.first(ctx, b)
	if _, err := br.Exec(); err != nil {
		return nil, errors.Join(err, br.Close())
	}
	return br, nil
}

func (t *lazyTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if t.tx != nil {
		return t.tx.Exec(ctx, sql, args...)
	}
	br, err := t.one(ctx, sql, args)
	if err != nil {
		return pgconn.CommandTag{}, err
	}
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
	br, err := t.one(ctx, sql, args)
	if err != nil {
		return nil, err
	}
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
	br := t.first(ctx, b)
	// BEGIN's result is read here, so that the caller's results start
	// with its own first query.
	if _, err := br.Exec(); err != nil {
		return pgx.FailedBatchResults(b, errors.Join(err, br.Close()))
	}
	return br
}

// commit commits a transaction that began; one that made no statement has
// nothing to commit. begun reports which.
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
