package events

import (
	"time"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/internal/outbox"
)

// NewEvent builds an event of a store about object, serialising its envelope
// once: those bytes are stored and sent unchanged on every attempt. object
// must already be the public form of the object (see package doc): no
// personal data. Insert the event with storage's EventInsert in the
// transaction of the change it reports. The services write their events
// through the same envelope.
func NewEvent(storeID string, typ keelpay.EventType, object any, now time.Time) (*keelpay.Event, error) {
	return outbox.Event(storeID, typ, object, now)
}
