package core

import (
	"strings"
	"time"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/storage/internal/atrest"
)

// kind is how a column's Go field is written and read through a Dialect.
type kind uint8

const (
	kText      kind = iota // *string
	kInt64                 // *int64
	kInt                   // *int
	kBool                  // *bool
	kBytes                 // *[]byte
	kTime                  // *time.Time: Dialect.Time, TimeDst
	kMetadata              // *map[string]string: Dialect.Metadata, MetadataDst
	kStrings               // *[]string: Dialect.Strings, StringsDst
	kVoided                // *[]keelpay.VoidedCharge: Dialect.Voided, VoidedDst
	kLastError             // **keelpay.LastError: Dialect.LastError, LastErrorDst
)

// column is one column of a record's table: its name, and the Go field it
// stores, as a pointer into the record (R). The value written and the
// destination read are both derived from that one pointer and its kind,
// so that they cannot disagree.
type column[R any] struct {
	name  string
	kind  kind
	field func(r *R) any
	// sealed, when set, is the at-rest column the value is sealed as,
	// bound to the row's id: sealed on insert, opened on read.
	sealed *atrest.Column
	// fixed is a column an update does not write: the row's identity,
	// its creation, a secret set once.
	fixed bool
	// key is a column of the row's identity, which an update finds the
	// row by (fixed too).
	key bool
}

// table is the declaration of a record's columns, in the order of its
// column list, its values and its destinations.
type table[R any] struct {
	cols []column[R]
	// id is the key a sealed column is bound to.
	id func(r *R) string
}

func col[R any](name string, k kind, field func(r *R) any) column[R] {
	return column[R]{name: name, kind: k, field: field}
}

func (c column[R]) seal(a atrest.Column) column[R] { c.sealed = &a; return c }
func (c column[R]) once() column[R]                { c.fixed = true; return c }
func (c column[R]) isKey() column[R]               { c.fixed, c.key = true, true; return c }

// Which columns values writes.
type pick uint8

const (
	pickAll     pick = iota // every column
	pickKeys                // the key columns
	pickUpdated             // the columns an update writes (not fixed)
)

// names returns the column names in order.
func (t *table[R]) names() []string {
	out := make([]string, len(t.cols))
	for i, c := range t.cols {
		out[i] = c.name
	}
	return out
}

// list is the column list of a SELECT or INSERT: "a, b, c".
func (t *table[R]) list() string { return strings.Join(t.names(), ", ") }

// insert is the INSERT of every column, the values named after them.
func (t *table[R]) insert(table string) string {
	names := t.names()
	return `INSERT INTO ` + table + ` (` + strings.Join(names, ", ") + `) VALUES (` + valuesOf(names) + `)`
}

// values appends r's value of each column that p picks to out, in order,
// the sealed ones sealed.
func (t *table[R]) values(rec Records, r *R, out []any, p pick) ([]any, error) {
	d := rec.D
	for i := range t.cols {
		c := &t.cols[i]
		if p == pickKeys && !c.key || p == pickUpdated && c.fixed {
			continue
		}
		p := c.field(r)
		var v any
		var err error
		switch c.kind {
		case kText:
			s := *p.(*string)
			if c.sealed != nil {
				s = rec.Codec.Seal(*c.sealed, s, t.id(r))
			}
			v = s
		case kInt64:
			v = *p.(*int64)
		case kInt:
			v = *p.(*int)
		case kBool:
			v = *p.(*bool)
		case kBytes:
			v = *p.(*[]byte)
		case kTime:
			v = d.Time(*p.(*time.Time))
		case kMetadata:
			v, err = d.Metadata(*p.(*map[string]string))
		case kStrings:
			v, err = d.Strings(*p.(*[]string))
		case kVoided:
			v, err = d.Voided(*p.(*[]keelpay.VoidedCharge))
		case kLastError:
			v, err = d.LastError(*p.(**keelpay.LastError))
		}
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// update is the UPDATE of a row of table in the current version
// (@expected_version) that writes every column not fixed, and its
// parameters: the keys, the columns it writes, expected_version.
func (t *table[R]) update(table string) (string, Params) {
	var set, where []string
	var p Params
	for _, c := range t.cols {
		if c.key {
			where = append(where, c.name+" = @"+c.name)
			p = append(p, c.name)
		}
	}
	for _, c := range t.cols {
		if !c.fixed {
			set = append(set, c.name+" = @"+c.name)
			p = append(p, c.name)
		}
	}
	p = append(p, "expected_version")
	return `UPDATE ` + table + ` SET ` + strings.Join(set, ", ") + `
		WHERE ` + strings.Join(where, " AND ") + ` AND version = @expected_version`, p
}

// updateArgs returns the arguments of t.update for r, the row at its next
// version, from expectedVersion.
func (t *table[R]) updateArgs(rec Records, r *R, expectedVersion int64) ([]any, error) {
	args := make([]any, 0, len(t.cols)+1)
	args, err := t.values(rec, r, args, pickKeys)
	if err == nil {
		args, err = t.values(rec, r, args, pickUpdated)
	}
	if err != nil {
		return nil, err
	}
	return append(args, expectedVersion), nil
}

// dsts writes the scan destination of each column into r to dst, which
// has room for every column.
func (t *table[R]) dsts(d Dialect, r *R, dst []any) {
	for i := range t.cols {
		c := &t.cols[i]
		p := c.field(r)
		switch c.kind {
		case kTime:
			p = d.TimeDst(p.(*time.Time))
		case kMetadata:
			p = d.MetadataDst(p.(*map[string]string))
		case kStrings:
			p = d.StringsDst(p.(*[]string))
		case kVoided:
			p = d.VoidedDst(p.(*[]keelpay.VoidedCharge))
		case kLastError:
			p = d.LastErrorDst(p.(**keelpay.LastError))
		}
		dst[i] = p
	}
}

// scan reads r from row, and opens its sealed columns.
func (t *table[R]) scan(rec Records, row Row, r *R) error {
	dst := make([]any, len(t.cols))
	t.dsts(rec.D, r, dst)
	if err := row.Scan(dst...); err != nil {
		return rec.D.MapErr(err)
	}
	return t.open(rec, r)
}

// open opens the sealed columns of r, read as they are stored.
func (t *table[R]) open(rec Records, r *R) error {
	for i := range t.cols {
		c := &t.cols[i]
		if c.sealed == nil {
			continue
		}
		p := c.field(r).(*string)
		v, err := rec.Codec.Open(*c.sealed, *p, t.id(r))
		if err != nil {
			return err
		}
		*p = v
	}
	return nil
}
