package httpapi_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPublishableKeyOnSecretRouteSaysSo: a store's valid publishable key
// on a route of the store's server is still 401 invalid_api_key, but the
// message says that a publishable key cannot be used there, instead of
// calling the key missing or not valid; it never echoes the key. A key
// that is not a key keeps the plain message.
func TestPublishableKeyOnSecretRouteSaysSo(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.shop(t, "app_shop")
	for _, rq := range []req{
		{method: "GET", path: "/v1/payment_intents", key: s.pk},
		{method: "POST", path: "/v1/refunds", key: s.pk, body: `{"payment_intent":"pi_x","reason":"r"}`},
		{method: "POST", path: "/v1/card_sessions", key: s.pk, body: `{}`},
	} {
		r := b.do(t, rq)
		requireError(t, r, http.StatusUnauthorized, "invalid_api_key")
		msg := r.Body["error"].(map[string]any)["message"].(string)
		require.Contains(t, msg, "publishable key (pk_...) cannot be used on this route", "%s %s", rq.method, rq.path)
		require.Contains(t, msg, "secret key")
		require.NotContains(t, string(r.Raw), s.pk, "the key is never echoed")
	}
	for _, key := range []string{"", "sk_nope", "nonsense"} {
		r := b.do(t, req{method: "GET", path: "/v1/payment_intents", key: key})
		requireError(t, r, http.StatusUnauthorized, "invalid_api_key")
		require.Equal(t, "The API key is missing or not valid.", r.Body["error"].(map[string]any)["message"])
	}
}
