package keelpay

import (
	"encoding/json"
	"time"
)

// Store is a store set up with its application at the payment provider.
// The secret key is kept only as its SHA-256 hash and the application's
// client secret only as a salted hash (nothing but setup compares it, and
// no provider call needs it); the webhook secret is kept, sealed at rest,
// so that deliveries can be signed.
type Store struct {
	ID       string
	ClientID string
	// ClientSecretHash is keyring.HashSecret of the application's client
	// secret at the provider.
	ClientSecretHash string
	MerchantID       string
	Currency         string // ISO 4217, upper case; the merchant's currency at the provider
	PublishableKey   string
	SecretKeyHash    []byte
	WebhookURL       string
	WebhookSecret    string
	// Version increases with every change; a setup that read an older
	// version loses to the one that changed it (409 setup_conflict).
	Version   int64
	CreatedAt time.Time
	UpdatedAt time.Time
}

// PaymentIntentStatus is the status of a payment intent (docs/api.md).
type PaymentIntentStatus string

// Payment intent statuses.
const (
	IntentRequiresPaymentMethod PaymentIntentStatus = "requires_payment_method"
	IntentRequiresAction        PaymentIntentStatus = "requires_action"
	IntentProcessing            PaymentIntentStatus = "processing"
	IntentSucceeded             PaymentIntentStatus = "succeeded"
	IntentCanceled              PaymentIntentStatus = "canceled"
)

// Customer identifies the buyer. Name, email and phone are personal data:
// they are stored, returned only to the secret key, and never put in events
// or logs.
//
// Its JSON has one of the two shapes the API documents (docs/openapi.json):
// the customer without personal data, {"id"} (events, cards, the
// publishable key's view), when Name, Email and Phone are all empty; else
// the customer as the secret key sees it, all four keys, each present even
// when empty, since the API requires all four. Code that renders a view
// without personal data clears the three fields (keeps only ID); it never
// relies on them being empty by chance.
type Customer struct {
	ID    string `json:"id"`
	Name  string `json:"name"`
	Email string `json:"email"`
	Phone string `json:"phone"`
}

// customerRef is the JSON of a Customer without personal data.
type customerRef struct {
	ID string `json:"id"`
}

// customerFull is the JSON of a Customer with its personal data.
type customerFull Customer

// MarshalJSON writes {"id"} for a customer with only an id, else all four
// keys (see [Customer]).
func (c Customer) MarshalJSON() ([]byte, error) {
	if c.Name == "" && c.Email == "" && c.Phone == "" {
		return json.Marshal(customerRef{ID: c.ID})
	}
	return json.Marshal(customerFull(c))
}

// Billing is the billing address part the provider may ask for.
type Billing struct {
	Country    string `json:"country"`
	State      string `json:"state,omitempty"`
	PostalCode string `json:"postal_code,omitempty"`
}

// PaymentMethod describes the card an intent was charged with.
type PaymentMethod struct {
	Brand    string `json:"brand"`
	Last4    string `json:"last4"`
	ExpMonth int    `json:"exp_month"`
	ExpYear  int    `json:"exp_year"`
	Saved    bool   `json:"saved"`
}

// LastError describes the last failed payment attempt or refund send.
type LastError struct {
	Code        string `json:"code"`
	DeclineCode string `json:"decline_code,omitempty"`
	Message     string `json:"message"`
}

// NextAction tells the browser what the buyer must do; in requires_action it
// is the 3D Secure page.
type NextAction struct {
	Type string `json:"type"`
	URL  string `json:"url"`
}

// PaymentIntent is a payment of one amount by one card (docs/api.md).
type PaymentIntent struct {
	ID                 string
	StoreID            string
	Status             PaymentIntentStatus
	Amount             int64 // minor units
	Currency           string
	Customer           Customer
	Description        string
	Reference          string
	Metadata           map[string]string
	Billing            *Billing
	PageOrigins        []string
	ClientSecret       string
	CardID             string
	PaymentMethod      *PaymentMethod
	AuthorizationCode  string
	OrderID            string
	RefundID           string
	LastError          *LastError
	NextAction         *NextAction
	CancellationReason string
	// AttemptID is the current or last payment attempt's id, the provider's
	// idempotency key. Set while processing or requires_action.
	AttemptID string
	// MerchantID is the merchant at the provider that the current or last
	// attempt was made with: lookups and voids must ask that merchant even
	// if the store was bound to another application since.
	MerchantID string
	// AttemptAt is when the current attempt was recorded; the reconciler's
	// schedule and the 3D Secure wait count from it.
	AttemptAt time.Time
	// ReconcileAt is when the reconciler next asks the provider about an
	// unresolved attempt; zero when nothing is unresolved.
	ReconcileAt time.Time
	// ReconcileCount is how many times the reconciler asked.
	ReconcileCount int
	SucceededAt    time.Time
	ExpiresAt      time.Time
	CreatedAt      time.Time
	UpdatedAt      time.Time
	Version        int64
	// VoidedCharges are the charges the provider made that the service
	// voided, or is voiding, oldest first: a charge of another currency
	// or amount, a charge made while the intent was being canceled, and a
	// charge that reached the provider for an attempt already closed as
	// never charged. Empty on almost every intent.
	VoidedCharges []VoidedCharge
}

// VoidStatus says whether the void of a [VoidedCharge] holds.
type VoidStatus string

// Void statuses.
const (
	// VoidHeld: the provider voided the charge for good; no money is held
	// for it. A VoidedCharge stored without a status is one.
	VoidHeld VoidStatus = "voided"
	// VoidNotHeld: the charge is not voided (yet): its void is pending at
	// the provider, or it failed after it had held. The money is still
	// charged; the service voids it again until the void holds.
	VoidNotHeld VoidStatus = "charged"
)

// VoidedCharge is a charge the provider made that the service voided (or
// is voiding), so that the buyer keeps no charge the intent does not
// account for: a charge of another currency or amount than the intent's,
// one made while the intent was being canceled, or one that reached the
// provider after its attempt was closed as never charged (the run that
// made the attempt paused, a stalled network, and sent it late; the
// reconciler looks such attempts up again for a day). Every void is looked
// up again for a day too, and a void that failed after it held is made
// again: until it holds, Status is VoidNotHeld.
type VoidedCharge struct {
	AttemptID string `json:"attempt"`
	Amount    int64  `json:"amount"`
	Currency  string `json:"currency"`
	// Status is VoidHeld or VoidNotHeld; "" (stored before statuses) is
	// VoidHeld.
	Status VoidStatus `json:"status,omitempty"`
	// VoidedAt is when the void was found to hold; zero while it does not.
	VoidedAt time.Time `json:"voided_at"`
}

// Held reports whether the void holds: no money is held for the charge.
func (v VoidedCharge) Held() bool { return v.Status != VoidNotHeld }

// CardSessionStatus is the status of a card session.
type CardSessionStatus string

// Card session statuses.
const (
	CardSessionOpen      CardSessionStatus = "open"
	CardSessionCompleted CardSessionStatus = "completed"
	CardSessionExpired   CardSessionStatus = "expired"
)

// CardSession lets the buyer's browser save one card for a customer.
type CardSession struct {
	ID           string
	StoreID      string
	ClientSecret string
	Customer     Customer
	PageOrigins  []string
	Status       CardSessionStatus
	CardID       string
	ExpiresAt    time.Time
	CreatedAt    time.Time
}

// CardStatus is the status of a saved card.
type CardStatus string

// Card statuses.
const (
	CardActive      CardStatus = "active"
	CardUnavailable CardStatus = "unavailable"
)

// Card is a saved card of a customer. The number and CVC never reach
// storage; the cardholder name goes to the provider and is never stored.
type Card struct {
	ID            string
	StoreID       string
	CustomerID    string
	CardSessionID string
	ProviderToken string
	Brand         string
	Last4         string
	ExpMonth      int
	ExpYear       int
	Status        CardStatus
	CreatedAt     time.Time
}

// RefundStatus is the status of a refund (docs/api.md).
type RefundStatus string

// Refund statuses.
const (
	RefundPending   RefundStatus = "pending"
	RefundFailed    RefundStatus = "failed"
	RefundSucceeded RefundStatus = "succeeded"
)

// Refund returns the whole amount of a succeeded payment intent.
type Refund struct {
	ID              string
	StoreID         string
	PaymentIntentID string
	Amount          int64
	Currency        string
	Reason          string
	Metadata        map[string]string
	Status          RefundStatus
	// Attempts is the number of sends so far (at most 3).
	Attempts       int
	AttemptID      string
	LastSentAt     time.Time
	LastError      *LastError
	ReconcileAt    time.Time
	ReconcileCount int
	SucceededAt    time.Time
	CreatedAt      time.Time
	UpdatedAt      time.Time
	Version        int64
}

// EventType is the type of an event (docs/webhooks.md).
type EventType string

// Event types.
const (
	EventCardCreated                EventType = "card.created"
	EventPaymentIntentSucceeded     EventType = "payment_intent.succeeded"
	EventPaymentIntentPaymentFailed EventType = "payment_intent.payment_failed"
	EventPaymentIntentCanceled      EventType = "payment_intent.canceled"
	EventRefundSucceeded            EventType = "refund.succeeded"
	EventRefundFailed               EventType = "refund.failed"
	EventWebhookTest                EventType = "webhook.test"
)

// EventTypes lists every event type, in the order of docs/webhooks.md.
var EventTypes = []EventType{
	EventCardCreated,
	EventPaymentIntentSucceeded,
	EventPaymentIntentPaymentFailed,
	EventPaymentIntentCanceled,
	EventRefundSucceeded,
	EventRefundFailed,
	EventWebhookTest,
}

// ValidEventType reports whether t is one of [EventTypes].
func ValidEventType(t string) bool {
	for _, et := range EventTypes {
		if string(et) == t {
			return true
		}
	}
	return false
}

// Event is a change reported to the store. Body is the JSON envelope
// (docs/api.md), serialised once at creation and sent byte for byte on every
// delivery attempt.
type Event struct {
	ID        string
	StoreID   string
	Type      EventType
	Body      json.RawMessage
	CreatedAt time.Time
	Delivery  Delivery
}

// DeliveryStatus is the state of an event's delivery to the store.
type DeliveryStatus string

// Delivery statuses.
const (
	DeliveryPending   DeliveryStatus = "pending"
	DeliverySucceeded DeliveryStatus = "succeeded"
	DeliveryFailed    DeliveryStatus = "failed"
)

// DeliveryFailure says why the last attempt failed.
type DeliveryFailure string

// Delivery failures.
const (
	FailureTimeout         DeliveryFailure = "timeout"
	FailureConnectionError DeliveryFailure = "connection_error"
	FailureRedirect        DeliveryFailure = "redirect"
	FailureHTTPStatus      DeliveryFailure = "http_status"
	FailureTLSError        DeliveryFailure = "tls_error"
)

// DeliveryAttempt is one attempt to deliver an event: what the receiver
// answered, kept for debugging. It never holds the request's signature or
// the webhook secret.
type DeliveryAttempt struct {
	ID        string // "att_" + 24 characters
	EventID   string
	StoreID   string
	StartedAt time.Time // by the service clock, like Delivery.LastAttemptAt
	// Duration is how long the attempt took, by the wall clock.
	Duration time.Duration
	// StatusCode is the receiver's HTTP status; 0 when there was no
	// response.
	StatusCode int
	// Failure is empty for a success.
	Failure DeliveryFailure
	// ResponseBody is the start of the receiver's answer (at most
	// AttemptBodyMax bytes, valid UTF-8).
	ResponseBody string
}

// AttemptBodyMax is how much of a receiver's answer an attempt keeps.
const AttemptBodyMax = 1024

// Delivery is the delivery state of one event.
type Delivery struct {
	Status         DeliveryStatus
	Attempts       int
	LastAttemptAt  time.Time
	NextAttemptAt  time.Time
	LastStatusCode int
	LastFailure    DeliveryFailure
}
