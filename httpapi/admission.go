package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/keelpay/keelpay"
)

// AdmissionConfig bounds how many requests the API works on at once, per
// class of request, so that a burst beyond what the database and the
// provider can take is answered within a short bounded wait with 429
// rate_limited and a Retry-After header, none of its work done (no key
// taken, no object created, no provider call), instead of queueing without
// bound in memory and answering everyone late. A request that finds its class full
// waits up to Wait for a slot, behind at most Queue others; past that it is
// shed. A shed request is answered when Wait is over, not at once (up to
// Hold of them per class), so that a client that sends again as soon as it
// is answered costs the server one request per Wait, not as many as it can
// send. Health and metrics are not routes of the API and are never shed.
// See docs/operating.md, "Overload".
//
// A limit of zero takes its default; [AdmissionOff] (any negative value)
// turns the class's limit off.
type AdmissionConfig struct {
	// Browser bounds the browser's requests: those made with the
	// publishable key (a confirm from the card field, a card capture, a
	// read of an intent with its client_secret) and the card field's page
	// and script. Default AdmissionBrowserDefault.
	Browser int
	// Confirms bounds the confirms of payment intents with the secret key
	// (a saved card). They have slots of their own, apart from Payments,
	// so that a flood of new payments does not shed the second step of
	// the payments already under way. Default AdmissionConfirmsDefault.
	Confirms int
	// Hold is how many shed requests of one class may wait for the end
	// of Wait before they are answered; any more are answered at once.
	// Each is a request already read, on a connection already open.
	// Default AdmissionHoldDefault; AdmissionOff answers every shed
	// request at once.
	Hold int
	// Payments bounds the other changes of payment objects with the
	// secret key: card sessions, intents (create, cancel), refunds, card
	// deletions, erasure. They take an Idempotency-Key, write the database
	// and may call the provider. Default AdmissionPaymentsDefault.
	Payments int
	// Queue is how many requests of one class may wait for a slot at
	// once; any more are shed (see Hold). Default: four times the class's
	// limit, so that a client's burst of parallel requests at a server
	// that is not loaded waits its turn rather than being shed, while
	// the wait of the last in the queue stays a few times the time of one
	// request.
	Queue int
	// Reads bounds the reads with the secret key (GET). Default
	// AdmissionReadsDefault.
	Reads int
	// RetryAfter is the Retry-After of a shed answer, in whole seconds
	// (rounded up). Default AdmissionRetryAfterDefault.
	RetryAfter time.Duration
	// Wait is the longest a request waits for a slot before it is shed.
	// It bounds what the wait adds to the time of an admitted request.
	// Default AdmissionWaitDefault.
	Wait time.Duration
	// Writes bounds the other changes: setup, webhook tests,
	// redeliveries. Default AdmissionWritesDefault.
	Writes int
}

// Defaults of AdmissionConfig, for a server of two cores in front of one
// SQLite file or a PostgreSQL pool of its default size. Payments and
// confirms: 32 at once. On SQLite the writer commits the transactions
// waiting for it together, so more payments at once share each commit's
// flush: with 8 a commit carried about 6 transactions, with 32 about 18,
// and keyed payments ran 1.45 times as fast at three quarters of the CPU
// per payment (bench/ab-pay.sh, 3 interleaved rounds: 1,282 against
// 1,864 payments/s; 16 gave 1,330 and 64 about 7% more than 32); on
// PostgreSQL 32 gave 10% more than 8 (bench/ab-pg.sh). Past the point
// where the writer's commits and the pool's connections are busy, more
// requests at once only wait longer. docs/operating.md, "Overload", says
// how to choose them elsewhere.
const (
	AdmissionBrowserDefault    = 16
	AdmissionConfirmsDefault   = 32
	AdmissionHoldDefault       = 1024
	AdmissionPaymentsDefault   = 32
	AdmissionReadsDefault      = 16
	AdmissionWritesDefault     = 8
	AdmissionWaitDefault       = 500 * time.Millisecond
	AdmissionRetryAfterDefault = time.Second
)

// AdmissionOff as a limit of AdmissionConfig turns that class's limit off.
const AdmissionOff = -1

// withDefaults returns c with its zero fields set to the defaults.
func (c AdmissionConfig) withDefaults() AdmissionConfig {
	for _, f := range []struct {
		v   *int
		def int
	}{
		{&c.Browser, AdmissionBrowserDefault},
		{&c.Confirms, AdmissionConfirmsDefault},
		{&c.Hold, AdmissionHoldDefault},
		{&c.Payments, AdmissionPaymentsDefault},
		{&c.Reads, AdmissionReadsDefault},
		{&c.Writes, AdmissionWritesDefault},
	} {
		if *f.v == 0 {
			*f.v = f.def
		}
	}
	if c.Wait == 0 {
		c.Wait = AdmissionWaitDefault
	}
	if c.RetryAfter == 0 {
		c.RetryAfter = AdmissionRetryAfterDefault
	}
	return c
}

// validate reports the fields of c (after defaults) that cannot work.
func (c AdmissionConfig) validate() error {
	var errs []error
	if c.Queue < 0 {
		errs = append(errs, fmt.Errorf("httpapi: Config.Admission.Queue is %d; it must be 0 (the class's limit) or more", c.Queue))
	}
	if c.Wait < 0 {
		errs = append(errs, fmt.Errorf("httpapi: Config.Admission.Wait is %v; it must be 0 (the default) or more", c.Wait))
	}
	if c.RetryAfter < 0 {
		errs = append(errs, fmt.Errorf("httpapi: Config.Admission.RetryAfter is %v; it must be 0 (the default) or more", c.RetryAfter))
	}
	return errors.Join(errs...)
}

// class is the admission class of a request.
type class int

const (
	classPayments class = iota
	classConfirms
	classWrites
	classReads
	classBrowser
	numClasses
)

// classNames are the class label values of the admission metrics.
var classNames = [numClasses]string{"payments", "confirms", "writes", "reads", "browser"}

// classOf is the class of a route's requests made with the secret key (or
// none); admit moves a publishable key's request to classBrowser.
func classOf(rt route) class {
	switch {
	case rt.auth == authPublishable || rt.auth == authNone:
		return classBrowser
	case rt.method == http.MethodGet || rt.method == http.MethodHead:
		return classReads
	case rt.path == "/v1/setup" || strings.HasPrefix(rt.path, "/v1/webhooks/") || strings.HasPrefix(rt.path, "/v1/events/"):
		return classWrites
	case rt.path == "/v1/payment_intents/{id}/confirm":
		return classConfirms
	default:
		return classPayments
	}
}

// gate is one class's slots and the requests waiting for one.
type gate struct {
	slots   chan struct{} // nil: no limit
	waiting atomic.Int64
	queue   int64
	held    atomic.Int64 // shed requests waiting for their answer
	hold    int64
}

// enter takes a slot, waiting up to wait behind at most g.queue others.
// It reports false when the request is to be shed (past the queue, when
// wait is over: see holdBack), and ctx's error when the client went away
// while it waited.
func (g *gate) enter(ctx context.Context, wait time.Duration) (bool, error) {
	if g.slots == nil {
		return true, nil
	}
	select {
	case g.slots <- struct{}{}:
		return true, nil
	default:
	}
	if g.waiting.Add(1) > g.queue {
		g.waiting.Add(-1)
		return false, g.holdBack(ctx, wait)
	}
	defer g.waiting.Add(-1)
	t := time.NewTimer(wait)
	defer t.Stop()
	// Senders blocked on a channel are served in the order they came.
	select {
	case g.slots <- struct{}{}:
		return true, nil
	case <-t.C:
		return false, nil
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

// holdBack waits until wait is over before a request past the queue is
// answered, when fewer than g.hold others are held.
func (g *gate) holdBack(ctx context.Context, wait time.Duration) error {
	defer g.held.Add(-1)
	if g.held.Add(1) > g.hold {
		return nil
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// leave gives the slot back.
func (g *gate) leave() {
	if g.slots != nil {
		<-g.slots
	}
}

// admission is the API's gates, one per class.
type admission struct {
	gates      [numClasses]*gate
	wait       time.Duration
	retryAfter time.Duration
	shed       [numClasses]prometheus.Counter
}

func newAdmission(c AdmissionConfig, reg prometheus.Registerer) *admission {
	ad := &admission{wait: c.Wait, retryAfter: c.RetryAfter}
	shed := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "keelpay_http_shed_total",
		Help: "API requests answered 429 rate_limited because their class (payments, confirms, writes, reads, browser) had no free slot within the admission wait; none of their work was done.",
	}, []string{"class"})
	reg.MustRegister(shed)
	for i, limit := range [numClasses]int{c.Payments, c.Confirms, c.Writes, c.Reads, c.Browser} {
		g := &gate{queue: int64(4 * limit), hold: int64(max(c.Hold, 0))}
		if c.Queue > 0 {
			g.queue = int64(c.Queue)
		}
		if limit > 0 {
			g.slots = make(chan struct{}, limit)
		}
		ad.gates[i] = g
		ad.shed[i] = shed.WithLabelValues(classNames[i])
		labels := prometheus.Labels{"class": classNames[i]}
		reg.MustRegister(
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name:        "keelpay_http_in_flight",
				Help:        "API requests being worked on now, by admission class (payments, confirms, writes, reads, browser).",
				ConstLabels: labels,
			}, func() float64 { return float64(len(g.slots)) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{
				Name:        "keelpay_http_waiting",
				Help:        "API requests waiting for an admission slot, or shed and waiting for their answer, now, by class (payments, confirms, writes, reads, browser).",
				ConstLabels: labels,
			}, func() float64 { return float64(g.waiting.Load() + g.held.Load()) }),
		)
	}
	return ad
}

// errOverloaded is the answer of a shed request: 429 rate_limited, the
// code clients already retry after Retry-After.
func (ad *admission) errOverloaded() error {
	return keelpay.NewError(keelpay.CodeRateLimited,
		"The server is at its limit of requests of this kind; nothing was done. Retry after the seconds in Retry-After, with the same Idempotency-Key.").
		WithRetryAfter(ad.retryAfter)
}

// admit takes a slot of the request's class for the route, or answers the
// request (429 rate_limited when shed) and returns nil. The caller calls
// the returned function when the request is done.
func (a *api) admit(w http.ResponseWriter, r *http.Request, rt route, cls class) func() {
	if rt.auth == authAnyKey && cls != classBrowser {
		if key, _ := bearer(r); strings.HasPrefix(key, keelpay.PrefixPublishableKey) {
			cls = classBrowser
		}
	}
	g := a.admission.gates[cls]
	ok, err := g.enter(r.Context(), a.admission.wait)
	if err != nil {
		a.writeError(w, r, err) // 499: the client went away while it waited
		return nil
	}
	if !ok {
		a.admission.shed[cls].Inc()
		a.writeError(w, r, a.admission.errOverloaded())
		return nil
	}
	return g.leave
}
