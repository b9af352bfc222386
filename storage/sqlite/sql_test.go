package sqlite

import (
	"testing"

	"github.com/keelpay/keelpay/storage/internal/core"
)

// Every query of SQLite's SQL is compiled against the names its caller
// passes (a mismatch panics at init, naming the query).
func TestSQLCompiled(t *testing.T) {
	if err := core.CheckSQL(sqlText); err != nil {
		t.Fatal(err)
	}
}
