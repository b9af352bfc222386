// Package eventshook reaches into a running events.Dispatcher from inside
// keelpay, where the public type offers nothing: an Interceptor for the
// reference server's sandbox delivery faults, and a manual mode in which
// tests drive the dispatcher's real loop one round of deliveries at a
// time. Package events installs the functions (it imports this package,
// so this package names its Dispatcher through an interface).
package eventshook

import (
	"context"
	"time"

	"github.com/keelpay/keelpay/storage"
)

// Dispatcher is an *events.Dispatcher.
type Dispatcher interface {
	Notify()
}

// An Interceptor takes part in a Dispatcher's attempts: it sees each one
// before it is made and may hold it back, fail it without calling the
// receiver, or have it sent twice. The sandbox's delivery faults
// (provider/sandbox.WebhookFaults) are one; a production dispatcher has
// none. Intercept is called concurrently, once per attempt, and must not
// block.
//
// Its answer is three plain values, so that an interceptor needs nothing
// of package events: the sandbox, below the services, implements it. All
// zero lets the attempt go as usual; when several are set, hold wins over
// fail, and fail over twice.
//   - hold, when positive, makes no attempt: the delivery stays pending,
//     due again hold after now (by the dispatcher's clock), and keeps no
//     attempt in its history;
//   - fail, when not empty, records the attempt as a connection_error with
//     fail as its response body, without calling the receiver; it is
//     retried on the usual schedule;
//   - twice posts an attempt that the receiver accepted a second time:
//     same webhook-id, same body bytes. The first answer is the one
//     recorded.
type Interceptor interface {
	Intercept(job *storage.DeliveryJob, now time.Time) (hold time.Duration, fail string, twice bool)
}

// Funcs are the operations package events installs.
type Funcs struct {
	SetInterceptor func(d Dispatcher, i Interceptor)
	Manual         func(d Dispatcher)
	Deliver        func(ctx context.Context, d Dispatcher) (int, error)
}

// Installed is set by package events when it is initialised.
var Installed Funcs

// SetInterceptor makes d consult i before each attempt, its own and
// those of events.Service.SendTest. Call it before d runs.
func SetInterceptor(d Dispatcher, i Interceptor) { Installed.SetInterceptor(d, i) }

// Manual makes d's loop claim only when Deliver asks: Notify and the
// passing of time start no claim. The claims, attempts and commits are
// those of the loop Run runs. Call it before d runs.
func Manual(d Dispatcher) { Installed.Manual(d) }

// Deliver has d's loop, running in manual mode, claim every delivery due
// now (by the dispatcher's clock), attempt them and record the results,
// and returns how many attempts it made. Attempts the loop starts on its
// own behalf while Deliver waits are counted too. The error is ctx's,
// when it ends first.
func Deliver(ctx context.Context, d Dispatcher) (int, error) {
	return Installed.Deliver(ctx, d)
}
