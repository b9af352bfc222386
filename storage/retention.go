package storage

import (
	"context"
	"time"
)

// RetentionQueries delete what keelpay keeps only for a while: events
// whose delivery is over, and card sessions that expired unused. Each call
// deletes a bounded batch in one short transaction; a caller with a large
// backlog calls again until a call deletes fewer than it asked for.
type RetentionQueries interface {
	// EventDeleteBefore deletes up to limit events, of any store, created
	// before before (strictly) whose delivery is final (succeeded or
	// failed), oldest first, with their deliveries and delivery attempts,
	// and returns how many events it deleted. An event whose delivery is
	// pending (due, retrying, leased or queued again) is never deleted,
	// whatever its age. Each event takes its delivery and at most
	// AttemptsKept attempts with it.
	EventDeleteBefore(ctx context.Context, before time.Time, limit int) (int, error)
	// CardSessionDeleteExpiredBefore deletes up to limit card sessions, of
	// any store, that saved no card (open or expired, not completed) and
	// whose expiry is before before (strictly), and returns how many it
	// deleted. Completed sessions stay: their cards name them.
	CardSessionDeleteExpiredBefore(ctx context.Context, before time.Time, limit int) (int, error)
}
