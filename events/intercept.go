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
type Interceptor interface {
	Intercept(job *storage.DeliveryJob, now time.Time) Intervention
}

// Intervention is what an Interceptor does to one attempt. The zero value
// lets the attempt go as usual. When several fields are set, Hold wins
// over Fail, and Fail over Twice.
type Intervention struct {
	// Hold, when positive, makes no attempt: the delivery stays pending,
	// due again Hold after now (by the dispatcher's clock), and keeps no
	// attempt in its history.
	Hold time.Duration
	// Fail, when not empty, records the attempt as a connection_error
	// with Fail as its response body, without calling the receiver; it is
	// retried on the usual schedule.
	Fail string
	// Twice posts an attempt that the receiver accepted a second time:
	// same webhook-id, same body bytes. The first answer is the one
	// recorded.
	Twice bool
}
