package payments

import (
	"github.com/keelpay/keelpay"
)

func errCardSessionNotFound() error {
	return keelpay.NewError(keelpay.CodeCardSessionNotFound, "The card session does not exist.")
}

func errCardNotFound() error {
	return keelpay.NewError(keelpay.CodeCardNotFound, "The card does not exist, or is not a card of the intent's customer.")
}

func errCardUnavailable() error {
	return keelpay.NewError(keelpay.CodeCardUnavailable,
		"The card can no longer be used; the buyer enters the card again.")
}

func errIntentNotFound() error {
	return keelpay.NewError(keelpay.CodePaymentIntentNotFound, "The payment intent does not exist.")
}

func errCardRejected() error {
	return keelpay.NewError(keelpay.CodeCardRejected,
		"The provider did not accept the card; ask for another card.")
}

func errSessionState(status keelpay.CardSessionStatus) error {
	return keelpay.NewError(keelpay.CodeCardSessionUnexpectedState,
		"The card session is no longer open; see details.status.").WithDetail("status", string(status))
}

func errUnexpectedState(status keelpay.PaymentIntentStatus) error {
	return keelpay.NewError(keelpay.CodePaymentIntentUnexpectedState,
		"The payment intent cannot be confirmed in its status; see details.status.").WithDetail("status", string(status))
}

func errNotCancelable(status keelpay.PaymentIntentStatus) error {
	return keelpay.NewError(keelpay.CodePaymentIntentNotCancelable,
		"Only an intent in requires_payment_method or requires_action can be canceled; see details.status.").
		WithDetail("status", string(status))
}
