// Package provider is the boundary between the keelpay service and a payment
// provider. [Provider] is what a real provider's adapter implements; the
// in-process sandbox in [github.com/keelpay/keelpay/provider/sandbox]
// implements it too, and the reference server uses it by default.
//
// # Attempt ids make every call idempotent
//
// The service records an attempt (a charge or a refund send) with its own
// attempt id and commits it before it calls the provider; the attempt id is
// the idempotency key of the call. The provider charges at most once per
// attempt id: calling [Provider.Charge] again with the same id returns the
// first call's outcome. So does [Provider.Refund] with a refund send's id.
// After a crash, a time-out or a 3D Secure challenge, [Provider.LookupCharge]
// and [Provider.LookupRefund] report what happened to an attempt id;
// [ErrUnknownAttempt] means the provider never saw it, so nothing was charged
// or refunded.
//
// # Refused, not done, or unknown
//
// A call ends in one of three ways:
//
//   - A result. A refused charge or refund is a result too ([ChargeFailed],
//     [RefundFailed]) with a [Failure] whose code the service shows as
//     last_error.code.
//   - An [*Error] of any kind but [KindOutcomeUnknown]: nothing was done.
//     [KindUnavailable] and [KindAccessPending] are safe to retry, after
//     [Error.RetryAfter] when set; the attempt can be dropped.
//   - An unknown outcome ([IsOutcomeUnknown]): the call may or may not have
//     taken effect. The service must not charge again with a new attempt id;
//     it keeps the attempt open (the intent stays processing, the refund
//     pending) and resolves it by looking the attempt id up, until the lookup
//     no longer reports [ChargePending] or [RefundPending].
//
// # No provider calls inside storage transactions
//
// A provider call can take seconds and can time out. The service never holds
// a storage transaction open across one: it commits the attempt, calls the
// provider, then commits the outcome with its event in a new transaction. A
// crash between the two leaves an open attempt that the reconciler resolves
// with a lookup.
//
// # Notifications
//
// A provider that implements [Notifier] calls the service's [NotifyFunc]
// when a 3D Secure challenge is answered or an unknown outcome is resolved,
// as a provider's webhook would. A notification carries only the merchant
// and attempt ids; the service then calls [Provider.LookupCharge] and trusts
// only that answer. The service polls open attempts anyway, so a lost
// notification is only a delay.
package provider
