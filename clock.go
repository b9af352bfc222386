package keelpay

import (
	"sync"
	"time"
)

// Clock tells the time. Everything that is scheduled (webhook retries, expiry,
// the 3-minute refund rule, the 3D Secure wait, reconciliation, rate limits)
// reads a Clock, so tests and the sandbox can move time forward.
type Clock interface {
	Now() time.Time
}

// SystemClock is the wall clock, in UTC.
type SystemClock struct{}

// Now returns the current time in UTC.
func (SystemClock) Now() time.Time { return time.Now().UTC() }

// OffsetClock is a clock moved forward by an adjustable offset. The
// reference server's sandbox mode uses it for POST /sandbox/clock, as Stripe's
// test clocks do: scheduled work sees the moved time while signatures keep
// using real time. The zero value is the wall clock moved by nothing. It is
// safe for concurrent use.
type OffsetClock struct {
	// Base is the clock the offset is added to; nil is SystemClock. Set
	// it before the clock is first read: servers that share a PostgreSQL
	// database move the database's clock (service.DatabaseClock), so that
	// the offset is the only difference between them.
	Base Clock

	mu     sync.RWMutex
	offset time.Duration
}

// Now returns the base clock plus the offset, in UTC.
func (c *OffsetClock) Now() time.Time {
	c.mu.RLock()
	offset := c.offset
	c.mu.RUnlock()
	if c.Base == nil {
		return time.Now().UTC().Add(offset)
	}
	return c.Base.Now().UTC().Add(offset)
}

// Advance moves the clock forward by d (d must not be negative) and returns
// the new offset.
func (c *OffsetClock) Advance(d time.Duration) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d > 0 {
		c.offset += d
	}
	return c.offset
}

// Offset returns how far the clock is ahead of the wall clock.
func (c *OffsetClock) Offset() time.Duration {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.offset
}

// ManualClock stands still until Advance or Set moves it: the clock of
// tests (keelpaytest.Clock is this type) and of a provider's conformance
// run. It is safe for concurrent use.
type ManualClock struct {
	mu  sync.Mutex
	now time.Time
}

// NewManualClock returns a clock standing at t (in UTC).
func NewManualClock(t time.Time) *ManualClock { return &ManualClock{now: t.UTC()} }

// Now returns the clock's time.
func (c *ManualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d and returns the new time.
func (c *ManualClock) Advance(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	return c.now
}

// Set moves the clock to t.
func (c *ManualClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t.UTC()
}
