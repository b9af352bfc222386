package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay/provider"
	"github.com/keelpay/keelpay/provider/sandbox"
)

// elementPM captures a card as the sandbox's element does, on the
// sandbox's own route (not keelpay's API), and returns the reference.
func (b *bundle) elementPM(t *testing.T, s shop, number string) string {
	t.Helper()
	return b.elementPMOf(t, b.storeMerchant(t, s), number)
}

func (b *bundle) elementPMOf(t *testing.T, merchantID, number string) string {
	t.Helper()
	el, err := b.sandbox.BrowserElement(context.Background(), merchantID)
	require.NoError(t, err)
	body, err := json.Marshal(map[string]any{"key": el.PublishableKey, "number": number, "exp_month": 12, "exp_year": 2030, "cvc": "123"})
	require.NoError(t, err)
	resp, err := b.srv.Client().Post(b.srv.URL+"/sandbox/elements/v1/payment_methods", "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	var out struct{ ID string }
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.True(t, strings.HasPrefix(out.ID, "pm_"), out.ID)
	return out.ID
}

// storeMerchant is the sandbox merchant of the shops the tests set up
// with the client id app_shop: "merch_" and the client id's suffix (see
// the sandbox's applications).
func (b *bundle) storeMerchant(t *testing.T, s shop) string {
	t.Helper()
	return "merch_shop"
}

// TestCaptureWithAReference: a card session takes the reference of the
// provider's element instead of the card (the card number never reaches
// keelpay), exactly one of the two forms; the raw form keeps working.
func TestCaptureWithAReference(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.shop(t, "app_shop")
	capture := func(session *response, body map[string]any) *response {
		body["client_secret"] = session.str("client_secret")
		return b.do(t, req{method: "POST", path: "/v1/card_sessions/" + session.str("id") + "/cards", key: s.pk, body: body})
	}

	session := b.session(t, s)
	pm := b.elementPM(t, s, sandbox.CardMastercard)
	for _, tc := range []struct {
		name        string
		body        map[string]any
		field, code string
	}{
		{"both forms", map[string]any{"payment_method": pm, "number": sandbox.CardVisa}, "payment_method", "invalid_payment_method"},
		{"a name with the reference", map[string]any{"payment_method": pm, "name": "Jane Roe"}, "payment_method", "invalid_payment_method"},
		{"neither", map[string]any{}, "number", "missing_number"},
		{"empty", map[string]any{"payment_method": ""}, "payment_method", "invalid_payment_method"},
		{"not a reference", map[string]any{"payment_method": "pm-1"}, "payment_method", "invalid_payment_method"},
		{"too long", map[string]any{"payment_method": "pm_" + strings.Repeat("a", 253)}, "payment_method", "invalid_payment_method"},
		{"not a string", map[string]any{"payment_method": 1}, "payment_method", "invalid_payment_method"},
	} {
		requireInvalid(t, capture(session, tc.body), tc.field, tc.code)
	}
	// Another merchant's reference, or an unknown one: the provider refuses.
	requireError(t, capture(session, map[string]any{"payment_method": b.elementPMOf(t, "merch_other", sandbox.CardVisa)}),
		http.StatusUnprocessableEntity, "card_rejected")
	requireError(t, capture(session, map[string]any{"payment_method": "pm_unknown"}), http.StatusUnprocessableEntity, "card_rejected")
	// The sandbox's rejected test card is rejected at save, as typed.
	requireError(t, capture(session, map[string]any{"payment_method": b.elementPM(t, s, sandbox.CardRejected)}),
		http.StatusUnprocessableEntity, "card_rejected")

	card := capture(session, map[string]any{"payment_method": pm})
	require.Equal(t, http.StatusCreated, card.Status, "%s", card.Raw)
	require.Equal(t, "mastercard", card.str("brand"))
	require.Equal(t, "4444", card.str("last4"))
	require.Equal(t, 12.0, card.Body["exp_month"])
	require.Equal(t, 2030.0, card.Body["exp_year"])

	// The saved card pays like any other.
	intent := b.createIntent(t, s, intentBody(s, 1000))
	r := b.do(t, req{method: "POST", path: "/v1/payment_intents/" + pi(t, intent) + "/confirm", key: s.sk,
		body: map[string]any{"payment_method": card.str("id")}})
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
	require.Equal(t, "succeeded", r.str("status"), "%s", r.Raw)

	// The raw capture of the documented sandbox flow still works.
	raw := b.capture(t, s, b.session(t, s), sandbox.CardVisa)
	require.Equal(t, http.StatusCreated, raw.Status, "%s", raw.Raw)
	require.Equal(t, "4242", raw.str("last4"))
}

// TestConfirmWithAReference: the browser's confirm with a new card takes
// the element's reference; a card_ id is still a saved card.
func TestConfirmWithAReference(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.shop(t, "app_shop")
	confirm := func(intent *response, body map[string]any) *response {
		body["client_secret"] = intent.str("client_secret")
		return b.do(t, req{method: "POST", path: "/v1/payment_intents/" + pi(t, intent) + "/confirm", key: s.pk, body: body})
	}

	intent := b.createIntent(t, s, intentBody(s, 1500))
	pm := b.elementPM(t, s, sandbox.CardMastercard)
	requireInvalid(t, confirm(intent, map[string]any{"payment_method": pm, "cvc": "123"}), "payment_method", "invalid_payment_method")
	requireInvalid(t, confirm(intent, map[string]any{"payment_method": "pm 1"}), "payment_method", "invalid_payment_method")
	r := confirm(intent, map[string]any{"payment_method": pm})
	requireStatus(t, r, http.StatusOK, "succeeded")
	require.Nil(t, r.Body["card"])
	require.Equal(t, map[string]any{"brand": "mastercard", "last4": "4444", "exp_month": 12.0, "exp_year": 2030.0, "saved": false},
		r.Body["payment_method"])

	// A declined test card, then an unknown reference: failed attempts.
	intent = b.createIntent(t, s, intentBody(s, 1600))
	r = confirm(intent, map[string]any{"payment_method": b.elementPM(t, s, sandbox.CardDeclined)})
	requireStatus(t, r, http.StatusOK, "requires_payment_method")
	require.Equal(t, "card_declined", lastError(r)["code"])
	r = confirm(intent, map[string]any{"payment_method": "pm_unknown"})
	requireStatus(t, r, http.StatusOK, "requires_payment_method")
	require.Equal(t, "card_rejected", lastError(r)["code"])

	// A saved card still pays by its card_ id from the browser.
	cardID := b.saveCard(t, s, sandbox.CardVisa)
	r = confirm(intent, map[string]any{"payment_method": cardID})
	requireStatus(t, r, http.StatusOK, "succeeded")
	require.Equal(t, cardID, r.str("card"))

	// The secret key's confirm takes saved cards only.
	other := b.createIntent(t, s, intentBody(s, 1700))
	requireInvalid(t, b.do(t, req{method: "POST", path: "/v1/payment_intents/" + pi(t, other) + "/confirm", key: s.sk,
		body: map[string]any{"payment_method": pm}}), "payment_method", "invalid_payment_method")
}

// fixedElement is a provider with a browser element of the test's choice.
type fixedElement struct {
	provider.Provider
	el  *provider.Element
	err error
}

func (f fixedElement) BrowserElement(context.Context, string) (*provider.Element, error) {
	return f.el, f.err
}

// TestCardFieldPageMountsTheProvidersElement: with a provider that has a
// browser element, the card field page loads the element's script and
// has no card input of its own; its policy allows the element's sources.
func TestCardFieldPageMountsTheProvidersElement(t *testing.T) {
	t.Parallel()
	fieldOf := func(b *bundle) string {
		s := b.shop(t, "app_shop")
		session := b.session(t, s)
		return cardFieldQuery("key", s.pk, "card_session", session.str("id"), "client_secret", session.str("client_secret"),
			"origin", "https://shop.example", "name", "1")
	}

	b := setup(t)
	resp, page := b.get(t, fieldOf(b), nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, page)
	policy := csp(t, resp.Header.Get("Content-Security-Policy"))
	nonce := strings.TrimSuffix(strings.TrimPrefix(strings.Fields(policy["script-src"])[0], "'nonce-"), "'")
	// The harness's sandbox is served by the test server: its origin.
	origin := b.srv.URL
	require.Equal(t, "'nonce-"+nonce+"' "+origin, policy["script-src"], "each source once")
	require.Equal(t, "'self' "+origin, policy["connect-src"])
	require.NotContains(t, policy, "frame-src")
	require.Equal(t, "'none'", policy["default-src"])
	require.Contains(t, page, `<script nonce="`+nonce+`" src="`+origin+`/sandbox/elements/v1/element.js"></script>`)
	require.Contains(t, page, `data-element-kind="sandbox"`)
	require.Contains(t, page, `data-element-key="pk_sandbox_`)
	require.Contains(t, page, `<div id="card-element"></div>`)
	require.Contains(t, page, `<input id="name"`, "the name stays the field's own")
	for _, id := range []string{"number", "expiry", "cvc"} {
		require.NotContains(t, page, `id="`+id+`"`)
	}

	// Stripe.js: its frames and API.
	stripe := &provider.Element{Kind: provider.ElementStripe, ScriptURL: "https://js.stripe.com/v3/", PublishableKey: "pk_test_x",
		ConnectSources: []string{"https://api.stripe.com"}, FrameSources: []string{"https://js.stripe.com", "https://hooks.stripe.com"},
		ScriptSources: []string{"https://js.stripe.com"}}
	b = setup(t, func(o *options) {
		o.wrap = func(p provider.Provider) provider.Provider { return fixedElement{Provider: p, el: stripe} }
	})
	resp, page = b.get(t, fieldOf(b), nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, page)
	policy = csp(t, resp.Header.Get("Content-Security-Policy"))
	require.True(t, strings.HasSuffix(policy["script-src"], "' https://js.stripe.com"), policy["script-src"])
	require.Equal(t, "'self' https://api.stripe.com", policy["connect-src"])
	require.Equal(t, "https://js.stripe.com https://hooks.stripe.com", policy["frame-src"])
	require.Contains(t, page, `src="https://js.stripe.com/v3/"`)
	require.Contains(t, page, `data-element-kind="stripe" data-element-key="pk_test_x"`)

	// A source that would change the policy's meaning is refused; a
	// provider that cannot be reached makes a page that says so.
	bad := *stripe
	bad.ConnectSources = []string{"https://api.stripe.com; script-src *"}
	b = setup(t, func(o *options) {
		o.wrap = func(p provider.Provider) provider.Provider { return fixedElement{Provider: p, el: &bad} }
	})
	resp, page = b.get(t, fieldOf(b), nil)
	require.Equal(t, http.StatusInternalServerError, resp.StatusCode, page)
	require.NotContains(t, page, "<script")
	b = setup(t, func(o *options) {
		o.wrap = func(p provider.Provider) provider.Provider {
			return fixedElement{Provider: p, err: &provider.Error{Kind: provider.KindUnavailable, Message: "down"}}
		}
	})
	resp, page = b.get(t, fieldOf(b), nil)
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, page)
	require.Contains(t, page, "The payment provider cannot be reached now")
}
