package provider

import (
	"context"
	"fmt"
	"log/slog"
	"time"
)

// CallTimeoutDefault bounds each call of the services to the provider
// (charges, refunds, look-ups, the check of an application) when their
// Config sets no CallTimeout. payments, refunds, stores and service share
// it.
const CallTimeoutDefault = 30 * time.Second

// Provider is what the service needs from a payment provider. A real
// provider's adapter implements it, and so does the in-process sandbox
// (package provider/sandbox). Every method may be called concurrently.
//
// Errors are an [*Error] (see [ErrorKind]) or [ErrUnknownAttempt]; an error
// of any other type from Charge, Void or Refund counts as an unknown outcome
// (see [IsOutcomeUnknown]).
type Provider interface {
	// CheckApplication validates a store's application credentials at the
	// provider and returns the application's merchant and currency.
	CheckApplication(ctx context.Context, c Credentials) (*Application, error)
	// SaveCard tokenises a card for later charges. A card the provider does
	// not accept is an [*Error] of kind [KindCardRejected].
	SaveCard(ctx context.Context, r SaveCardRequest) (*SavedCard, error)
	// Charge charges a saved card (r.CardToken) or a new card (r.NewCard:
	// tokenise and charge in one step). r.AttemptID is the idempotency key:
	// the same attempt id never charges twice, and a repeated call returns
	// the outcome of the first. A refused charge is a result with
	// [ChargeFailed], not an error. While the outcome is unknown, Charge
	// returns an [*Error] of kind [KindOutcomeUnknown]; it never returns
	// [ChargePending].
	Charge(ctx context.Context, r ChargeRequest) (*ChargeResult, error)
	// LookupCharge reports the outcome of the charge made with attemptID:
	// after an unknown outcome, a crash, or a 3D Secure challenge. An
	// attempt id the provider never saw gives [ErrUnknownAttempt], which
	// means nothing was charged.
	LookupCharge(ctx context.Context, merchantID, attemptID string) (*ChargeResult, error)
	// Void cancels the charge made with attemptID, so that no money stays
	// charged for it (the service voids when the provider charged another
	// currency or amount). It returns nil only once the money is back for
	// good: a void the provider still has pending (a refund not yet
	// succeeded) is an [*Error] of kind [KindOutcomeUnknown], and a void
	// that failed is made again. Voiding twice is not an error; voiding an
	// attempt the provider never saw gives [ErrUnknownAttempt].
	Void(ctx context.Context, merchantID, attemptID string) error
	// Refund returns the whole amount of a succeeded charge. r.AttemptID is
	// the idempotency key of this send, as for Charge. A refused refund is a
	// result with [RefundFailed]; an unknown outcome is an [*Error] of kind
	// [KindOutcomeUnknown].
	Refund(ctx context.Context, r RefundRequest) (*RefundResult, error)
	// LookupRefund reports the outcome of the refund sent with attemptID,
	// or [ErrUnknownAttempt] when the provider never saw it.
	LookupRefund(ctx context.Context, merchantID, attemptID string) (*RefundResult, error)
}

// NotifyFunc is how a provider tells the service, asynchronously and like a
// provider's webhook, that something happened to a charge attempt: a 3D
// Secure challenge was answered or an unknown outcome was resolved. The
// service answers by calling [Provider.LookupCharge]; it also polls, so a
// lost notification only delays the outcome.
type NotifyFunc func(ctx context.Context, merchantID, attemptID string)

// Notifier is implemented by providers that can notify the service. The
// service registers its [NotifyFunc] once, before it starts charging.
type Notifier interface {
	SetNotifier(f NotifyFunc)
}

// Credentials are a store's application credentials at the provider.
type Credentials struct {
	ClientID     string
	ClientSecret string
}

// String returns the client id; the secret is never printed.
func (c Credentials) String() string {
	return fmt.Sprintf("{ClientID:%s ClientSecret:[redacted]}", c.ClientID)
}

// GoString is String, so that %#v does not print the secret either.
func (c Credentials) GoString() string { return "provider.Credentials" + c.String() }

// LogValue keeps the secret out of logs.
func (c Credentials) LogValue() slog.Value {
	return slog.GroupValue(slog.String("client_id", c.ClientID))
}

// Application is a store's application at the provider.
type Application struct {
	// MerchantID identifies the merchant in every later call. It is the
	// same every time the same application is checked.
	MerchantID string
	// Currency is the merchant's currency: an ISO 4217 code, upper case.
	Currency string
}

// Card brands of [SavedCard.Brand].
const (
	BrandVisa       = "visa"
	BrandMastercard = "mastercard"
	BrandAmex       = "amex"
	BrandDiscover   = "discover"
	BrandUnknown    = "unknown"
)

// SaveCardRequest is a card to save or charge: either a reference that the
// provider's own browser element made (PaymentMethod), or the card as the
// buyer typed it (Number, ExpMonth, ExpYear, CVC). The service passes it
// through and never stores or logs the number, the CVC or the name.
type SaveCardRequest struct {
	MerchantID string
	// PaymentMethod is the provider's reference of a card its own browser
	// element captured ([BrowserCapture]); for Stripe a PaymentMethod id,
	// pm_... When it is set, Number, ExpMonth, ExpYear and CVC are empty:
	// the card number never reached keelpay.
	PaymentMethod string
	// Number is the card number, digits only.
	Number   string
	ExpMonth int
	// ExpYear has four digits.
	ExpYear int
	CVC     string
	// Name is the cardholder name; it goes to the provider only.
	Name string
}

// String shows only the last four digits of the number and nothing of the
// CVC or name.
func (r SaveCardRequest) String() string {
	return fmt.Sprintf("{MerchantID:%s PaymentMethod:%s Number:[redacted]%s ExpMonth:%d ExpYear:%d CVC:[redacted] Name:[redacted]}",
		r.MerchantID, r.PaymentMethod, last4(r.Number), r.ExpMonth, r.ExpYear)
}

// GoString is String, so that %#v does not print the card either.
func (r SaveCardRequest) GoString() string { return "provider.SaveCardRequest" + r.String() }

// LogValue keeps the card out of logs.
func (r SaveCardRequest) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("merchant_id", r.MerchantID),
		slog.String("payment_method", r.PaymentMethod),
		slog.String("last4", last4(r.Number)),
		slog.Int("exp_month", r.ExpMonth),
		slog.Int("exp_year", r.ExpYear),
	)
}

func last4(number string) string {
	if len(number) < 4 {
		return ""
	}
	return number[len(number)-4:]
}

// SavedCard is a tokenised card.
type SavedCard struct {
	// Token charges the card later ([ChargeRequest.CardToken]).
	Token string
	// Brand is one of the Brand constants.
	Brand    string
	Last4    string
	ExpMonth int
	ExpYear  int
}

// Billing is the billing address sent with a charge.
type Billing struct {
	// Country is an ISO 3166-1 alpha-2 code.
	Country    string
	State      string
	PostalCode string
}

// ChargeRequest asks for one charge attempt. Exactly one of CardToken and
// NewCard is set.
type ChargeRequest struct {
	MerchantID string
	// AttemptID is the service's attempt id and the idempotency key.
	AttemptID string
	// CardToken is a saved card of the same merchant.
	CardToken string
	// NewCard is tokenised and charged in one step; [ChargeResult.Card]
	// then describes it.
	NewCard *SaveCardRequest
	// Amount is in minor units.
	Amount int64
	// Currency is an ISO 4217 code, upper case.
	Currency string
	// Billing is optional; some cards need it ([FailureBillingRequired]).
	Billing *Billing
}

// ChargeStatus is the status of a charge attempt.
type ChargeStatus string

// Charge statuses.
const (
	ChargeSucceeded ChargeStatus = "succeeded"
	ChargeFailed    ChargeStatus = "failed"
	// ChargeRequiresAction: the buyer must pass a 3D Secure challenge at
	// [ChargeResult.ActionURL]; the outcome follows through LookupCharge.
	ChargeRequiresAction ChargeStatus = "requires_action"
	// ChargePending: the outcome is still unknown. Only LookupCharge
	// returns it; Charge returns an error of kind [KindOutcomeUnknown].
	ChargePending ChargeStatus = "pending"
)

// ChargeResult is the outcome of a charge attempt.
type ChargeResult struct {
	Status ChargeStatus
	// AuthorizationCode is set when the charge succeeded.
	AuthorizationCode string
	// OrderID is the provider's order number, set when the charge
	// succeeded; it may be empty even then, and a refund needs it.
	OrderID string
	// Amount and Currency are what was actually charged when the charge
	// succeeded (they can differ from the request: the service then voids);
	// otherwise what was asked.
	Amount   int64
	Currency string
	// ActionURL is the 3D Secure page, for [ChargeRequiresAction].
	ActionURL string
	// Failure says why, for [ChargeFailed].
	Failure *Failure
	// Card is the card charged. For a new card it is the tokenised card, so
	// that the service can show its brand, last4 and expiry.
	Card *SavedCard
	// Voided reports that the charge was voided for good: no money is held
	// for it. A void the provider has pending, or one that failed after it
	// succeeded, is not Voided: the money is still charged.
	Voided bool
}

// FailureCode is the code of a refused charge or refund. The charge codes
// are the last_error codes of a payment intent, the refund codes those of
// a refund (both in docs/errors.md),
// so the service can use them as last_error.code unchanged.
type FailureCode string

// Charge failure codes.
const (
	// FailureCardDeclined: the bank declined; [Failure.DeclineCode] has
	// the bank's code.
	FailureCardDeclined FailureCode = "card_declined"
	// FailureCardRejected: the provider did not accept the new card.
	FailureCardRejected FailureCode = "card_rejected"
	// FailureCardUnavailable: the saved card stopped working.
	FailureCardUnavailable FailureCode = "card_unavailable"
	// FailureBillingRequired: the card needs a billing address.
	FailureBillingRequired FailureCode = "billing_required"
	// FailureInvalidRequest: the provider refused the request (for example
	// a card token of another merchant).
	FailureInvalidRequest FailureCode = "invalid_request"
	// FailureAuthenticationFailed: 3D Secure was not completed.
	FailureAuthenticationFailed FailureCode = "authentication_failed"
	// FailureAuthenticationExpired: 3D Secure was not answered in time.
	FailureAuthenticationExpired FailureCode = "authentication_expired"
	// FailureProviderError: the provider's answer was unusable; a charge
	// or refund may be tried again later.
	FailureProviderError FailureCode = "provider_error"
)

// Refund failure codes (and [FailureProviderError]).
const (
	// FailureRefundRejected: the provider refused the refund;
	// [Failure.Message] is the provider's own text.
	FailureRefundRejected FailureCode = "refund_rejected"
	// FailureOrderNotFound: the provider does not know the order.
	FailureOrderNotFound FailureCode = "order_not_found"
)

// Decline codes of [FailureCardDeclined].
const (
	DeclineGeneric           = "generic_decline"
	DeclineInsufficientFunds = "insufficient_funds"
)

// Failure says why a charge or refund was refused.
type Failure struct {
	Code FailureCode
	// DeclineCode is the bank's code, for [FailureCardDeclined].
	DeclineCode string
	// Message is English text from the provider.
	Message string
}

// RefundRequest asks to return the whole amount of a succeeded charge.
type RefundRequest struct {
	MerchantID string
	// AttemptID is this send's id and idempotency key.
	AttemptID string
	// ChargeAttemptID and OrderID identify the charge.
	ChargeAttemptID string
	OrderID         string
	// Amount and Currency are the charge's.
	Amount   int64
	Currency string
}

// RefundStatus is the status of a refund send.
type RefundStatus string

// Refund statuses.
const (
	RefundSucceeded RefundStatus = "succeeded"
	RefundFailed    RefundStatus = "failed"
	// RefundPending: the outcome is still unknown. Only LookupRefund
	// returns it; Refund returns an error of kind [KindOutcomeUnknown].
	RefundPending RefundStatus = "pending"
)

// RefundResult is the outcome of a refund send.
type RefundResult struct {
	Status RefundStatus
	// Failure says why, for [RefundFailed].
	Failure *Failure
}

// BrowserCapture is implemented by providers whose own browser element
// captures cards, so that a card number goes from the buyer's browser to the
// provider and never reaches keelpay: the hosted card field mounts the
// element that [BrowserCapture.BrowserElement] describes, the element hands
// back a payment-method reference, and the card field sends keelpay only
// that reference ([SaveCardRequest.PaymentMethod]). With such a provider an
// operator stays out of the card data's PCI DSS scope (SAQ A); without it,
// the card field sends the number through keelpay to the provider.
type BrowserCapture interface {
	// BrowserElement describes the element the hosted card field mounts for
	// the merchant's buyers. An error means the merchant cannot capture
	// cards in the browser now (an [*Error], as for SaveCard).
	BrowserElement(ctx context.Context, merchantID string) (*Element, error)
}

// CardDetacher is implemented by providers that can forget a saved card:
// the service calls DetachCard when a store deletes a card, or erases its
// customer's data, before it deletes the card itself, so that the token can
// no longer be charged at the provider either. Detaching a token that the
// provider no longer knows, or detached already, returns nil: the service
// repeats a deletion whose first run failed after the provider answered.
// An error means nothing changed at the provider (an [*Error]; the service
// answers 503 for [KindUnavailable] and changes nothing either). With a
// provider that does not implement it, a deleted card is only forgotten by
// keelpay.
type CardDetacher interface {
	DetachCard(ctx context.Context, merchantID, token string) error
}

// Element kinds of [Element.Kind]: which protocol the hosted card field
// speaks with the provider's script.
const (
	// ElementStripe is Stripe.js: Stripe(PublishableKey), a Card Element,
	// and stripe.createPaymentMethod.
	ElementStripe = "stripe"
	// ElementSandbox is the sandbox's element, which speaks the same calls
	// as Stripe.js's subset above against the sandbox's own routes.
	ElementSandbox = "sandbox"
)

// Element is a provider's browser element, as the hosted card field loads
// it.
type Element struct {
	// Kind is one of the Element constants.
	Kind string
	// ScriptURL is the provider's script, loaded by the card field page.
	ScriptURL string
	// PublishableKey is the merchant's key for the provider's script (for
	// Stripe, pk_live_... or pk_test_...): public by design.
	PublishableKey string
	// ConnectSources, FrameSources and ScriptSources are the origins the
	// provider's script calls, frames and loads, added to the card field
	// page's Content-Security-Policy. ScriptURL's origin is always a
	// script source.
	ConnectSources []string
	FrameSources   []string
	ScriptSources  []string
}

// RefundNotifier is implemented by providers that tell the service about a
// change of a refund after its send was answered: a refund that the provider
// reported succeeded and later failed (Stripe's refund.failed), or a pending
// one that ended. The service registers its function once, before it starts
// refunding; it is called with the merchant and the refund send's attempt
// id, and the service then calls [Provider.LookupRefund] and trusts only
// that answer. A change of the refund that voided a charge is reported
// through [Notifier] with the charge's attempt id instead, and the service
// then checks the void with [Provider.LookupCharge].
type RefundNotifier interface {
	SetRefundNotifier(f NotifyFunc)
}
