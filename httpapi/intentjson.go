package httpapi

import (
	"net/http"
	"slices"
	"strconv"
	"sync"

	"github.com/keelpay/keelpay/payments"
)

// A payment intent is the answer of most requests (GET, create, confirm),
// and encoding/json spent more on it than on anything else of a GET but
// the database read: reflection over the object and its parts, and a new
// buffer every time. appendIntent writes the same bytes that
// json.Marshal(o) writes (intentjson_test.go holds it to that, field by
// field and on fuzzed text), into a buffer that is reused.

// bufPool holds response buffers. Buffers that grew past maxPooledBuf are
// dropped rather than kept.
var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 2048); return &b }}

const maxPooledBuf = 64 << 10

// writeIntent writes o as the JSON response with the given status, from a
// pooled buffer.
func writeIntent(w http.ResponseWriter, status int, o *payments.IntentObject) {
	bp := bufPool.Get().(*[]byte)
	b := appendIntent((*bp)[:0], o)
	writeRaw(w, status, b) // the writer copies b before it returns
	if cap(b) <= maxPooledBuf {
		*bp = b[:0]
		bufPool.Put(bp)
	}
}

// appendIntent appends the JSON of o, as json.Marshal writes it.
func appendIntent(b []byte, o *payments.IntentObject) []byte {
	b = append(b, `{"id":`...)
	b = appendJSONString(b, o.ID)
	b = append(b, `,"object":`...)
	b = appendJSONString(b, o.Object)
	b = append(b, `,"status":`...)
	b = appendJSONString(b, string(o.Status))
	b = append(b, `,"amount":`...)
	b = strconv.AppendInt(b, o.Amount, 10)
	b = append(b, `,"currency":`...)
	b = appendJSONString(b, o.Currency)
	if o.ClientSecret != "" {
		b = append(b, `,"client_secret":`...)
		b = appendJSONString(b, o.ClientSecret)
	}
	b = append(b, `,"customer":{"id":`...)
	b = appendJSONString(b, o.Customer.ID)
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
		b = appendJSONString(b, o.Billing.Country)
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
		b = appendJSONString(b, pm.Brand)
		b = append(b, `,"last4":`...)
		b = appendJSONString(b, pm.Last4)
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
		b = appendJSONString(b, *o.SucceededAt)
	}
	if le := o.LastError; le != nil {
		b = append(b, `,"last_error":{"code":`...)
		b = appendJSONString(b, le.Code)
		b = appendOptional(b, `,"decline_code":`, le.DeclineCode)
		b = append(b, `,"message":`...)
		b = appendJSONString(b, le.Message)
		b = append(b, '}')
	}
	b = append(b, `,"next_action":`...)
	if na := o.NextAction; na == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, `{"type":`...)
		b = appendJSONString(b, na.Type)
		b = append(b, `,"url":`...)
		b = appendJSONString(b, na.URL)
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
			b = appendJSONString(b, v.Attempt)
			b = append(b, `,"amount":`...)
			b = strconv.AppendInt(b, v.Amount, 10)
			b = append(b, `,"currency":`...)
			b = appendJSONString(b, v.Currency)
			b = append(b, `,"voided_at":`...)
			b = appendJSONString(b, v.VoidedAt)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = append(b, `,"expires_at":`...)
	b = appendJSONString(b, o.ExpiresAt)
	b = append(b, `,"created_at":`...)
	b = appendJSONString(b, o.CreatedAt)
	return append(b, '}')
}

// appendOptional appends key and s unless s is empty (omitempty).
func appendOptional(b []byte, key, s string) []byte {
	if s == "" {
		return b
	}
	return appendJSONString(append(b, key...), s)
}

// appendNullable appends *s, or null.
func appendNullable(b []byte, s *string) []byte {
	if s == nil {
		return append(b, "null"...)
	}
	return appendJSONString(b, *s)
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
		b = appendJSONString(b, s)
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
		b = append(appendJSONString(b, k), ':')
		b = appendJSONString(b, m[k])
	}
	return append(b, '}')
}
