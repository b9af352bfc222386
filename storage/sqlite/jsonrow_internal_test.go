package sqlite

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestJSONRow(t *testing.T) {
	r := jsonRow{s: `["plain","a\"b\\c\/d\b\f\n\r\t","\u00e9\u0001","\ud83d\ude00","\ud83d","\ud83dx",-9223372036854775808,9223372036854775807,"",0]`}
	require.Equal(t, "plain", r.str())
	require.Equal(t, "a\"b\\c/d\b\f\n\r\t", r.str())
	require.Equal(t, "é\x01", r.str())
	require.Equal(t, "😀", r.str())
	require.Equal(t, "\uFFFD", r.str())
	require.Equal(t, "\uFFFDx", r.str())
	require.Equal(t, int64(-1<<63), r.int())
	require.Equal(t, int64(1<<63-1), r.int())
	require.Equal(t, "", r.str())
	require.Equal(t, int64(0), r.int())
	require.NoError(t, r.end())

	for name, read := range map[string]func(r *jsonRow){
		"no array":           func(r *jsonRow) { r.s = `"a"]`; r.str() },
		"a number as text":   func(r *jsonRow) { r.s = `[1]`; r.str() },
		"text as a number":   func(r *jsonRow) { r.s = `["1"]`; r.int() },
		"a float":            func(r *jsonRow) { r.s = `[1.5]`; r.int() },
		"null":               func(r *jsonRow) { r.s = `[null]`; r.str() },
		"unterminated":       func(r *jsonRow) { r.s = `["abc`; r.str() },
		"escape at the end":  func(r *jsonRow) { r.s = `["abc\`; r.str() },
		"unknown escape":     func(r *jsonRow) { r.s = `["a\x"]`; r.str() },
		"short \\u":          func(r *jsonRow) { r.s = `["\u12"]`; r.str() },
		"one value too many": func(r *jsonRow) { r.s = `["a","b"]`; r.str() },
		"one value too few":  func(r *jsonRow) { r.s = `["a"]`; r.str(); r.str() },
		"trailing text":      func(r *jsonRow) { r.s = `["a"] `; r.str() },
	} {
		r := jsonRow{}
		read(&r)
		require.ErrorIs(t, r.end(), errJSONRow, name)
	}
}
