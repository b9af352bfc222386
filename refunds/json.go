package refunds

import (
	"encoding/json"
	"time"

	"github.com/keelpay/keelpay"
)

// Object is the wire form of a refund, in responses and in events. A refund
// carries no personal data.
type Object struct {
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

// JSON is the JSON of refund r: the one rendering of a refund, for
// responses, for the answer stored with an idempotency key and for the
// body of its events.
func JSON(r *keelpay.Refund) []byte {
	b, err := json.Marshal(NewObject(r))
	if err != nil {
		// A refund always marshals; this is a programming error.
		panic("refunds: marshal: " + err.Error())
	}
	return b
}

// NewObject returns the wire form of r.
func NewObject(r *keelpay.Refund) *Object {
	o := &Object{
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
		CreatedAt:     r.CreatedAt.UTC().Format(time.RFC3339),
	}
	if o.Metadata == nil {
		o.Metadata = map[string]string{}
	}
	if !r.SucceededAt.IsZero() {
		s := r.SucceededAt.UTC().Format(time.RFC3339)
		o.SucceededAt = &s
	}
	return o
}
