package core

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/storage"
)

// Dialect is how one database writes and reads the values that are not
// plain strings, integers or bytes. The destinations it returns are passed
// to [Row.Scan]; each wraps only the pointer it is given, so that making
// one allocates nothing.
type Dialect interface {
	// Name prefixes error messages ("sqlite", "postgres").
	Name() string
	// Placeholder is the text of the n-th parameter of a statement,
	// counted from 1.
	Placeholder(n int) string
	// Time is the value of a time column; the zero time is stored as the
	// database's "never". TimeDst reads one back, in UTC, "never" as the
	// zero time.
	Time(t time.Time) any
	TimeDst(t *time.Time) any
	// Metadata is the value of a metadata column (an object of strings; an
	// empty or nil map is stored as an empty object). MetadataDst reads
	// one back.
	Metadata(m map[string]string) (any, error)
	MetadataDst(m *map[string]string) any
	// Strings is the value of a list of strings (empty or nil: an empty
	// list). StringsDst reads one back.
	Strings(s []string) (any, error)
	StringsDst(s *[]string) any
	// Voided is the value of a payment intent's voided charges (a JSON
	// array; empty or nil: an empty array). VoidedDst reads one back.
	Voided(v []keelpay.VoidedCharge) (any, error)
	VoidedDst(v *[]keelpay.VoidedCharge) any
	// LastError is the value of a refund's last error (nil: none).
	// LastErrorDst reads one back, nil when there is none.
	LastError(e *keelpay.LastError) (any, error)
	LastErrorDst(e **keelpay.LastError) any
	// MapErr maps a driver error to the storage sentinels; see [MapErr].
	MapErr(err error) error
}

// Row is one row of a result, as the driver scans it.
type Row interface {
	Scan(dest ...any) error
}

// Rows is a result read row by row.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close()
}

// Conn runs statements: on a pool, on a transaction, or on the reader
// pool of SQLite. A Conn is used by one goroutine at a time.
type Conn interface {
	// Exec runs a statement and returns how many rows it changed.
	Exec(ctx context.Context, query string, args ...any) (int64, error)
	Query(ctx context.Context, query string, args ...any) (Rows, error)
	QueryRow(ctx context.Context, query string, args ...any) Row
	// ExecQueryRow runs exec, then query, each on its own arguments, and
	// scans query's row with scan; it returns the rows exec changed.
	// PostgreSQL sends the two in one round trip.
	ExecQueryRow(ctx context.Context, exec string, execArgs []any, query string, queryArgs []any, scan func(Row) error) (int64, error)
	// QueryRows runs the queries, each on its own arguments, and scans
	// each one's row with its Scan, in order; the first error ends it.
	// PostgreSQL sends them in one round trip.
	QueryRows(ctx context.Context, qs []RowQuery) error
	// Send runs write, a statement whose only result is its error. With
	// gone set, write must change a row: when it changes none, the error
	// is conflict when exists (a SELECT of the row on the same args; ""
	// for none) finds one, and gone otherwise. The error is the write's
	// own, returned by Send; only an adapter committing a storage.Batch
	// collects the statement to send with the batch's others, and reports
	// its error as that write's (storage.Storage.Commit).
	Send(ctx context.Context, write, exists string, args []any, gone, conflict error) error
	// SendRead runs query, a read, in a write's place: its row, if it
	// finds one, is scanned with scan, and no row is scan's to report
	// (the storage.ErrNotFound of Row.Scan). An adapter committing a
	// storage.Batch collects it with the writes around it and scans its
	// row when the batch's results are read, so that a write after it
	// sees what it read and a read after a write sees the write. Its
	// scan's error does not roll the writes back: a batch that reads is
	// to read what its writes guarantee is there.
	SendRead(ctx context.Context, query string, args []any, scan func(Row) error) error
}

// RowQuery is a query of [Conn.QueryRows] and the scan of its row.
type RowQuery struct {
	SQL  string
	Args []any
	Scan func(Row) error
}

// Writer gives the writes of [Queries] a transaction.
type Writer interface {
	// Write runs fn in the current transaction, or in a new one.
	Write(ctx context.Context, fn func(w Conn) error) error
	// WriteStores is Write for a write of the stores table, which moves
	// the store epoch (storage.StoreWatcher) once its transaction ended.
	WriteStores(ctx context.Context, fn func(w Conn) error) error
	// InTx reports whether the queries run inside a transaction.
	InTx() bool
}

// ErrorKind is what a driver error means to storage.
type ErrorKind uint8

// The kinds of driver error.
const (
	// ErrOther is any other error, returned as it is.
	ErrOther ErrorKind = iota
	// ErrNoRows is a read that found no row: storage.ErrNotFound.
	ErrNoRows
	// ErrUnique is a unique or primary key violation: storage.ErrDuplicate.
	ErrUnique
	// ErrTransient is a lock, serialisation or deadlock failure that the
	// same transaction may win when run again: a [TransientError].
	ErrTransient
)

// MapErr maps err, classified by kind, to the storage sentinels, wrapping
// so that the driver's detail stays in logs. Each adapter's mapErr, the
// one place that looks at its driver's errors, classifies and calls it.
func MapErr(err error, kind func(error) ErrorKind) error {
	if err == nil {
		return nil
	}
	var te *TransientError
	if errors.As(err, &te) || errors.Is(err, storage.ErrNotFound) || errors.Is(err, storage.ErrDuplicate) {
		return err // mapped already
	}
	switch kind(err) {
	case ErrNoRows:
		return storage.ErrNotFound
	case ErrUnique:
		return fmt.Errorf("%w: %v", storage.ErrDuplicate, err)
	case ErrTransient:
		return &TransientError{Err: err}
	}
	return err
}

// TransientError is an ErrConflict that the database reported: the
// transaction lost a race it can win when run again, unlike a version
// mismatch, which running again would only repeat.
type TransientError struct{ Err error }

func (e *TransientError) Error() string   { return storage.ErrConflict.Error() + ": " + e.Err.Error() }
func (e *TransientError) Unwrap() []error { return []error{storage.ErrConflict, e.Err} }

// IsTransient reports whether err is, or wraps, a [TransientError].
func IsTransient(err error) bool {
	var te *TransientError
	return errors.As(err, &te)
}

// Collect scans every row of rows with scan and closes rows. err is the
// error of the query that returned rows, so that a query and its rows are
// checked in one call.
func Collect[T any](d Dialect, rows Rows, err error, scan func(Row) (T, error)) ([]T, error) {
	if err != nil {
		return nil, d.MapErr(err)
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, d.MapErr(rows.Err())
}

// Placeholders returns the placeholders of parameters 1 to n, separated
// by commas: the VALUES of an insert.
func Placeholders(d Dialect, n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(d.Placeholder(i + 1))
	}
	return b.String()
}
