package render

import (
	"encoding/json"
	"time"

	"github.com/keelpay/keelpay"
)

// The objects below are rendered by encoding/json from a wire struct each,
// built by one function: the struct is that object's rendering.

// timestamp formats t as RFC 3339 UTC with seconds.
func timestamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// nullable is s, or nil (JSON null) when empty.
func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func marshal(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		// Every object marshals; this is a programming error.
		panic("render: marshal: " + err.Error())
	}
	return b
}

// cardSession is a card session as the API shows it.
type cardSession struct {
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

// CardSession is the JSON of a card session (see AppendIntent for
// personal).
func CardSession(s *keelpay.CardSession, personal bool) []byte {
	o := &cardSession{
		ID:          s.ID,
		Object:      "card_session",
		Customer:    s.Customer,
		PageOrigins: nonNil(s.PageOrigins),
		Status:      s.Status,
		Card:        nullable(s.CardID),
		ExpiresAt:   timestamp(s.ExpiresAt),
		CreatedAt:   timestamp(s.CreatedAt),
	}
	if personal {
		o.ClientSecret = s.ClientSecret
	} else {
		o.Customer = keelpay.Customer{ID: s.Customer.ID}
	}
	return marshal(o)
}

// CardObject is a saved card as the API and the card.created event show
// it, and the type an embedder decodes it into (payments.CardObject). It
// never has the cardholder name (which is not stored).
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

func newCard(c *keelpay.Card) *CardObject {
	return &CardObject{
		ID:          c.ID,
		Object:      "card",
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

// Card is the JSON of a saved card. A card carries no personal data, so
// there is one view.
func Card(c *keelpay.Card) []byte { return marshal(newCard(c)) }

// CardList is the JSON of a page of cards (docs/api.md, "Lists").
func CardList(cards []*keelpay.Card, hasMore bool) []byte {
	data := make([]*CardObject, len(cards))
	for i, c := range cards {
		data[i] = newCard(c)
	}
	return marshal(struct {
		Object  string        `json:"object"`
		Data    []*CardObject `json:"data"`
		HasMore bool          `json:"has_more"`
	}{"list", data, hasMore})
}

// RefundObject is the wire form of a refund, in responses and in events,
// and the type an embedder decodes it into (refunds.Object). A refund
// carries no personal data.
type RefundObject struct {
	ID            string               `json:"id"`
	Object        string               `json:"object"`
	PaymentIntent string               `json:"payment_intent"`
	Amount        int64                `json:"amount"`
	Currency      string               `json:"currency"`
	Reason        string               `json:"reason"`
	Metadata      map[string]string    `json:"metadata"`
	Status        keelpay.RefundStatus `json:"status"`
	Attempts      int                  `json:"attempts"`
	LastError     *keelpay.LastError   `json:"last_error"`
	CreatedAt     string               `json:"created_at"`
	SucceededAt   *string              `json:"succeeded_at"`
}

// Refund is the JSON of refund r.
func Refund(r *keelpay.Refund) []byte {
	o := &RefundObject{
		ID:            r.ID,
		Object:        "refund",
		PaymentIntent: r.PaymentIntentID,
		Amount:        r.Amount,
		Currency:      r.Currency,
		Reason:        r.Reason,
		Metadata:      r.Metadata,
		Status:        r.Status,
		Attempts:      r.Attempts,
		LastError:     r.LastError,
		CreatedAt:     timestamp(r.CreatedAt),
	}
	if o.Metadata == nil {
		o.Metadata = map[string]string{}
	}
	if !r.SucceededAt.IsZero() {
		o.SucceededAt = new(timestamp(r.SucceededAt))
	}
	return marshal(o)
}

// store is the answer to a setup: the store, with the keys and secrets
// this setup issued (and only those).
type store struct {
	ID             string `json:"id"`
	Object         string `json:"object"`
	Currency       string `json:"currency"`
	PublishableKey string `json:"publishable_key"`
	SecretKey      string `json:"secret_key,omitempty"`
	WebhookURL     string `json:"webhook_url"`
	WebhookSecret  string `json:"webhook_secret,omitempty"`
}

// Setup is the JSON of the answer to a setup of st that issued secretKey
// and webhookSecret (each empty when not issued): they are shown once.
func Setup(st *keelpay.Store, secretKey, webhookSecret string) []byte {
	return marshal(store{ID: st.ID, Object: "store", Currency: st.Currency, PublishableKey: st.PublishableKey,
		SecretKey: secretKey, WebhookURL: st.WebhookURL, WebhookSecret: webhookSecret})
}

// Redelivery is the JSON of the answer to a bulk redelivery that queued
// queued deliveries; next, when not empty, is the event to continue after.
func Redelivery(queued int, next string) []byte {
	out := struct {
		Object            string  `json:"object"`
		Queued            int     `json:"queued"`
		HasMore           bool    `json:"has_more"`
		NextStartingAfter *string `json:"next_starting_after"`
	}{Object: "redelivery", Queued: queued, HasMore: next != ""}
	if next != "" {
		out.NextStartingAfter = &next
	}
	return marshal(out)
}
