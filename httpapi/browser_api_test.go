package httpapi_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/provider/sandbox"
)

// What the browser may do with the publishable key beyond capture and a
// confirm with a new card: read its intent with the client_secret, and
// confirm with a saved card of the intent's customer.

func TestBrowserReadsItsIntentWithTheClientSecret(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.shop(t, "app_shop")
	o := b.shop(t, "app_other")
	body := intentBody(s, 2500)
	body["billing"] = map[string]any{"country": "FI", "postal_code": postal}
	body["page_origins"] = []string{"https://shop.example"}
	intent := b.createIntent(t, s, body)
	id, secret := pi(t, intent), intent.str("client_secret")
	path := "/v1/payment_intents/" + id

	// The browser's view: the secret key's without personal data.
	got := b.do(t, req{method: "GET", path: path + "?client_secret=" + url.QueryEscape(secret), key: s.pk})
	require.Equal(t, http.StatusOK, got.Status, "%s", got.Raw)
	want := b.getIntent(t, s, id).Body
	delete(want, "client_secret")
	delete(want, "billing")
	want["customer"] = map[string]any{"id": custID}
	require.Equal(t, want, got.Body)
	for _, v := range []string{secret, custName, custEmail, custPhone, postal} {
		require.NotContains(t, string(got.Raw), v)
	}
	require.Equal(t, []any{"https://shop.example"}, got.Body["page_origins"])

	// It follows the intent: after a confirm it shows the outcome.
	requireStatus(t, b.confirmNew(t, s, intent, sandbox.CardVisa, nil), http.StatusOK, keelpay.IntentSucceeded)
	got = b.do(t, req{method: "GET", path: path + "?client_secret=" + url.QueryEscape(secret), key: s.pk})
	require.Equal(t, "succeeded", got.str("status"), "%s", got.Raw)
	require.Equal(t, "4242", got.Body["payment_method"].(map[string]any)["last4"])

	// Without a client_secret the publishable key is no key for this call.
	for _, query := range []string{"", "?client_secret="} {
		requireError(t, b.do(t, req{method: "GET", path: path + query, key: s.pk}), http.StatusUnauthorized, "invalid_api_key")
	}
	// With a wrong one the intent does not exist.
	wrong := secret[:len(secret)-1] + map[bool]string{true: "A", false: "B"}[secret[len(secret)-1] != 'A']
	for _, query := range []string{"?client_secret=" + wrong, "?client_secret=" + url.QueryEscape(secret) + "x"} {
		requireError(t, b.do(t, req{method: "GET", path: path + query, key: s.pk}), http.StatusNotFound, "payment_intent_not_found")
	}
	// Nor with another store's key, nor under another id.
	requireError(t, b.do(t, req{method: "GET", path: path + "?client_secret=" + secret, key: o.pk}), http.StatusNotFound, "payment_intent_not_found")
	requireError(t, b.do(t, req{method: "GET", path: "/v1/payment_intents/" + keelpay.NewID("pi_") + "?client_secret=" + secret, key: s.pk}),
		http.StatusNotFound, "payment_intent_not_found")
	requireError(t, b.do(t, req{method: "GET", path: "/v1/payment_intents/pi_x?client_secret=" + secret, key: s.pk}),
		http.StatusNotFound, "payment_intent_not_found")

	// The query is read strictly.
	requireInvalid(t, b.do(t, req{method: "GET", path: path + "?client_secret=" + secret + "&expand=customer", key: s.pk}),
		"expand", "unknown_parameter")
	requireInvalid(t, b.do(t, req{method: "GET", path: path + "?client_secret=" + secret + "&client_secret=" + secret, key: s.pk}),
		"client_secret", "duplicate_parameter")
	requireInvalid(t, b.do(t, req{method: "GET", path: path + "?client_secret=%zz", key: s.pk}), "", "invalid_query")

	// The secret key takes no query parameters, and the request needs a key.
	requireInvalid(t, b.do(t, req{method: "GET", path: path + "?client_secret=" + secret, key: s.sk}), "client_secret", "unknown_parameter")
	requireError(t, b.do(t, req{method: "GET", path: path + "?client_secret=" + secret}), http.StatusUnauthorized, "invalid_api_key")
	// A listing stays the secret key's.
	requireError(t, b.do(t, req{method: "GET", path: "/v1/payment_intents", key: s.pk}), http.StatusUnauthorized, "invalid_api_key")

	// The client_secret never reaches the logs.
	require.NotContains(t, b.logs.String(), secret)
}

// TestBrowserReadWithoutClientSecretIsTheDocumentedAnswer provokes what
// docs/api.md, docs/errors.md and docs/openapi.json say of a browser's read
// without the client_secret: the publishable key alone is no credential for
// it, so the answer is 401 invalid_api_key, whether or not the intent
// exists (the intent is not looked up), and never the 404 of a wrong
// client_secret.
func TestBrowserReadWithoutClientSecretIsTheDocumentedAnswer(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.shop(t, "app_shop")
	intent := b.createIntent(t, s, intentBody(s, 2500))
	for _, path := range []string{
		"/v1/payment_intents/" + pi(t, intent),
		"/v1/payment_intents/" + keelpay.NewID("pi_"),
	} {
		for _, query := range []string{"", "?client_secret="} {
			requireError(t, b.do(t, req{method: "GET", path: path + query, key: s.pk}), http.StatusUnauthorized, "invalid_api_key")
		}
	}

	// The documents say the same.
	raw, err := os.ReadFile("../docs/openapi.json")
	require.NoError(t, err)
	var doc struct {
		Paths map[string]map[string]struct {
			Responses map[string]struct {
				Ref         string `json:"$ref"`
				Description string `json:"description"`
			} `json:"responses"`
		} `json:"paths"`
	}
	require.NoError(t, json.Unmarshal(raw, &doc))
	read := doc.Paths["/v1/payment_intents/{id}"]["get"]
	require.Equal(t, "#/components/responses/InvalidAPIKey", read.Responses["401"].Ref)
	require.NotContains(t, read.Responses["404"].Description, "missing or wrong", "docs/openapi.json: a missing client_secret is not a 404")
	for _, name := range []string{"../docs/api.md", "../docs/errors.md"} {
		md, err := os.ReadFile(name)
		require.NoError(t, err)
		require.NotContains(t, string(md), "`client_secret` is missing or wrong", name)
		require.NotContains(t, strings.Join(strings.Fields(string(md)), " "), "a missing or wrong one is the same 404", name)
	}
}

func TestBrowserConfirmsWithASavedCard(t *testing.T) {
	t.Parallel()
	n := &notified{}
	b := setup(t, withNotified(n))
	s := b.shop(t, "app_shop")
	cardID := b.saveCard(t, s, sandbox.CardVisa)
	confirm := func(intent *response, fields map[string]any) *response {
		body := map[string]any{"client_secret": intent.str("client_secret")}
		for k, v := range fields {
			body[k] = v
		}
		return b.do(t, req{method: "POST", path: "/v1/payment_intents/" + intent.str("id") + "/confirm", key: s.pk, body: body})
	}

	intent := b.createIntent(t, s, intentBody(s, 1200))
	r := confirm(intent, map[string]any{"payment_method": cardID})
	requireStatus(t, r, http.StatusOK, keelpay.IntentSucceeded)
	require.Equal(t, cardID, r.str("card"))
	require.Equal(t, map[string]any{"brand": "visa", "last4": "4242", "exp_month": 12.0, "exp_year": 2030.0, "saved": true},
		r.Body["payment_method"])
	// The browser's view of the intent: no personal data.
	require.NotContains(t, r.Body, "client_secret")
	require.Equal(t, map[string]any{"id": custID}, r.Body["customer"])
	b.requireOneEvent(t, s, keelpay.EventPaymentIntentSucceeded, pi(t, intent))

	// The card must be the intent's customer's: as with the secret key.
	other := b.do(t, req{method: "POST", path: "/v1/card_sessions", key: s.sk, body: map[string]any{
		"customer":     map[string]any{"id": "cus_other", "name": "Other", "email": "o@example.com", "phone": "+4915100000000"},
		"page_origins": []string{"https://shop.example"},
	}})
	require.Equal(t, http.StatusCreated, other.Status, "%s", other.Raw)
	othersCard := b.capture(t, s, other, sandbox.CardVisa)
	require.Equal(t, http.StatusCreated, othersCard.Status, "%s", othersCard.Raw)
	intent = b.createIntent(t, s, intentBody(s, 1300))
	requireError(t, confirm(intent, map[string]any{"payment_method": othersCard.str("id")}), http.StatusNotFound, "card_not_found")
	requireError(t, confirm(intent, map[string]any{"payment_method": keelpay.NewID("card_")}), http.StatusNotFound, "card_not_found")
	// A wrong client_secret is no intent, whatever the card.
	wrongSecret := map[string]any{"client_secret": "pi_x_secret_y", "payment_method": cardID}
	requireError(t, b.do(t, req{method: "POST", path: "/v1/payment_intents/" + pi(t, intent) + "/confirm", key: s.pk, body: wrongSecret}),
		http.StatusNotFound, "payment_intent_not_found")

	// A saved card or a new card, not both; a null payment_method is
	// absent.
	for _, field := range []string{"number", "exp_month", "exp_year", "cvc", "name"} {
		fields := map[string]any{"payment_method": cardID, field: cardFields(sandbox.CardVisa)[field]}
		requireInvalid(t, confirm(intent, fields), "payment_method", "invalid_payment_method")
	}
	// Not a card_ id: the reference of the provider's element, which must
	// be letters, digits and underscores (confirms of references:
	// cards_element_test.go).
	requireInvalid(t, confirm(intent, map[string]any{"payment_method": "pm-1"}), "payment_method", "invalid_payment_method")
	requireInvalid(t, confirm(intent, map[string]any{"payment_method": "card_"}), "payment_method", "invalid_payment_method")
	requireInvalid(t, confirm(intent, map[string]any{"payment_method": 7}), "payment_method", "invalid_payment_method")
	requireInvalid(t, confirm(intent, map[string]any{"payment_method": nil}), "number", "missing_number")
	requireInvalid(t, confirm(intent, map[string]any{"payment_method": cardID, "billing": map[string]any{"country": "XX"}}),
		"billing.country", "invalid_country")
	require.Equal(t, "requires_payment_method", b.getIntent(t, s, pi(t, intent)).str("status"), "no refused confirm starts an attempt")

	// 3D Secure works the same with a saved card.
	threeDS := b.saveCard(t, s, sandbox.CardThreeDSecure)
	r = confirm(intent, map[string]any{"payment_method": threeDS, "billing": map[string]any{"country": "FI"}})
	requireStatus(t, r, http.StatusOK, keelpay.IntentRequiresAction)
	resp, err := b.srv.Client().PostForm(r.Body["next_action"].(map[string]any)["url"].(string), url.Values{"result": {"complete"}})
	require.NoError(t, err)
	resp.Body.Close()
	n.wait(t, b.record(t, s, pi(t, intent)).AttemptID)
	got := b.do(t, req{method: "GET", path: "/v1/payment_intents/" + pi(t, intent) + "?client_secret=" + intent.str("client_secret"), key: s.pk})
	require.Equal(t, "succeeded", got.str("status"), "%s", got.Raw)
	require.Equal(t, "FI", b.getIntent(t, s, pi(t, intent)).Body["billing"].(map[string]any)["country"])

	// A saved card that stopped working: the failed attempt, then 409.
	unavailable := b.saveCard(t, s, sandbox.CardUnavailable)
	intent = b.createIntent(t, s, intentBody(s, 1400))
	r = confirm(intent, map[string]any{"payment_method": unavailable})
	requireStatus(t, r, http.StatusOK, keelpay.IntentRequiresPaymentMethod)
	require.Equal(t, "card_unavailable", lastError(r)["code"])
	requireError(t, confirm(intent, map[string]any{"payment_method": unavailable}), http.StatusConflict, "card_unavailable")
}
