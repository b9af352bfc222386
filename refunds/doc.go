// Package refunds returns the whole amount of succeeded payment intents.
//
// A store sends a refund with [Service.Send] (POST /v1/refunds). An intent
// has at most one refund, sent at most three times:
//
//   - The send is recorded first (status pending, a new attempt id) and
//     committed; then the provider is called with the attempt id as its
//     idempotency key; then the outcome is committed with its event
//     (refund.succeeded once, refund.failed for each refused send). A crash
//     in between leaves a pending refund with a known attempt id, which the
//     reconciler looks up: nothing is paid out twice.
//   - A refused send (refund_rejected, provider_error, order_not_found)
//     leaves the refund failed; the same call sends it again, up to three
//     sends (then 409 payment_intent_not_refundable, attempts_exhausted).
//   - An unknown outcome leaves it pending with last_error outcome_unknown;
//     the reconciler asks the provider at 1, 5, 15 and 60 minutes, then
//     every 6 hours. The store may send it again 3 minutes after the last
//     send; that repeats the same attempt id, so the provider answers the
//     first send's outcome instead of paying twice.
//   - When the provider is unavailable nothing is kept: a first send leaves
//     no refund, a repeated one leaves the refund as it was.
//   - A send waits for the provider at most Config.AnswerTimeout; past it
//     the answer is pending with outcome_unknown, and the call goes on, its
//     run committing the outcome (an unavailable provider then leaves the
//     send pending for the reconciler to make).
//   - A succeeded refund that the provider later reports failed (its
//     notification, [Service.NotifyRefund]) becomes failed with
//     refund_rejected and a refund.failed event, and may be sent again.
//     Succeeded refunds are not polled.
//
// Params.Idempotency carries the caller's idempotency key, an
// [github.com/keelpay/keelpay/idempotency.Key] (nil: none): the recorded
// send is then a step on the key, and the committed outcome stores the
// answer ([JSON] of the refund, with [SendOutcome]) with it. [Service.Resume]
// finishes a send that was cut off, as the answer to a retry with the
// same key.
package refunds
