package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/keelpaytest"
	"github.com/keelpay/keelpay/provider/sandbox"
	"github.com/keelpay/keelpay/webhooks"
)

// TestFulfilledOnceUnderDuplicatesAndReordering rehearses the receiver
// against a keelpay running in the test (keelpaytest) with sandbox faults
// on: every delivery is sent twice, and the payment_failed events of
// declined first attempts are held back until after the
// payment_intent.succeeded events of the attempts that paid. Each order is
// still fulfilled exactly once and no event is processed twice. A receiver
// that passes this is right in production, where the same things happen
// by accident.
func TestFulfilledOnceUnderDuplicatesAndReordering(t *testing.T) {
	t.Parallel()
	faults := sandbox.NewWebhookFaults()
	// With faults, deliveries leave only when the test asks (kp.Deliver,
	// kp.Advance), so each phase below knows which events its faults met.
	kp := keelpaytest.Start(t, keelpaytest.WithWebhookFaults(faults), keelpaytest.WithWebhookPath("/webhooks"))
	store := kp.Store(t)
	tr, handler := newTestReceiver(t, dbPath(t), []string{store.WebhookSecret})
	mux := http.NewServeMux()
	mux.Handle("POST /webhooks", handler)
	kp.HandleWebhooks(mux)

	declined, visa := store.SaveCard(t, sandbox.CardDeclined), store.SaveCard(t, sandbox.CardVisa)
	// The cards' card.created events go first, with no fault set.
	require.Equal(t, 2, kp.Deliver(t))
	tr.waitServed(t, 2)
	before := len(kp.Webhooks.Deliveries())

	// First attempts at paying are declined: their events are held back.
	require.NoError(t, faults.Set(store.ID, sandbox.Faults{Duplicate: 1, Reorder: 1, Seed: 1}))
	var intents []string
	for range 5 {
		pi := store.Pay(t, declined, 4200, "eur")
		require.Equal(t, keelpay.IntentRequiresPaymentMethod, pi.Status)
		intents = append(intents, pi.ID)
	}
	require.Equal(t, 5, kp.Deliver(t), "claimed and held back")
	require.Equal(t, before, len(kp.Webhooks.Deliveries()), "nothing sent while held")

	// Then the payments succeed with another card: delivered at once,
	// twice each.
	require.NoError(t, faults.Set(store.ID, sandbox.Faults{Duplicate: 1, Seed: 1}))
	for _, id := range intents {
		require.Equal(t, keelpay.IntentSucceeded, confirm(t, kp, store, id, visa))
	}
	require.Equal(t, 5, kp.Deliver(t))
	tr.waitServed(t, 10)
	for _, pi := range intents {
		require.Equal(t, 1, tr.fulfilments(t, pi), "fulfilled before the older failure arrives")
	}
	// The held failures arrive last, twice each.
	kp.Advance(t, sandbox.ReorderHoldDefault)
	tr.waitServed(t, 10)

	for _, pi := range intents {
		require.Equal(t, 1, tr.fulfilments(t, pi), "%s fulfilled once", pi)
	}
	// What the receiver got, in order of arrival, each verified by the kit
	// with the store's webhook secret.
	seen := map[string][][]byte{} // event id -> bodies
	var order []webhooks.Event    // first arrivals
	for _, d := range kp.Webhooks.Deliveries()[before:] {
		require.NoError(t, d.Err)
		e, err := d.Event()
		require.NoError(t, err)
		require.Equal(t, e.ID, d.Header.Get(webhooks.HeaderID))
		if len(seen[e.ID]) == 0 {
			order = append(order, e)
		}
		seen[e.ID] = append(seen[e.ID], d.Body)
	}
	require.Len(t, order, 10, "a payment_failed and a payment_intent.succeeded event per intent")
	for i, e := range order {
		// Every succeeded event came before every failure of an earlier
		// attempt.
		want := keelpay.EventPaymentIntentSucceeded
		if i >= len(intents) {
			want = keelpay.EventPaymentIntentPaymentFailed
		}
		require.Equal(t, string(want), e.Type, "arrival %d", i)
	}
	for _, pi := range intents {
		var types []string
		for _, e := range order {
			if intentOf(t, e) == pi {
				types = append(types, e.Type)
			}
		}
		require.Equal(t, []string{string(keelpay.EventPaymentIntentSucceeded), string(keelpay.EventPaymentIntentPaymentFailed)}, types, pi)
	}
	for _, e := range order {
		require.Len(t, seen[e.ID], 2, "event %s delivered twice", e.ID)
		require.True(t, bytes.Equal(seen[e.ID][0], seen[e.ID][1]), "event %s sent twice with the same body bytes", e.ID)
		require.Equal(t, 1, tr.processed(t, e.ID), "event %s processed once", e.ID)
		require.Equal(t, "succeeded", deliveryStatus(t, kp, store, e.ID), "event %s", e.ID)
	}
}

// confirm confirms the payment intent id again with a saved card, with
// the secret key, as a store's checkout does after a declined attempt,
// and returns the intent's status.
func confirm(t *testing.T, kp *keelpaytest.Kit, store *keelpaytest.Store, id, card string) keelpay.PaymentIntentStatus {
	t.Helper()
	var pi struct {
		Status keelpay.PaymentIntentStatus `json:"status"`
	}
	api(t, kp, store, http.MethodPost, "/v1/payment_intents/"+id+"/confirm", map[string]any{"payment_method": card}, &pi)
	return pi.Status
}

// deliveryStatus reads an event's delivery status with the secret key.
func deliveryStatus(t *testing.T, kp *keelpaytest.Kit, store *keelpaytest.Store, id string) string {
	t.Helper()
	var e struct {
		Delivery struct {
			Status string `json:"status"`
		} `json:"delivery"`
	}
	api(t, kp, store, http.MethodGet, "/v1/events/"+id, nil, &e)
	return e.Delivery.Status
}

// api sends a request to the kit's API with the store's secret key,
// requires a 200 and decodes the answer into out.
func api(t *testing.T, kp *keelpaytest.Kit, store *keelpaytest.Store, method, path string, body, out any) {
	t.Helper()
	var b bytes.Buffer
	if body != nil {
		require.NoError(t, json.NewEncoder(&b).Encode(body))
	}
	req, err := http.NewRequestWithContext(t.Context(), method, kp.URL+path, &b)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+store.SecretKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s %s", method, path)
	require.NoError(t, json.NewDecoder(resp.Body).Decode(out))
}

// intentOf is the id of the payment intent an event carries.
func intentOf(t *testing.T, e webhooks.Event) string {
	t.Helper()
	var pi paymentIntent
	require.NoError(t, json.Unmarshal(e.Data.Object, &pi))
	return pi.ID
}
