package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"testing"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/client"
	"github.com/keelpay/keelpay/provider/sandbox"
)

// rawGet is the server's answer to GET path, as sent.
func rawGet(t *testing.T, base, key, path string) []byte {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, base+path, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s %v", path, resp.StatusCode, b, err)
	}
	return b
}

// requireRoundTrip decodes the server's answer raw into v, a client
// type, strictly (no member the type lacks), encodes v again and checks
// that every member of raw comes back with its value: a null member as
// absent or zero, the rest equal.
func requireRoundTrip(t *testing.T, raw []byte, v any) {
	t.Helper()
	if err := decodeStrict(raw, v); err != nil {
		t.Fatalf("decode %s into %T: %v", raw, v, err)
	}
	again, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var a, b any
	if err := json.Unmarshal(raw, &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(again, &b); err != nil {
		t.Fatal(err)
	}
	if diff := sameJSON("", a, b); diff != "" {
		t.Errorf("%T does not round-trip:\n%s\nserver: %s\nclient: %s", v, diff, raw, again)
	}
}

func decodeStrict(raw []byte, v any) error {
	d := json.NewDecoder(bytesReader(raw))
	d.DisallowUnknownFields()
	return d.Decode(v)
}

// isZero: what a null member of the server comes back as.
func isZero(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case string:
		return v == "" || v == "0001-01-01T00:00:00Z"
	case float64:
		return v == 0
	case bool:
		return !v
	case map[string]any:
		return len(v) == 0
	case []any:
		return len(v) == 0
	}
	return false
}

func sameJSON(path string, a, b any) string {
	if a == nil {
		if !isZero(b) {
			return fmt.Sprintf("%s: server null, client %v\n", path, b)
		}
		return ""
	}
	switch a := a.(type) {
	case map[string]any:
		bm, ok := b.(map[string]any)
		if !ok {
			return fmt.Sprintf("%s: server object, client %v\n", path, b)
		}
		var diff string
		for k, av := range a {
			diff += sameJSON(path+"."+k, av, bm[k])
		}
		for k, bv := range bm {
			if _, ok := a[k]; !ok && !isZero(bv) {
				diff += fmt.Sprintf("%s.%s: not sent, client %v\n", path, k, bv)
			}
		}
		return diff
	case []any:
		bs, ok := b.([]any)
		if !ok || len(bs) != len(a) {
			return fmt.Sprintf("%s: server %v, client %v\n", path, a, b)
		}
		var diff string
		for i := range a {
			diff += sameJSON(fmt.Sprintf("%s[%d]", path, i), a[i], bs[i])
		}
		return diff
	}
	if !reflect.DeepEqual(a, b) {
		return fmt.Sprintf("%s: server %v, client %v\n", path, a, b)
	}
	return ""
}

// TestRoundTrip: the client's types hold every member of the server's
// answers, in every state that shows a member of its own.
func TestRoundTrip(t *testing.T) {
	ctx := context.Background()
	kp, store := kit(t)
	c := newClient(t, kp.URL, store.SecretKey, nil)
	get := func(path string) []byte { return rawGet(t, kp.URL, store.SecretKey, path) }

	cs, err := c.CreateCardSession(ctx, &client.CardSessionParams{Customer: store.Customer, PageOrigins: []string{"https://shop.example"}})
	if err != nil {
		t.Fatal(err)
	}
	requireRoundTrip(t, get("/v1/card_sessions/"+cs.ID), &client.CardSession{})
	visa := store.SaveCard(t, sandbox.CardVisa)
	requireRoundTrip(t, get("/v1/cards/"+visa), &client.Card{})

	pay := func(card string, billing *keelpay.Billing) *client.PaymentIntent {
		pi, err := c.CreatePaymentIntent(ctx, &client.PaymentIntentParams{Amount: 1999, Currency: "EUR", Customer: store.Customer,
			Description: "d", Reference: "r", Metadata: map[string]string{"k": "v"}, Billing: billing,
			PageOrigins: []string{"https://shop.example"}, PaymentMethod: card})
		if err != nil {
			t.Fatal(err)
		}
		requireRoundTrip(t, get("/v1/payment_intents/"+pi.ID), &client.PaymentIntent{})
		if pi, err = c.ConfirmPaymentIntent(ctx, pi.ID, nil); err != nil {
			t.Fatal(err)
		}
		requireRoundTrip(t, get("/v1/payment_intents/"+pi.ID), &client.PaymentIntent{})
		return pi
	}
	paid := pay(visa, &keelpay.Billing{Country: "DE", State: "BE", PostalCode: "10115"})
	if declined := pay(store.SaveCard(t, sandbox.CardDeclined), nil); declined.LastError == nil {
		t.Errorf("declined = %+v", declined)
	}
	threeDS := pay(store.SaveCard(t, sandbox.CardThreeDSecure), nil)
	if threeDS.NextAction == nil || threeDS.NextAction.URL == "" {
		t.Errorf("3D Secure = %+v", threeDS)
	}
	if _, err := c.CancelPaymentIntent(ctx, threeDS.ID, &client.CancelParams{CancellationReason: "duplicate"}); err != nil {
		t.Fatal(err)
	}
	requireRoundTrip(t, get("/v1/payment_intents/"+threeDS.ID), &client.PaymentIntent{})

	ref, err := c.CreateRefund(ctx, &client.RefundParams{PaymentIntent: paid.ID, Reason: "returned", Metadata: map[string]string{"k": "v"}})
	if err != nil {
		t.Fatal(err)
	}
	requireRoundTrip(t, get("/v1/refunds/"+ref.ID), &client.Refund{})
	requireRoundTrip(t, get("/v1/payment_intents/"+paid.ID), &client.PaymentIntent{})
	requireRoundTrip(t, get("/v1/payment_intents?limit=100"), &client.List[*client.PaymentIntent]{})

	ev, err := c.SendTestWebhook(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	kp.RequireEvent(t, keelpay.EventPaymentIntentSucceeded, paid.ID)
	requireRoundTrip(t, get("/v1/events/"+ev.ID), &client.Event{})
	requireRoundTrip(t, get("/v1/events?limit=100"), &client.List[*client.Event]{})
	requireRoundTrip(t, get("/v1/events/"+ev.ID+"/attempts"), &client.List[*client.DeliveryAttempt]{})
}

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }
