package refunds

import (
	"math"
	"time"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/internal/schedule"
	"github.com/keelpay/keelpay/provider"
)

// The state machine of a refund, as pure functions: storage and provider
// calls stay in the Service, which commits what these decide.
//
//	(none)  --send, intent succeeded with an order--> pending (attempt 1)
//	pending --provider: succeeded--> succeeded (event refund.succeeded)
//	pending --provider: failed--> failed (event refund.failed)
//	pending --unknown, or still pending--> pending (looked up on the schedule)
//	pending --send again, 3 minutes after the last--> pending (same attempt id)
//	failed  --send again--> pending (new attempt id)
//	succeeded --provider: the refund failed later--> failed (event refund.failed)
//	At most MaxSends sends.
//
// A provider may report a refund succeeded and later failed (Stripe's
// refund.failed: the bank returned the money to the merchant). The
// provider's notification (provider.RefundNotifier) makes the service look
// the send up; a failure found for a succeeded refund makes it failed with
// last_error refund_rejected and the provider's message, succeeded_at
// cleared, and a refund.failed event. Like any failed refund it may then be
// sent again, with a new attempt id, within its MaxSends sends.

// refundable reports whether an intent without a refund may get one.
func refundable(pi *keelpay.PaymentIntent) error {
	if pi.Status != keelpay.IntentSucceeded {
		return notRefundable("not_succeeded", "Only a succeeded payment intent can be refunded.")
	}
	if pi.OrderID == "" {
		return notRefundable("order_unknown", "The payment has no order number at the provider, so it cannot be refunded here.")
	}
	return nil
}

// resend returns the refund after a request to send it again at now, or
// why it may not be sent: a succeeded refund exists; a pending one was
// sent less than ResendAfter ago; MaxSends were made. A pending refund is
// sent again with the same attempt id, which the provider answers with the
// first send's outcome rather than paying out twice; a failed one, whose
// last send was refused for certain, with newAttemptID.
func resend(before keelpay.Refund, newAttemptID string, now time.Time) (keelpay.Refund, error) {
	next := before
	switch before.Status {
	case keelpay.RefundSucceeded:
		return before, keelpay.NewError(keelpay.CodeRefundExists,
			"The payment intent already has a refund; see details.refund.").WithDetail("refund", before.ID)
	case keelpay.RefundPending:
		if wait := before.LastSentAt.Add(ResendAfter).Sub(now); wait > 0 {
			return before, inProgress(wait)
		}
	case keelpay.RefundFailed:
		next.AttemptID = newAttemptID
	}
	if before.Attempts >= MaxSends {
		return before, notRefundable("attempts_exhausted", "The refund was already sent 3 times.")
	}
	next.Status = keelpay.RefundPending
	next.Attempts++
	next.LastSentAt = now
	next.ReconcileAt = schedule.Next(now, now)
	next.ReconcileCount = 0
	next.UpdatedAt = now
	return next, nil
}

// settled returns the refund after the provider's answer res, and the
// event that reports it; typ is "" when the provider still has it
// pending (nothing is final).
func settled(r keelpay.Refund, res *provider.RefundResult, now time.Time) (next keelpay.Refund, typ keelpay.EventType) {
	next = r
	next.ReconcileAt = time.Time{}
	next.UpdatedAt = now
	switch res.Status {
	case provider.RefundSucceeded:
		next.Status, next.LastError, next.SucceededAt = keelpay.RefundSucceeded, nil, now
		return next, keelpay.EventRefundSucceeded
	case provider.RefundFailed:
		next.Status = keelpay.RefundFailed
		next.LastError = failure(res.Failure)
		return next, keelpay.EventRefundFailed
	}
	return r, ""
}

// failedLater returns a succeeded refund after the provider reported its
// send failed after all, and the event that reports it; typ is "" when the
// answer changes nothing (the refund is not succeeded, or the provider
// still says succeeded). Whatever code the provider gives, the refund was
// refused after it was paid: refund_rejected, with the provider's text.
func failedLater(r keelpay.Refund, res *provider.RefundResult, now time.Time) (next keelpay.Refund, typ keelpay.EventType) {
	if r.Status != keelpay.RefundSucceeded || res == nil || res.Status != provider.RefundFailed {
		return r, ""
	}
	next = r
	next.Status = keelpay.RefundFailed
	next.LastError = &keelpay.LastError{Code: string(provider.FailureRefundRejected), Message: "The refund failed after it had succeeded; the money was not returned."}
	if res.Failure != nil && res.Failure.Message != "" {
		next.LastError.Message = res.Failure.Message
	}
	next.SucceededAt, next.ReconcileAt = time.Time{}, time.Time{}
	next.UpdatedAt = now
	return next, keelpay.EventRefundFailed
}

// unknown returns the refund after a send whose outcome is unknown.
func unknown(r keelpay.Refund, now time.Time) keelpay.Refund {
	r.LastError = &keelpay.LastError{Code: "outcome_unknown",
		Message: "It is not known whether the refund was paid out; wait for the webhook, or send it again after 3 minutes."}
	r.UpdatedAt = now
	return r
}

// lookAgain returns the refund after a look-up that did not settle it: the
// next look-up by the reconcile schedule.
func lookAgain(r keelpay.Refund, now time.Time) keelpay.Refund {
	r.ReconcileCount++
	r.ReconcileAt = schedule.Next(r.LastSentAt, now)
	r.UpdatedAt = now
	return r
}

// failure turns a provider's refusal into the refund's last_error; the
// provider's own text is kept for refund_rejected (docs/errors.md).
func failure(f *provider.Failure) *keelpay.LastError {
	if f == nil {
		return &keelpay.LastError{Code: "provider_error", Message: "The provider's answer was unusable."}
	}
	le := &keelpay.LastError{Code: string(f.Code), Message: f.Message}
	switch f.Code {
	case provider.FailureRefundRejected:
		if le.Message == "" {
			le.Message = "The provider rejected the refund."
		}
	case provider.FailureOrderNotFound:
		le.Message = "The provider does not know the order; contact the provider."
	default:
		le.Code = "provider_error"
		le.Message = "The provider could not process the refund; send it again later or contact the provider."
	}
	return le
}

func notRefundable(reason, msg string) error {
	return keelpay.NewError(keelpay.CodePaymentIntentNotRefundable, msg).WithDetail("reason", reason)
}

func inProgress(wait time.Duration) error {
	return keelpay.NewError(keelpay.CodeRefundInProgress,
		"The refund is being sent; retry after the time in Retry-After.").
		WithRetryAfter(time.Duration(math.Ceil(wait.Seconds())) * time.Second)
}
