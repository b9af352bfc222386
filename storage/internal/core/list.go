package core

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/keelpay/keelpay/storage"
)

// ListQuery is a page of a list in the order of a sequence column, newest
// first, from a cursor (an object's id) when there is one.
type ListQuery struct {
	// Select is the query without its WHERE, which Where (on Args) is.
	Select, Where string
	Args          []any
	// Seq is the sequence column; SeqQuery selects the Seq of the cursor
	// object, on SeqArgs and the cursor.
	Seq, SeqQuery string
	SeqArgs       []any
	// Created, when set, is a time column the list is ordered by first
	// (then by Seq): SeqQuery then selects the cursor's Created and Seq,
	// and the page is a range of an index on (..., Created, Seq), so that
	// a creation-time filter is a range of the same index.
	Created string
	// The page asked for, as in the storage list parameters.
	StartingAfter, EndingBefore string
	Limit                       int
}

// List reads the page of l on c: Limit+1 rows from the cursor, to learn
// whether there are more, and returns them newest first with has_more.
func List[T any](ctx context.Context, c Conn, d Dialect, l ListQuery, scan func(Row) (T, error)) ([]T, bool, error) {
	var cur Cursor
	if cursor := cmp.Or(l.StartingAfter, l.EndingBefore); cursor != "" {
		dst := []any{&cur.Seq}
		if l.Created != "" {
			dst = []any{d.TimeDst(&cur.Created), &cur.Seq}
		}
		if err := c.QueryRow(ctx, l.SeqQuery, append(l.SeqArgs, cursor)...).Scan(dst...); err != nil {
			return nil, false, d.MapErr(err)
		}
	}
	query, args, asc := ListSQL(d, l, cur)
	rows, err := c.Query(ctx, query, args...)
	items, err := Collect(d, rows, err, scan)
	if err != nil {
		return nil, false, err
	}
	items, hasMore := storage.Page(items, l.Limit, asc)
	return items, hasMore, nil
}

// Cursor is the place of a list's cursor object: its Created (when the
// list has that column) and Seq.
type Cursor struct {
	Created time.Time
	Seq     int64
}

// ListSQL is the query of the page of l from cur (ignored when l has no
// cursor) and its arguments; asc is true when it reads oldest first (a
// page before a cursor). The adapters' plan tests read its text.
func ListSQL(d Dialect, l ListQuery, cur Cursor) (query string, args []any, asc bool) {
	where, args := l.Where, slices.Clone(l.Args)
	order, op := "DESC", " < "
	if l.EndingBefore != "" {
		order, op = "ASC", " > "
	}
	if l.StartingAfter != "" || l.EndingBefore != "" {
		if l.Created != "" {
			// A row-value comparison: both databases take it as a range
			// of the (..., Created, Seq) index.
			args = append(args, d.Time(cur.Created), cur.Seq)
			where += " AND (" + l.Created + ", " + l.Seq + ")" + op + "(" + d.Placeholder(len(args)-1) + ", " + d.Placeholder(len(args)) + ")"
		} else {
			args = append(args, cur.Seq)
			where += " AND " + l.Seq + op + d.Placeholder(len(args))
		}
	}
	orderBy := l.Seq + ` ` + order
	if l.Created != "" {
		orderBy = l.Created + ` ` + order + `, ` + orderBy
	}
	args = append(args, l.Limit+1)
	return l.Select + ` WHERE ` + where + ` ORDER BY ` + orderBy + ` LIMIT ` + d.Placeholder(len(args)), args, order == "ASC"
}

// Filter adds conditions to the WHERE of a ListQuery, each on a parameter
// of its own.
type Filter struct {
	D     Dialect
	Where string
	Args  []any
}

// Eq adds column = value when value is not "".
func (f *Filter) Eq(column, value string) {
	if value != "" {
		f.Args = append(f.Args, value)
		f.Where += " AND " + column + " = " + f.D.Placeholder(len(f.Args))
	}
}

// Range adds column >= gte and column < lt, each when its time is not
// zero.
func (f *Filter) Range(column string, gte, lt time.Time) {
	if !gte.IsZero() {
		f.Args = append(f.Args, f.D.Time(gte))
		f.Where += " AND " + column + " >= " + f.D.Placeholder(len(f.Args))
	}
	if !lt.IsZero() {
		f.Args = append(f.Args, f.D.Time(lt))
		f.Where += " AND " + column + " < " + f.D.Placeholder(len(f.Args))
	}
}
