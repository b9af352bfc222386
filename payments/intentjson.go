package payments

import (
	"encoding/json"
	"slices"
	"strconv"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/internal/wirejson"
)

// The JSON of the objects of this package: one function for each, which
// renders the object for the response, for the answer stored with an
// idempotency key, and (without personal data) for the body of its
// events. The stored answer and the response are then the same bytes,
// and an event cannot drift from what the API shows.

// AppendIntentJSON appends the JSON of a payment intent to b (see
// [NewIntentObject] for personal). b may be nil.
func AppendIntentJSON(b []byte, pi *keelpay.PaymentIntent, personal bool) []byte {
	if b == nil {
		b = make([]byte, 0, 1024)
	}
	return NewIntentObject(pi, personal).AppendJSON(b)
}

// CardSessionJSON is the JSON of a card session (see
// [NewCardSessionObject] for personal).
func CardSessionJSON(cs *keelpay.CardSession, personal bool) []byte {
	return marshal(NewCardSessionObject(cs, personal))
}

// CardJSON is the JSON of a saved card.
func CardJSON(c *keelpay.Card) []byte {
	return marshal(NewCardObject(c))
}

// IntentListJSON is the JSON of a page of intents (docs/api.md, "Lists"):
// object list, the intents as AppendIntentJSON renders them, has_more.
func IntentListJSON(intents []*keelpay.PaymentIntent, hasMore, personal bool) []byte {
	b := append(make([]byte, 0, 64+1024*len(intents)), `{"object":"list","data":[`...)
	for i, pi := range intents {
		if i > 0 {
			b = append(b, ',')
		}
		b = NewIntentObject(pi, personal).AppendJSON(b)
	}
	b = append(b, `],"has_more":`...)
	b = strconv.AppendBool(b, hasMore)
	return append(b, '}')
}

func marshal(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		// Every object marshals; this is a programming error.
		panic("payments: marshal: " + err.Error())
	}
	return b
}

// AppendJSON appends the JSON of o, byte for byte as json.Marshal(o)
// writes it, without reflection: a payment intent is the answer of most
// requests and the object of most events.
func (o *IntentObject) AppendJSON(b []byte) []byte {
	b = append(b, `{"id":`...)
	b = wirejson.AppendString(b, o.ID)
	b = append(b, `,"object":`...)
	b = wirejson.AppendString(b, o.Object)
	b = append(b, `,"status":`...)
	b = wirejson.AppendString(b, string(o.Status))
	b = append(b, `,"amount":`...)
	b = strconv.AppendInt(b, o.Amount, 10)
	b = append(b, `,"currency":`...)
	b = wirejson.AppendString(b, o.Currency)
	if o.ClientSecret != "" {
		b = append(b, `,"client_secret":`...)
		b = wirejson.AppendString(b, o.ClientSecret)
	}
	b = append(b, `,"customer":{"id":`...)
	b = wirejson.AppendString(b, o.Customer.ID)
	b = appendOptional(b, `,"name":`, o.Customer.Name)
	b = appendOptional(b, `,"email":`, o.Customer.Email)
	b = appendOptional(b, `,"phone":`, o.Customer.Phone)
	b = append(b, `},"description":`...)
	b = appendNullable(b, o.Description)
	b = append(b, `,"reference":`...)
	b = appendNullable(b, o.Reference)
	b = append(b, `,"metadata":`...)
	b = appendMap(b, o.Metadata)
	if o.Billing != nil {
		b = append(b, `,"billing":{"country":`...)
		b = wirejson.AppendString(b, o.Billing.Country)
		b = appendOptional(b, `,"state":`, o.Billing.State)
		b = appendOptional(b, `,"postal_code":`, o.Billing.PostalCode)
		b = append(b, '}')
	}
	b = append(b, `,"page_origins":`...)
	b = appendStrings(b, o.PageOrigins)
	b = append(b, `,"card":`...)
	b = appendNullable(b, o.Card)
	b = append(b, `,"payment_method":`...)
	if pm := o.PaymentMethod; pm == nil {
		b = append(b, "null"...)
	} else {
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
		b = append(b, '}')
	}
	b = appendOptional(b, `,"authorization_code":`, o.AuthorizationCode)
	b = appendOptional(b, `,"order_id":`, o.OrderID)
	b = append(b, `,"refund":`...)
	b = appendNullable(b, o.Refund)
	if o.SucceededAt != nil {
		b = append(b, `,"succeeded_at":`...)
		b = wirejson.AppendString(b, *o.SucceededAt)
	}
	if le := o.LastError; le != nil {
		b = append(b, `,"last_error":{"code":`...)
		b = wirejson.AppendString(b, le.Code)
		b = appendOptional(b, `,"decline_code":`, le.DeclineCode)
		b = append(b, `,"message":`...)
		b = wirejson.AppendString(b, le.Message)
		b = append(b, '}')
	}
	b = append(b, `,"next_action":`...)
	if na := o.NextAction; na == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, `{"type":`...)
		b = wirejson.AppendString(b, na.Type)
		b = append(b, `,"url":`...)
		b = wirejson.AppendString(b, na.URL)
		b = append(b, '}')
	}
	b = appendOptional(b, `,"cancellation_reason":`, o.CancellationReason)
	if len(o.VoidedCharges) > 0 {
		b = append(b, `,"voided_charges":[`...)
		for i, v := range o.VoidedCharges {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"attempt":`...)
			b = wirejson.AppendString(b, v.Attempt)
			b = append(b, `,"amount":`...)
			b = strconv.AppendInt(b, v.Amount, 10)
			b = append(b, `,"currency":`...)
			b = wirejson.AppendString(b, v.Currency)
			b = append(b, `,"voided_at":`...)
			b = wirejson.AppendString(b, v.VoidedAt)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = append(b, `,"expires_at":`...)
	b = wirejson.AppendString(b, o.ExpiresAt)
	b = append(b, `,"created_at":`...)
	b = wirejson.AppendString(b, o.CreatedAt)
	return append(b, '}')
}

// appendOptional appends key and s unless s is empty (omitempty).
func appendOptional(b []byte, key, s string) []byte {
	if s == "" {
		return b
	}
	return wirejson.AppendString(append(b, key...), s)
}

// appendNullable appends *s, or null.
func appendNullable(b []byte, s *string) []byte {
	if s == nil {
		return append(b, "null"...)
	}
	return wirejson.AppendString(b, *s)
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
