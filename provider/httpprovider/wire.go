package httpprovider

import (
	"errors"
	"net/http"
	"time"

	"github.com/keelpay/keelpay/provider"
)

// PathPrefix is where the methods are served, followed by their names.
const PathPrefix = "/sandbox/provider/v1/"

// Method names: the last segment of each path.
const (
	methodCheckApplication = "check_application"
	methodSaveCard         = "save_card"
	methodCharge           = "charge"
	methodLookupCharge     = "lookup_charge"
	methodVoid             = "void"
	methodRefund           = "refund"
	methodLookupRefund     = "lookup_refund"
	methodBrowserElement   = "browser_element"
)

// The wire types. Those without nested structs have exactly the fields of
// their provider type, so a plain conversion translates them, and a field
// added to the provider type does not compile until it is added here.

type merchantRef struct {
	MerchantID string `json:"merchant_id"`
}

type element struct {
	Kind           string   `json:"kind"`
	ScriptURL      string   `json:"script_url"`
	PublishableKey string   `json:"publishable_key"`
	ConnectSources []string `json:"connect_sources"`
	FrameSources   []string `json:"frame_sources"`
	ScriptSources  []string `json:"script_sources"`
}

// browserElement is the answer of browser_element: the element, or null
// when the served provider has none.
type browserElement struct {
	Element *element `json:"element"`
}

type credentials struct {
	ClientID     string `json:"client_id"`
	ClientSecret string `json:"client_secret"`
}

type application struct {
	MerchantID string `json:"merchant_id"`
	Currency   string `json:"currency"`
}

type saveCardRequest struct {
	MerchantID    string `json:"merchant_id"`
	PaymentMethod string `json:"payment_method,omitempty"`
	Number        string `json:"number"`
	ExpMonth      int    `json:"exp_month"`
	ExpYear       int    `json:"exp_year"`
	CVC           string `json:"cvc"`
	Name          string `json:"name"`
}

type savedCard struct {
	Token    string `json:"token"`
	Brand    string `json:"brand"`
	Last4    string `json:"last4"`
	ExpMonth int    `json:"exp_month"`
	ExpYear  int    `json:"exp_year"`
}

type billing struct {
	Country    string `json:"country"`
	State      string `json:"state"`
	PostalCode string `json:"postal_code"`
}

type failure struct {
	Code        provider.FailureCode `json:"code"`
	DeclineCode string               `json:"decline_code,omitempty"`
	Message     string               `json:"message"`
}

type chargeRequest struct {
	MerchantID string           `json:"merchant_id"`
	AttemptID  string           `json:"attempt_id"`
	CardToken  string           `json:"card_token,omitempty"`
	NewCard    *saveCardRequest `json:"new_card,omitempty"`
	Amount     int64            `json:"amount"`
	Currency   string           `json:"currency"`
	Billing    *billing         `json:"billing,omitempty"`
}

type chargeResult struct {
	Status            provider.ChargeStatus `json:"status"`
	AuthorizationCode string                `json:"authorization_code,omitempty"`
	OrderID           string                `json:"order_id,omitempty"`
	Amount            int64                 `json:"amount"`
	Currency          string                `json:"currency"`
	ActionURL         string                `json:"action_url,omitempty"`
	Failure           *failure              `json:"failure,omitempty"`
	Card              *savedCard            `json:"card,omitempty"`
	Voided            bool                  `json:"voided,omitempty"`
}

// attemptRef names an attempt: the body of lookup_charge, void and
// lookup_refund.
type attemptRef struct {
	MerchantID string `json:"merchant_id"`
	AttemptID  string `json:"attempt_id"`
}

type refundRequest struct {
	MerchantID      string `json:"merchant_id"`
	AttemptID       string `json:"attempt_id"`
	ChargeAttemptID string `json:"charge_attempt_id"`
	OrderID         string `json:"order_id"`
	Amount          int64  `json:"amount"`
	Currency        string `json:"currency"`
}

type refundResult struct {
	Status  provider.RefundStatus `json:"status"`
	Failure *failure              `json:"failure,omitempty"`
}

// convert returns a copy of *p as a T (nil for nil), for the types that
// convert field by field.
func convert[T, F any](p *F, conv func(F) T) *T {
	if p == nil {
		return nil
	}
	return new(conv(*p))
}

func toWireCharge(r provider.ChargeRequest) chargeRequest {
	return chargeRequest{
		MerchantID: r.MerchantID,
		AttemptID:  r.AttemptID,
		CardToken:  r.CardToken,
		NewCard:    convert(r.NewCard, func(c provider.SaveCardRequest) saveCardRequest { return saveCardRequest(c) }),
		Amount:     r.Amount,
		Currency:   r.Currency,
		Billing:    convert(r.Billing, func(b provider.Billing) billing { return billing(b) }),
	}
}

func (r chargeRequest) provider() provider.ChargeRequest {
	return provider.ChargeRequest{
		MerchantID: r.MerchantID,
		AttemptID:  r.AttemptID,
		CardToken:  r.CardToken,
		NewCard:    convert(r.NewCard, func(c saveCardRequest) provider.SaveCardRequest { return provider.SaveCardRequest(c) }),
		Amount:     r.Amount,
		Currency:   r.Currency,
		Billing:    convert(r.Billing, func(b billing) provider.Billing { return provider.Billing(b) }),
	}
}

func toWireChargeResult(r provider.ChargeResult) chargeResult {
	return chargeResult{
		Status:            r.Status,
		AuthorizationCode: r.AuthorizationCode,
		OrderID:           r.OrderID,
		Amount:            r.Amount,
		Currency:          r.Currency,
		ActionURL:         r.ActionURL,
		Failure:           convert(r.Failure, func(f provider.Failure) failure { return failure(f) }),
		Card:              convert(r.Card, func(c provider.SavedCard) savedCard { return savedCard(c) }),
		Voided:            r.Voided,
	}
}

func (r chargeResult) provider() *provider.ChargeResult {
	return &provider.ChargeResult{
		Status:            r.Status,
		AuthorizationCode: r.AuthorizationCode,
		OrderID:           r.OrderID,
		Amount:            r.Amount,
		Currency:          r.Currency,
		ActionURL:         r.ActionURL,
		Failure:           convert(r.Failure, func(f failure) provider.Failure { return provider.Failure(f) }),
		Card:              convert(r.Card, func(c savedCard) provider.SavedCard { return provider.SavedCard(c) }),
		Voided:            r.Voided,
	}
}

func toWireRefundResult(r provider.RefundResult) refundResult {
	return refundResult{
		Status:  r.Status,
		Failure: convert(r.Failure, func(f provider.Failure) failure { return failure(f) }),
	}
}

func (r refundResult) provider() *provider.RefundResult {
	return &provider.RefundResult{
		Status:  r.Status,
		Failure: convert(r.Failure, func(f failure) provider.Failure { return provider.Failure(f) }),
	}
}

// Error kinds of the protocol beyond provider.ErrorKind.
const (
	// kindUnknownAttempt is provider.ErrUnknownAttempt.
	kindUnknownAttempt provider.ErrorKind = "unknown_attempt"
	// kindInternal: the provider failed with an error that is neither a
	// *provider.Error nor ErrUnknownAttempt, so what it did is not known.
	kindInternal provider.ErrorKind = "internal_error"
)

// kindStatus is the HTTP status of each error kind. Clients decide by the
// kind; the status is for people reading logs and for proxies.
var kindStatus = map[provider.ErrorKind]int{
	provider.KindInvalidRequest:      http.StatusBadRequest,
	provider.KindInvalidCredentials:  http.StatusUnauthorized,
	kindUnknownAttempt:               http.StatusNotFound,
	provider.KindAppNotFound:         http.StatusUnprocessableEntity,
	provider.KindMissingRoles:        http.StatusUnprocessableEntity,
	provider.KindCardRejected:        http.StatusUnprocessableEntity,
	kindInternal:                     http.StatusInternalServerError,
	provider.KindAccessPending:       http.StatusServiceUnavailable,
	provider.KindCertificateMismatch: http.StatusServiceUnavailable,
	provider.KindUnavailable:         http.StatusServiceUnavailable,
	provider.KindOutcomeUnknown:      http.StatusGatewayTimeout,
}

// errorBody is the body of every answer but 200.
type errorBody struct {
	Error wireError `json:"error"`
}

type wireError struct {
	Kind         provider.ErrorKind `json:"kind"`
	Message      string             `json:"message,omitempty"`
	RetryAfterMS int64              `json:"retry_after_ms,omitempty"`
	MissingRoles []string           `json:"missing_roles,omitempty"`
}

// toWireError returns the protocol's form of a provider's error and its
// HTTP status.
func toWireError(err error) (wireError, int) {
	var pe *provider.Error
	switch {
	case errors.Is(err, provider.ErrUnknownAttempt):
		return wireError{Kind: kindUnknownAttempt, Message: "the provider never saw this attempt id"}, kindStatus[kindUnknownAttempt]
	case errors.As(err, &pe) && kindStatus[pe.Kind] != 0 && pe.Kind != kindUnknownAttempt && pe.Kind != kindInternal:
		return wireError{
			Kind:         pe.Kind,
			Message:      pe.Message,
			RetryAfterMS: pe.RetryAfter.Milliseconds(),
			MissingRoles: pe.MissingRoles,
		}, kindStatus[pe.Kind]
	}
	// The message of another error could carry anything; it stays in the
	// serving process.
	return wireError{Kind: kindInternal, Message: "the provider failed; what it did is not known"}, kindStatus[kindInternal]
}

// err returns the error the provider returned, or false when the kind is
// not one this client knows (or is kindInternal): then what happened is
// not known.
func (e wireError) err() (error, bool) {
	switch {
	case e.Kind == kindUnknownAttempt:
		return provider.ErrUnknownAttempt, true
	case e.Kind == kindInternal || kindStatus[e.Kind] == 0:
		return nil, false
	}
	return &provider.Error{
		Kind:         e.Kind,
		Message:      e.Message,
		RetryAfter:   time.Duration(e.RetryAfterMS) * time.Millisecond,
		MissingRoles: e.MissingRoles,
	}, true
}
