package events

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/keelpay/keelpay/storage"
)

// lingerMax is the longest a result waits for the others of its round
// before they are recorded (Run).
const lingerMax = 2 * time.Millisecond

// Run delivers until ctx is done. Attempts in flight when ctx ends run to
// their end (at most AttemptTimeout) and are recorded before Run returns;
// one cut off by a crash is claimed again once its lease lapses (at least
// once).
//
// Each transaction of the dispatcher records every result that arrived
// while the previous one committed and, in the same commit, claims due
// deliveries for the slots those results freed. The recorded leases are
// released before the claim counts each store's leases, so a store at its
// cap gets its freed slots back in the same commit instead of one later;
// and a backlog costs one commit per round of attempts, not two. One such
// transaction is under way at a time, except that news (Notify, or a
// delivery coming due) starts a claim at once beside it: a new event's
// webhook does not wait for a batch of results to commit first.
func (d *Dispatcher) Run(ctx context.Context) {
	l := d.newLoop(ctx)
	defer l.lingerT.Stop()
	defer l.timer.Stop()
	for ctx.Err() == nil {
		l.collect()
		if !l.submitDue() {
			l.wait()
		}
	}
	l.drain()
}

// loop is the state of one Run: the attempts under way, the results not
// yet recorded and the commits (record and claim) in flight.
type loop struct {
	d   *Dispatcher
	ctx context.Context
	// results gets one result per attempt. At most Concurrency are
	// unrecorded at once, so sends never block.
	results  chan storage.DeliveryResult
	commits  chan committed
	attempts sync.WaitGroup
	// held counts the attempts started whose results were not yet handed
	// to a commit; reserved, the slots the claims under way may fill;
	// pending, the commits under way.
	held, reserved, pending int
	batch                   []storage.DeliveryResult
	// news counts wake-ups (Notify, the timer); seen is its value when
	// the last claim started. more says the last claim was full, so more
	// may be due behind it.
	news, seen int
	more       bool
	// timer wakes the loop when a delivery comes due; lingerT ends a
	// linger.
	timer, lingerT *time.Timer
	// wake is the Dispatcher's wake channel, or nil in manual mode
	// (hooks.drive set), where only a drive request is news.
	wake chan struct{}
	// attempted counts the attempts started; drives are the requests of
	// manual mode waiting for the loop to be idle, each with the count
	// when it came.
	attempted int
	drives    []drive
}

// drive is a drive request waiting for its answer.
type drive struct {
	req  driveRequest
	from int
}

// committed is what a commit claimed, and how many it was asked for.
type committed struct {
	jobs []*storage.DeliveryJob
	want int
	// start and end, for a ride with a tracer, are when it was reserved
	// and when its commit ended: its span's times.
	start, end time.Time
}

func (d *Dispatcher) newLoop(ctx context.Context) *loop {
	l := &loop{
		d: d, ctx: ctx,
		results: make(chan storage.DeliveryResult, d.cfg.Concurrency),
		commits: make(chan committed, 2),
		batch:   make([]storage.DeliveryResult, 0, d.cfg.Concurrency),
		news:    1,
		timer:   time.NewTimer(0),
		lingerT: time.NewTimer(0),
		wake:    d.wake,
	}
	if d.hooks.drive != nil {
		l.news, l.wake = 0, nil
		l.timer.Stop()
	} else {
		d.rides.mu.Lock()
		d.rides.open, d.rides.used = true, 0
		d.rides.mu.Unlock()
	}
	return l
}

// idle reports whether nothing is under way or left to claim: no commit,
// no attempt, no result unrecorded, no news unclaimed.
func (l *loop) idle() bool {
	return l.pending == 0 && l.held == 0 && len(l.batch) == 0 && !l.more && l.news == l.seen
}

// submitDue starts a commit when one is due and reports whether it did:
// results to record, or free slots and news to claim for. Results
// recorded free their stores' caps, so they go with the claim. A second
// commit beside one under way is only for news.
//
// The free slots are those neither the loop nor a ride (see rides) took;
// the slots a commit reserves are published under the rides' lock before
// it is released, so that a ride does not take them too.
func (l *loop) submitDue() bool {
	r := &l.d.rides
	r.mu.Lock()
	free := l.d.cfg.Concurrency - l.held - l.reserved - r.riding - l.d.rideShare()
	claim := free > 0 && (l.news > l.seen || l.more || len(l.batch) > 0)
	want, due := 0, false
	switch {
	case l.pending == 0 && (claim || len(l.batch) > 0):
		if claim {
			want = min(free, l.d.cfg.ClaimBatch)
		}
		due = true
	case l.pending == 1 && free > 0 && l.news > l.seen:
		want, due = min(free, l.d.cfg.ClaimBatch), true
	}
	if due {
		r.used = l.held - len(l.batch) + l.reserved + want
	}
	r.mu.Unlock()
	if due {
		l.submit(want)
	}
	return due
}

// wait blocks until something changes: a commit returns, a result
// arrives, news comes, a delivery comes due or ctx ends.
func (l *loop) wait() {
	if len(l.drives) > 0 && l.idle() {
		for _, dr := range l.drives {
			dr.req.reply <- l.attempted - dr.from
		}
		l.drives = l.drives[:0]
	}
	wait := time.Duration(-1)
	if l.wake != nil && l.pending == 0 && l.d.cfg.Concurrency-l.held-l.reserved > 0 {
		wait = l.d.sleep(l.ctx)
	}
	if wait >= 0 {
		l.timer.Reset(wait)
	} else {
		l.timer.Stop()
	}
	select {
	case <-l.ctx.Done():
	case c := <-l.commits:
		l.done(c)
	case r := <-l.results:
		l.batch = append(l.batch, r)
		if l.pending == 0 {
			l.linger()
		}
	case c := <-l.d.rides.jobs:
		l.ride(c)
	case <-l.wake:
		l.news++
	case <-l.timer.C:
		l.news++
	case req := <-l.d.hooks.drive:
		l.drives = append(l.drives, drive{req, l.attempted})
		l.news++
	}
}

// start attempts the claimed jobs, each on its own goroutine.
func (l *loop) start(jobs []*storage.DeliveryJob) {
	for _, job := range jobs {
		l.attempts.Go(func() {
			// The attempt outlives ctx: a receiver that got the webhook
			// gets it recorded. A result without an event id stands for
			// nothing to record.
			res, _ := l.d.attempt(context.WithoutCancel(l.ctx), job)
			l.results <- res
		})
	}
	l.held += len(jobs)
	l.attempted += len(jobs)
}

// submit hands the batch of results to a commit that also claims up to
// want deliveries, and runs it beside the loop.
func (l *loop) submit(want int) {
	rs := slices.Clone(l.batch)
	l.held -= len(l.batch)
	l.batch = l.batch[:0]
	if want > 0 {
		l.seen, l.more = l.news, false
	}
	l.reserved += want
	l.pending++
	go func() { l.commits <- committed{jobs: l.d.commit(l.ctx, rs, want), want: want} }()
}

// done takes a finished commit: its claimed jobs start.
func (l *loop) done(c committed) {
	l.pending--
	l.reserved -= c.want
	l.start(c.jobs)
	if c.want > 0 && len(c.jobs) == c.want {
		l.more = true
	}
	l.publish(0)
}

// ride takes the jobs of a ride: they start, and the slots it reserved
// become the loop's.
func (l *loop) ride(c committed) {
	l.d.traceRide(l.ctx, c)
	l.start(c.jobs)
	if c.want > 0 && len(c.jobs) == c.want {
		l.more = true
	}
	l.publish(c.want)
}

// publish tells the rides the slots the loop holds now, and ends the
// reservation of a ride whose jobs it took (want, its slots; 0 for none).
func (l *loop) publish(want int) {
	r := &l.d.rides
	r.mu.Lock()
	if want > 0 {
		r.riding -= want
		r.out--
	}
	r.used = l.held + l.reserved
	r.mu.Unlock()
}

// collect moves the results already sent into the batch, without
// waiting.
func (l *loop) collect() {
	for {
		select {
		case r := <-l.results:
			l.batch = append(l.batch, r)
		default:
			return
		}
	}
}

// linger waits a moment for the other attempts of a round: attempts
// claimed together finish together, and a commit for the first result
// alone would leave the others to wait for the next one. News ends it.
func (l *loop) linger() {
	l.lingerT.Reset(lingerMax)
	for l.held > len(l.batch) {
		select {
		case r := <-l.results:
			l.batch = append(l.batch, r)
		case <-l.wake:
			l.news++
			return
		case c := <-l.d.rides.jobs:
			l.ride(c)
			return
		case <-l.lingerT.C:
			return
		case <-l.ctx.Done():
			return
		}
	}
}

// drain stops the loop: no more claims. What commits under way claimed
// is attempted, and every attempt is recorded.
func (l *loop) drain() {
	r := &l.d.rides
	r.mu.Lock()
	r.open = false
	r.mu.Unlock()
	for {
		r.mu.Lock()
		out := r.out
		r.mu.Unlock()
		if l.pending == 0 && out == 0 {
			break
		}
		select {
		case c := <-l.commits:
			l.done(c)
		case c := <-r.jobs:
			l.ride(c)
		}
	}
	for l.held > len(l.batch) {
		l.batch = append(l.batch, <-l.results)
	}
	l.attempts.Wait()
	if len(l.batch) > 0 {
		l.d.commit(l.ctx, l.batch, 0)
	}
}
