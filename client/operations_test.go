package client_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/client"
	"github.com/keelpay/keelpay/provider/sandbox"
)

// TestOperations goes through every operation against a real keelpay,
// with a strict client: an answer with a field the client's types do not
// have fails the call, so the types decode the whole wire.
func TestOperations(t *testing.T) {
	ctx := context.Background()
	kp, store := kit(t)
	c := newClient(t, kp.URL, store.SecretKey, nil)

	// Card sessions and cards.
	cs, err := c.CreateCardSession(ctx, &client.CardSessionParams{Customer: store.Customer, PageOrigins: []string{"https://shop.example"}})
	if err != nil {
		t.Fatal(err)
	}
	if cs.Object != "card_session" || cs.Status != keelpay.CardSessionOpen || cs.ClientSecret == "" || cs.Customer != store.Customer ||
		cs.Card != "" || cs.ExpiresAt.Sub(cs.CreatedAt) != 30*time.Minute || cs.Response.StatusCode != http.StatusCreated ||
		cs.Response.IdempotencyKey == "" || cs.Response.RequestID == "" {
		t.Errorf("card session = %+v, response %+v", cs, cs.Response)
	}
	if got, err := c.GetCardSession(ctx, cs.ID); err != nil || got.ID != cs.ID || got.Response.IdempotencyKey != "" {
		t.Errorf("GetCardSession = %+v, %v", got, err)
	}
	cardID := store.SaveCard(t, sandbox.CardVisa)
	card, err := c.GetCard(ctx, cardID)
	if err != nil {
		t.Fatal(err)
	}
	if card.Object != "card" || card.Brand != "visa" || card.Last4 != "4242" || card.Status != keelpay.CardActive ||
		card.Customer.ID != store.Customer.ID || card.CardSession == "" || card.CreatedAt.IsZero() {
		t.Errorf("card = %+v", card)
	}

	// A payment with the saved card.
	pi, err := c.CreatePaymentIntent(ctx, &client.PaymentIntentParams{
		Amount: 1999, Currency: "eur", Customer: store.Customer, Description: "order 1",
		Reference: "order-1", Metadata: map[string]string{"order": "1"}, Billing: &keelpay.Billing{Country: "DE"},
		PageOrigins: []string{"https://shop.example"}, PaymentMethod: cardID,
	})
	if err != nil {
		t.Fatal(err)
	}
	if pi.Status != keelpay.IntentRequiresPaymentMethod || pi.Amount != 1999 || pi.Currency != "EUR" || pi.Card != cardID ||
		pi.Description != "order 1" || pi.Reference != "order-1" || pi.Metadata["order"] != "1" || pi.Billing == nil ||
		pi.Billing.Country != "DE" || pi.ClientSecret == "" || pi.Refund != "" || !pi.SucceededAt.IsZero() ||
		pi.Response.StatusCode != http.StatusCreated {
		t.Errorf("created intent = %+v", pi)
	}
	pi, err = c.ConfirmPaymentIntent(ctx, pi.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if pi.Status != keelpay.IntentSucceeded || pi.PaymentMethod == nil || pi.PaymentMethod.Last4 != "4242" ||
		!pi.PaymentMethod.Saved || pi.SucceededAt.IsZero() || pi.AuthorizationCode == "" || pi.Response.StatusCode != http.StatusOK {
		t.Errorf("confirmed intent = %+v", pi)
	}
	if got, err := c.GetPaymentIntent(ctx, pi.ID); err != nil || got.Status != keelpay.IntentSucceeded {
		t.Errorf("GetPaymentIntent = %+v, %v", got, err)
	}

	// A declined card: not an error, the intent carries last_error.
	declined := store.SaveCard(t, sandbox.CardDeclined)
	failed, err := c.CreatePaymentIntent(ctx, &client.PaymentIntentParams{Amount: 500, Currency: "EUR", Customer: store.Customer})
	if err != nil {
		t.Fatal(err)
	}
	failed, err = c.ConfirmPaymentIntent(ctx, failed.ID, &client.ConfirmParams{PaymentMethod: declined})
	if err != nil {
		t.Fatal(err)
	}
	if failed.Status != keelpay.IntentRequiresPaymentMethod || failed.LastError == nil || failed.LastError.Code != "card_declined" {
		t.Errorf("declined intent = %+v", failed)
	}
	canceled, err := c.CancelPaymentIntent(ctx, failed.ID, &client.CancelParams{CancellationReason: "abandoned"})
	if err != nil {
		t.Fatal(err)
	}
	if canceled.Status != keelpay.IntentCanceled || canceled.CancellationReason != "abandoned" {
		t.Errorf("canceled intent = %+v", canceled)
	}

	// The list, newest first.
	list, err := c.ListPaymentIntents(ctx, &client.PaymentIntentListParams{ListParams: client.ListParams{Limit: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if list.Object != "list" || len(list.Data) != 1 || list.Data[0].ID != failed.ID || !list.HasMore {
		t.Errorf("list = %+v", list)
	}
	list, err = c.ListPaymentIntents(ctx, &client.PaymentIntentListParams{ListParams: client.ListParams{StartingAfter: failed.ID}})
	if err != nil || len(list.Data) != 1 || list.Data[0].ID != pi.ID || list.HasMore {
		t.Errorf("second page = %+v, %v", list, err)
	}

	// Refunds.
	ref, err := c.CreateRefund(ctx, &client.RefundParams{PaymentIntent: pi.ID, Reason: "returned", Metadata: map[string]string{"rma": "7"}})
	if err != nil {
		t.Fatal(err)
	}
	if ref.Object != "refund" || ref.PaymentIntent != pi.ID || ref.Amount != 1999 || ref.Currency != "EUR" || ref.Reason != "returned" ||
		ref.Metadata["rma"] != "7" || ref.Attempts != 1 || ref.Response.StatusCode != http.StatusCreated {
		t.Errorf("refund = %+v", ref)
	}
	if got, err := c.GetRefund(ctx, ref.ID); err != nil || got.ID != ref.ID || got.Status != ref.Status {
		t.Errorf("GetRefund = %+v, %v", got, err)
	}
	if got, err := c.GetPaymentIntent(ctx, pi.ID); err != nil || got.Refund != ref.ID {
		t.Errorf("refunded intent = %+v, %v", got, err)
	}

	// Webhooks and events.
	ev, err := c.SendTestWebhook(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var msg struct{ Message string }
	if ev.Type != keelpay.EventWebhookTest || ev.Response.StatusCode != http.StatusAccepted || ev.Data.Decode(&msg) != nil || msg.Message != "test" {
		t.Errorf("test event = %+v", ev)
	}
	kp.RequireEvent(t, keelpay.EventPaymentIntentSucceeded, pi.ID)
	events, err := c.ListEvents(ctx, &client.EventListParams{Type: keelpay.EventPaymentIntentSucceeded})
	if err != nil {
		t.Fatal(err)
	}
	if len(events.Data) != 1 {
		t.Fatalf("succeeded events = %+v", events.Data)
	}
	var evIntent client.PaymentIntent
	if err := events.Data[0].Data.Decode(&evIntent); err != nil || evIntent.ID != pi.ID || evIntent.Customer.Name != "" {
		t.Errorf("event's intent = %+v, %v", evIntent, err)
	}
	got, err := c.GetEvent(ctx, ev.ID)
	if err != nil || got.ID != ev.ID || got.Delivery.Attempts < 1 || got.Delivery.LastAttemptAt.IsZero() {
		t.Errorf("GetEvent = %+v, %v", got, err)
	}
	attempts, err := c.ListEventAttempts(ctx, ev.ID, nil)
	if err != nil || len(attempts.Data) < 1 || attempts.Data[0].Event != ev.ID || attempts.Data[0].StatusCode/100 != 2 {
		t.Errorf("ListEventAttempts = %+v, %v", attempts.Data[0], err)
	}
	again, err := c.RedeliverEvent(ctx, ev.ID, nil)
	if err != nil || again.ID != ev.ID || again.Delivery.Status != keelpay.DeliveryPending {
		t.Errorf("RedeliverEvent = %+v, %v", again, err)
	}
	red, err := c.RedeliverEvents(ctx, &client.RedeliverEventsParams{Status: keelpay.DeliverySucceeded, Type: keelpay.EventCardCreated,
		CreatedAfter: time.Now().Add(-time.Hour)})
	if err != nil || red.Object != "redelivery" || red.Queued != 2 || red.HasMore {
		t.Errorf("RedeliverEvents = %+v, %v", red, err)
	}
}

// TestIterators walks lists page by page, forwards and backwards.
func TestIterators(t *testing.T) {
	ctx := context.Background()
	kp, store := kit(t)
	c := newClient(t, kp.URL, store.SecretKey, nil)
	var ids []string // newest first
	for range 5 {
		pi, err := c.CreatePaymentIntent(ctx, &client.PaymentIntentParams{Amount: 100, Currency: "EUR", Customer: store.Customer})
		if err != nil {
			t.Fatal(err)
		}
		ids = append([]string{pi.ID}, ids...)
	}
	var got []string
	for pi, err := range c.PaymentIntents(ctx, &client.PaymentIntentListParams{ListParams: client.ListParams{Limit: 2}}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, pi.ID)
	}
	if !equal(got, ids) {
		t.Errorf("forwards = %v, want %v", got, ids)
	}
	// A sequence iterated again starts again at its first page.
	seq := c.PaymentIntents(ctx, &client.PaymentIntentListParams{ListParams: client.ListParams{Limit: 2}})
	for range 2 {
		got = nil
		for pi, err := range seq {
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, pi.ID)
		}
		if !equal(got, ids) {
			t.Errorf("iterated again = %v, want %v", got, ids)
		}
	}
	got = nil
	for pi, err := range c.PaymentIntents(ctx, &client.PaymentIntentListParams{ListParams: client.ListParams{Limit: 2, EndingBefore: ids[4]}}) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, pi.ID)
	}
	// Backwards, each page is newest first and the pages go from the
	// cursor towards the newest.
	if want := []string{ids[2], ids[3], ids[0], ids[1]}; !equal(got, want) {
		t.Errorf("backwards = %v, want %v", got, want)
	}
	n := 0
	for _, err := range c.PaymentIntents(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		n++
		if n == 3 {
			break
		}
	}
	for _, err := range c.Events(ctx, &client.EventListParams{Type: "no_such_type"}) {
		if keelpay.ErrorCode(err) != keelpay.CodeInvalidRequest {
			t.Errorf("iterating a bad list: %v", err)
		}
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestSetup sets a store up without a key, then changes it with its key.
func TestSetup(t *testing.T) {
	ctx := context.Background()
	kp, _ := kit(t)
	anon := newClient(t, kp.URL, "", nil)
	p := &client.SetupParams{ClientID: "app_clientsetup", ClientSecret: "secret_clientsetup", WebhookURL: kp.Webhooks.URL() + "/"}
	st, err := anon.Setup(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if st.Object != "store" || st.Currency != "EUR" || st.SecretKey == "" || st.WebhookSecret == "" || st.PublishableKey == "" ||
		st.Response.StatusCode != http.StatusCreated {
		t.Errorf("store = %+v", st)
	}
	_, err = anon.Setup(ctx, p)
	var kerr *keelpay.Error
	if !errors.As(err, &kerr) || kerr.Code != keelpay.CodeStoreAlreadyEnabled || kerr.Details["store_id"] != st.ID {
		t.Errorf("second setup: %v", err)
	}
	keyed := newClient(t, kp.URL, st.SecretKey, nil)
	rotated, err := keyed.Setup(ctx, &client.SetupParams{ClientID: p.ClientID, ClientSecret: p.ClientSecret, WebhookURL: p.WebhookURL, RotateSecretKey: true})
	if err != nil {
		t.Fatal(err)
	}
	if rotated.ID != st.ID || rotated.SecretKey == "" || rotated.SecretKey == st.SecretKey || rotated.Response.StatusCode != http.StatusOK {
		t.Errorf("rotated = %+v", rotated)
	}
	// The old key stops working: 401, not repeated.
	_, err = keyed.ListEvents(ctx, nil)
	var cerr *client.Error
	if !errors.As(err, &cerr) || cerr.StatusCode != http.StatusUnauthorized || keelpay.ErrorCode(err) != keelpay.CodeInvalidAPIKey || cerr.Attempts != 1 {
		t.Errorf("old key: %v", err)
	}
}

// TestErrors: the API's errors come back as *keelpay.Error inside a
// *client.Error with the status, Request-Id and details.
func TestErrors(t *testing.T) {
	ctx := context.Background()
	kp, store := kit(t)
	c := newClient(t, kp.URL, store.SecretKey, nil)

	_, err := c.GetPaymentIntent(ctx, "pi_missing")
	var kerr *keelpay.Error
	var cerr *client.Error
	if !errors.As(err, &kerr) || kerr.Code != keelpay.CodePaymentIntentNotFound || !errors.As(err, &cerr) ||
		cerr.StatusCode != http.StatusNotFound || cerr.RequestID == "" || cerr.Attempts != 1 {
		t.Fatalf("missing intent: %v", err)
	}
	// An id is one path segment, whatever it holds.
	for _, id := range []string{"pi_a/b", "pi_a%2Fb", "../cards/x", "pi_a?b"} {
		if _, err := c.GetPaymentIntent(ctx, id); keelpay.ErrorCode(err) != keelpay.CodePaymentIntentNotFound {
			t.Errorf("GetPaymentIntent(%q): %v", id, err)
		}
	}
	_, err = c.CreatePaymentIntent(ctx, &client.PaymentIntentParams{Amount: 0, Currency: "EUR", Customer: store.Customer})
	if !errors.As(err, &kerr) || kerr.Code != keelpay.CodeInvalidRequest || kerr.Details["code"] != "invalid_amount" || kerr.Details["field"] != "amount" {
		t.Errorf("invalid amount: %v", err)
	}
	pi, err := c.CreatePaymentIntent(ctx, &client.PaymentIntentParams{Amount: 100, Currency: "EUR", Customer: store.Customer})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.CancelPaymentIntent(ctx, pi.ID, nil); err != nil {
		t.Fatal(err)
	}
	_, err = c.CancelPaymentIntent(ctx, pi.ID, nil)
	if !errors.As(err, &kerr) || kerr.Code != keelpay.CodePaymentIntentNotCancelable || kerr.Details["status"] != "canceled" {
		t.Errorf("cancel twice: %v", err)
	}
	// The same key with another body: 422, not repeated.
	_, err = c.CreatePaymentIntent(ctx, &client.PaymentIntentParams{Amount: 200, Currency: "EUR", Customer: store.Customer, IdempotencyKey: pi.Response.IdempotencyKey})
	if !errors.As(err, &cerr) || cerr.StatusCode != http.StatusUnprocessableEntity || keelpay.ErrorCode(err) != keelpay.CodeIdempotencyKeyReused || cerr.Attempts != 1 {
		t.Errorf("reused key: %v", err)
	}
	// The caller's own key replays the stored answer.
	again, err := c.CreatePaymentIntent(ctx, &client.PaymentIntentParams{Amount: 100, Currency: "EUR", Customer: store.Customer, IdempotencyKey: pi.Response.IdempotencyKey})
	if err != nil || again.ID != pi.ID || !again.Response.IdempotentReplayed {
		t.Errorf("replayed = %+v, %v", again, err)
	}
}
