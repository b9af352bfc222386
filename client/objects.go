package client

import (
	"encoding/json"
	"time"

	"github.com/keelpay/keelpay"
)

// The objects as the API renders them (docs/api.md, docs/openapi.json).
// The root package's PaymentIntent, Refund, Card, CardSession and Event are
// the services' records: they carry no JSON tags and fields the API never
// shows (store id, attempt ids, versions), so the client has its own. Its
// parts that are shown as they are (Customer, Billing, PaymentMethod,
// LastError, NextAction, VoidedCharge) are the root package's. A null
// timestamp is the zero time; a null string is "".

// Store is the answer of [Client.Setup].
type Store struct {
	ID             string `json:"id"`
	Object         string `json:"object"`
	Currency       string `json:"currency"`
	PublishableKey string `json:"publishable_key"`
	// SecretKey is set only when it was issued: the first setup and a
	// rotation. Keep it: it cannot be shown again.
	SecretKey  string `json:"secret_key,omitempty"`
	WebhookURL string `json:"webhook_url"`
	// WebhookSecret is set when a secret was issued: the first setup, a
	// rotation and every new webhook_url.
	WebhookSecret string `json:"webhook_secret,omitempty"`

	Response *Response `json:"-"`
}

// CardSession lets the buyer's browser save one card for a customer.
type CardSession struct {
	ID           string                    `json:"id"`
	Object       string                    `json:"object"`
	ClientSecret string                    `json:"client_secret,omitempty"`
	Customer     keelpay.Customer          `json:"customer"`
	PageOrigins  []string                  `json:"page_origins"`
	Status       keelpay.CardSessionStatus `json:"status"`
	// Card is the id of the card saved through the session, or "".
	Card      string    `json:"card"`
	ExpiresAt time.Time `json:"expires_at"`
	CreatedAt time.Time `json:"created_at"`

	Response *Response `json:"-"`
}

// Card is a saved card.
type Card struct {
	ID          string             `json:"id"`
	Object      string             `json:"object"`
	Customer    keelpay.Customer   `json:"customer"`
	CardSession string             `json:"card_session"`
	Brand       string             `json:"brand"`
	Last4       string             `json:"last4"`
	ExpMonth    int                `json:"exp_month"`
	ExpYear     int                `json:"exp_year"`
	Status      keelpay.CardStatus `json:"status"`
	CreatedAt   time.Time          `json:"created_at"`

	Response *Response `json:"-"`
}

// PaymentIntent is a payment of one amount by one card.
type PaymentIntent struct {
	ID       string                      `json:"id"`
	Object   string                      `json:"object"`
	Status   keelpay.PaymentIntentStatus `json:"status"`
	Amount   int64                       `json:"amount"` // minor units
	Currency string                      `json:"currency"`
	// ClientSecret is the browser's credential for the intent.
	ClientSecret string            `json:"client_secret,omitempty"`
	Customer     keelpay.Customer  `json:"customer"`
	Description  string            `json:"description"`
	Reference    string            `json:"reference"`
	Metadata     map[string]string `json:"metadata"`
	Billing      *keelpay.Billing  `json:"billing,omitempty"`
	PageOrigins  []string          `json:"page_origins"`
	// Card is the saved card used, or "".
	Card              string                 `json:"card"`
	PaymentMethod     *keelpay.PaymentMethod `json:"payment_method"`
	AuthorizationCode string                 `json:"authorization_code,omitempty"`
	OrderID           string                 `json:"order_id,omitempty"`
	// Refund is the id of the intent's refund, or "".
	Refund             string                 `json:"refund"`
	SucceededAt        time.Time              `json:"succeeded_at,omitzero"`
	LastError          *keelpay.LastError     `json:"last_error,omitempty"`
	NextAction         *keelpay.NextAction    `json:"next_action"`
	CancellationReason string                 `json:"cancellation_reason,omitempty"`
	VoidedCharges      []keelpay.VoidedCharge `json:"voided_charges,omitempty"`
	ExpiresAt          time.Time              `json:"expires_at"`
	CreatedAt          time.Time              `json:"created_at"`

	Response *Response `json:"-"`
}

// Refund returns the whole amount of a succeeded payment intent.
type Refund struct {
	ID            string               `json:"id"`
	Object        string               `json:"object"`
	PaymentIntent string               `json:"payment_intent"`
	Amount        int64                `json:"amount"`
	Currency      string               `json:"currency"`
	Reason        string               `json:"reason"`
	Metadata      map[string]string    `json:"metadata"`
	Status        keelpay.RefundStatus `json:"status"`
	// Attempts is the number of sends so far (at most 3).
	Attempts    int                `json:"attempts"`
	LastError   *keelpay.LastError `json:"last_error"`
	CreatedAt   time.Time          `json:"created_at"`
	SucceededAt time.Time          `json:"succeeded_at,omitzero"`

	Response *Response `json:"-"`
}

// Event is a webhook body (docs/webhooks.md) with its delivery state.
type Event struct {
	ID        string            `json:"id"`
	Object    string            `json:"object"`
	Type      keelpay.EventType `json:"type"`
	CreatedAt time.Time         `json:"created_at"`
	Data      EventData         `json:"data"`
	Delivery  Delivery          `json:"delivery"`

	Response *Response `json:"-"`
}

// EventData holds the object the event is about, as it was when the event
// was made: a card, a payment intent (without personal data), a refund,
// or {"message":"test"}. Decode it with [EventData.Decode].
type EventData struct {
	Object json.RawMessage `json:"object"`
}

// Decode decodes the event's object into v: a *Card, *PaymentIntent or
// *Refund by the event's type.
func (d EventData) Decode(v any) error { return json.Unmarshal(d.Object, v) }

// Delivery is the delivery state of an event.
type Delivery struct {
	Status         keelpay.DeliveryStatus  `json:"status"`
	Attempts       int                     `json:"attempts"`
	LastAttemptAt  time.Time               `json:"last_attempt_at,omitzero"`
	NextAttemptAt  time.Time               `json:"next_attempt_at,omitzero"`
	LastStatusCode int                     `json:"last_status_code"`
	LastFailure    keelpay.DeliveryFailure `json:"last_failure"`
}

// DeliveryAttempt is one attempt to deliver an event.
type DeliveryAttempt struct {
	ID         string    `json:"id"`
	Object     string    `json:"object"`
	Event      string    `json:"event"`
	StartedAt  time.Time `json:"started_at"`
	DurationMS int64     `json:"duration_ms"`
	// StatusCode is the receiver's status, 0 when no answer came.
	StatusCode int                     `json:"status_code"`
	Failure    keelpay.DeliveryFailure `json:"failure"`
	// ResponseBody is the start of the receiver's answer (1 KiB at most).
	ResponseBody string `json:"response_body"`
}

// Redelivery is the answer of [Client.RedeliverEvents].
type Redelivery struct {
	Object string `json:"object"`
	// Queued is how many deliveries were made pending, due now.
	Queued  int  `json:"queued"`
	HasMore bool `json:"has_more"`
	// NextStartingAfter is, when HasMore, the event to pass as
	// StartingAfter to continue.
	NextStartingAfter string `json:"next_starting_after"`

	Response *Response `json:"-"`
}

// List is a page of a list, newest first.
type List[T any] struct {
	Object string `json:"object"`
	Data   []T    `json:"data"`
	// HasMore says whether there are more in the direction of travel.
	HasMore bool `json:"has_more"`

	Response *Response `json:"-"`
}
