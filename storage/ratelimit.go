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
}
