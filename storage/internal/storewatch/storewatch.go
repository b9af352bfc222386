// Package storewatch keeps the epoch of an adapter's
// [storage.StoreWatcher]: one atomic word that holds a counter and whether
// changes are being heard.
package storewatch

import "sync/atomic"

// Epoch is the zero value of a watch that is not listening (ok false).
// Safe for concurrent use.
type Epoch struct {
	// v is the counter shifted left by one, with the low bit set while
	// changes are heard.
	v atomic.Uint64
}

// Load returns the epoch and whether changes are being heard.
func (e *Epoch) Load() (uint64, bool) {
	v := e.v.Load()
	return v >> 1, v&1 == 1
}

// Bump moves the epoch: whatever was read before may be stale.
func (e *Epoch) Bump() { e.v.Add(2) }

// SetLive moves the epoch and records whether changes are heard from now
// on. Changes that went unheard before it, and reads made before it, belong
// to an older epoch.
func (e *Epoch) SetLive(live bool) {
	for {
		old := e.v.Load()
		next := (old>>1 + 1) << 1
		if live {
			next |= 1
		}
		if e.v.CompareAndSwap(old, next) {
			return
		}
	}
}
