package keelpaytest

import (
	"time"

	"github.com/keelpay/keelpay"
)

// Clock is a [keelpay.Clock] that stands still until Advance or Set moves
// it: [keelpay.ManualClock]. It is safe for concurrent use.
type Clock = keelpay.ManualClock

// NewClock returns a clock standing at t (in UTC).
func NewClock(t time.Time) *Clock { return keelpay.NewManualClock(t) }
