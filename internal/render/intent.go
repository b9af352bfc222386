// Package render is the one rendering of each object the API shows: the
// bytes of a response, of the answer stored with an Idempotency-Key, and
// (without personal data) of the object of an event (docs/api.md,
// "Objects"). The stored answer and the response are then the same bytes,
// and an event cannot drift from what the API shows. docs/openapi.json
// describes the same objects; this package's tests hold each rendering to
// its schema and to the fields of the object it renders.
package render

import (
	"slices"
	"strconv"
	"time"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/internal/wirejson"
)

// IntentObject is a payment intent as the API and its events show it:
// the type an embedder decodes AppendIntent's JSON into
// (payments.IntentObject). It is declared here, beside the one function
// that renders an intent, and a test holds the two to each other and to
// docs/openapi.json.
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

// AppendIntent appends the JSON of a payment intent to b, from the intent
// itself: it builds no wire object and formats no timestamp apart, so
// that the answer of a read allocates nothing of its own. b may be nil.
// personal is true only for the store's secret key: then the customer's
// name, email and phone, the billing details and the client_secret are
// shown. The browser (publishable key) and events never see them.
func AppendIntent(b []byte, pi *keelpay.PaymentIntent, personal bool) []byte {
	if b == nil {
		b = make([]byte, 0, 1024)
	}
	b = append(b, `{"id":`...)
	b = wirejson.AppendString(b, pi.ID)
	b = append(b, `,"object":"payment_intent","status":`...)
	b = wirejson.AppendString(b, string(pi.Status))
	b = append(b, `,"amount":`...)
	b = strconv.AppendInt(b, pi.Amount, 10)
	b = append(b, `,"currency":`...)
	b = wirejson.AppendString(b, pi.Currency)
	if personal && pi.ClientSecret != "" {
		b = append(b, `,"client_secret":`...)
		b = wirejson.AppendString(b, pi.ClientSecret)
	}
	b = append(b, `,"customer":{"id":`...)
	b = wirejson.AppendString(b, pi.Customer.ID)
	if personal {
		b = appendCustomerPersonal(b, pi.Customer)
	}
	b = append(b, `},"description":`...)
	b = appendEmptyNull(b, pi.Description)
	b = append(b, `,"reference":`...)
	b = appendEmptyNull(b, pi.Reference)
	b = append(b, `,"metadata":`...)
	if pi.Metadata == nil {
		b = append(b, "{}"...)
	} else {
		b = appendMap(b, pi.Metadata)
	}
	if personal && pi.Billing != nil {
		b = appendBilling(b, pi.Billing)
	}
	b = append(b, `,"page_origins":`...)
	if pi.PageOrigins == nil {
		b = append(b, "[]"...)
	} else {
		b = appendStrings(b, pi.PageOrigins)
	}
	b = append(b, `,"card":`...)
	b = appendEmptyNull(b, pi.CardID)
	b = append(b, `,"payment_method":`...)
	b = appendPaymentMethod(b, pi.PaymentMethod)
	b = appendOptional(b, `,"authorization_code":`, pi.AuthorizationCode)
	b = appendOptional(b, `,"order_id":`, pi.OrderID)
	b = append(b, `,"refund":`...)
	b = appendEmptyNull(b, pi.RefundID)
	if !pi.SucceededAt.IsZero() {
		b = appendTimestamp(append(b, `,"succeeded_at":`...), pi.SucceededAt)
	}
	if pi.LastError != nil {
		b = appendLastError(b, pi.LastError)
	}
	b = append(b, `,"next_action":`...)
	b = appendNextAction(b, pi.NextAction)
	// While an attempt is open the reason marks a cancel in progress; it
	// is the intent's reason only once it is canceled.
	if pi.Status == keelpay.IntentCanceled {
		b = appendOptional(b, `,"cancellation_reason":`, pi.CancellationReason)
	}
	if len(pi.VoidedCharges) > 0 {
		b = append(b, `,"voided_charges":[`...)
		for i, v := range pi.VoidedCharges {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"attempt":`...)
			b = wirejson.AppendString(b, v.AttemptID)
			b = append(b, `,"amount":`...)
			b = strconv.AppendInt(b, v.Amount, 10)
			b = append(b, `,"currency":`...)
			b = wirejson.AppendString(b, v.Currency)
			if v.Held() {
				b = append(b, `,"status":"voided"`...)
				b = appendTimestamp(append(b, `,"voided_at":`...), v.VoidedAt)
			} else {
				b = append(b, `,"status":"charged","voided_at":null`...)
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = appendTimestamp(append(b, `,"expires_at":`...), pi.ExpiresAt)
	b = appendTimestamp(append(b, `,"created_at":`...), pi.CreatedAt)
	return append(b, '}')
}

// appendTimestamp appends t as the JSON string timestamp(t) is: RFC 3339
// UTC with seconds, which has nothing to escape.
func appendTimestamp(b []byte, t time.Time) []byte {
	b = append(b, '"')
	b = t.UTC().AppendFormat(b, time.RFC3339)
	return append(b, '"')
}

// appendEmptyNull appends s, or null when it is empty.
func appendEmptyNull(b []byte, s string) []byte {
	if s == "" {
		return append(b, "null"...)
	}
	return wirejson.AppendString(b, s)
}

// IntentList is the JSON of a page of intents (docs/api.md, "Lists"):
// object list, the intents as AppendIntent renders them, has_more.
func IntentList(intents []*keelpay.PaymentIntent, hasMore, personal bool) []byte {
	b := append(make([]byte, 0, 64+1024*len(intents)), `{"object":"list","data":[`...)
	for i, pi := range intents {
		if i > 0 {
			b = append(b, ',')
		}
		b = AppendIntent(b, pi, personal)
	}
	b = append(b, `],"has_more":`...)
	b = strconv.AppendBool(b, hasMore)
	return append(b, '}')
}

// appendBilling appends the billing member.
func appendBilling(b []byte, bl *keelpay.Billing) []byte {
	b = append(b, `,"billing":{"country":`...)
	b = wirejson.AppendString(b, bl.Country)
	b = appendOptional(b, `,"state":`, bl.State)
	b = appendOptional(b, `,"postal_code":`, bl.PostalCode)
	return append(b, '}')
}

// appendPaymentMethod appends the payment method, or null.
func appendPaymentMethod(b []byte, pm *keelpay.PaymentMethod) []byte {
	if pm == nil {
		return append(b, "null"...)
	}
	b = append(b, `{"brand":`...)
	b = wirejson.AppendString(b, pm.Brand)
	b = append(b, `,"last4":`...)
	b = wirejson.AppendString(b, pm.Last4)
	b = append(b, `,"exp_month":`...)
	b = strconv.AppendInt(b, int64(pm.ExpMonth), 10)
	b = append(b, `,"exp_year":`...)
	b = strconv.AppendInt(b, int64(pm.ExpYear), 10)
	b = append(b, `,"saved":`...)
	b = strconv.AppendBool(b, pm.Saved)
	return append(b, '}')
}

// appendLastError appends the last_error member.
func appendLastError(b []byte, le *keelpay.LastError) []byte {
	b = append(b, `,"last_error":{"code":`...)
	b = wirejson.AppendString(b, le.Code)
	b = appendOptional(b, `,"decline_code":`, le.DeclineCode)
	b = append(b, `,"message":`...)
	b = wirejson.AppendString(b, le.Message)
	return append(b, '}')
}

// appendNextAction appends the next action, or null.
func appendNextAction(b []byte, na *keelpay.NextAction) []byte {
	if na == nil {
		return append(b, "null"...)
	}
	b = append(b, `{"type":`...)
	b = wirejson.AppendString(b, na.Type)
	b = append(b, `,"url":`...)
	b = wirejson.AppendString(b, na.URL)
	return append(b, '}')
}

// appendCustomerPersonal appends the personal keys of a customer as
// keelpay.Customer's MarshalJSON writes them: all three (the secret key's
// shape) unless all three are empty (the shape without personal data).
func appendCustomerPersonal(b []byte, c keelpay.Customer) []byte {
	if c.Name == "" && c.Email == "" && c.Phone == "" {
		return b
	}
	b = wirejson.AppendString(append(b, `,"name":`...), c.Name)
	b = wirejson.AppendString(append(b, `,"email":`...), c.Email)
	return wirejson.AppendString(append(b, `,"phone":`...), c.Phone)
}

// appendOptional appends key and s unless s is empty (omitempty).
func appendOptional(b []byte, key, s string) []byte {
	if s == "" {
		return b
	}
	return wirejson.AppendString(append(b, key...), s)
}

// appendStrings appends a list of strings, or null for nil.
func appendStrings(b []byte, list []string) []byte {
	if list == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, s := range list {
		if i > 0 {
			b = append(b, ',')
		}
		b = wirejson.AppendString(b, s)
	}
	return append(b, ']')
}

// appendMap appends a map with its keys in order, or null for nil.
func appendMap(b []byte, m map[string]string) []byte {
	if m == nil {
		return append(b, "null"...)
	}
	b = append(b, '{')
	var stack [16]string
	keys := stack[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(wirejson.AppendString(b, k), ':')
		b = wirejson.AppendString(b, m[k])
	}
	return append(b, '}')
}
