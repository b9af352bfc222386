package events

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/keelpay/keelpay"
)

// envelope is the JSON body of a webhook and of an event record (docs/api.md).
type envelope struct {
	ID        string            `json:"id"`
	Object    string            `json:"object"`
	Type      keelpay.EventType `json:"type"`
	CreatedAt string            `json:"created_at"`
	Data      struct {
		Object any `json:"object"`
	} `json:"data"`
}

// New builds an event of a store about object, serialising its envelope
// once: those bytes are stored and sent unchanged on every attempt. object
// must already be the public form of the object (see package doc): no
// personal data. Insert the event with storage's EventInsert in the
// transaction of the change it reports.
func New(storeID string, typ keelpay.EventType, object any, now time.Time) (*keelpay.Event, error) {
	if !keelpay.ValidEventType(string(typ)) {
		return nil, fmt.Errorf("events: unknown event type %q", typ)
	}
	now = now.UTC().Truncate(time.Second)
	env := envelope{ID: keelpay.NewID(keelpay.PrefixEvent), Object: "event", Type: typ, CreatedAt: now.Format(time.RFC3339)}
	env.Data.Object = object
	body, err := json.Marshal(env)
	if err != nil {
		return nil, fmt.Errorf("events: marshal %s: %w", typ, err)
	}
	return &keelpay.Event{ID: env.ID, StoreID: storeID, Type: typ, Body: body, CreatedAt: now}, nil
}
