package provider

import (
	"errors"
	"time"
)

// ErrorKind says what went wrong in a call to the provider, and so whether
// anything was done.
type ErrorKind string

// Error kinds. Every kind except [KindOutcomeUnknown] means the call did
// nothing at the provider.
const (
	// KindInvalidCredentials: the client id or secret is wrong.
	KindInvalidCredentials ErrorKind = "invalid_credentials"
	// KindAppNotFound: the credentials are valid but the provider has no
	// payments application for them.
	KindAppNotFound ErrorKind = "app_not_found"
	// KindMissingRoles: the application lacks roles; see
	// [Error.MissingRoles].
	KindMissingRoles ErrorKind = "missing_roles"
	// KindAccessPending: the platform's access to the merchant is not
	// ready yet; retry after [Error.RetryAfter].
	KindAccessPending ErrorKind = "access_pending"
	// KindCertificateMismatch: the platform's certificate does not match
	// the one the provider has on file.
	KindCertificateMismatch ErrorKind = "certificate_mismatch"
	// KindUnavailable: the provider could not be reached or refused to work
	// now; nothing was done, so the call is safe to repeat (after
	// [Error.RetryAfter] when set).
	KindUnavailable ErrorKind = "unavailable"
	// KindOutcomeUnknown: the call may or may not have taken effect (a
	// time-out). Do not charge again with a new attempt id; look the
	// attempt up later, or repeat it with the same attempt id.
	KindOutcomeUnknown ErrorKind = "outcome_unknown"
	// KindCardRejected: SaveCard; the provider did not accept the card.
	KindCardRejected ErrorKind = "card_rejected"
	// KindInvalidRequest: the request was malformed (no merchant, no
	// attempt id); nothing was done.
	KindInvalidRequest ErrorKind = "invalid_request"
)

// Error is the error a provider returns for a call that did not produce a
// result. Use [errors.As], [KindOf] or [IsOutcomeUnknown] to inspect it.
type Error struct {
	Kind ErrorKind
	// Message is English text for logs.
	Message string
	// RetryAfter, when positive, is how long to wait before trying again
	// ([KindAccessPending], [KindUnavailable]).
	RetryAfter time.Duration
	// MissingRoles lists the roles the application lacks, for
	// [KindMissingRoles].
	MissingRoles []string
}

func (e *Error) Error() string {
	if e.Message == "" {
		return "provider: " + string(e.Kind)
	}
	return "provider: " + string(e.Kind) + ": " + e.Message
}

// ErrUnknownAttempt is returned by lookups and Void for an attempt id the
// provider never saw: nothing was charged or refunded with it.
var ErrUnknownAttempt = errors.New("provider: unknown attempt id")

// KindOf returns the kind of err when it is or wraps an [*Error], and ""
// otherwise.
func KindOf(err error) ErrorKind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return ""
}

// IsOutcomeUnknown reports whether err leaves it unknown whether the call
// took effect: an [*Error] of kind [KindOutcomeUnknown], or any error that is
// neither an [*Error] nor [ErrUnknownAttempt] (a cancelled context, a broken
// connection), because then the provider's state cannot be known. After a
// Charge or Refund with such an error the service keeps the attempt open and
// resolves it with a lookup.
func IsOutcomeUnknown(err error) bool {
	if err == nil || errors.Is(err, ErrUnknownAttempt) {
		return false
	}
	kind := KindOf(err)
	return kind == "" || kind == KindOutcomeUnknown
}
