package core

import (
	"context"

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
	// The page asked for, as in the storage list parameters.
	StartingAfter, EndingBefore string
	Limit                       int
}

// List reads the page of l on c: Limit+1 rows from the cursor, to learn
// whether there are more, and returns them newest first with has_more.
func List[T any](ctx context.Context, c Conn, d Dialect, l ListQuery, scan func(Row) (T, error)) ([]T, bool, error) {
	where, args := l.Where, l.Args
	order, cursor := "DESC", l.StartingAfter
	if l.EndingBefore != "" {
		order, cursor = "ASC", l.EndingBefore
	}
	if cursor != "" {
		var seq int64
		if err := c.QueryRow(ctx, l.SeqQuery, append(l.SeqArgs, cursor)...).Scan(&seq); err != nil {
			return nil, false, d.MapErr(err)
		}
		args = append(args, seq)
		if order == "DESC" {
			where += " AND " + l.Seq + " < " + d.Placeholder(len(args))
		} else {
			where += " AND " + l.Seq + " > " + d.Placeholder(len(args))
		}
	}
	args = append(args, l.Limit+1)
	rows, err := c.Query(ctx, l.Select+` WHERE `+where+` ORDER BY `+l.Seq+` `+order+` LIMIT `+d.Placeholder(len(args)), args...)
	items, err := Collect(d, rows, err, scan)
	if err != nil {
		return nil, false, err
	}
	items, hasMore := storage.Page(items, l.Limit, order == "ASC")
	return items, hasMore, nil
}
