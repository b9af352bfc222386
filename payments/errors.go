package payments

import (
	"errors"
	"strings"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/provider"
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

// errCardRejected is 422 card_rejected, with the provider's reason when it
// gave one.
func errCardRejected(reason string) error {
	msg := "The provider did not accept the card; ask for another card."
	if reason != "" {
		msg = "The provider did not accept the card: " + strings.TrimSuffix(reason, ".") + "."
	}
	return keelpay.NewError(keelpay.CodeCardRejected, msg)
}

// providerMessage is the provider's own text of err, for a log or an
// answer: the Message of a provider.Error.
func providerMessage(err error) string {
	var pe *provider.Error
	if errors.As(err, &pe) {
		return pe.Message
	}
	return ""
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
