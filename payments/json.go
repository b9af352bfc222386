package payments

import (
	"github.com/keelpay/keelpay"
)

// The decoded wire form of cards and payment intents, as an event's
// object carries them (service.Event) and as the API answers: the types
// an embedder decodes those bodies into. Nothing renders from them:
// keelpay renders each object with one function (docs/api.md, "Objects"),
// and a test holds these types to that rendering and to
// docs/openapi.json.

// CardObject is a saved card as the API and the card.created event show
// it. It never has the cardholder name (which is not stored).
type CardObject struct {
	ID          string             `json:"id"`
	Object      string             `json:"object"`
	Customer    keelpay.Customer   `json:"customer"`
	CardSession string             `json:"card_session"`
	Brand       string             `json:"brand"`
	Last4       string             `json:"last4"`
	ExpMonth    int                `json:"exp_month"`
	ExpYear     int                `json:"exp_year"`
	Status      keelpay.CardStatus `json:"status"`
	CreatedAt   string             `json:"created_at"`
}

// IntentObject is a payment intent as the API and its events show it.
type IntentObject struct {
	ID                 string                      `json:"id"`
	Object             string                      `json:"object"`
	Status             keelpay.PaymentIntentStatus `json:"status"`
	Amount             int64                       `json:"amount"`
	Currency           string                      `json:"currency"`
	ClientSecret       string                      `json:"client_secret,omitempty"`
	Customer           keelpay.Customer            `json:"customer"`
	Description        *string                     `json:"description"`
	Reference          *string                     `json:"reference"`
	Metadata           map[string]string           `json:"metadata"`
	Billing            *keelpay.Billing            `json:"billing,omitempty"`
	PageOrigins        []string                    `json:"page_origins"`
	Card               *string                     `json:"card"`
	PaymentMethod      *keelpay.PaymentMethod      `json:"payment_method"`
	AuthorizationCode  string                      `json:"authorization_code,omitempty"`
	OrderID            string                      `json:"order_id,omitempty"`
	Refund             *string                     `json:"refund"`
	SucceededAt        *string                     `json:"succeeded_at,omitempty"`
	LastError          *keelpay.LastError          `json:"last_error,omitempty"`
	NextAction         *keelpay.NextAction         `json:"next_action"`
	CancellationReason string                      `json:"cancellation_reason,omitempty"`
	VoidedCharges      []VoidedChargeObject        `json:"voided_charges,omitempty"`
	ExpiresAt          string                      `json:"expires_at"`
	CreatedAt          string                      `json:"created_at"`
}

// VoidedChargeObject is a charge the provider made that the service voided
// (status voided, with voided_at) or is voiding while the money is still
// charged (status charged, voided_at null): see keelpay.VoidedCharge.
type VoidedChargeObject struct {
	Attempt  string  `json:"attempt"`
	Amount   int64   `json:"amount"`
	Currency string  `json:"currency"`
	Status   string  `json:"status"`
	VoidedAt *string `json:"voided_at"`
}
