package sqlite

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// A row read as one value, the JSON array of its columns that SQLite's
// json_array builds, instead of column by column. The driver looks up the
// name and declared type of every column of a result again for every
// query, and makes a value of each: for the columns of a payment intent
// (core.IntentColumns) that cost more than SQLite's finding the row. One text value is one
// allocation, and its strings are read as substrings of it.
//
// jsonRow reads what json_array writes of a STRICT table's TEXT and INTEGER
// columns: strings, with JSON's escapes, and integers, in the order of the
// columns. The first failure stops it; err reports it.
type jsonRow struct {
	s   string // what is left to read
	n   int    // values read
	err error
}

var errJSONRow = errors.New("sqlite: malformed json_array row")

func (r *jsonRow) fail() {
	if r.err == nil {
		r.err = fmt.Errorf("%w: value %d", errJSONRow, r.n)
	}
	r.s = ""
}

// start consumes what comes before a value: "[" before the first, ","
// before the others.
func (r *jsonRow) start() bool {
	sep := byte(',')
	if r.n == 0 {
		sep = '['
	}
	if r.err != nil || len(r.s) == 0 || r.s[0] != sep {
		r.fail()
		return false
	}
	r.s = r.s[1:]
	r.n++
	return true
}

// str reads a string.
func (r *jsonRow) str() string {
	if !r.start() || len(r.s) == 0 || r.s[0] != '"' {
		r.fail()
		return ""
	}
	for i := 1; i < len(r.s); i++ {
		switch r.s[i] {
		case '"':
			v := r.s[1:i]
			r.s = r.s[i+1:]
			return v
		case '\\':
			return r.escaped()
		}
	}
	r.fail()
	return ""
}

// escaped reads a string that has escapes. Every other byte is kept as it
// is, as on the way without escapes: SQLite writes a text's bytes as they
// are, valid UTF-8 or not, and so they come back.
func (r *jsonRow) escaped() string {
	b := make([]byte, 0, len(r.s))
	for i := 1; i < len(r.s); i++ {
		c := r.s[i]
		switch {
		case c == '"':
			r.s = r.s[i+1:]
			return string(b)
		case c != '\\':
			b = append(b, c)
			continue
		case i+1 == len(r.s):
			r.fail()
			return ""
		}
		i++
		switch r.s[i] {
		case '"', '\\', '/':
			b = append(b, r.s[i])
		case 'b':
			b = append(b, '\b')
		case 'f':
			b = append(b, '\f')
		case 'n':
			b = append(b, '\n')
		case 'r':
			b = append(b, '\r')
		case 't':
			b = append(b, '\t')
		case 'u':
			c1, ok := hex4(r.s[i+1:])
			if !ok {
				r.fail()
				return ""
			}
			i += 4
			rn := rune(c1)
			if utf16.IsSurrogate(rn) {
				// A pair is one character; half of one is U+FFFD, as
				// encoding/json reads it.
				rn = utf8.RuneError
				if rest := r.s[i+1:]; strings.HasPrefix(rest, `\u`) {
					if c2, ok := hex4(rest[2:]); ok {
						if d := utf16.DecodeRune(rune(c1), rune(c2)); d != utf8.RuneError {
							rn = d
							i += 6
						}
					}
				}
			}
			b = utf8.AppendRune(b, rn)
		default:
			r.fail()
			return ""
		}
	}
	r.fail()
	return ""
}

// hex4 reads the four hexadecimal digits of a \u escape.
func hex4(s string) (uint16, bool) {
	if len(s) < 4 {
		return 0, false
	}
	v, err := strconv.ParseUint(s[:4], 16, 16)
	return uint16(v), err == nil
}

// int reads an integer.
func (r *jsonRow) int() int64 {
	if !r.start() {
		return 0
	}
	i := 0
	for i < len(r.s) && r.s[i] != ',' && r.s[i] != ']' {
		i++
	}
	v, err := strconv.ParseInt(r.s[:i], 10, 64)
	if err != nil {
		r.fail()
		return 0
	}
	r.s = r.s[i:]
	return v
}

// end checks that the array ended after the values read.
func (r *jsonRow) end() error {
	if r.err == nil && r.s != "]" {
		r.fail()
	}
	return r.err
}
