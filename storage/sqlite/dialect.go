package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/storage/internal/core"
)

// dialect is how SQLite keeps what keelpay stores (see core.Dialect): a
// time as unix microseconds (the zero time as 0), JSON values, metadata
// and lists of strings as JSON text, and numbered parameters (?1, ?2...),
// so that the two statements of a conditional write can share their
// arguments.
type dialect struct{}

var _ core.Dialect = dialect{}

func (dialect) Name() string             { return "sqlite" }
func (dialect) Placeholder(n int) string { return "?" + strconv.Itoa(n) }
func (dialect) Time(t time.Time) any     { return micros(t) }
func (dialect) TimeDst(t *time.Time) any { return microsDst{t} }
func (dialect) MapErr(err error) error   { return mapErr(err) }

func (dialect) Metadata(m map[string]string) (any, error) {
	if len(m) == 0 {
		return "{}", nil
	}
	return jsonText(m)
}

func (dialect) Strings(s []string) (any, error) {
	if len(s) == 0 {
		return "[]", nil
	}
	return jsonText(s)
}

func (dialect) Voided(v []keelpay.VoidedCharge) (any, error) {
	if len(v) == 0 {
		return "[]", nil
	}
	return jsonText(v)
}

func (dialect) LastError(e *keelpay.LastError) (any, error) {
	if e == nil {
		return "", nil
	}
	return jsonText(e)
}

func (dialect) MetadataDst(m *map[string]string) any    { return jsonDst[map[string]string]{m} }
func (dialect) StringsDst(s *[]string) any              { return jsonDst[[]string]{s} }
func (dialect) VoidedDst(v *[]keelpay.VoidedCharge) any { return jsonDst[[]keelpay.VoidedCharge]{v} }
func (dialect) LastErrorDst(e **keelpay.LastError) any  { return jsonDst[*keelpay.LastError]{e} }

// jsonText encodes a JSON column.
func jsonText(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("sqlite: encode column: %w", err)
	}
	return string(b), nil
}

// micros stores a time as unix microseconds; the zero time is 0.
func micros(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMicro()
}

// fromMicros is the inverse of micros, in UTC.
func fromMicros(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.UnixMicro(n).UTC()
}

// microsDst reads a time column into t (see micros).
type microsDst struct{ t *time.Time }

func (d microsDst) Scan(src any) error {
	n, ok := src.(int64)
	if !ok {
		return fmt.Errorf("sqlite: time column holds %T", src)
	}
	*d.t = fromMicros(n)
	return nil
}

// jsonDst reads a JSON column into v. The empty forms the dialect writes
// ("", "{}", "[]") leave v as it is, without a JSON decoder.
type jsonDst[T any] struct{ v *T }

func (d jsonDst[T]) Scan(src any) error {
	switch s := src.(type) {
	case string:
		return d.scanText(s)
	case []byte:
		return d.scanText(string(s))
	}
	return fmt.Errorf("sqlite: JSON column holds %T", src)
}

func (d jsonDst[T]) scanText(s string) error {
	if s == "" || s == "{}" || s == "[]" {
		return nil
	}
	if err := json.Unmarshal([]byte(s), d.v); err != nil {
		return fmt.Errorf("sqlite: decode column: %w", err)
	}
	return nil
}

// textScanner is a destination that reads a text value, as jsonDst does.
type textScanner interface{ scanText(string) error }

// mapErr is the one place that looks at driver errors: it maps them to the
// storage sentinels, wrapping so the detail stays in logs.
func mapErr(err error) error { return core.MapErr(err, errorKind) }

// errorKinds are the result codes mapErr knows.
var errorKinds = map[int]core.ErrorKind{
	sqlite3.SQLITE_CONSTRAINT_UNIQUE:     core.ErrUnique,
	sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY: core.ErrUnique,
	sqlite3.SQLITE_BUSY:                  core.ErrTransient,
	sqlite3.SQLITE_BUSY_SNAPSHOT:         core.ErrTransient,
	sqlite3.SQLITE_LOCKED:                core.ErrTransient,
}

func errorKind(err error) core.ErrorKind {
	var se *sqlite.Error
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return core.ErrNoRows
	case errors.As(err, &se):
		return errorKinds[se.Code()]
	}
	return core.ErrOther
}

// jsonSelect starts the queries that read a row as one value, the JSON
// array of its columns (see jsonRow): their rows are read by jsonScan.
const jsonSelect = "SELECT json_array("

// conn runs statements on a querier for the core (core.Conn).
type conn struct{ q querier }

func (c *conn) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	res, err := c.q.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (c *conn) Query(ctx context.Context, query string, args ...any) (core.Rows, error) {
	rows, err := c.q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	if strings.HasPrefix(query, jsonSelect) {
		return jsonRows{rows}, nil
	}
	return sqlRows{rows}, nil
}

func (c *conn) QueryRow(ctx context.Context, query string, args ...any) core.Row {
	if !strings.HasPrefix(query, jsonSelect) {
		return c.q.QueryRowContext(ctx, query, args...)
	}
	// The one-value reads are of one row by its key (an intent, a card):
	// bounded work on a local file, which a canceled caller would not
	// shorten. Without a context that can end, the driver starts no
	// goroutine to watch it: about a tenth of a read's CPU.
	return jsonRowOf{c.q.QueryRowContext(context.WithoutCancel(ctx), query, args...)}
}

// ExecQueryRow runs exec, then query.
func (c *conn) ExecQueryRow(ctx context.Context, exec string, execArgs []any, query string, queryArgs []any, scan func(core.Row) error) (int64, error) {
	n, err := c.Exec(ctx, exec, execArgs...)
	if err != nil {
		return 0, err
	}
	return n, scan(c.QueryRow(ctx, query, queryArgs...))
}

// QueryRows runs the queries one after the other.
func (c *conn) QueryRows(ctx context.Context, qs []core.RowQuery) error {
	for _, q := range qs {
		if err := q.Scan(c.QueryRow(ctx, q.SQL, q.Args...)); err != nil {
			return err
		}
	}
	return nil
}

// Send runs write at once, on the writer's transaction, in process. When
// write must change a row and changed none, exists tells conflict from
// gone; the writer is alone, so nothing comes between the two.
func (c *conn) Send(ctx context.Context, write, exists string, args []any, gone, conflict error) error {
	n, err := c.Exec(ctx, write, args...)
	switch {
	case err != nil:
		return mapErr(err)
	case gone == nil || n > 0:
		return nil
	case exists == "":
		return gone
	}
	var found bool
	if err := c.q.QueryRowContext(ctx, `SELECT EXISTS (`+exists+`)`, args...).Scan(&found); err != nil {
		return mapErr(err)
	}
	if found {
		return conflict
	}
	return gone
}

// SendRead runs query at once, on the writer's transaction, and scans
// its row.
func (c *conn) SendRead(ctx context.Context, query string, args []any, scan func(core.Row) error) error {
	return scan(c.QueryRow(ctx, query, args...))
}

// sqlRows is *sql.Rows as core.Rows.
type sqlRows struct{ *sql.Rows }

func (r sqlRows) Close() { _ = r.Rows.Close() }

// jsonRows reads rows that are one JSON array each (see jsonSelect).
type jsonRows struct{ *sql.Rows }

func (r jsonRows) Close() { _ = r.Rows.Close() }

func (r jsonRows) Scan(dest ...any) error {
	var text string
	if err := r.Rows.Scan(&text); err != nil {
		return err
	}
	return jsonScan(text, dest)
}

// jsonRowOf reads a row that is one JSON array (see jsonSelect).
type jsonRowOf struct{ *sql.Row }

func (r jsonRowOf) Scan(dest ...any) error {
	var text string
	if err := r.Row.Scan(&text); err != nil {
		return err
	}
	return jsonScan(text, dest)
}

// jsonScan reads the values of a json_array row into dest, in order: a
// string, an integer, a boolean (an integer), a time (its micros) or a
// JSON column (its text) each.
func jsonScan(text string, dest []any) error {
	r := jsonRow{s: text}
	var err error
	for _, d := range dest {
		switch d := d.(type) {
		case *string:
			*d = r.str()
		case *int64:
			*d = r.int()
		case *int:
			*d = int(r.int())
		case *bool:
			*d = r.int() != 0
		case microsDst:
			*d.t = fromMicros(r.int())
		case textScanner:
			if e := d.scanText(r.str()); e != nil && err == nil {
				err = e
			}
		default:
			return fmt.Errorf("sqlite: cannot read %T from a JSON row", d)
		}
	}
	if e := r.end(); e != nil {
		return fmt.Errorf("sqlite: read row: %w", e)
	}
	return err
}
