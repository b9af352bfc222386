package sandbox

import (
	"encoding/binary"
	"hash/fnv"
	"math"
	"sync"
	"time"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/storage"
)

// Faults make a store's webhook deliveries misbehave on purpose, so that a
// developer can rehearse a receiver against what production can do. They
// are a sandbox tool, set through [WebhookFaults]: the reference server
// offers them only in sandbox mode. Each share is a probability from 0 to 1, drawn per event (and per
// attempt) from Seed, so a test that sets a seed sees the same faults for
// the same events.
//
// Every fault stays within the receiver contract of docs/sandbox.md: a
// delivery arrives at least once, in any order, always with the same
// webhook-id and the same body bytes, signed as usual.
type Faults struct {
	// Duplicate is the share of successful deliveries sent twice in a row.
	Duplicate float64
	// Reorder is the share of new events held back for ReorderHold (by the
	// service clock) before their first attempt, so that events created
	// meanwhile reach the receiver first.
	Reorder float64
	// ReorderHold is how long a reordered event waits. Default
	// ReorderHoldDefault.
	ReorderHold time.Duration
	// Delay is the share of new events whose first attempt waits DelayBy.
	Delay float64
	// DelayBy is how long a delayed event waits (by the service clock).
	// Default DelayByDefault.
	DelayBy time.Duration
	// Fail is the share of attempts answered as failed without calling the
	// receiver: the attempt is recorded as a connection_error and retried
	// on the usual schedule.
	Fail float64
	// Seed chooses which deliveries misbehave.
	Seed int64
}

// Defaults and bounds of Faults.
const (
	ReorderHoldDefault = 30 * time.Second
	DelayByDefault     = 5 * time.Minute
	// FaultWaitMax bounds ReorderHold and DelayBy.
	FaultWaitMax = 24 * time.Hour
)

// FailedBody is the response_body of an attempt that the Fail fault
// answered without calling the receiver.
const FailedBody = "keelpay sandbox fault: the receiver was not called"

// Check validates f and fills in its defaults: an invalid_request error
// names the first field out of range (details.code invalid_<field>, with
// the JSON field names of POST /sandbox/webhooks/faults).
func (f Faults) Check() (Faults, error) {
	for _, s := range []struct {
		name string
		v    float64
	}{{"duplicate", f.Duplicate}, {"reorder", f.Reorder}, {"delay", f.Delay}, {"fail", f.Fail}} {
		if math.IsNaN(s.v) || s.v < 0 || s.v > 1 {
			return f, keelpay.InvalidRequest(s.name, "invalid_"+s.name, s.name+" must be a share from 0 to 1.")
		}
	}
	if f.ReorderHold == 0 {
		f.ReorderHold = ReorderHoldDefault
	}
	if f.DelayBy == 0 {
		f.DelayBy = DelayByDefault
	}
	if f.ReorderHold < time.Second || f.ReorderHold > FaultWaitMax {
		return f, keelpay.InvalidRequest("reorder_hold_seconds", "invalid_reorder_hold_seconds", "reorder_hold_seconds must be from 1 to 86400.")
	}
	if f.DelayBy < time.Second || f.DelayBy > FaultWaitMax {
		return f, keelpay.InvalidRequest("delay_seconds", "invalid_delay_seconds", "delay_seconds must be from 1 to 86400.")
	}
	return f, nil
}

// WebhookFaults holds the delivery faults of each store and applies them
// to a dispatcher's attempts (Intercept): the reference server installs
// one on its dispatcher in sandbox mode. Faults live in its memory, so
// only the dispatchers it was installed on misbehave; other processes
// deliver normally. It is safe for concurrent use.
type WebhookFaults struct {
	faults sync.Map // store id -> Faults
	held   sync.Map // event id -> struct{}: held once by a fault
}

// NewWebhookFaults returns a WebhookFaults with no fault set.
func NewWebhookFaults() *WebhookFaults { return &WebhookFaults{} }

// Set makes the store's deliveries misbehave as f says (after f.Check);
// the zero Faults turns them off.
func (w *WebhookFaults) Set(storeID string, f Faults) error {
	if f == (Faults{}) {
		w.faults.Delete(storeID)
		return nil
	}
	f, err := f.Check()
	if err != nil {
		return err
	}
	w.faults.Store(storeID, f)
	return nil
}

// Get returns the store's faults; the zero Faults when none are set.
func (w *WebhookFaults) Get(storeID string) Faults {
	if f, ok := w.faults.Load(storeID); ok {
		return f.(Faults)
	}
	return Faults{}
}

// roll reports whether the fault named kind hits this attempt of an event,
// with probability share: a hash of the seed, the event, the attempt and
// the kind, so that it does not depend on the order of concurrent
// attempts.
func (f Faults) roll(kind string, job *storage.DeliveryJob, share float64) bool {
	if share <= 0 {
		return false
	}
	h := fnv.New64a()
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(f.Seed))
	binary.BigEndian.PutUint64(b[8:], uint64(job.Attempts))
	h.Write(b[:])
	h.Write([]byte(job.EventID))
	h.Write([]byte(kind))
	return float64(h.Sum64()>>11)/(1<<53) < share
}

// Intercept applies the store's faults to an attempt that is about to be
// made: a hold (reorder or delay) of an event's first attempt, a failure
// without calling the receiver, or a success sent twice.
func (w *WebhookFaults) Intercept(job *storage.DeliveryJob, _ time.Time) (hold time.Duration, fail string, twice bool) {
	v, found := w.faults.Load(job.StoreID)
	if !found {
		return 0, "", false
	}
	f := v.(Faults)
	// Holds apply to an event's first attempt only, once: a held delivery
	// keeps no attempt, so the next claim finds it new again and must not
	// hold it a second time.
	if job.Attempts == 0 {
		if _, held := w.held.LoadAndDelete(job.EventID); !held {
			var wait time.Duration
			switch {
			case f.roll("reorder", job, f.Reorder):
				wait = f.ReorderHold
			case f.roll("delay", job, f.Delay):
				wait = f.DelayBy
			}
			if wait > 0 {
				w.held.Store(job.EventID, struct{}{})
				return wait, "", false
			}
		}
	}
	if f.roll("fail", job, f.Fail) {
		return 0, FailedBody, false
	}
	return 0, "", f.roll("duplicate", job, f.Duplicate)
}
