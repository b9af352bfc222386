package events

import (
	"time"

	"github.com/keelpay/keelpay/storage"
)

// An Interceptor takes part in a Dispatcher's attempts: it sees each one
// before it is made and may hold it back, fail it without calling the
// receiver, or have it sent twice. The sandbox's delivery faults
// (provider/sandbox.WebhookFaults) are one; a production dispatcher has
// none. Intercept is called concurrently, once per attempt, and must not
// block.
//
// Its answer is three plain values, so that an interceptor needs nothing
// of this package: the sandbox, below the services, implements it. All
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
