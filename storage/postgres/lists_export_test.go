package postgres

import (
	"time"

	"github.com/keelpay/keelpay/storage"
	"github.com/keelpay/keelpay/storage/internal/core"
)

// IntentListSQL is the query of a page of PaymentIntentList whose cursor
// is at (created, seq), for the plan test.
func IntentListSQL(db *DB, p storage.PaymentIntentListParams, created time.Time, seq int64) (string, []any) {
	query, args, _ := core.ListSQL(dialect{}, db.queries.IntentListQuery(p), core.Cursor{Created: created, Seq: seq})
	return query, args
}
