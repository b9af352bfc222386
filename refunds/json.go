package refunds

import (
	"github.com/keelpay/keelpay"
)

// Object is the decoded wire form of a refund, as the API answers and an
// event's object carries it: the type an embedder decodes those bodies
// into. Nothing renders from it: keelpay renders a refund with one
// function, and a test holds this type to that rendering and to
// docs/openapi.json. A refund carries no personal data.
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
