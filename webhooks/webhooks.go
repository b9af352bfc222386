package webhooks

import (
	"encoding/json"
	"errors"
	"time"
)

// Header names of a delivery (docs/webhooks.md). They are written in lower case as
// docs/webhooks.md does; [net/http.Header] canonicalises them on lookup.
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
	HeaderEventType = "service-event-type"
)

// DefaultTolerance is how far a delivery's timestamp may lie from the
// receiver's clock, in either direction (docs/webhooks.md).
const DefaultTolerance = 5 * time.Minute

// ErrInvalidSecret is wrapped by the error of [NewSigner] and [NewVerifier]
// when a secret is empty or not base64, with or without the whsec_ prefix.
var ErrInvalidSecret = errors.New("webhooks: invalid webhook secret")

// Errors reported by [Verifier.Verify] and [Verifier.VerifyValues]. They are
// returned as they are, never wrapped, and their texts contain nothing from the
// delivery, so a receiver may show them to the sender.
var (
	// ErrMissingHeaders: webhook-id, webhook-timestamp or webhook-signature is
	// missing or empty.
	ErrMissingHeaders = errors.New("webhooks: missing webhook-id, webhook-timestamp or webhook-signature")
	// ErrInvalidTimestamp: webhook-timestamp is not a decimal number of
	// seconds (digits only).
	ErrInvalidTimestamp = errors.New("webhooks: invalid webhook-timestamp")
	// ErrTimestampOutOfTolerance is wrapped by [ErrTooOld] and [ErrTooNew].
	ErrTimestampOutOfTolerance = errors.New("webhooks: timestamp outside tolerance")
	// ErrTooOld: the timestamp lies more than the tolerance in the past.
	ErrTooOld error = &toleranceError{"webhooks: timestamp too old"}
	// ErrTooNew: the timestamp lies more than the tolerance in the future.
	ErrTooNew error = &toleranceError{"webhooks: timestamp too new"}
	// ErrNoValidSignature: no v1 entry of webhook-signature matches any
	// secret.
	ErrNoValidSignature = errors.New("webhooks: no valid signature")
)

type toleranceError struct{ msg string }

func (e *toleranceError) Error() string { return e.msg }
func (e *toleranceError) Unwrap() error { return ErrTimestampOutOfTolerance }

// Event is the envelope every delivery carries as its body (docs/api.md). Data.Object
// is left raw: its shape depends on Type (docs/webhooks.md), and a receiver decodes it
// into its own type, typically to read the object's status.
type Event struct {
	ID        string    `json:"id"`
	Type      string    `json:"type"`
	CreatedAt time.Time `json:"created_at"`
	Data      struct {
		Object json.RawMessage `json:"object"`
	} `json:"data"`
}
