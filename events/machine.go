package events

import (
	"time"

	"github.com/keelpay/keelpay"
)

// The state machine of a webhook delivery, as pure functions: what the
// dispatcher records after an attempt depends only on the delivery before
// it, the receiver's answer and the time, never on storage or the network.
//
//	pending --2xx--> succeeded
//	pending --any failure, attempts < MaxAttempts--> pending (next attempt by RetryDelay)
//	pending --any failure, attempt MaxAttempts--> failed
//
// A redelivery puts a delivery back to pending with its attempts reset
// (storage does it, with the lease rules).

// judge names the failure of an answer with HTTP status code: "" for a
// 2xx, redirect for a 3xx (redirects are not followed), http_status for
// anything else.
func judge(status int) keelpay.DeliveryFailure {
	switch {
	case status >= 200 && status < 300:
		return ""
	case status >= 300 && status < 400:
		return keelpay.FailureRedirect
	default:
		return keelpay.FailureHTTPStatus
	}
}

// afterAttempt returns a delivery's state after its attempt number
// attempts+1, started at started, that ended with status (0 without an
// answer) and failure ("" for success).
func afterAttempt(attempts int, started time.Time, status int, failure keelpay.DeliveryFailure) keelpay.Delivery {
	del := keelpay.Delivery{
		Attempts:       attempts + 1,
		LastAttemptAt:  started,
		LastStatusCode: status,
		LastFailure:    failure,
	}
	switch {
	case failure == "":
		del.Status = keelpay.DeliverySucceeded
	case del.Attempts >= MaxAttempts:
		del.Status = keelpay.DeliveryFailed
	default:
		del.Status = keelpay.DeliveryPending
		del.NextAttemptAt = started.Add(RetryDelay(del.Attempts))
	}
	return del
}
