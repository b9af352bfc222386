package httpapi_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/provider/sandbox"
)

// personalValues are the personal values the tests send: the customer's
// name, email and phone, the cardholder name and the billing details.
var personalValues = []string{custName, custEmail, custPhone, holder, postal, state}

// requireNoPersonalData asserts that a body (an event or a response to the
// browser) has no personal value and none of the keys that carry them.
func requireNoPersonalData(t *testing.T, raw []byte) {
	t.Helper()
	body := string(raw)
	for _, v := range personalValues {
		require.NotContains(t, body, v)
	}
	for _, key := range []string{`"name"`, `"email"`, `"phone"`, `"billing"`, `"postal_code"`, `"state"`, `"client_secret"`} {
		require.NotContains(t, body, key)
	}
}

// TestEventsAndLogsCarryNoPersonalData runs every kind of change with
// personal data in the requests, then reads every stored event body and
// the logs.
func TestEventsAndLogsCarryNoPersonalData(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.shop(t, "app_shop")
	ctx := context.Background()
	billing := map[string]any{"country": "DE", "state": state, "postal_code": postal}

	// card.created
	session := b.session(t, s)
	captured := b.capture(t, s, session, sandbox.CardVisa)
	require.Equal(t, http.StatusCreated, captured.Status, "%s", captured.Raw)
	requireNoPersonalData(t, captured.Raw)
	cardID := captured.str("id")

	// payment_intent.succeeded, with a saved card and with a new one.
	body := intentBody(s, 1000)
	body["billing"] = billing
	body["metadata"] = map[string]any{"order": "17"}
	saved := b.createIntent(t, s, body)
	requireStatus(t, b.confirmSaved(t, s, pi(t, saved), cardID), http.StatusOK, keelpay.IntentSucceeded)
	fresh := b.createIntent(t, s, body)
	r := b.confirmNew(t, s, fresh, sandbox.CardMastercard, map[string]any{"billing": billing})
	requireStatus(t, r, http.StatusOK, keelpay.IntentSucceeded)
	requireNoPersonalData(t, r.Raw)

	// payment_intent.payment_failed
	failing := b.createIntent(t, s, body)
	requireStatus(t, b.confirmNew(t, s, failing, sandbox.CardDeclined, nil), http.StatusOK, keelpay.IntentRequiresPaymentMethod)

	// payment_intent.canceled: by the client, voided, expired.
	canceled := b.createIntent(t, s, body)
	require.Equal(t, http.StatusOK, b.do(t, req{method: "POST", path: "/v1/payment_intents/" + pi(t, canceled) + "/cancel", key: s.sk}).Status)
	requireStatus(t, b.confirmNew(t, s, b.createIntent(t, s, body), sandbox.CardCurrencyMismatch, nil), http.StatusOK, keelpay.IntentCanceled)
	b.createIntent(t, s, body)
	b.clock.Advance(24 * time.Hour)
	require.NoError(t, b.worker(t).Expire(ctx))

	got := map[keelpay.EventType]int{}
	list := b.events(t, s.id, "")
	for _, e := range list {
		got[keelpay.EventType(e["type"].(string))]++
	}
	require.Equal(t, map[keelpay.EventType]int{
		keelpay.EventCardCreated:                1,
		keelpay.EventPaymentIntentSucceeded:     2,
		keelpay.EventPaymentIntentPaymentFailed: 1,
		keelpay.EventPaymentIntentCanceled:      4, // client, voided, and two expired (one after its failed attempt)
	}, got)
	stored, _, err := b.db.EventList(ctx, storageListAll(s.id))
	require.NoError(t, err)
	for _, e := range stored {
		requireNoPersonalData(t, e.Body)
		var obj map[string]any
		for _, ev := range list {
			if ev["id"] == e.ID {
				obj = eventObject(ev)
			}
		}
		require.Equal(t, map[string]any{"id": custID}, obj["customer"], "events name the customer by id only")
	}
	card := eventObject(b.events(t, s.id, keelpay.EventCardCreated)[0])
	require.Equal(t, session.str("id"), card["card_session"])
	require.Equal(t, cardID, card["id"])

	// The secret key does see the personal data it sent.
	full := b.getIntent(t, s, pi(t, saved))
	require.Equal(t, customerJSON(), full.Body["customer"])
	require.Equal(t, billing, full.Body["billing"])
	require.NotEmpty(t, full.str("client_secret"))

	// Logs carry neither personal data nor card details.
	logs := b.logs.String()
	for _, v := range append(personalValues, sandbox.CardVisa, sandbox.CardMastercard, `"123"`) {
		require.NotContains(t, logs, v)
	}
	require.NotContains(t, logs, session.str("client_secret"))
}

// Objects of another store are simply not found, and a malformed id is the
// same 404 as an unknown one.
func TestAnotherStoresObjectsAreNotFound(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := b.shop(t, "app_a")
	o := b.shop(t, "app_other")
	session := b.session(t, a)
	cardID := b.saveCard(t, a, sandbox.CardVisa)
	intent := b.createIntent(t, a, intentBody(a, 100))
	id := pi(t, intent)

	for _, tc := range []struct {
		method, path string
		key          string
		body         any
		code         string
	}{
		{"GET", "/v1/card_sessions/" + session.str("id"), o.sk, nil, "card_session_not_found"},
		{"POST", "/v1/card_sessions/" + session.str("id") + "/cards", o.pk,
			merge(cardFields(sandbox.CardVisa), map[string]any{"client_secret": session.str("client_secret")}), "card_session_not_found"},
		{"GET", "/v1/cards/" + cardID, o.sk, nil, "card_not_found"},
		{"GET", "/v1/payment_intents/" + id, o.sk, nil, "payment_intent_not_found"},
		{"POST", "/v1/payment_intents/" + id + "/confirm", o.sk, map[string]any{"payment_method": cardID}, "payment_intent_not_found"},
		{"POST", "/v1/payment_intents/" + id + "/confirm", o.pk,
			merge(cardFields(sandbox.CardVisa), map[string]any{"client_secret": intent.str("client_secret")}), "payment_intent_not_found"},
		{"POST", "/v1/payment_intents/" + id + "/cancel", o.sk, nil, "payment_intent_not_found"},
		// Malformed and unknown ids.
		{"GET", "/v1/card_sessions/cs_nope", a.sk, nil, "card_session_not_found"},
		{"GET", "/v1/card_sessions/" + keelpay.NewID("cs_"), a.sk, nil, "card_session_not_found"},
		{"GET", "/v1/cards/" + strings.ToUpper(cardID), a.sk, nil, "card_not_found"},
		{"GET", "/v1/cards/" + keelpay.NewID("card_"), a.sk, nil, "card_not_found"},
		{"GET", "/v1/payment_intents/pi_", a.sk, nil, "payment_intent_not_found"},
		{"GET", "/v1/payment_intents/" + id + "x", a.sk, nil, "payment_intent_not_found"},
		{"GET", "/v1/payment_intents/" + keelpay.NewID("pi_"), a.sk, nil, "payment_intent_not_found"},
		{"POST", "/v1/payment_intents/" + keelpay.NewID("pi_") + "/cancel", a.sk, nil, "payment_intent_not_found"},
	} {
		r := b.do(t, req{method: tc.method, path: tc.path, key: tc.key, body: tc.body})
		requireError(t, r, http.StatusNotFound, tc.code)
	}

	// Another store's card is not the customer's card either.
	other := b.createIntent(t, o, intentBody(o, 100))
	requireError(t, b.confirmSaved(t, o, pi(t, other), cardID), http.StatusNotFound, "card_not_found")
	body := intentBody(o, 100)
	body["payment_method"] = cardID
	requireError(t, b.do(t, req{method: "POST", path: "/v1/payment_intents", key: o.sk, body: body}), http.StatusNotFound, "card_not_found")

	// A listing shows only the store's own intents.
	list := b.do(t, req{method: "GET", path: "/v1/payment_intents", key: o.sk})
	require.Equal(t, http.StatusOK, list.Status)
	data := list.Body["data"].([]any)
	require.Len(t, data, 1)
	require.Equal(t, pi(t, other), data[0].(map[string]any)["id"])
	require.Zero(t, b.sandbox.Charges())
}

func merge(a, b map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}
