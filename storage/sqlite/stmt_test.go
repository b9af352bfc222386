package sqlite

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestPositional(t *testing.T) {
	for _, c := range []struct {
		in, out string
		order   []int
	}{
		{"SELECT 1", "SELECT 1", nil},
		{"SELECT ? , ?", "SELECT ? , ?", nil},
		{"UPDATE t SET a = ?3, v = ?2 + 1 WHERE id = ?1 AND v = ?2", "UPDATE t SET a = ?, v = ? + 1 WHERE id = ? AND v = ?", []int{3, 2, 1, 2}},
		{"SELECT ?2, ?, ?1", "SELECT ?, ?, ?", []int{2, 3, 1}},
		{`SELECT '?1', "a?2", ?12 FROM x WHERE y = 'it''s ?3'`, `SELECT '?1', "a?2", ? FROM x WHERE y = 'it''s ?3'`, []int{12}},
		{"SELECT value ->> 's' FROM json_each(?6) LIMIT ?7 + 0", "SELECT value ->> 's' FROM json_each(?) LIMIT ? + 0", []int{6, 7}},
	} {
		out, order := positional(c.in)
		if out != c.out || !cmp.Equal(order, c.order) {
			t.Errorf("positional(%q) = %q, %v; want %q, %v", c.in, out, order, c.out, c.order)
		}
	}
	p := &prepared{order: []int{3, 2, 1, 2}}
	if got, want := p.args([]any{"a", "b", "c"}), []any{"c", "b", "a", "b"}; !cmp.Equal(got, want) {
		t.Errorf("args = %v, want %v", got, want)
	}
}
