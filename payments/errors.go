package payments

import (
	"errors"
	"net/http"
	"time"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/provider"
)

// Retry-After of the 503s when the provider gives none.
const (
	unavailableRetryAfter   = 30 * time.Second
	accessPendingRetryAfter = 60 * time.Second
)

func errCardSessionNotFound() error {
	return keelpay.NewError(http.StatusNotFound, keelpay.CodeCardSessionNotFound, "The card session does not exist.")
}

func errCardNotFound() error {
	return keelpay.NewError(http.StatusNotFound, keelpay.CodeCardNotFound, "The card does not exist, or is not a card of the intent's customer.")
}

func errCardUnavailable() error {
	return keelpay.NewError(http.StatusConflict, keelpay.CodeCardUnavailable,
		"The card can no longer be used; the buyer enters the card again.")
}

func errIntentNotFound() error {
	return keelpay.NewError(http.StatusNotFound, keelpay.CodePaymentIntentNotFound, "The payment intent does not exist.")
}

func errCardRejected() error {
	return keelpay.NewError(http.StatusUnprocessableEntity, keelpay.CodeCardRejected,
		"The provider did not accept the card; ask for another card.")
}

func errSessionState(status keelpay.CardSessionStatus) error {
	return keelpay.NewError(http.StatusConflict, keelpay.CodeCardSessionUnexpectedState,
		"The card session is no longer open; see details.status.").WithDetail("status", string(status))
}

func errUnexpectedState(status keelpay.PaymentIntentStatus) error {
	return keelpay.NewError(http.StatusConflict, keelpay.CodePaymentIntentUnexpectedState,
		"The payment intent cannot be confirmed in its status; see details.status.").WithDetail("status", string(status))
}

func errNotCancelable(status keelpay.PaymentIntentStatus) error {
	return keelpay.NewError(http.StatusConflict, keelpay.CodePaymentIntentNotCancelable,
		"Only an intent in requires_payment_method or requires_action can be canceled; see details.status.").
		WithDetail("status", string(status))
}

func errUnavailable(retryAfter time.Duration) *keelpay.Error {
	if retryAfter <= 0 {
		retryAfter = unavailableRetryAfter
	}
	return keelpay.NewError(http.StatusServiceUnavailable, keelpay.CodeProviderAPIUnavailable,
		"The provider is unavailable; nothing was done. Retry after the time in Retry-After.").WithRetryAfter(retryAfter)
}

// NotSent returns the 503 of a provider error that did nothing and is
// worth repeating (unavailable: provider_api_unavailable; access pending:
// platform_access_pending), with the provider's Retry-After or the
// default, and nil for any other error. Refunds answer with it too.
func NotSent(err error) *keelpay.Error {
	var pe *provider.Error
	if !errors.As(err, &pe) {
		return nil
	}
	switch pe.Kind {
	case provider.KindUnavailable:
		return errUnavailable(pe.RetryAfter)
	case provider.KindAccessPending:
		retryAfter := pe.RetryAfter
		if retryAfter <= 0 {
			retryAfter = accessPendingRetryAfter
		}
		return keelpay.NewError(http.StatusServiceUnavailable, keelpay.CodePlatformAccessPending,
			"The platform's access to the store is not ready yet; nothing was done. Retry after the time in Retry-After.").
			WithRetryAfter(retryAfter)
	}
	return nil
}
