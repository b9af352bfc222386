package postgres

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/storage/internal/core"
)

// dialect is how PostgreSQL keeps what keelpay stores (see core.Dialect):
// a time as timestamptz (the zero time as -infinity), metadata and JSON
// values as jsonb and lists of strings as text[], all encoded and decoded
// by pgx; parameters are $1, $2...
type dialect struct{}

var _ core.Dialect = dialect{}

func (dialect) Name() string             { return "postgres" }
func (dialect) Placeholder(n int) string { return "$" + strconv.Itoa(n) }
func (dialect) Time(t time.Time) any     { return ts(t) }
func (dialect) TimeDst(t *time.Time) any { return tsDst(t) }
func (dialect) MapErr(err error) error   { return mapErr(err) }

// The columns are NOT NULL: an empty value is an empty object or array.

func (dialect) Metadata(m map[string]string) (any, error) {
	if m == nil {
		return map[string]string{}, nil
	}
	return m, nil
}

func (dialect) Strings(s []string) (any, error) {
	if s == nil {
		return []string{}, nil
	}
	return s, nil
}

func (dialect) Voided(v []keelpay.VoidedCharge) (any, error) {
	if v == nil {
		return []keelpay.VoidedCharge{}, nil
	}
	return v, nil
}

func (dialect) LastError(e *keelpay.LastError) (any, error) { return e, nil } // nil: NULL

func (dialect) MetadataDst(m *map[string]string) any    { return m }
func (dialect) StringsDst(s *[]string) any              { return s }
func (dialect) VoidedDst(v *[]keelpay.VoidedCharge) any { return v }
func (dialect) LastErrorDst(e **keelpay.LastError) any  { return e }

// PostgreSQL error codes mapErr knows.
const (
	codeUniqueViolation      = "23505"
	codeSerializationFailure = "40001"
	codeDeadlockDetected     = "40P01"
	codeLockNotAvailable     = "55P03"
)

// mapErr is the one place that looks at driver errors: it maps them to the
// storage sentinels, wrapping so the detail stays in logs.
func mapErr(err error) error { return core.MapErr(err, errorKind) }

// errorKinds are the SQLSTATEs mapErr knows.
var errorKinds = map[string]core.ErrorKind{
	codeUniqueViolation:      core.ErrUnique,
	codeSerializationFailure: core.ErrTransient,
	codeDeadlockDetected:     core.ErrTransient,
	codeLockNotAvailable:     core.ErrTransient,
}

func errorKind(err error) core.ErrorKind {
	var pe *pgconn.PgError
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return core.ErrNoRows
	case errors.As(err, &pe):
		return errorKinds[pe.Code]
	}
	return core.ErrOther
}

// ts is the value of a time column: the instant to the microsecond (the
// driver truncates), and the zero time as -infinity.
func ts(t time.Time) pgtype.Timestamptz {
	if t.IsZero() {
		return pgtype.Timestamptz{InfinityModifier: pgtype.NegativeInfinity, Valid: true}
	}
	return pgtype.Timestamptz{Time: t, Valid: true}
}

// tsDst scans a time column into *t, the inverse of ts: in UTC, and
// -infinity (or NULL) as the zero time.
func tsDst(t *time.Time) pgtype.TimestamptzScanner { return timeDst{t} }

type timeDst struct{ t *time.Time }

func (d timeDst) ScanTimestamptz(v pgtype.Timestamptz) error {
	switch {
	case !v.Valid || v.InfinityModifier == pgtype.NegativeInfinity:
		*d.t = time.Time{}
	case v.InfinityModifier == pgtype.Finite:
		*d.t = v.Time.UTC()
	default:
		return errors.New("postgres: infinite time")
	}
	return nil
}

// conn runs statements on a querier for the core (core.Conn). For a
// storage.Batch being committed, pipe collects the writes of Send, and no
// other statement may be made.
type conn struct {
	q    querier
	pipe *pipeline
}

func (c *conn) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	tag, err := c.q.Exec(ctx, query, args...)
	return tag.RowsAffected(), err
}

func (c *conn) Query(ctx context.Context, query string, args ...any) (core.Rows, error) {
	return c.q.Query(ctx, query, args...)
}

func (c *conn) QueryRow(ctx context.Context, query string, args ...any) core.Row {
	return c.q.QueryRow(ctx, query, args...)
}

// ExecQueryRow sends exec and query in one batch: one round trip (with
// BEGIN, when they are a transaction's first statements).
func (c *conn) ExecQueryRow(ctx context.Context, exec string, execArgs []any, query string, queryArgs []any, scan func(core.Row) error) (int64, error) {
	var n int64
	b := &pgx.Batch{}
	b.Queue(exec, execArgs...).Exec(func(tag pgconn.CommandTag) error {
		n = tag.RowsAffected()
		return nil
	})
	b.Queue(query, queryArgs...).QueryRow(func(row pgx.Row) error { return scan(row) })
	return n, c.q.SendBatch(ctx, b).Close()
}

// QueryRows sends the queries in one batch: one round trip.
func (c *conn) QueryRows(ctx context.Context, qs []core.RowQuery) error {
	b := &pgx.Batch{}
	for _, q := range qs {
		b.Queue(q.SQL, q.Args...).QueryRow(func(row pgx.Row) error { return q.Scan(row) })
	}
	return c.q.SendBatch(ctx, b).Close()
}

// Send runs write with its check as one statement (checkedWrite). For a
// batch being committed it is queued in the pipeline, which reports its
// error (DB.Commit).
func (c *conn) Send(ctx context.Context, write, exists string, args []any, gone, conflict error) error {
	w := checked{sql: checkedWrite(write, exists, gone, conflict), args: args, gone: gone, conflict: conflict}
	if c.pipe != nil {
		c.pipe.add(w)
		return nil
	}
	_, err := c.q.Exec(ctx, w.sql, args...)
	return w.mapErr(err)
}

// SendRead runs query and scans its row. For a batch being committed it
// is queued in the pipeline, and scanned when the pipeline's results are
// read (DB.Commit).
func (c *conn) SendRead(ctx context.Context, query string, args []any, scan func(core.Row) error) error {
	if c.pipe != nil {
		c.pipe.add(checked{sql: query, args: args, scan: scan})
		return nil
	}
	return scan(c.q.QueryRow(ctx, query, args...))
}
