package events

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/keelpay/keelpay/internal/tracing"
	"github.com/keelpay/keelpay/storage"
)

// rides are the claims a CommitClaimer makes for the dispatcher inside the
// commit of a transaction that inserted events (storage.CommitClaim): the
// event's webhook leaves when that commit is made, where a claim woken by
// the event (Notify) would commit a batch of the writer later. A ride is
// an ordinary claim (lease, per-store caps, order); its jobs reach Run's
// loop through jobs, where they are attempted and recorded as the loop's
// own claims' are.
//
// The slots a ride may fill are those the loop has not taken: mu guards
// the loop's count of slots taken (used: attempts held and slots reserved
// by its claims, published by the loop) and the rides' reservations
// (riding), so that together they never exceed Concurrency.
type rides struct {
	mu sync.Mutex
	// open is true while Run's loop takes rides (not in manual mode);
	// installed, once CommitClaim was called.
	open, installed bool
	// used is the loop's held + reserved as it last published them;
	// riding, the slots reserved by rides whose jobs the loop has not
	// taken yet; out, the number of such rides.
	used, riding, out int
	jobs              chan committed
	// started holds when each ride out was reserved, by lease token,
	// for its span (only with a tracer).
	started map[string]time.Time
}

// CommitClaim returns the claim a storage.CommitClaimer makes for d inside
// the commit of a transaction that inserted events, so that their
// webhooks leave at that commit (service.New installs it on the storage
// it is given). Rides are made only while Run runs; a storage that makes
// none leaves the work to d's own claims, woken by Notify.
func (d *Dispatcher) CommitClaim() storage.CommitClaim {
	d.rides.mu.Lock()
	d.rides.installed = true
	d.rides.mu.Unlock()
	return commitClaim{d}
}

// rideShare is how many of the free slots the loop's own claims leave to
// rides once a CommitClaim was handed out: a claim of the loop reserves
// every free slot while it waits for the writer, which under load is most
// of the time, and a ride would then find none. Called with mu held.
func (d *Dispatcher) rideShare() int {
	if !d.rides.open || !d.rides.installed {
		return 0
	}
	return d.cfg.Concurrency / 8
}

type commitClaim struct{ d *Dispatcher }

// Reserve implements storage.CommitClaim: the parameters of a claim for
// the free slots, reserved until Claimed.
func (c commitClaim) Reserve() (storage.DeliveryClaimParams, bool) {
	d := c.d
	r := &d.rides
	r.mu.Lock()
	defer r.mu.Unlock()
	want := min(d.cfg.Concurrency-r.used-r.riding, d.cfg.ClaimBatch)
	if !r.open || want <= 0 {
		return storage.DeliveryClaimParams{}, false
	}
	r.riding += want
	r.out++
	p := d.claimParams(want)
	if d.tracer != nil {
		if r.started == nil {
			r.started = map[string]time.Time{}
		}
		r.started[p.LeaseToken] = time.Now()
	}
	return p, true
}

// Claimed implements storage.CommitClaim: the jobs go to the loop. The
// channel has room for every ride out (each reserves a slot at least), so
// it never blocks.
func (c commitClaim) Claimed(p storage.DeliveryClaimParams, jobs []*storage.DeliveryJob) {
	r := &c.d.rides
	done := committed{jobs: jobs, want: p.Limit}
	if c.d.tracer != nil {
		r.mu.Lock()
		done.start, done.end = r.started[p.LeaseToken], time.Now()
		delete(r.started, p.LeaseToken)
		r.mu.Unlock()
	}
	r.jobs <- done
}

// traceRide makes the "webhook.claim" span of a ride that claimed
// something, as claimOnly does for the loop's own claims: dated from the
// ride's reservation to the end of the commit it rode on, with a
// storage.DeliveryClaimDue span under it.
func (d *Dispatcher) traceRide(ctx context.Context, c committed) {
	if d.tracer == nil || len(c.jobs) == 0 {
		return
	}
	sctx, span := d.tracer.Start(ctx, "webhook.claim", trace.WithNewRoot(), trace.WithTimestamp(c.start))
	_, claim := d.tracer.Start(sctx, "storage.DeliveryClaimDue", trace.WithTimestamp(c.start))
	claim.End(trace.WithTimestamp(c.end))
	span.SetAttributes(attribute.Int(tracing.AttrRecorded, 0), attribute.Int(tracing.AttrClaimed, len(c.jobs)))
	span.End(trace.WithTimestamp(c.end))
}
