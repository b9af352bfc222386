package payments

import (
	"time"

	"github.com/keelpay/keelpay"
)

// The wire form of card sessions, cards and payment intents
// (docs/api.md, "Objects"). API responses and event objects are built by
// the same functions, so they cannot drift apart. personal is true only
// for responses to the store's secret key: then the customer's name, email
// and phone, the billing details and the client_secret are shown. The
// browser (publishable key) and events never see them.

// Object names.
const (
	ObjectCardSession   = "card_session"
	ObjectCard          = "card"
	ObjectPaymentIntent = "payment_intent"
	ObjectList          = "list"
)

// timestamp formats t as RFC 3339 UTC with seconds.
func timestamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// optionalTimestamp is timestamp, or nil for the zero time.
func optionalTimestamp(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := timestamp(t)
	return &s
}

// nullable is s, or nil (JSON null) when empty.
func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func customer(c keelpay.Customer, personal bool) keelpay.Customer {
	if personal {
		return c
	}
	return keelpay.Customer{ID: c.ID}
}

// CardSessionObject is a card session as the API shows it.
type CardSessionObject struct {
	ID           string                    `json:"id"`
	Object       string                    `json:"object"`
	ClientSecret string                    `json:"client_secret,omitempty"`
	Customer     keelpay.Customer          `json:"customer"`
	PageOrigins  []string                  `json:"page_origins"`
	Status       keelpay.CardSessionStatus `json:"status"`
	Card         *string                   `json:"card"`
	ExpiresAt    string                    `json:"expires_at"`
	CreatedAt    string                    `json:"created_at"`
}

// NewCardSessionObject returns the wire form of a card session.
func NewCardSessionObject(s *keelpay.CardSession, personal bool) *CardSessionObject {
	o := &CardSessionObject{
		ID:          s.ID,
		Object:      ObjectCardSession,
		Customer:    customer(s.Customer, personal),
		PageOrigins: nonNil(s.PageOrigins),
		Status:      s.Status,
		Card:        nullable(s.CardID),
		ExpiresAt:   timestamp(s.ExpiresAt),
		CreatedAt:   timestamp(s.CreatedAt),
	}
	if personal {
		o.ClientSecret = s.ClientSecret
	}
	return o
}

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

// NewCardObject returns the wire form of a card. A card carries no
// personal data, so there is one view.
func NewCardObject(c *keelpay.Card) *CardObject {
	return &CardObject{
		ID:          c.ID,
		Object:      ObjectCard,
		Customer:    keelpay.Customer{ID: c.CustomerID},
		CardSession: c.CardSessionID,
		Brand:       c.Brand,
		Last4:       c.Last4,
		ExpMonth:    c.ExpMonth,
		ExpYear:     c.ExpYear,
		Status:      c.Status,
		CreatedAt:   timestamp(c.CreatedAt),
	}
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

// NewIntentObject returns the wire form of a payment intent.
func NewIntentObject(pi *keelpay.PaymentIntent, personal bool) *IntentObject {
	o := &IntentObject{
		ID:                pi.ID,
		Object:            ObjectPaymentIntent,
		Status:            pi.Status,
		Amount:            pi.Amount,
		Currency:          pi.Currency,
		Customer:          customer(pi.Customer, personal),
		Description:       nullable(pi.Description),
		Reference:         nullable(pi.Reference),
		Metadata:          pi.Metadata,
		PageOrigins:       nonNil(pi.PageOrigins),
		Card:              nullable(pi.CardID),
		PaymentMethod:     pi.PaymentMethod,
		AuthorizationCode: pi.AuthorizationCode,
		OrderID:           pi.OrderID,
		Refund:            nullable(pi.RefundID),
		SucceededAt:       optionalTimestamp(pi.SucceededAt),
		LastError:         pi.LastError,
		NextAction:        pi.NextAction,
		ExpiresAt:         timestamp(pi.ExpiresAt),
		CreatedAt:         timestamp(pi.CreatedAt),
	}
	if o.Metadata == nil {
		o.Metadata = map[string]string{}
	}
	// While an attempt is open the reason marks a cancel in progress; it
	// is the intent's reason only once it is canceled.
	if pi.Status == keelpay.IntentCanceled {
		o.CancellationReason = pi.CancellationReason
	}
	for _, v := range pi.VoidedCharges {
		vo := VoidedChargeObject{Attempt: v.AttemptID, Amount: v.Amount, Currency: v.Currency, Status: string(keelpay.VoidNotHeld)}
		if v.Held() {
			vo.Status, vo.VoidedAt = string(keelpay.VoidHeld), new(timestamp(v.VoidedAt))
		}
		o.VoidedCharges = append(o.VoidedCharges, vo)
	}
	if personal {
		o.ClientSecret = pi.ClientSecret
		o.Billing = pi.Billing
	}
	return o
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

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
