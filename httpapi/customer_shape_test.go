package httpapi_test

import (
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/provider/sandbox"
)

// customerKeys returns the sorted keys of the customer object of v.
func customerKeys(t *testing.T, v any) []string {
	t.Helper()
	c, ok := v.(map[string]any)
	require.True(t, ok, "customer is an object: %v", v)
	return slices.Sorted(maps.Keys(c))
}

// TestCustomerShapeOfEachView checks the two documented shapes of a
// customer (docs/openapi.json, Customer and CustomerRef) in every view:
// the secret key sees all four keys (intent answers, reads, card
// sessions); the publishable key, cards and events see only the id. And
// keelpay.Customer itself marshals to those shapes: only an id gives
// {"id"}, anything more all four keys, even empty ones.
func TestCustomerShapeOfEachView(t *testing.T) {
	t.Parallel()
	full := []string{"email", "id", "name", "phone"}
	ref := []string{"id"}

	b := setup(t)
	s := b.shop(t, "app_customer_shape")
	session := b.session(t, s)
	require.Equal(t, full, customerKeys(t, session.Body["customer"]), "card session, secret key: %s", session.Raw)
	card := b.capture(t, s, session, sandbox.CardVisa)
	require.Equal(t, http.StatusCreated, card.Status, "%s", card.Raw)
	require.Equal(t, ref, customerKeys(t, card.Body["customer"]), "card: %s", card.Raw)

	created := b.createIntent(t, s, intentBody(s, 1200))
	require.Equal(t, full, customerKeys(t, created.Body["customer"]), "create, secret key: %s", created.Raw)
	id, secret := pi(t, created), created.str("client_secret")
	read := b.do(t, req{method: "GET", path: "/v1/payment_intents/" + id, key: s.sk})
	require.Equal(t, full, customerKeys(t, read.Body["customer"]), "read, secret key: %s", read.Raw)
	browser := b.do(t, req{method: "GET", path: "/v1/payment_intents/" + id + "?client_secret=" + secret, key: s.pk})
	require.Equal(t, http.StatusOK, browser.Status, "%s", browser.Raw)
	require.Equal(t, ref, customerKeys(t, browser.Body["customer"]), "read, publishable key: %s", browser.Raw)
	requireNoPersonalData(t, browser.Raw)

	confirmed := b.confirmSaved(t, s, id, card.str("id"))
	requireStatus(t, confirmed, http.StatusOK, keelpay.IntentSucceeded)
	require.Equal(t, full, customerKeys(t, confirmed.Body["customer"]), "confirm, secret key: %s", confirmed.Raw)

	events := b.do(t, req{method: "GET", path: "/v1/events", key: s.sk})
	require.Equal(t, http.StatusOK, events.Status, "%s", events.Raw)
	seen := 0
	for _, e := range events.Body["data"].([]any) {
		obj := e.(map[string]any)["data"].(map[string]any)["object"].(map[string]any)
		if c, ok := obj["customer"]; ok {
			require.Equal(t, ref, customerKeys(t, c), "event %v", e.(map[string]any)["type"])
			seen++
		}
	}
	require.Positive(t, seen, "the events carry the customer: %s", events.Raw)
	requireNoPersonalData(t, events.Raw)

	for c, want := range map[keelpay.Customer]string{
		{ID: "cus_1"}: `{"id":"cus_1"}`,
		{ID: "cus_1", Name: "Ada", Email: "ada@example.com", Phone: "+358401234567"}: `{"id":"cus_1","name":"Ada","email":"ada@example.com","phone":"+358401234567"}`,
		{ID: "cus_1", Name: "Ada"}: `{"id":"cus_1","name":"Ada","email":"","phone":""}`,
	} {
		got, err := json.Marshal(c)
		require.NoError(t, err)
		require.JSONEq(t, want, string(got))
		var back keelpay.Customer
		require.NoError(t, json.Unmarshal(got, &back))
		require.Equal(t, c, back, "round trip")
	}
}
