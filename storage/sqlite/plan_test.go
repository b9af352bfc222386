package sqlite

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// queryPlan is SQLite's plan of query on db's reader pool, one step a line
// (EXPLAIN QUERY PLAN's detail column), for the tests that pin which index
// a query searches.
func queryPlan(t *testing.T, db *DB, query string, args ...any) string {
	t.Helper()
	rows, err := db.r.QueryContext(context.Background(), "EXPLAIN QUERY PLAN "+query, args...)
	require.NoError(t, err)
	defer rows.Close()
	var lines []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		require.NoError(t, rows.Scan(&id, &parent, &unused, &detail))
		lines = append(lines, detail)
	}
	require.NoError(t, rows.Err())
	return strings.Join(lines, "\n")
}
