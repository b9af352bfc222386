package keelpay

import (
	"errors"
	"time"
)

// Code is a stable error code. Clients decide with the HTTP status and the
// code; the message is English text for logs and may change.
type Code string

// General codes (docs/errors.md).
const (
	CodeInvalidRequest         Code = "invalid_request"
	CodeInvalidAPIKey          Code = "invalid_api_key"
	CodeRequestTooLarge        Code = "request_too_large"
	CodeUnsupportedMediaType   Code = "unsupported_media_type"
	CodeRateLimited            Code = "rate_limited"
	CodeInternalError          Code = "internal_error"
	CodeProviderAPIUnavailable Code = "provider_api_unavailable"
	CodePlatformAccessPending  Code = "platform_access_pending"
	// CodeDatabaseUnavailable is the readiness check's answer (the health
	// handler, GET /healthz of the reference server) while the server
	// cannot reach its database.
	CodeDatabaseUnavailable Code = "database_unavailable"
	// CodeNotFound and CodeMethodNotAllowed answer a path or method the API
	// does not have, so that every answer is a JSON error (see
	// docs/errors.md).
	CodeNotFound         Code = "not_found"
	CodeMethodNotAllowed Code = "method_not_allowed"
)

// Setup codes (docs/errors.md).
const (
	CodeInvalidCredentials          Code = "invalid_credentials"
	CodeStoreAlreadyEnabled         Code = "store_already_enabled"
	CodeClientIDInUse               Code = "client_id_in_use"
	CodeSetupConflict               Code = "setup_conflict"
	CodeMissingRoles                Code = "missing_roles"
	CodeClientAppNotFound           Code = "client_app_not_found"
	CodePlatformCertificateMismatch Code = "platform_certificate_mismatch"
)

// Card session, card and payment intent codes (docs/errors.md), plus
// card_rejected (docs/api.md, capture) and the two unexpected-state codes
// decided by the implementation (docs/errors.md).
const (
	CodeCardSessionNotFound        Code = "card_session_not_found"
	CodeCardNotFound               Code = "card_not_found"
	CodeCardUnavailable            Code = "card_unavailable"
	CodeCardRejected               Code = "card_rejected"
	CodePaymentIntentNotFound      Code = "payment_intent_not_found"
	CodePaymentIntentNotCancelable Code = "payment_intent_not_cancelable"
	// CodePaymentIntentUnexpectedState answers a confirm of an intent that
	// cannot be confirmed now (processing, succeeded, canceled).
	CodePaymentIntentUnexpectedState Code = "payment_intent_unexpected_state"
	// CodeCardSessionUnexpectedState answers a capture with a card session
	// that is no longer open (completed or expired); details.status holds
	// its status.
	CodeCardSessionUnexpectedState Code = "card_session_unexpected_state"
)

// Refund codes (docs/errors.md).
const (
	CodeRefundNotFound             Code = "refund_not_found"
	CodePaymentIntentNotRefundable Code = "payment_intent_not_refundable"
	CodeRefundExists               Code = "refund_exists"
	CodeRefundInProgress           Code = "refund_in_progress"
)

// Event codes (docs/errors.md).
const (
	CodeEventNotFound Code = "event_not_found"
)

// Idempotency codes (docs/api.md, Idempotency-Key).
const (
	CodeIdempotencyKeyReused Code = "idempotency_key_reused"
	CodeIdempotencyKeyInUse  Code = "idempotency_key_in_use"
)

// ErrIdempotencyKeyInUse is the idempotency_key_in_use of a request
// whose Idempotency-Key belongs to a request that is still running, or
// whose work (a provider call) may still be under way: retry after wait,
// at least a second.
func ErrIdempotencyKeyInUse(wait time.Duration) *Error {
	return NewError(CodeIdempotencyKeyInUse,
		"A request with this Idempotency-Key is still running; retry after the time in Retry-After.").
		WithRetryAfter(max(wait, time.Second))
}

// Error is the one error type the services return for anything a client
// should see. It says what happened, not how to say it over HTTP: httpapi
// renders it as {"error":{"code","message","details"}} with the HTTP status
// its one table gives the code (httpapi.Status). Any other error is an
// internal error: the client sees 500 internal_error and the detail goes
// only to the log.
type Error struct {
	Code    Code
	Message string
	// Details carries extra data for some codes (field, code, status,
	// reason, refund, missing_roles, store_id, publishable_key).
	Details map[string]any
	// RetryAfter, when positive, is sent as the Retry-After header, rounded
	// up to whole seconds.
	RetryAfter time.Duration
}

func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

// NewError returns an Error with the given code and message.
func NewError(code Code, message string) *Error {
	return &Error{Code: code, Message: message}
}

// InvalidRequest returns an invalid_request naming the field that failed
// and why (details.field and details.code). The message must not contain a
// value the client sent.
func InvalidRequest(field, detailCode, message string) *Error {
	d := map[string]any{"code": detailCode}
	if field != "" {
		d["field"] = field
	}
	return &Error{Code: CodeInvalidRequest, Message: message, Details: d}
}

// WithDetail returns e with details[key] = value added.
func (e *Error) WithDetail(key string, value any) *Error {
	if e.Details == nil {
		e.Details = map[string]any{}
	}
	e.Details[key] = value
	return e
}

// WithRetryAfter returns e with RetryAfter set.
func (e *Error) WithRetryAfter(d time.Duration) *Error {
	e.RetryAfter = d
	return e
}

// AsError reports whether err is or wraps an *Error, and returns it.
func AsError(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}

// ErrorCode returns the code of err when it is or wraps an *Error, and ""
// otherwise.
func ErrorCode(err error) Code {
	if e, ok := AsError(err); ok {
		return e.Code
	}
	return ""
}
