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

// Commit commits, in one storage.Batch, the insert of evs (each with its
// delivery row; a nil event is skipped) and then the writes change
// records, so that change may refer to them. Once the batch has committed
// each event is announced. An error of change commits nothing and is
// returned as is; a write that fails rolls everything back, and its
// *storage.WriteError is returned.
func (o *Outbox) Commit(ctx context.Context, change func(b *storage.Batch) error, evs ...*keelpay.Event) error {
	var b storage.Batch
	insert(&b, evs)
	if change != nil {
		if err := change(&b); err != nil {
			return err
		}
	}
	if err := o.db.Commit(ctx, &b); err != nil {
		return err
	}
	o.announce(ctx, evs)
	return nil
}

// CommitTx is Commit for a change that reads inside its transaction: in
// one WithTx, it inserts evs, runs change, which may read and write
// through tx and record writes in b, and then applies b. Once the
// transaction has committed, b's OnCommit functions run and each event is
// announced. An error of change, or of a write, rolls everything back and
// is returned.
func (o *Outbox) CommitTx(ctx context.Context, change func(ctx context.Context, tx storage.Executor, b *storage.Batch) error, evs ...*keelpay.Event) error {
	var b *storage.Batch
	err := o.db.WithTx(ctx, func(ctx context.Context, tx storage.Executor) error {
		var events storage.Batch
		insert(&events, evs)
		if err := events.Apply(ctx, tx); err != nil {
			return err
		}
		b = &storage.Batch{}
		if err := change(ctx, tx, b); err != nil {
			return err
		}
		return b.Apply(ctx, tx)
	})
	if err != nil {
		return err
	}
	b.Committed()
	o.announce(ctx, evs)
	return nil
}

// insert records the insert of evs in b (a copy of each: see
// storage.Batch.EventInsert).
func insert(b *storage.Batch, evs []*keelpay.Event) {
	for _, ev := range evs {
		if ev != nil {
			b.EventInsert(ev)
		}
	}
}

func (o *Outbox) announce(ctx context.Context, evs []*keelpay.Event) {
	if o.committed == nil {
		return
	}
	for _, ev := range evs {
		if ev != nil {
			o.committed(ctx, ev)
		}
	}
}
