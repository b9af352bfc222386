package atrest

import (
	"testing"

	"github.com/keelpay/keelpay/keyring"
)

// aad builds the same bytes as keyring.AAD, which sealed every value an
// earlier version stored.
func TestAADIsKeyringAAD(t *testing.T) {
	for _, col := range append(Columns, CheckColumn) {
		for _, keys := range [][]string{nil, {"pi_1"}, {"store_1", "key 2"}} {
			want := keyring.AAD(append([]string{"keelpay", col.Table, col.Name}, keys...)...)
			if got := aad(col, keys); string(got) != string(want) {
				t.Errorf("aad(%s.%s, %q) = %q, want %q", col.Table, col.Name, keys, got, want)
			}
		}
	}
}
