package httpapi_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/provider"
	"github.com/keelpay/keelpay/provider/sandbox"
)

func TestSetupFirstTime(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, tc := range []struct{ clientID, currency string }{
		{"app_shop1", "EUR"}, {"app_shop2_usd", "USD"}, {"app_shop3_gbp", "GBP"},
	} {
		r := b.setupStore(t, tc.clientID)
		require.True(t, keelpay.ValidID("store_", r.str("id")), r.str("id"))
		require.Equal(t, "store", r.str("object"))
		require.Equal(t, tc.currency, r.str("currency"))
		require.True(t, keelpay.ValidID("pk_", r.str("publishable_key")))
		require.True(t, keelpay.ValidID("sk_", r.str("secret_key")))
		require.Equal(t, "https://store.example/hooks", r.str("webhook_url"))
		secret, ok := strings.CutPrefix(r.str("webhook_secret"), "whsec_")
		require.True(t, ok)
		raw, err := base64.StdEncoding.DecodeString(secret)
		require.NoError(t, err)
		require.Len(t, raw, 32)
	}
}

func TestSetupNoChangeIsStoreAlreadyEnabled(t *testing.T) {
	t.Parallel()
	b := setup(t)
	first := b.setupStore(t, "app_shop")
	for _, key := range []string{"", first.str("secret_key")} {
		r := b.do(t, req{method: "POST", path: "/v1/setup", key: key, body: setupBody("app_shop", "https://store.example/hooks")})
		requireError(t, r, http.StatusConflict, "store_already_enabled")
		require.Equal(t, first.str("id"), r.details()["store_id"])
		require.Equal(t, first.str("publishable_key"), r.details()["publishable_key"])
	}
}

func TestSetupChanges(t *testing.T) {
	t.Parallel()
	b := setup(t)
	first := b.setupStore(t, "app_shop")
	key := first.str("secret_key")

	// A new webhook_url issues a new webhook secret, and no secret key.
	body := setupBody("app_shop", "https://store.example/new-hooks")
	r := b.do(t, req{method: "POST", path: "/v1/setup", body: body})
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
	require.Equal(t, first.str("id"), r.str("id"))
	require.Equal(t, "https://store.example/new-hooks", r.str("webhook_url"))
	require.NotEmpty(t, r.str("webhook_secret"))
	require.NotEqual(t, first.str("webhook_secret"), r.str("webhook_secret"))
	require.NotContains(t, r.Body, "secret_key")
	stored, err := b.db.StoreGetByID(context.Background(), first.str("id"))
	require.NoError(t, err)
	require.Equal(t, r.str("webhook_secret"), stored.WebhookSecret, "later deliveries sign only with the new secret")

	// Rotating the webhook secret.
	body["rotate_webhook_secret"] = true
	r2 := b.do(t, req{method: "POST", path: "/v1/setup", key: key, body: body})
	require.Equal(t, http.StatusOK, r2.Status, "%s", r2.Raw)
	require.NotEqual(t, r.str("webhook_secret"), r2.str("webhook_secret"))
	require.NotEmpty(t, r2.str("webhook_secret"))
	require.NotContains(t, r2.Body, "secret_key")
	delete(body, "rotate_webhook_secret")

	// Rotating the secret key: the old one stops working at once.
	body["rotate_secret_key"] = true
	r3 := b.do(t, req{method: "POST", path: "/v1/setup", key: key, body: body})
	require.Equal(t, http.StatusOK, r3.Status, "%s", r3.Raw)
	newKey := r3.str("secret_key")
	require.True(t, keelpay.ValidID("sk_", newKey))
	require.NotEqual(t, key, newKey)
	require.NotContains(t, r3.Body, "webhook_secret", "the webhook secret did not change")
	delete(body, "rotate_secret_key")
	requireError(t, b.do(t, req{method: "POST", path: "/v1/setup", key: key, body: body}), http.StatusUnauthorized, "invalid_api_key")
	requireError(t, b.do(t, req{method: "POST", path: "/v1/setup", key: newKey, body: body}), http.StatusConflict, "store_already_enabled")
}

func TestSetupRebindWithSecretKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	a := b.setupStore(t, "app_first")
	other := b.setupStore(t, "app_other")

	// Another store's application: client_id_in_use.
	r := b.do(t, req{method: "POST", path: "/v1/setup", key: a.str("secret_key"), body: setupBody("app_other", "https://store.example/hooks")})
	requireError(t, r, http.StatusConflict, "client_id_in_use")

	// A free application: the store moves to it and releases the old one.
	r = b.do(t, req{method: "POST", path: "/v1/setup", key: a.str("secret_key"), body: setupBody("app_second_usd", "https://store.example/hooks")})
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
	require.Equal(t, a.str("id"), r.str("id"))
	require.Equal(t, "USD", r.str("currency"))
	require.Equal(t, a.str("publishable_key"), r.str("publishable_key"))

	fresh := b.setupStore(t, "app_first")
	require.NotEqual(t, a.str("id"), fresh.str("id"), "the released application starts a new store")
	require.NotEqual(t, other.str("id"), fresh.str("id"))
}

// gate holds CheckApplication calls until n of them are waiting, so that
// two setups are at the same time inside the service.
type gate struct {
	provider.Provider
	n       int
	mu      sync.Mutex
	waiting int
	open    chan struct{}
}

func (g *gate) CheckApplication(ctx context.Context, c provider.Credentials) (*provider.Application, error) {
	g.mu.Lock()
	g.waiting++
	if g.waiting == g.n {
		close(g.open)
	}
	g.mu.Unlock()
	<-g.open
	return g.Provider.CheckApplication(ctx, c)
}

func TestSetupConflict(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"first setup", "change"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			g := &gate{n: 2, open: make(chan struct{})}
			b := setup(t, func(o *options) { o.wrap = func(p provider.Provider) provider.Provider { g.Provider = p; return g } })
			if name == "change" {
				g.n = 3 // the first setup passes the gate alone
				g.waiting = 2
				b.setupStore(t, "app_shop")
				g.mu.Lock()
				g.waiting, g.n, g.open = 0, 2, make(chan struct{})
				g.mu.Unlock()
			}
			results := make([]*response, 2)
			var wg sync.WaitGroup
			for i := range 2 {
				wg.Go(func() {
					results[i] = b.do(t, req{method: "POST", path: "/v1/setup",
						body: setupBody("app_shop", fmt.Sprintf("https://store.example/hooks-%d", i))})
				})
			}
			wg.Wait()
			codes := []int{results[0].Status, results[1].Status}
			winner, loser := results[0], results[1]
			if loser.Status < 300 {
				winner, loser = loser, winner
			}
			require.Less(t, winner.Status, 300, "one wins: %v", codes)
			requireError(t, loser, http.StatusConflict, "setup_conflict")
			// Repeating at once works: the loser's change is applied now.
			g.mu.Lock()
			g.n = 1
			g.mu.Unlock()
			require.Equal(t, http.StatusOK, b.do(t, req{method: "POST", path: "/v1/setup", body: setupBody("app_shop", "https://store.example/repeat")}).Status)
		})
	}
}

func TestSetupProviderOutcomes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	tests := []struct {
		clientID, secret string
		status           int
		code             string
		retryAfter       string
	}{
		{"app_x_missing_roles", "", http.StatusUnprocessableEntity, "missing_roles", ""},
		{"app_x_not_found", "", http.StatusUnprocessableEntity, "client_app_not_found", ""},
		{"app_x", "secret_wrong", http.StatusUnauthorized, "invalid_credentials", ""},
		{"not_an_app", "secret_x", http.StatusUnauthorized, "invalid_credentials", ""},
		{"app_x_access_pending", "", http.StatusServiceUnavailable, "platform_access_pending", "60"},
		{"app_x_cert_mismatch", "", http.StatusServiceUnavailable, "platform_certificate_mismatch", ""},
		{"app_x_unavailable", "", http.StatusServiceUnavailable, "provider_api_unavailable", "30"},
	}
	for _, tc := range tests {
		body := setupBody(tc.clientID, "https://store.example/hooks")
		if tc.secret != "" {
			body["client_secret"] = tc.secret
		}
		r := b.do(t, req{method: "POST", path: "/v1/setup", body: body})
		requireError(t, r, tc.status, tc.code)
		require.Equal(t, tc.retryAfter, r.Header.Get("Retry-After"), tc.clientID)
		if tc.code == "missing_roles" {
			require.Equal(t, []any{"payments", "refunds"}, r.details()["missing_roles"])
		}
	}
}

// TestFailedSetupStoresNothing fails one application every way, then lets
// it succeed: the success is a first setup (201), so nothing was stored.
// Then it fails every way again against the existing store and shows the
// store unchanged.
func TestFailedSetupStoresNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const clientID = "app_shop"
	failures := []struct {
		behavior sandbox.AppBehavior
		body     map[string]any
		code     string
	}{
		{body: map[string]any{"client_id": clientID, "client_secret": "secret_shop", "webhook_url": "ftp://x"}, code: "invalid_request"},
		{body: map[string]any{"client_id": clientID, "client_secret": "wrong", "webhook_url": "https://s.example/h"}, code: "invalid_credentials"},
		{behavior: sandbox.AppBehavior{Outcome: provider.KindMissingRoles}, code: "missing_roles"},
		{behavior: sandbox.AppBehavior{Outcome: provider.KindAppNotFound}, code: "client_app_not_found"},
		{behavior: sandbox.AppBehavior{Outcome: provider.KindAccessPending}, code: "platform_access_pending"},
		{behavior: sandbox.AppBehavior{Outcome: provider.KindCertificateMismatch}, code: "platform_certificate_mismatch"},
		{behavior: sandbox.AppBehavior{Outcome: provider.KindUnavailable}, code: "provider_api_unavailable"},
	}
	failAll := func(key string) {
		for _, f := range failures {
			b.sandbox.SetApplication(clientID, f.behavior)
			body := f.body
			if body == nil {
				body = setupBody(clientID, "https://store.example/changed")
				body["rotate_secret_key"] = true
			}
			r := b.do(t, req{method: "POST", path: "/v1/setup", key: key, body: body})
			require.Equal(t, f.code, r.errCode(), "%s", r.Raw)
			// Stay under the 5-per-minute limit of one client id.
			b.clock.Advance(15 * time.Second)
		}
		b.sandbox.SetApplication(clientID, sandbox.AppBehavior{})
	}
	failAll("")
	first := b.setupStore(t, clientID)
	failAll(first.str("secret_key"))
	r := b.do(t, req{method: "POST", path: "/v1/setup", key: first.str("secret_key"), body: setupBody(clientID, "https://store.example/hooks")})
	requireError(t, r, http.StatusConflict, "store_already_enabled")
	stored, err := b.db.StoreGetByID(context.Background(), first.str("id"))
	require.NoError(t, err)
	require.Equal(t, first.str("webhook_secret"), stored.WebhookSecret)
	require.EqualValues(t, 1, stored.Version, "no failed setup wrote the store")
}

func TestSetupRateLimits(t *testing.T) {
	t.Parallel()
	b := setup(t)
	body := setupBody("app_shop", "https://store.example/hooks")
	for i := range 5 {
		r := b.do(t, req{method: "POST", path: "/v1/setup", body: body})
		require.NotEqual(t, http.StatusTooManyRequests, r.Status, "request %d", i)
		b.clock.Advance(time.Second)
	}
	r := b.do(t, req{method: "POST", path: "/v1/setup", body: body})
	requireError(t, r, http.StatusTooManyRequests, "rate_limited")
	require.Equal(t, "55", r.Header.Get("Retry-After"), "the first request (at 0 s) leaves the window 55 s from now (at 5 s)")
	b.clock.Advance(55 * time.Second)
	requireError(t, b.do(t, req{method: "POST", path: "/v1/setup", body: body}), http.StatusConflict, "store_already_enabled")

	// 60 per minute in total, whatever the client id.
	b.clock.Advance(time.Minute)
	for i := range 60 {
		r := b.do(t, req{method: "POST", path: "/v1/setup", body: setupBody(fmt.Sprintf("app_many%d", i), "https://store.example/hooks")})
		require.Equal(t, http.StatusCreated, r.Status, "request %d: %s", i, r.Raw)
	}
	r = b.do(t, req{method: "POST", path: "/v1/setup", body: setupBody("app_one_more", "https://store.example/hooks")})
	requireError(t, r, http.StatusTooManyRequests, "rate_limited")
	require.Equal(t, "60", r.Header.Get("Retry-After"))
}

func TestSetupValidation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	long := strings.Repeat("a", 2049)
	tests := []struct {
		body        string
		field, code string
	}{
		{`{}`, "client_id", "missing_client_id"},
		{`{"client_id":5}`, "client_id", "invalid_client_id"},
		{`{"client_id":"a b"}`, "client_id", "invalid_client_id"},
		{`{"client_id":"app_x"}`, "client_secret", "missing_client_secret"},
		{`{"client_id":"app_x","client_secret":["s"]}`, "client_secret", "invalid_client_secret"},
		{`{"client_id":"app_x","client_secret":"secret_x"}`, "webhook_url", "missing_webhook_url"},
		{`{"client_id":"app_x","client_secret":"secret_x","webhook_url":"not a url"}`, "webhook_url", "invalid_webhook_url"},
		{`{"client_id":"app_x","client_secret":"secret_x","webhook_url":"https://u:p@store.example/"}`, "webhook_url", "invalid_webhook_url"},
		{`{"client_id":"app_x","client_secret":"secret_x","webhook_url":"https://store.example/#frag"}`, "webhook_url", "invalid_webhook_url"},
		{`{"client_id":"app_x","client_secret":"secret_x","webhook_url":"https://store.example/` + long + `"}`, "webhook_url", "invalid_webhook_url"},
		{`{"client_id":"app_x","client_secret":"secret_x","webhook_url":"https://s.example/","rotate_secret_key":"yes"}`, "rotate_secret_key", "invalid_rotate_secret_key"},
		// Unknown keys come first, in body order, case-sensitive.
		{`{"Client_id":"app_x"}`, "Client_id", "unknown_field"},
		{`{"client_id":5,"extra":1,"more":2}`, "extra", "unknown_field"},
		{`{"client_id":"app_x","client_id":"app_y"}`, "client_id", "duplicate_field"},
	}
	for _, tc := range tests {
		r := b.do(t, req{method: "POST", path: "/v1/setup", body: tc.body})
		requireInvalid(t, r, tc.field, tc.code)
		if tc.field == "webhook_url" {
			require.Contains(t, r.Body["error"].(map[string]any)["message"], "webhook_url", "the message names the field")
		}
	}
}

func TestSetupWebhookURLNeedsHTTPSUnlessInsecureAllowed(t *testing.T) {
	// The test bundle allows insecure URLs (as the reference server's
	// sandbox mode does); the rule without it is tested in
	// internal/fields. Here: http to loopback is accepted.
	t.Parallel()
	b := setup(t)
	r := b.do(t, req{method: "POST", path: "/v1/setup", body: setupBody("app_local", "http://127.0.0.1:9999/hooks")})
	require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
}
