package sqlite

import (
	"context"
	"encoding/json"
	"time"

	"github.com/keelpay/keelpay/storage/internal/core"
)

// eventPurgeQuery picks the events that EventDeleteBefore deletes: a walk
// of events_created_at from the oldest event, each joined to its delivery
// by key, that skips the events whose delivery is pending. It reads the
// events it returns and the few old pending ones it skips, never the
// events that stay because they are recent.
const eventPurgeQuery = `SELECT e.id FROM events e
	JOIN deliveries d ON d.event_id = e.id
	WHERE e.created_at < ? AND d.status <> 'pending'
	ORDER BY e.created_at LIMIT ?`

// Deletions of the events picked, passed as one JSON array so that every
// batch size is one prepared statement. Attempts and deliveries first:
// they refer to their event.
const (
	eventPurgeAttempts   = `DELETE FROM delivery_attempts WHERE event_id IN (SELECT value FROM json_each(?))`
	eventPurgeDeliveries = `DELETE FROM deliveries WHERE event_id IN (SELECT value FROM json_each(?))`
	eventPurgeEvents     = `DELETE FROM events WHERE id IN (SELECT value FROM json_each(?))`
)

// cardSessionPurgeQuery deletes a batch of card sessions that saved no
// card and expired before a time, on card_sessions_unused_expiry.
const cardSessionPurgeQuery = `DELETE FROM card_sessions WHERE rowid IN (
	SELECT rowid FROM card_sessions WHERE status <> 'completed' AND expires_at < @before ORDER BY expires_at LIMIT @limit)`

func (q *queries) EventDeleteBefore(ctx context.Context, before time.Time, limit int) (int, error) {
	return q.Sweep(ctx, limit, eventPurgeQuery, []any{micros(before), 1}, func(w core.Conn) (int64, error) {
		return purgeEvents(ctx, w.(*conn).q, before, limit)
	})
}

// purgeEvents deletes at most limit of the events eventPurgeQuery picks.
func purgeEvents(ctx context.Context, w querier, before time.Time, limit int) (int64, error) {
	rows, err := w.QueryContext(ctx, eventPurgeQuery, micros(before), limit)
	ids, err := collect(rows, err, func(row core.Row) (string, error) {
		var id string
		return id, row.Scan(&id)
	})
	if err != nil || len(ids) == 0 {
		return 0, err
	}
	list, err := json.Marshal(ids)
	if err != nil {
		return 0, err
	}
	for _, del := range []string{eventPurgeAttempts, eventPurgeDeliveries} {
		if _, err := w.ExecContext(ctx, del, list); err != nil {
			return 0, err
		}
	}
	res, err := w.ExecContext(ctx, eventPurgeEvents, list)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}
