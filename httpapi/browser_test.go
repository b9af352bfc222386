package httpapi_test

import (
	"crypto/sha512"
	"encoding/base64"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/provider"
)

// get fetches a path of the server without a key.
func (b *bundle) get(t *testing.T, path string, header map[string]string) (*http.Response, string) {
	t.Helper()
	r, err := http.NewRequest("GET", b.srv.URL+path, nil)
	require.NoError(t, err)
	for k, v := range header {
		r.Header.Set(k, v)
	}
	resp, err := b.srv.Client().Do(r)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(body)
}

func TestScriptIsServedWithItsIntegrity(t *testing.T) {
	t.Parallel()
	b := setup(t)
	resp, script := b.get(t, "/js/v1/keelpay.js", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/javascript; charset=utf-8", resp.Header.Get("Content-Type"))
	require.Equal(t, "public, max-age=86400", resp.Header.Get("Cache-Control"))
	require.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"))
	// Subresource Integrity on a cross-origin script needs CORS.
	require.Equal(t, "*", resp.Header.Get("Access-Control-Allow-Origin"))
	etag := resp.Header.Get("ETag")
	require.Regexp(t, `^"[0-9a-f]{32}"$`, etag)
	require.Contains(t, script, "window.Keelpay = Keelpay;")

	// The integrity value is the SHA-384 of exactly the bytes served.
	resp, integrity := b.get(t, "/js/v1/keelpay.js.integrity", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "text/plain; charset=utf-8", resp.Header.Get("Content-Type"))
	sum := sha512.Sum384([]byte(script))
	require.Equal(t, "sha384-"+base64.StdEncoding.EncodeToString(sum[:]), integrity)

	// A cached copy is revalidated with the ETag.
	resp, body := b.get(t, "/js/v1/keelpay.js", map[string]string{"If-None-Match": etag})
	require.Equal(t, http.StatusNotModified, resp.StatusCode)
	require.Empty(t, body)
	resp, _ = b.get(t, "/js/v1/keelpay.js", map[string]string{"If-None-Match": `"other"`})
	require.Equal(t, http.StatusOK, resp.StatusCode)

	requireError(t, b.do(t, req{method: "POST", path: "/js/v1/keelpay.js"}), http.StatusMethodNotAllowed, "method_not_allowed")
}

// TestScriptHasAMessageForEveryFailure checks the tables of keelpay.js:
// each last_error code (docs/errors.md) and each decline code has a sentence in each of
// the four languages. The browser tests check what the function returns.
func TestScriptHasAMessageForEveryFailure(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, script := b.get(t, "/js/v1/keelpay.js", nil)
	for _, code := range []string{
		"card_declined", "generic_decline", "insufficient_funds", "card_rejected", "card_unavailable",
		"billing_required", "invalid_request", "authentication_failed", "authentication_expired",
		"provider_error", "outcome_unknown", "currency_mismatch", "amount_mismatch", "generic",
	} {
		require.Equal(t, 4, strings.Count(script, "\n      "+code+": "), code)
	}
}

// cardFieldQuery is the query of a card field page.
func cardFieldQuery(pairs ...string) string {
	q := url.Values{}
	for i := 0; i < len(pairs); i += 2 {
		q.Set(pairs[i], pairs[i+1])
	}
	return "/elements/v1/card?" + q.Encode()
}

// csp parses a Content-Security-Policy header into its directives.
func csp(t *testing.T, h string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, d := range strings.Split(h, ";") {
		name, value, _ := strings.Cut(strings.TrimSpace(d), " ")
		require.NotContains(t, out, name)
		out[name] = value
	}
	return out
}

// withoutElement hides the sandbox's browser element from the service, as
// a provider without one: the card field takes the card itself.
func withoutElement(o *options) {
	o.wrap = func(p provider.Provider) provider.Provider { return struct{ provider.Provider }{p} }
}

func TestCardFieldPage(t *testing.T) {
	t.Parallel()
	b := setup(t, withoutElement)
	s := b.shop(t, "app_shop")
	session := b.do(t, req{method: "POST", path: "/v1/card_sessions", key: s.sk, body: map[string]any{
		"customer": customerJSON(), "page_origins": []string{"https://shop.example", "http://localhost:9100"},
	}})
	require.Equal(t, http.StatusCreated, session.Status, "%s", session.Raw)
	sessionID, secret := session.str("id"), session.str("client_secret")
	field := func(extra ...string) string {
		return cardFieldQuery(append([]string{"key", s.pk, "card_session", sessionID, "client_secret", secret, "origin", "https://shop.example"}, extra...)...)
	}

	resp, page := b.get(t, field(), nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, page)
	require.Equal(t, "text/html; charset=utf-8", resp.Header.Get("Content-Type"))
	require.Equal(t, "no-store", resp.Header.Get("Cache-Control"))
	require.Equal(t, "no-referrer", resp.Header.Get("Referrer-Policy"))
	require.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"))
	policy := csp(t, resp.Header.Get("Content-Security-Policy"))
	nonce := strings.TrimSuffix(strings.TrimPrefix(policy["script-src"], "'nonce-"), "'")
	require.Regexp(t, `^[0-9A-Za-z]{24}$`, nonce)
	require.Equal(t, map[string]string{
		"default-src":     "'none'",
		"script-src":      "'nonce-" + nonce + "'",
		"style-src":       "'nonce-" + nonce + "'",
		"connect-src":     "'self'",
		"form-action":     "'none'",
		"base-uri":        "'none'",
		"frame-ancestors": "https://shop.example http://localhost:9100",
	}, policy)
	// Only the nonce-tagged style and script run; nothing else is loaded.
	require.Equal(t, 1, strings.Count(page, `<script nonce="`+nonce+`">`))
	require.Equal(t, 1, strings.Count(page, "<script"))
	require.Equal(t, 1, strings.Count(page, `<style nonce="`+nonce+`">`))
	require.NotRegexp(t, `(?i)\ssrc=|\shref=|\sstyle=|\son[a-z]+=`, page)
	for _, id := range []string{"number", "expiry", "cvc"} {
		require.Regexp(t, `<label for="`+id+`"`, page)
		require.Regexp(t, `<input id="`+id+`"[^>]*aria-describedby="[^"]*`+id+`-error"`, page)
	}
	require.Contains(t, page, `role="status" aria-live="polite"`)
	require.Contains(t, page, `<div class="row" id="name-row" hidden>`)
	require.Contains(t, page, `data-origin="https://shop.example"`)
	require.Contains(t, page, `<html lang="en">`)

	// Each page has its own nonce.
	resp, _ = b.get(t, field(), nil)
	require.NotContains(t, resp.Header.Get("Content-Security-Policy"), nonce)

	// The other origin of the session, an origin written differently, the
	// name input, a language.
	resp, page = b.get(t, cardFieldQuery("key", s.pk, "card_session", sessionID, "client_secret", secret,
		"origin", "HTTPS://Shop.Example:443", "name", "1", "locale", "fi"), nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, page)
	require.Contains(t, page, `data-origin="https://shop.example"`)
	require.Contains(t, page, `<div class="row" id="name-row">`)
	require.Contains(t, page, `<html lang="fi">`)
	resp, page = b.get(t, field("locale", "xx"), nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, page)
	require.Contains(t, page, `<html lang="en">`)

	// A field of a payment intent uses the intent's page_origins.
	body := intentBody(s, 1000)
	body["page_origins"] = []string{"http://localhost:9100"}
	intent := b.createIntent(t, s, body)
	intentField := cardFieldQuery("key", s.pk, "payment_intent", intent.str("id"), "client_secret", intent.str("client_secret"),
		"origin", "http://localhost:9100")
	resp, page = b.get(t, intentField, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, page)
	require.Equal(t, "http://localhost:9100", csp(t, resp.Header.Get("Content-Security-Policy"))["frame-ancestors"])
	require.Contains(t, page, `data-kind="payment_intent"`)
	bare := b.createIntent(t, s, intentBody(s, 1000))
	withoutOrigins := cardFieldQuery("key", s.pk, "payment_intent", bare.str("id"), "client_secret", bare.str("client_secret"),
		"origin", "http://localhost:9100")

	o := b.shop(t, "app_other")
	for name, tc := range map[string]struct {
		path   string
		status int
	}{
		"origin not in page_origins":        {field("origin", "https://evil.example"), http.StatusForbidden},
		"intent without page_origins":       {withoutOrigins, http.StatusForbidden},
		"wrong client_secret":               {field("client_secret", secret+"x"), http.StatusNotFound},
		"empty client_secret":               {field("client_secret", ""), http.StatusNotFound},
		"the intent's secret for a session": {field("client_secret", intent.str("client_secret")), http.StatusNotFound},
		"unknown session":                   {field("card_session", keelpay.NewID("cs_")), http.StatusNotFound},
		"another store's key":               {field("key", o.pk), http.StatusNotFound},
		"unknown key":                       {field("key", keelpay.NewID("pk_")), http.StatusUnauthorized},
		"secret key":                        {field("key", s.sk), http.StatusUnauthorized},
		"origin with a path":                {field("origin", "https://shop.example/"), http.StatusBadRequest},
		"http origin not local":             {field("origin", "http://shop.example"), http.StatusBadRequest},
		"both objects":                      {field("payment_intent", intent.str("id")), http.StatusBadRequest},
		"no object": {cardFieldQuery("key", s.pk, "client_secret", secret, "origin", "https://shop.example"),
			http.StatusBadRequest},
		"unknown parameter":  {field("theme", "dark"), http.StatusBadRequest},
		"repeated parameter": {field() + "&origin=https%3A%2F%2Fshop.example", http.StatusBadRequest},
		"bad name":           {field("name", "yes"), http.StatusBadRequest},
	} {
		resp, page := b.get(t, tc.path, nil)
		require.Equal(t, tc.status, resp.StatusCode, "%s: %s", name, page)
		require.Equal(t, "text/html; charset=utf-8", resp.Header.Get("Content-Type"), name)
		require.Equal(t, "no-store", resp.Header.Get("Cache-Control"), name)
		require.Contains(t, page, "The card field is not available.", name)
		require.NotContains(t, page, "<input", name)
		require.NotContains(t, page, "<script", name)
		require.NotContains(t, page, secret, name)
		policy := csp(t, resp.Header.Get("Content-Security-Policy"))
		require.Equal(t, "'none'", policy["default-src"], name)
		require.NotContains(t, policy, "script-src", name)
	}

	// The page is served for a session that is no longer open: the API
	// answers the capture.
	require.Equal(t, http.StatusCreated, b.capture(t, s, session, "4242424242424242").Status)
	resp, _ = b.get(t, field(), nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)

	// Query strings are not logged: the client secrets stay out.
	logs := b.logs.String()
	require.NotContains(t, logs, secret)
	require.NotContains(t, logs, intent.str("client_secret"))
	require.Regexp(t, regexp.MustCompile(`"method":"GET","route":"/elements/v1/card"`), logs)
}
