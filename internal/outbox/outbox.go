// Package outbox writes an event in the transaction of the change it
// reports and announces it once that transaction has committed: the one way
// every service emits events. The event's delivery row is written with it
// (storage's EventInsert), so no change is without its event and no event
// without its change; the announcement wakes the dispatcher so that the
// webhook leaves at once instead of at its next poll, and feeds in-process
// subscribers.
package outbox

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/storage"
)

// envelope is the JSON body of a webhook and of an event record.
type envelope struct {
	ID        string            `json:"id"`
	Object    string            `json:"object"`
	Type      keelpay.EventType `json:"type"`
	CreatedAt string            `json:"created_at"`
	Data      struct {
		Object any `json:"object"`
	} `json:"data"`
}

// Event builds an event of a store about object, serialising its envelope
// once: those bytes are stored and sent unchanged on every attempt. object
// must already be the public form of the object: no personal data.
func Event(storeID string, typ keelpay.EventType, object any, now time.Time) (*keelpay.Event, error) {
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

// Outbox commits changes with their events. The zero value is not usable;
// use New.
type Outbox struct {
	db        storage.Storage
	committed func(context.Context, *keelpay.Event)
}

// New returns an Outbox over db. committed, when not nil, is called with
// each event once the transaction that wrote it has committed, in the
// committing goroutine.
func New(db storage.Storage, committed func(context.Context, *keelpay.Event)) *Outbox {
	return &Outbox{db: db, committed: committed}
}

// Commit runs change in one transaction together with the insert of evs
// (each with its delivery row; a nil event is skipped), inserted before
// change runs so that change may refer to them. Once the transaction has
// committed each event is announced. An error of change, or of an insert,
// rolls everything back and is returned as is.
func (o *Outbox) Commit(ctx context.Context, change func(ctx context.Context, tx storage.Executor) error, evs ...*keelpay.Event) error {
	err := o.db.WithTx(ctx, func(ctx context.Context, tx storage.Executor) error {
		for _, ev := range evs {
			if ev == nil {
				continue
			}
			// A copy: the transaction may run again after a
			// serialisation failure, and the insert fills fields in.
			e := *ev
			if err := tx.EventInsert(ctx, &e); err != nil {
				return err
			}
		}
		if change == nil {
			return nil
		}
		return change(ctx, tx)
	})
	if err != nil {
		return err
	}
	if o.committed != nil {
		for _, ev := range evs {
			if ev != nil {
				o.committed(ctx, ev)
			}
		}
	}
	return nil
}
