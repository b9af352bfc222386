package render_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/internal/render"
	"github.com/keelpay/keelpay/payments"
	"github.com/keelpay/keelpay/refunds"
)

// The public types an embedder decodes objects into (an event's object,
// keelpaytest's answers) take every key of the rendering, and lose none:
// decoded strictly and encoded again, they give the same bytes.
func TestDecodeTypesHoldTheRendering(t *testing.T) {
	at := time.Date(2026, 11, 22, 21, 30, 5, 0, time.UTC)
	pi := &keelpay.PaymentIntent{ID: "pi_1", Status: keelpay.IntentCanceled, Amount: 5, Currency: "EUR",
		Customer: keelpay.Customer{ID: "cus_1", Name: "N", Email: "e@x.example", Phone: "+1"}, Description: "d", Reference: "r",
		Metadata: map[string]string{"a": "b"}, Billing: &keelpay.Billing{Country: "FI"}, PageOrigins: []string{"https://a.example"},
		ClientSecret: "s", CardID: "card_1", PaymentMethod: &keelpay.PaymentMethod{Brand: "visa", Last4: "4242", ExpMonth: 1, ExpYear: 2030},
		AuthorizationCode: "A", OrderID: "o", RefundID: "re_1", LastError: &keelpay.LastError{Code: "c", Message: "m"},
		NextAction: &keelpay.NextAction{Type: "redirect_to_url", URL: "https://p.example"}, CancellationReason: "abandoned",
		VoidedCharges: []keelpay.VoidedCharge{{AttemptID: "att_1", Amount: 5, Currency: "EUR", Status: keelpay.VoidHeld, VoidedAt: at}},
		SucceededAt:   at, ExpiresAt: at, CreatedAt: at}
	card := &keelpay.Card{ID: "card_1", CustomerID: "cus_1", CardSessionID: "cs_1", Brand: "visa", Last4: "4242", ExpMonth: 1, ExpYear: 2030,
		Status: keelpay.CardActive, CreatedAt: at}
	refund := &keelpay.Refund{ID: "re_1", PaymentIntentID: "pi_1", Amount: 5, Currency: "EUR", Reason: "r", Metadata: map[string]string{"a": "b"},
		Status: keelpay.RefundFailed, Attempts: 1, LastError: &keelpay.LastError{Code: "c", Message: "m"}, SucceededAt: at, CreatedAt: at}
	for name, tc := range map[string]struct {
		rendered []byte
		into     any
	}{
		"intent":               {render.AppendIntent(nil, pi, true), &payments.IntentObject{}},
		"intent, not personal": {render.AppendIntent(nil, pi, false), &payments.IntentObject{}},
		"card":                 {render.Card(card), &payments.CardObject{}},
		"refund":               {render.Refund(refund), &refunds.Object{}},
	} {
		d := json.NewDecoder(bytes.NewReader(tc.rendered))
		d.DisallowUnknownFields()
		require.NoError(t, d.Decode(tc.into), name)
		again, err := json.Marshal(tc.into)
		require.NoError(t, err)
		require.Equal(t, string(tc.rendered), string(again), name)
	}
}
