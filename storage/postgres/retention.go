package postgres

import (
	"context"
	"time"

	"github.com/keelpay/keelpay/storage/internal/core"
)

// eventPurgeQuery picks the events that EventDeleteBefore deletes: a walk
// of events_created_at from the oldest event, each joined to its delivery
// by key, that skips the events whose delivery is pending; it reads the
// events it returns and the few old pending ones it skips, never the
// recent ones. The deliveries are locked, skipping any another
// transaction holds (a redelivery under way), and read again once locked,
// so that a delivery made pending meanwhile is left alone.
const eventPurgeQuery = `SELECT e.id FROM events e
	JOIN deliveries d ON d.event_id = e.id
	WHERE e.created_at < $1 AND d.status <> 'pending'
	ORDER BY e.created_at LIMIT $2
	FOR UPDATE OF d SKIP LOCKED`

// eventPurge deletes the events picked with their attempts and
// deliveries, in one statement. The ids go to the deletions as one array,
// so that each is a lookup by key whatever the tables' statistics: joined
// to the picked rows instead, the attempts were read whole (a hash join
// over a sequential scan) on tables never analyzed. The foreign keys are
// checked at the statement's end, when all three are gone.
const eventPurge = `WITH doomed AS (` + eventPurgeQuery + `),
	picked AS (SELECT array_agg(id) AS ids FROM doomed),
	gone_attempts AS (DELETE FROM delivery_attempts WHERE event_id = ANY ((SELECT ids FROM picked)::text[])),
	gone_deliveries AS (DELETE FROM deliveries WHERE event_id = ANY ((SELECT ids FROM picked)::text[]))
	DELETE FROM events WHERE id = ANY ((SELECT ids FROM picked)::text[])`

// cardSessionPurge deletes a batch of card sessions that saved no card
// and expired before a time, found on card_sessions_unused_expiry and
// deleted by key (an array, as in eventPurge).
const cardSessionPurge = `WITH picked AS (SELECT array_agg(id) AS ids FROM (
		SELECT id FROM card_sessions WHERE status <> 'completed' AND expires_at < @before
		ORDER BY expires_at LIMIT @limit FOR UPDATE SKIP LOCKED) x)
	DELETE FROM card_sessions WHERE id = ANY ((SELECT ids FROM picked)::text[])`

func (q *queries) EventDeleteBefore(ctx context.Context, before time.Time, limit int) (int, error) {
	return q.Sweep(ctx, limit, `SELECT 1 FROM events e JOIN deliveries d ON d.event_id = e.id
		WHERE e.created_at < $1 AND d.status <> 'pending' ORDER BY e.created_at LIMIT 1`, []any{ts(before)},
		func(w core.Conn) (int64, error) { return w.Exec(ctx, eventPurge, ts(before), limit) })
}
