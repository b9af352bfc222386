package client

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/keelpay/keelpay"
)

// Every POST carries an Idempotency-Key: the params' IdempotencyKey when
// set (one per business operation, an order number say), else one the
// client makes for the call. The key is kept across the call's retries.

// SetupParams are the body of POST /v1/setup.
type SetupParams struct {
	ClientID            string `json:"client_id"`
	ClientSecret        string `json:"client_secret"`
	WebhookURL          string `json:"webhook_url"`
	RotateWebhookSecret bool   `json:"rotate_webhook_secret,omitempty"`
	RotateSecretKey     bool   `json:"rotate_secret_key,omitempty"`

	IdempotencyKey string `json:"-"`
}

// Setup sets up or changes a store (POST /v1/setup). A client made with a
// store's secret key acts on that store; one without a key acts on the
// store bound to ClientID, creating it the first time (201).
func (c *Client) Setup(ctx context.Context, p *SetupParams) (*Store, error) {
	if p == nil {
		return nil, errNilParams
	}
	out := &Store{}
	var err error
	out.Response, err = c.call(ctx, request{method: http.MethodPost, path: "/v1/setup", body: p, key: p.IdempotencyKey}, out)
	return result(out, err)
}

// PostParams are the params of a POST without a body.
type PostParams struct {
	IdempotencyKey string
}

func (p *PostParams) key() string {
	if p == nil {
		return ""
	}
	return p.IdempotencyKey
}

// SendTestWebhook sends one webhook.test event now (POST
// /v1/webhooks/test) and returns it with its delivery state. p may be nil.
func (c *Client) SendTestWebhook(ctx context.Context, p *PostParams) (*Event, error) {
	out := &Event{}
	var err error
	out.Response, err = c.call(ctx, request{method: http.MethodPost, path: "/v1/webhooks/test", key: p.key()}, out)
	return result(out, err)
}

// ListParams are the cursor of a list: at most one of StartingAfter and
// EndingBefore. A zero Limit is the server's default (10).
type ListParams struct {
	Limit         int
	StartingAfter string
	EndingBefore  string
}

func (p *ListParams) values() url.Values {
	q := url.Values{}
	if p == nil {
		return q
	}
	if p.Limit != 0 {
		q.Set("limit", strconv.Itoa(p.Limit))
	}
	if p.StartingAfter != "" {
		q.Set("starting_after", p.StartingAfter)
	}
	if p.EndingBefore != "" {
		q.Set("ending_before", p.EndingBefore)
	}
	return q
}

// EventListParams are the params of GET /v1/events.
type EventListParams struct {
	ListParams
	// Type, when set, lists only events of this type.
	Type keelpay.EventType
}

func (p *EventListParams) values() url.Values {
	if p == nil {
		return url.Values{}
	}
	q := p.ListParams.values()
	if p.Type != "" {
		q.Set("type", string(p.Type))
	}
	return q
}

// ListEvents returns a page of the store's events, newest first (GET
// /v1/events). p may be nil.
func (c *Client) ListEvents(ctx context.Context, p *EventListParams) (*List[*Event], error) {
	out := &List[*Event]{}
	var err error
	out.Response, err = c.call(ctx, request{method: http.MethodGet, path: "/v1/events", query: p.values()}, out)
	return result(out, err)
}

// Events iterates over the store's events from the page p names, fetching
// page after page. p may be nil. The iteration stops at the first error,
// which it yields.
func (c *Client) Events(ctx context.Context, p *EventListParams) iter.Seq2[*Event, error] {
	q := EventListParams{}
	if p != nil {
		q = *p
	}
	return pages(q.ListParams, func(lp ListParams) (*List[*Event], error) {
		q.ListParams = lp
		return c.ListEvents(ctx, &q)
	}, func(e *Event) string { return e.ID })
}

// GetEvent reads one event with its delivery state (GET /v1/events/{id}).
func (c *Client) GetEvent(ctx context.Context, id string) (*Event, error) {
	out := &Event{}
	var err error
	out.Response, err = c.call(ctx, request{method: http.MethodGet, path: "/v1/events/" + url.PathEscape(id)}, out)
	return result(out, err)
}

// RedeliverEvent queues one more delivery attempt of the event now (POST
// /v1/events/{id}/redeliver) and returns the event. p may be nil.
func (c *Client) RedeliverEvent(ctx context.Context, id string, p *PostParams) (*Event, error) {
	out := &Event{}
	var err error
	out.Response, err = c.call(ctx, request{method: http.MethodPost, path: "/v1/events/" + url.PathEscape(id) + "/redeliver", key: p.key()}, out)
	return result(out, err)
}

// ListEventAttempts returns a page of the delivery attempts of an event
// (GET /v1/events/{id}/attempts). p may be nil.
func (c *Client) ListEventAttempts(ctx context.Context, id string, p *ListParams) (*List[*DeliveryAttempt], error) {
	out := &List[*DeliveryAttempt]{}
	var err error
	out.Response, err = c.call(ctx, request{method: http.MethodGet, path: "/v1/events/" + url.PathEscape(id) + "/attempts", query: p.values()}, out)
	return result(out, err)
}

// RedeliverEventsParams choose the events [Client.RedeliverEvents]
// queues again. The zero value queues the failed deliveries.
type RedeliverEventsParams struct {
	// Status is the delivery state to match: failed (the default),
	// pending or succeeded.
	Status keelpay.DeliveryStatus
	// Type, when set, matches only events of this type.
	Type keelpay.EventType
	// CreatedAfter and CreatedBefore, when set, match only events made
	// strictly between them.
	CreatedAfter  time.Time
	CreatedBefore time.Time
	// StartingAfter continues a call that answered HasMore.
	StartingAfter string

	IdempotencyKey string
}

// MarshalJSON is the request body: only the fields that are set.
func (p *RedeliverEventsParams) MarshalJSON() ([]byte, error) {
	type body struct {
		Status        keelpay.DeliveryStatus `json:"status,omitempty"`
		Type          keelpay.EventType      `json:"type,omitempty"`
		CreatedAfter  string                 `json:"created_after,omitempty"`
		CreatedBefore string                 `json:"created_before,omitempty"`
		StartingAfter string                 `json:"starting_after,omitempty"`
	}
	b := body{Status: p.Status, Type: p.Type, StartingAfter: p.StartingAfter}
	if !p.CreatedAfter.IsZero() {
		b.CreatedAfter = p.CreatedAfter.UTC().Format(time.RFC3339)
	}
	if !p.CreatedBefore.IsZero() {
		b.CreatedBefore = p.CreatedBefore.UTC().Format(time.RFC3339)
	}
	return json.Marshal(b)
}

// RedeliverEvents queues a fresh attempt for every event that matches p,
// at most 10,000 a call (POST /v1/events/redeliver). p may be nil.
func (c *Client) RedeliverEvents(ctx context.Context, p *RedeliverEventsParams) (*Redelivery, error) {
	if p == nil {
		p = &RedeliverEventsParams{}
	}
	out := &Redelivery{}
	var err error
	out.Response, err = c.call(ctx, request{method: http.MethodPost, path: "/v1/events/redeliver", body: p, key: p.IdempotencyKey}, out)
	return result(out, err)
}

// CardSessionParams are the body of POST /v1/card_sessions.
type CardSessionParams struct {
	Customer    keelpay.Customer `json:"customer"`
	PageOrigins []string         `json:"page_origins"`

	IdempotencyKey string `json:"-"`
}

// CreateCardSession opens a card session for the buyer's browser (POST
// /v1/card_sessions).
func (c *Client) CreateCardSession(ctx context.Context, p *CardSessionParams) (*CardSession, error) {
	if p == nil {
		return nil, errNilParams
	}
	out := &CardSession{}
	var err error
	out.Response, err = c.call(ctx, request{method: http.MethodPost, path: "/v1/card_sessions", body: p, key: p.IdempotencyKey}, out)
	return result(out, err)
}

// GetCardSession reads a card session (GET /v1/card_sessions/{id}).
func (c *Client) GetCardSession(ctx context.Context, id string) (*CardSession, error) {
	out := &CardSession{}
	var err error
	out.Response, err = c.call(ctx, request{method: http.MethodGet, path: "/v1/card_sessions/" + url.PathEscape(id)}, out)
	return result(out, err)
}

// GetCard reads a saved card (GET /v1/cards/{id}).
func (c *Client) GetCard(ctx context.Context, id string) (*Card, error) {
	out := &Card{}
	var err error
	out.Response, err = c.call(ctx, request{method: http.MethodGet, path: "/v1/cards/" + url.PathEscape(id)}, out)
	return result(out, err)
}

// PaymentIntentParams are the body of POST /v1/payment_intents. Amount,
// Currency and Customer are required.
type PaymentIntentParams struct {
	Amount      int64             `json:"amount"` // minor units
	Currency    string            `json:"currency"`
	Customer    keelpay.Customer  `json:"customer"`
	Description string            `json:"description,omitempty"`
	Reference   string            `json:"reference,omitempty"`
	Metadata    map[string]string `json:"metadata,omitempty"`
	Billing     *keelpay.Billing  `json:"billing,omitempty"`
	PageOrigins []string          `json:"page_origins,omitempty"`
	// PaymentMethod is a saved card of the customer, charged by default
	// on confirm.
	PaymentMethod string `json:"payment_method,omitempty"`

	IdempotencyKey string `json:"-"`
}

// CreatePaymentIntent creates a payment intent in requires_payment_method
// (POST /v1/payment_intents).
func (c *Client) CreatePaymentIntent(ctx context.Context, p *PaymentIntentParams) (*PaymentIntent, error) {
	if p == nil {
		return nil, errNilParams
	}
	out := &PaymentIntent{}
	var err error
	out.Response, err = c.call(ctx, request{method: http.MethodPost, path: "/v1/payment_intents", body: p, key: p.IdempotencyKey}, out)
	return result(out, err)
}

// GetPaymentIntent reads an intent (GET /v1/payment_intents/{id}).
func (c *Client) GetPaymentIntent(ctx context.Context, id string) (*PaymentIntent, error) {
	out := &PaymentIntent{}
	var err error
	out.Response, err = c.call(ctx, request{method: http.MethodGet, path: "/v1/payment_intents/" + url.PathEscape(id)}, out)
	return result(out, err)
}

// PaymentIntentListParams are the params of GET /v1/payment_intents. The
// filters combine; the cursors page within them.
type PaymentIntentListParams struct {
	ListParams
	// Customer, when set, lists only this customer's intents.
	Customer string
	// Status, when set, lists only intents in this status.
	Status keelpay.PaymentIntentStatus
	// Reference, when set, lists only intents with this reference.
	Reference string
	// CreatedGTE and CreatedLT, when set, bound the creation time
	// (created[gte] and created[lt]; whole seconds, UTC).
	CreatedGTE, CreatedLT time.Time
}

func (p *PaymentIntentListParams) values() url.Values {
	if p == nil {
		return url.Values{}
	}
	q := p.ListParams.values()
	setIf(q, "customer", p.Customer)
	setIf(q, "status", string(p.Status))
	setIf(q, "reference", p.Reference)
	setTime(q, "created[gte]", p.CreatedGTE)
	setTime(q, "created[lt]", p.CreatedLT)
	return q
}

func setIf(q url.Values, key, v string) {
	if v != "" {
		q.Set(key, v)
	}
}

func setTime(q url.Values, key string, t time.Time) {
	if !t.IsZero() {
		q.Set(key, t.UTC().Truncate(time.Second).Format(time.RFC3339))
	}
}

// ListPaymentIntents returns a page of the store's intents, newest first
// (GET /v1/payment_intents), with p's filters. p may be nil.
func (c *Client) ListPaymentIntents(ctx context.Context, p *PaymentIntentListParams) (*List[*PaymentIntent], error) {
	out := &List[*PaymentIntent]{}
	var err error
	out.Response, err = c.call(ctx, request{method: http.MethodGet, path: "/v1/payment_intents", query: p.values()}, out)
	return result(out, err)
}

// PaymentIntents iterates over the store's intents that p's filters select,
// from the page p names, fetching page after page. p may be nil. The
// iteration stops at the first error, which it yields.
func (c *Client) PaymentIntents(ctx context.Context, p *PaymentIntentListParams) iter.Seq2[*PaymentIntent, error] {
	q := PaymentIntentListParams{}
	if p != nil {
		q = *p
	}
	return pages(q.ListParams, func(lp ListParams) (*List[*PaymentIntent], error) {
		q.ListParams = lp
		return c.ListPaymentIntents(ctx, &q)
	}, func(pi *PaymentIntent) string { return pi.ID })
}

// ConfirmParams are the body of a confirm with the secret key. Both are
// optional: the card is by default the intent's.
type ConfirmParams struct {
	// PaymentMethod is a saved card (card_...) of the intent's customer.
	PaymentMethod string           `json:"payment_method,omitempty"`
	Billing       *keelpay.Billing `json:"billing,omitempty"`

	IdempotencyKey string `json:"-"`
}

// ConfirmPaymentIntent charges a saved card (POST
// /v1/payment_intents/{id}/confirm). A failed attempt is not an error: the
// intent comes back in requires_payment_method with LastError. p may be
// nil.
func (c *Client) ConfirmPaymentIntent(ctx context.Context, id string, p *ConfirmParams) (*PaymentIntent, error) {
	if p == nil {
		p = &ConfirmParams{}
	}
	out := &PaymentIntent{}
	var err error
	out.Response, err = c.call(ctx, request{method: http.MethodPost, path: "/v1/payment_intents/" + url.PathEscape(id) + "/confirm", body: p, key: p.IdempotencyKey}, out)
	return result(out, err)
}

// CancelParams are the body of POST /v1/payment_intents/{id}/cancel.
type CancelParams struct {
	// CancellationReason is requested_by_customer (the default),
	// abandoned, duplicate or fraudulent.
	CancellationReason string `json:"cancellation_reason,omitempty"`

	IdempotencyKey string `json:"-"`
}

// CancelPaymentIntent cancels an intent (POST
// /v1/payment_intents/{id}/cancel). p may be nil.
func (c *Client) CancelPaymentIntent(ctx context.Context, id string, p *CancelParams) (*PaymentIntent, error) {
	if p == nil {
		p = &CancelParams{}
	}
	out := &PaymentIntent{}
	var err error
	out.Response, err = c.call(ctx, request{method: http.MethodPost, path: "/v1/payment_intents/" + url.PathEscape(id) + "/cancel", body: p, key: p.IdempotencyKey}, out)
	return result(out, err)
}

// RefundParams are the body of POST /v1/refunds. A refund is always the
// whole amount of the intent.
type RefundParams struct {
	PaymentIntent string            `json:"payment_intent"`
	Reason        string            `json:"reason"`
	Metadata      map[string]string `json:"metadata,omitempty"`

	IdempotencyKey string `json:"-"`
}

// CreateRefund sends the refund of an intent, or sends it again where
// allowed (POST /v1/refunds): 201 the first time, 200 after. The outcome
// is in Status and LastError.
func (c *Client) CreateRefund(ctx context.Context, p *RefundParams) (*Refund, error) {
	if p == nil {
		return nil, errNilParams
	}
	out := &Refund{}
	var err error
	out.Response, err = c.call(ctx, request{method: http.MethodPost, path: "/v1/refunds", body: p, key: p.IdempotencyKey}, out)
	return result(out, err)
}

// GetRefund reads a refund (GET /v1/refunds/{id}).
func (c *Client) GetRefund(ctx context.Context, id string) (*Refund, error) {
	out := &Refund{}
	var err error
	out.Response, err = c.call(ctx, request{method: http.MethodGet, path: "/v1/refunds/" + url.PathEscape(id)}, out)
	return result(out, err)
}

// errNilParams answers an operation whose params are required.
var errNilParams = errors.New("keelpay client: params are required")

// result is out, or nil and err.
func result[T any](out *T, err error) (*T, error) {
	if err != nil {
		return nil, err
	}
	return out, nil
}

// pages iterates over a list page by page: forwards with starting_after,
// or backwards with ending_before when the first page was named so.
func pages[T any](p ListParams, page func(ListParams) (*List[T], error), id func(T) string) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		p := p // each iteration starts at the first page
		for {
			l, err := page(p)
			if err != nil {
				var zero T
				yield(zero, err)
				return
			}
			for _, v := range l.Data {
				if !yield(v, nil) {
					return
				}
			}
			if !l.HasMore || len(l.Data) == 0 {
				return
			}
			if p.EndingBefore != "" {
				p.EndingBefore = id(l.Data[0])
			} else {
				p.StartingAfter = id(l.Data[len(l.Data)-1])
			}
		}
	}
}

// CardListParams are the params of GET /v1/cards.
type CardListParams struct {
	ListParams
	// Customer is the customer whose saved cards are listed; required.
	Customer string
}

func (p *CardListParams) values() url.Values {
	q := p.ListParams.values()
	q.Set("customer", p.Customer)
	return q
}

// ListCards returns a page of a customer's saved cards, newest first (GET
// /v1/cards?customer=...).
func (c *Client) ListCards(ctx context.Context, p *CardListParams) (*List[*Card], error) {
	if p == nil {
		return nil, errNilParams
	}
	out := &List[*Card]{}
	var err error
	out.Response, err = c.call(ctx, request{method: http.MethodGet, path: "/v1/cards", query: p.values()}, out)
	return result(out, err)
}

// DeleteCard deletes a saved card, detached at the provider first (DELETE
// /v1/cards/{id}), and returns it as it was. A card deleted already is 404
// card_not_found: a retry after a lost answer gets that too.
func (c *Client) DeleteCard(ctx context.Context, id string) (*Card, error) {
	out := &Card{}
	var err error
	out.Response, err = c.call(ctx, request{method: http.MethodDelete, path: "/v1/cards/" + url.PathEscape(id)}, out)
	return result(out, err)
}

// Erasure is the answer to EraseCustomer: what was erased.
type Erasure struct {
	Object   string `json:"object"`
	Customer string `json:"customer"`
	// CardsDeleted, PaymentIntents and CardSessions count the cards
	// deleted and the intents and card sessions whose personal data was
	// removed.
	CardsDeleted   int `json:"cards_deleted"`
	PaymentIntents int `json:"payment_intents"`
	CardSessions   int `json:"card_sessions"`

	Response *Response `json:"-"`
}

// EraseCustomer erases a customer's personal data on request (POST
// /v1/customers/{id}/erase): its saved cards are deleted, and its name,
// email, phone and billing details removed from its intents and card
// sessions. p may be nil.
func (c *Client) EraseCustomer(ctx context.Context, id string, p *PostParams) (*Erasure, error) {
	out := &Erasure{}
	var err error
	out.Response, err = c.call(ctx, request{method: http.MethodPost, path: "/v1/customers/" + url.PathEscape(id) + "/erase", key: p.key()}, out)
	return result(out, err)
}

// RefundListParams are the params of GET /v1/refunds. The filters combine;
// the cursors page within them.
type RefundListParams struct {
	ListParams
	// PaymentIntent, when set, lists only this intent's refund.
	PaymentIntent string
	// Status, when set, lists only refunds in this status.
	Status keelpay.RefundStatus
	// CreatedGTE and CreatedLT, when set, bound the creation time.
	CreatedGTE, CreatedLT time.Time
}

func (p *RefundListParams) values() url.Values {
	if p == nil {
		return url.Values{}
	}
	q := p.ListParams.values()
	setIf(q, "payment_intent", p.PaymentIntent)
	setIf(q, "status", string(p.Status))
	setTime(q, "created[gte]", p.CreatedGTE)
	setTime(q, "created[lt]", p.CreatedLT)
	return q
}

// ListRefunds returns a page of the store's refunds, newest first (GET
// /v1/refunds), with p's filters. p may be nil.
func (c *Client) ListRefunds(ctx context.Context, p *RefundListParams) (*List[*Refund], error) {
	out := &List[*Refund]{}
	var err error
	out.Response, err = c.call(ctx, request{method: http.MethodGet, path: "/v1/refunds", query: p.values()}, out)
	return result(out, err)
}
