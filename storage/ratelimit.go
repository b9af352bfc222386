package storage

import (
	"context"
	"time"
)

// RateLimit is one sliding-window limit: at most Limit hits of Key in any
// Window.
type RateLimit struct {
	Key    string
	Limit  int
	Window time.Duration
}

// RateLimitQueries counts hits in storage, so that limits hold across
// every process on one database.
type RateLimitQueries interface {
	// RateLimitTake records one hit at now for every limit when all of
	// them have room, atomically, and returns 0. When any limit is full it
	// records nothing and returns how long until that limit has room again
	// (the longest such wait).
	RateLimitTake(ctx context.Context, now time.Time, limits ...RateLimit) (retryAfter time.Duration, err error)
	// RateLimitDeleteExpired deletes up to limit hits, of any key, that
	// have left their window by now (at + Window <= now), and returns how
	// many it deleted. Hits of keys that never come back are only ever
	// removed by it.
	RateLimitDeleteExpired(ctx context.Context, now time.Time, limit int) (int, error)
}
