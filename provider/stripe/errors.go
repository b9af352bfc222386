package stripe

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	sg "github.com/stripe/stripe-go/v84"

	"github.com/keelpay/keelpay/provider"
)

const defaultTimeout = 30 * time.Second

// asStripe returns err's Stripe error, if Stripe answered.
func asStripe(err error) (*sg.Error, bool) {
	var se *sg.Error
	if errors.As(err, &se) && se.HTTPStatusCode != 0 {
		return se, true
	}
	return nil, false
}

// retryAfter is the Retry-After Stripe sent with se, in seconds, or 0.
func retryAfter(se *sg.Error) time.Duration {
	if se.LastResponse == nil {
		return 0
	}
	s, err := strconv.Atoi(strings.TrimSpace(se.LastResponse.Header.Get("Retry-After")))
	if err != nil || s <= 0 {
		return 0
	}
	return time.Duration(s) * time.Second
}

func isPermissionError(err error) bool {
	se, ok := asStripe(err)
	return ok && se.HTTPStatusCode == http.StatusForbidden
}

// isRawCardRefusal reports whether Stripe refused a card number sent
// through its API because the account has no access to raw card data APIs.
func isRawCardRefusal(err error) bool {
	se, ok := asStripe(err)
	if !ok || se.Type != sg.ErrorTypeInvalidRequest {
		return false
	}
	msg := strings.ToLower(se.Msg)
	return strings.Contains(msg, "raw card data") || strings.Contains(msg, "card numbers directly")
}

// rawCardMessage explains the refusal of isRawCardRefusal.
const rawCardMessage = "Stripe refused the card number: this Stripe account is not enabled for raw card data APIs " +
	"(see the Stripe adapter's documentation on PCI scope); capture cards with Stripe.js instead"

// rawCardOffMessage explains why the adapter refuses a card number when
// Config.RawCardData is off.
const rawCardOffMessage = "keelpay does not send card numbers to Stripe unless the Stripe adapter's RawCardData setting is on " +
	"(KEELPAY_STRIPE_RAW_CARD_DATA=1 in the reference server): sending card numbers puts the deployment in PCI DSS scope (SAQ D) " +
	"and needs a Stripe account enabled for raw card data APIs; capture cards with Stripe.js (SaveCardRequest.PaymentMethod) instead"

// setupError is err from a call that moves no money (CheckApplication,
// SaveCard, lookups): nothing was done, whatever happened.
func setupError(err error) error {
	var pe *provider.Error
	if errors.As(err, &pe) {
		return err
	}
	se, ok := asStripe(err)
	if !ok {
		return &provider.Error{Kind: provider.KindUnavailable, Message: "Stripe did not answer: " + err.Error()}
	}
	switch {
	case se.HTTPStatusCode == http.StatusUnauthorized:
		return &provider.Error{Kind: provider.KindInvalidCredentials, Message: se.Msg}
	case se.HTTPStatusCode == http.StatusForbidden:
		return &provider.Error{Kind: provider.KindMissingRoles, Message: se.Msg}
	case se.HTTPStatusCode == http.StatusTooManyRequests || se.HTTPStatusCode >= 500:
		return &provider.Error{Kind: provider.KindUnavailable, Message: se.Msg, RetryAfter: retryAfter(se)}
	default:
		return &provider.Error{Kind: provider.KindInvalidRequest, Message: se.Msg}
	}
}

// moneyError is err from a call that may move money (creating a
// PaymentIntent or a Refund, cancelling): an answer that shows Stripe did
// nothing is that kind; anything else, a 5xx, a 409 (the same idempotency
// key in flight) or no answer at all, leaves the outcome unknown.
func moneyError(err error) error {
	var pe *provider.Error
	if errors.As(err, &pe) {
		return err
	}
	se, ok := asStripe(err)
	if !ok {
		return &provider.Error{Kind: provider.KindOutcomeUnknown, Message: "no answer from Stripe: " + err.Error()}
	}
	switch {
	case se.HTTPStatusCode == http.StatusUnauthorized:
		return &provider.Error{Kind: provider.KindInvalidCredentials, Message: se.Msg}
	case se.HTTPStatusCode == http.StatusForbidden:
		return &provider.Error{Kind: provider.KindMissingRoles, Message: se.Msg}
	case se.HTTPStatusCode == http.StatusTooManyRequests && se.Code == sg.ErrorCodeRateLimit:
		// Only a rate limit is documented as a refusal before anything
		// was done (docs.stripe.com/rate-limits). A 429 lock_timeout is a
		// request that met another on the same object; Stripe's libraries
		// repeat it under the same idempotency key
		// (docs.stripe.com/error-low-level), which says nothing of whether
		// the first one did the work. That, and a 429 of any other code,
		// falls through to an unknown outcome: the service looks it up.
		return &provider.Error{Kind: provider.KindUnavailable, Message: se.Msg, RetryAfter: retryAfter(se)}
	case se.HTTPStatusCode == http.StatusTooManyRequests || se.HTTPStatusCode == http.StatusConflict || se.HTTPStatusCode >= 500:
		return &provider.Error{Kind: provider.KindOutcomeUnknown, Message: se.Msg}
	default:
		return &provider.Error{Kind: provider.KindInvalidRequest, Message: se.Msg}
	}
}

// chargeFailure maps a Stripe payment error (a PaymentIntent's
// last_payment_error, or a card_error) onto the service's failure codes,
// keeping Stripe's decline_code. billing tells whether the charge carried
// a billing address.
func chargeFailure(se *sg.Error, billing bool) *provider.Failure {
	msg := se.Msg
	switch {
	case se.Code == sg.ErrorCodePaymentIntentAuthenticationFailure:
		return &provider.Failure{Code: provider.FailureAuthenticationFailed, Message: msg}
	case !billing && (se.Code == sg.ErrorCodeIncorrectZip || se.DeclineCode == "incorrect_zip" || se.DeclineCode == "incorrect_address"):
		return &provider.Failure{Code: provider.FailureBillingRequired, Message: msg}
	case se.Code == sg.ErrorCodeIncorrectNumber || se.Code == sg.ErrorCodeInvalidNumber ||
		se.Code == sg.ErrorCodeInvalidExpiryMonth || se.Code == sg.ErrorCodeInvalidExpiryYear ||
		se.Code == sg.ErrorCodeInvalidCVC:
		return &provider.Failure{Code: provider.FailureCardRejected, Message: msg}
	case se.Type == sg.ErrorTypeCard || se.Code == sg.ErrorCodeCardDeclined || se.DeclineCode != "":
		dc := string(se.DeclineCode)
		if dc == "" {
			dc = string(se.Code)
		}
		if dc == string(sg.ErrorCodeCardDeclined) {
			dc = provider.DeclineGeneric
		}
		return &provider.Failure{Code: provider.FailureCardDeclined, DeclineCode: dc, Message: msg}
	default:
		return &provider.Failure{Code: provider.FailureProviderError, Message: msg}
	}
}
