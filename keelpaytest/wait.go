package keelpaytest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/internal/eventshook"
	"github.com/keelpay/keelpay/webhooks"
	"github.com/keelpay/keelpay/webhooks/webhookstest"
)

// Advance moves the clock forward by d and runs what became due, before
// it returns: expiry of intents and card sessions, 3D Secure waits that
// ended, reconciliation of unknown charge and refund outcomes; the
// webhooks they cause leave at once. (With sandbox.CardOutcomeUnknown,
// Advance(2*time.Minute) or more resolves the payment.)
//
// The clock is the kit's, one for every store and test that shares the
// kit: on a kit shared by parallel subtests, Advance in one subtest moves
// the clock of all of them (their intents expire, their challenges time
// out, their unknown outcomes resolve). Give a subtest that moves the
// clock a kit of its own.
func (k *Kit) Advance(t T, d time.Duration) {
	t.Helper()
	k.Clock.Advance(d)
	if err := k.runDue(context.Background()); err != nil {
		t.Fatalf("keelpaytest: due work after advancing %v: %v", d, err)
	}
}

func (k *Kit) runDue(ctx context.Context) error {
	// The sandbox's own due changes first (a refund that fails later),
	// with the notifications they send.
	err := errors.Join(k.Sandbox.Settle(ctx), k.Service.Payments().Expire(ctx), k.Service.Payments().Reconcile(ctx), k.Service.Refunds().Reconcile(ctx))
	if k.manual {
		_, derr := k.deliver(ctx)
		return errors.Join(err, derr)
	}
	k.Service.Dispatcher().Notify()
	return err
}

// Deliver has the dispatcher of a kit started [WithWebhookFaults] claim
// every delivery due now (by the kit's clock), attempt it under the
// store's faults and record the result, and returns once all of that is
// done: the receiver has answered every attempt (a duplicate's second
// post included) and the store's handler of [Kit.HandleWebhooks] has
// returned (its processing after answering may still run: wait for it
// with [Kit.RequireHandled]). It returns how many deliveries it claimed,
// those a fault held back or failed included. It fails the test on a kit
// started without WithWebhookFaults, whose dispatcher delivers on its
// own, or when the round takes longer than the kit's wait timeout.
func (k *Kit) Deliver(t T) int {
	t.Helper()
	if !k.manual {
		t.Fatalf("keelpaytest: Deliver needs a kit started WithWebhookFaults; this kit delivers on its own")
		return 0
	}
	n, err := k.deliver(context.Background())
	if err != nil {
		t.Fatalf("keelpaytest: %v", err)
	}
	return n
}

// deliver runs one round of the dispatcher in manual mode.
func (k *Kit) deliver(ctx context.Context) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, k.wait)
	defer cancel()
	n, err := eventshook.Deliver(ctx, k.Service.Dispatcher())
	if err != nil {
		return n, fmt.Errorf("deliveries not done after %v: %w", k.wait, err)
	}
	return n, nil
}

// RequireEvent waits until the receiver got a delivery, with a valid
// signature, of an event of type typ about the object objectID (a payment
// intent, refund or card id), and returns it. It fails the test if none
// arrives within the kit's wait timeout ([WithWaitTimeout]).
func (k *Kit) RequireEvent(t T, typ keelpay.EventType, objectID string) webhookstest.Delivery {
	t.Helper()
	deadline := time.NewTimer(k.wait)
	defer deadline.Stop()
	for {
		got, next := k.Webhooks.Watch()
		for _, d := range got {
			if matches(d, typ, objectID) {
				return d
			}
		}
		select {
		case <-next:
		case <-deadline.C:
			t.Fatalf("keelpaytest: no verified %s event for %s after %v; received: %s", typ, objectID, k.wait, summary(got))
			return webhookstest.Delivery{}
		}
	}
}

// RequireNoEvent runs what is due now (without moving the clock), waits
// until every event committed so far for the kit's stores reached the
// receiver, and fails the test if one of them is of type typ about
// objectID.
func (k *Kit) RequireNoEvent(t T, typ keelpay.EventType, objectID string) {
	t.Helper()
	got := k.Drain(t)
	for _, d := range got {
		if matches(d, typ, objectID) {
			t.Fatalf("keelpaytest: unexpected %s event for %s", typ, objectID)
		}
	}
}

// Drain runs what is due now (without moving the clock) and waits until
// every event committed so far for the kit's stores reached the receiver
// at least once; it returns every delivery received.
func (k *Kit) Drain(t T) []webhookstest.Delivery {
	t.Helper()
	if err := k.runDue(context.Background()); err != nil {
		t.Fatalf("keelpaytest: due work: %v", err)
	}
	k.mu.Lock()
	for more := true; more; {
		select {
		case e := <-k.committed:
			if k.stores[e.StoreID] {
				k.pending = append(k.pending, e.ID)
			}
		default:
			more = false
		}
	}
	want := append([]string(nil), k.pending...)
	k.mu.Unlock()

	deadline := time.NewTimer(k.wait)
	defer deadline.Stop()
	for {
		got, next := k.Webhooks.Watch()
		arrived := map[string]bool{}
		for _, d := range got {
			if e, err := d.Event(); err == nil {
				arrived[e.ID] = true
			}
		}
		var missing []string
		for _, id := range want {
			if !arrived[id] {
				missing = append(missing, id)
			}
		}
		if len(missing) == 0 {
			return got
		}
		select {
		case <-next:
		case <-deadline.C:
			t.Fatalf("keelpaytest: events %v not delivered after %v", missing, k.wait)
			return got
		}
	}
}

// matches reports whether d is a verified delivery of an event of type typ
// about objectID.
func matches(d webhookstest.Delivery, typ keelpay.EventType, objectID string) bool {
	if d.Err != nil {
		return false
	}
	e, err := d.Event()
	if err != nil || e.Type != string(typ) {
		return false
	}
	return objectOf(e) == objectID
}

func objectOf(e webhooks.Event) string {
	var obj struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(e.Data.Object, &obj)
	return obj.ID
}

func summary(got []webhookstest.Delivery) string {
	if len(got) == 0 {
		return "nothing"
	}
	var b strings.Builder
	for i, d := range got {
		if i > 0 {
			b.WriteString(", ")
		}
		e, err := d.Event()
		switch {
		case err != nil:
			fmt.Fprintf(&b, "(unreadable body: %v)", err)
		case d.Err != nil:
			fmt.Fprintf(&b, "%s %s (not verified: %v)", e.Type, objectOf(e), d.Err)
		default:
			fmt.Fprintf(&b, "%s %s", e.Type, objectOf(e))
		}
	}
	return b.String()
}

// call sends a request to the API and decodes the answer into out,
// failing the test unless the status is want.
