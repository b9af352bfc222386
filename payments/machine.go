package payments

import (
	"errors"
	"slices"
	"time"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/internal/schedule"
	"github.com/keelpay/keelpay/provider"
)

// This file is the state machine of a payment intent as pure functions:
// no storage, no provider, no clock but the time passed in. The service
// reads, calls the provider, and commits what these functions return.

// Cancellation reasons the service itself gives (docs/api.md).
const (
	ReasonExpired = "expired"
	ReasonVoided  = "voided"
)

// Codes of last_error (docs/errors.md).
const (
	ErrorCardDeclined          = "card_declined"
	ErrorCardRejected          = "card_rejected"
	ErrorCardUnavailable       = "card_unavailable"
	ErrorBillingRequired       = "billing_required"
	ErrorInvalidRequest        = "invalid_request"
	ErrorAuthenticationFailed  = "authentication_failed"
	ErrorAuthenticationExpired = "authentication_expired"
	ErrorProviderError         = "provider_error"
	ErrorOutcomeUnknown        = "outcome_unknown"
	ErrorCurrencyMismatch      = "currency_mismatch"
	ErrorAmountMismatch        = "amount_mismatch"
)

// lastErrorMessages are the English messages of last_error, fixed per code
// so that the browser script can translate them.
var lastErrorMessages = map[string]string{
	ErrorCardDeclined:          "The card was declined.",
	ErrorCardRejected:          "The card was not accepted; use another card.",
	ErrorCardUnavailable:       "The saved card can no longer be used; enter the card again.",
	ErrorBillingRequired:       "The card needs a billing address; confirm again with billing details.",
	ErrorInvalidRequest:        "The provider refused the request; use another card.",
	ErrorAuthenticationFailed:  "3D Secure authentication was not completed.",
	ErrorAuthenticationExpired: "3D Secure authentication expired without an answer.",
	ErrorProviderError:         "The provider could not process the payment; try again in a few minutes.",
	ErrorOutcomeUnknown:        "It is not known yet whether the card was charged; do not charge again, wait for the webhook.",
	ErrorCurrencyMismatch:      "The provider charged another currency; the charge was voided.",
	ErrorAmountMismatch:        "The provider charged another amount; the charge was voided.",
}

func lastError(code, declineCode string) *keelpay.LastError {
	msg, ok := lastErrorMessages[code]
	if !ok {
		// A code this service does not know is an answer it cannot use.
		code, declineCode, msg = ErrorProviderError, "", lastErrorMessages[ErrorProviderError]
	}
	if code != ErrorCardDeclined {
		declineCode = ""
	}
	return &keelpay.LastError{Code: code, DeclineCode: declineCode, Message: msg}
}

// Timing of attempts (docs/api.md).
const (
	// ThreeDSecureWait is how long a 3D Secure challenge waits for the
	// buyer; then the reconciler looks the attempt up.
	ThreeDSecureWait = 10 * time.Minute

	// SendWindow is how long after an attempt is recorded the confirm
	// that recorded it may still send the charge. A run that gets there
	// later (its process was paused, its database connection stalled)
	// does not call the provider: it looks the attempt up instead.
	SendWindow = 15 * time.Second
	// ReachWindow is how long after an attempt is recorded a charge for it
	// may still reach the provider: the send window plus the longest call.
	// Until then, a provider that does not know the attempt does not
	// prove that nothing was charged, and the attempt stays open as an
	// unknown outcome.
	ReachWindow = SendWindow + CallTimeoutMax
	// LateCheckFor is how long an attempt closed as never charged is
	// still looked up, in case a charge for it arrives after all (a
	// request that sat in a stalled network, a process paused between the
	// last check of its clock and the send); a charge found is voided.
	LateCheckFor = 24 * time.Hour
)

// nextCheck returns when to look an open attempt up next: while a 3D
// Secure challenge may still be answered, the end of its wait; otherwise
// the reconcile schedule.
func nextCheck(status keelpay.PaymentIntentStatus, attemptAt, now time.Time) time.Time {
	if wait := attemptAt.Add(ThreeDSecureWait); status == keelpay.IntentRequiresAction && now.Before(wait) {
		return wait
	}
	return schedule.Next(attemptAt, now)
}

// canConfirm reports whether an intent in status may start an attempt. Only
// requires_payment_method: in requires_action the open challenge's attempt
// is the one that may still charge (a second attempt could charge the
// buyer twice), in processing the outcome is pending, and succeeded and
// canceled are final.
func canConfirm(status keelpay.PaymentIntentStatus) bool {
	return status == keelpay.IntentRequiresPaymentMethod
}

// canCancel reports whether an intent in status may be canceled (docs/api.md).
func canCancel(status keelpay.PaymentIntentStatus) bool {
	return status == keelpay.IntentRequiresPaymentMethod || status == keelpay.IntentRequiresAction
}

// startAttempt returns pi with a new attempt recorded: processing, the
// attempt id and time, the merchant charged, the first look-up one minute
// later (should the process die before the outcome is committed), and the
// card being charged.
func startAttempt(pi keelpay.PaymentIntent, attemptID, merchantID string, pm *keelpay.PaymentMethod, cardID string, billing *keelpay.Billing, now time.Time) keelpay.PaymentIntent {
	pi.Status = keelpay.IntentProcessing
	pi.AttemptID, pi.AttemptAt, pi.MerchantID = attemptID, now, merchantID
	pi.ReconcileAt, pi.ReconcileCount = nextCheck(pi.Status, now, now), 0
	pi.CardID, pi.PaymentMethod = cardID, pm
	if billing != nil {
		pi.Billing = billing
	}
	pi.LastError, pi.NextAction = nil, nil
	pi.UpdatedAt = now
	return pi
}

// unattempted is the inverse of startAttempt for an intent's first
// attempt with the card it was created with (what storage.AttemptStart
// records): pi as it was before, but for UpdatedAt, which that write
// does not keep.
func unattempted(pi keelpay.PaymentIntent) keelpay.PaymentIntent {
	pi.Status = keelpay.IntentRequiresPaymentMethod
	pi.AttemptID, pi.AttemptAt, pi.MerchantID = "", time.Time{}, ""
	pi.ReconcileAt, pi.ReconcileCount = time.Time{}, 0
	pi.LastError, pi.NextAction = nil, nil
	pi.Version--
	return pi
}

// cancel returns pi canceled for reason, with lastError when given.
func cancel(pi keelpay.PaymentIntent, reason string, le *keelpay.LastError, now time.Time) keelpay.PaymentIntent {
	pi.Status = keelpay.IntentCanceled
	pi.CancellationReason = reason
	if le != nil {
		pi.LastError = le
	}
	pi.NextAction, pi.ReconcileAt = nil, time.Time{}
	pi.UpdatedAt = now
	return pi
}

// answer is what the provider said about an attempt: a result or an error,
// from Charge or (lookup) from LookupCharge.
type answer struct {
	res    *provider.ChargeResult
	err    error
	lookup bool
}

// step is what an answer does to an intent.
type step struct {
	next keelpay.PaymentIntent
	// event is the event that reports next; "" when the change is not
	// reported (the attempt stays open).
	event keelpay.EventType
	// void: the attempt must be voided at the provider before next is
	// committed; if the void fails, the attempt stays open instead.
	void bool
	// cardUnavailable: the saved card stopped working.
	cardUnavailable bool
	// outcome labels a closed attempt for the attempts metric; "" while
	// it is open.
	outcome, code string
	// lateCheck: the attempt is closed as never charged on the provider's
	// word that it does not know it; it is looked up again for
	// LateCheckFor, and a charge found then is voided.
	lateCheck bool
	// charged: the provider took money for the attempt (a charge that
	// succeeded), which void must return.
	charged *provider.ChargeResult
}

// Attempt outcomes of the attempts metric.
const (
	outcomeSucceeded = "succeeded"
	outcomeFailed    = "failed"
	outcomeVoided    = "voided"
	outcomeCanceled  = "canceled"
	outcomeNotSent   = "not_sent"
)

// advance returns what an answer about pi's open attempt (pi is processing
// or requires_action) does to it. An intent whose CancellationReason is set
// while its attempt is open is being canceled: whatever the attempt did, it
// ends canceled, and money it took is voided.
func advance(pi keelpay.PaymentIntent, a answer, now time.Time) step {
	pi.UpdatedAt = now
	if a.lookup {
		pi.ReconcileCount++
	}
	canceling := pi.CancellationReason != ""
	closeAs := func(le *keelpay.LastError) step {
		if canceling {
			return step{next: cancel(pi, pi.CancellationReason, nil, now), event: keelpay.EventPaymentIntentCanceled, outcome: outcomeCanceled}
		}
		pi.Status, pi.LastError = keelpay.IntentRequiresPaymentMethod, le
		pi.NextAction, pi.ReconcileAt = nil, time.Time{}
		return step{next: pi, event: keelpay.EventPaymentIntentPaymentFailed, outcome: outcomeFailed, code: le.Code}
	}

	switch {
	case errors.Is(a.err, provider.ErrUnknownAttempt):
		if pi.Status == keelpay.IntentProcessing && now.Before(pi.AttemptAt.Add(ReachWindow)) {
			// The provider has not seen the attempt yet, but the run that
			// made it may still send it (it may be paused, or its request
			// on its way): the outcome is not known yet. (An attempt in
			// requires_action was answered already.)
			pi.LastError = lastError(ErrorOutcomeUnknown, "")
			pi.ReconcileAt = nextCheck(pi.Status, pi.AttemptAt, now)
			if reach := pi.AttemptAt.Add(ReachWindow); pi.ReconcileAt.Before(reach) {
				pi.ReconcileAt = reach
			}
			return step{next: pi}
		}
		// The provider never saw the attempt, and no run may send it any
		// more (the process died before the call, or gave up past its send
		// window): nothing was charged. A request that left just before
		// its run stalled could still arrive, so a processing attempt is
		// looked up again for a while.
		sent := pi.Status == keelpay.IntentProcessing
		s := closeAs(lastError(ErrorProviderError, ""))
		s.lateCheck = sent
		return s
	case a.err != nil && !a.lookup && provider.IsOutcomeUnknown(a.err):
		pi.LastError = lastError(ErrorOutcomeUnknown, "")
		return step{next: wait(pi, now)}
	case a.err != nil && a.lookup:
		// The look-up failed; the outcome stays unknown.
		return step{next: wait(pi, now)}
	case a.err != nil:
		// A charge the provider refused without doing anything (kinds
		// other than unavailable and access pending, which the caller
		// reverts).
		code := ErrorProviderError
		if provider.KindOf(a.err) == provider.KindInvalidRequest {
			code = ErrorInvalidRequest
		}
		return closeAs(lastError(code, ""))
	}

	res := a.res
	if res == nil {
		// Neither a result nor an error: nobody can tell what happened.
		if !a.lookup {
			pi.LastError = lastError(ErrorOutcomeUnknown, "")
		}
		return step{next: wait(pi, now)}
	}
	if res.Card != nil {
		pi.PaymentMethod = &keelpay.PaymentMethod{
			Brand: res.Card.Brand, Last4: res.Card.Last4, ExpMonth: res.Card.ExpMonth, ExpYear: res.Card.ExpYear,
			Saved: pi.CardID != "",
		}
	}
	switch res.Status {
	case provider.ChargeRequiresAction:
		if canceling {
			return voidAndCancel(pi, pi.CancellationReason, nil, now)
		}
		pi.Status = keelpay.IntentRequiresAction
		pi.NextAction = &keelpay.NextAction{Type: "three_d_secure", URL: res.ActionURL}
		return step{next: wait(pi, now)}
	case provider.ChargeSucceeded:
		switch {
		case res.Voided:
			// Voided for good by an earlier pass that did not get to
			// commit (Voided is only a void that holds).
			reason, le := pi.CancellationReason, mismatch(pi, res)
			if reason == "" {
				reason = ReasonVoided
			}
			s := step{next: cancel(pi, reason, le, now), event: keelpay.EventPaymentIntentCanceled, outcome: outcomeVoided, code: codeOf(le)}
			s.next.VoidedCharges = withVoid(pi.VoidedCharges, pi.AttemptID, res, keelpay.VoidHeld, now)
			s.charged = res
			return s
		case canceling:
			s := voidAndCancel(pi, pi.CancellationReason, nil, now)
			s.charged = res
			return s
		case mismatch(pi, res) != nil:
			s := voidAndCancel(pi, ReasonVoided, mismatch(pi, res), now)
			s.charged = res
			return s
		}
		pi.Status = keelpay.IntentSucceeded
		pi.AuthorizationCode, pi.OrderID, pi.SucceededAt = res.AuthorizationCode, res.OrderID, now
		pi.LastError, pi.NextAction, pi.ReconcileAt = nil, nil, time.Time{}
		return step{next: pi, event: keelpay.EventPaymentIntentSucceeded, outcome: outcomeSucceeded}
	case provider.ChargeFailed:
		var le *keelpay.LastError
		if res.Failure != nil {
			le = lastError(string(res.Failure.Code), res.Failure.DeclineCode)
		} else {
			le = lastError(ErrorProviderError, "")
		}
		s := closeAs(le)
		s.cardUnavailable = !canceling && le.Code == ErrorCardUnavailable && pi.CardID != ""
		return s
	case provider.ChargePending:
		pi.LastError = lastError(ErrorOutcomeUnknown, "")
		return step{next: wait(pi, now)}
	}
	// A status this service does not know: it cannot tell whether money
	// moved, so it keeps asking.
	return step{next: wait(pi, now)}
}

// wait returns pi with its attempt kept open until the next look-up.
func wait(pi keelpay.PaymentIntent, now time.Time) keelpay.PaymentIntent {
	pi.ReconcileAt = nextCheck(pi.Status, pi.AttemptAt, now)
	pi.UpdatedAt = now
	return pi
}

// voidAndCancel is the step of an attempt whose charge must not stand.
func voidAndCancel(pi keelpay.PaymentIntent, reason string, le *keelpay.LastError, now time.Time) step {
	outcome := outcomeVoided
	if reason != ReasonVoided {
		outcome = outcomeCanceled
	}
	return step{next: cancel(pi, reason, le, now), event: keelpay.EventPaymentIntentCanceled, void: true, outcome: outcome, code: codeOf(le)}
}

// withVoid returns voided with the charge of attemptID (res: what was
// charged) set to status at now: an entry added, or the attempt's entry
// changed. voided is not changed (its array may be shared).
func withVoid(voided []keelpay.VoidedCharge, attemptID string, res *provider.ChargeResult, status keelpay.VoidStatus, now time.Time) []keelpay.VoidedCharge {
	v := keelpay.VoidedCharge{AttemptID: attemptID, Status: status}
	if res != nil {
		v.Amount, v.Currency = res.Amount, res.Currency
	}
	if status == keelpay.VoidHeld {
		v.VoidedAt = now
	}
	out := slices.Clone(voided)
	for i, old := range out {
		if old.AttemptID == attemptID {
			if v.Amount == 0 || v.Currency == "" {
				v.Amount, v.Currency = old.Amount, old.Currency
			}
			out[i] = v
			return out
		}
	}
	return append(out, v)
}

// voidPending is the last error of an attempt whose charge of another
// currency or amount is being voided but the void does not hold yet: the
// intent stays processing, the money still charged, until it does.
func voidPending(le *keelpay.LastError) *keelpay.LastError {
	if le == nil || (le.Code != ErrorCurrencyMismatch && le.Code != ErrorAmountMismatch) {
		return nil
	}
	what := "currency"
	if le.Code == ErrorAmountMismatch {
		what = "amount"
	}
	return &keelpay.LastError{Code: le.Code,
		Message: "The provider charged another " + what + "; the charge is being voided and is still held until the void completes."}
}

// mismatch returns the last error of a charge of another currency or
// amount than the intent's, or nil.
func mismatch(pi keelpay.PaymentIntent, res *provider.ChargeResult) *keelpay.LastError {
	switch {
	case res.Currency != pi.Currency:
		return lastError(ErrorCurrencyMismatch, "")
	case res.Amount != pi.Amount:
		return lastError(ErrorAmountMismatch, "")
	}
	return nil
}

func codeOf(le *keelpay.LastError) string {
	if le == nil {
		return ""
	}
	return le.Code
}
