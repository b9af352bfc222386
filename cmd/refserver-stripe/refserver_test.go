package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay/internal/servertest"
	"github.com/keelpay/keelpay/keyring"
	"github.com/keelpay/keelpay/keyring/keyringtest"
	"github.com/keelpay/keelpay/refserver"
)

// stripeEnv is a complete Stripe configuration.
func stripeEnv() map[string]string {
	return map[string]string{
		"KEELPAY_PROVIDER":              "stripe",
		"KEELPAY_STRIPE_ACCOUNT":        "acct_1",
		"KEELPAY_STRIPE_KEY":            "rk_test_1",
		"KEELPAY_STRIPE_WEBHOOK_SECRET": "whsec_1",
		"KEELPAY_PUBLIC_URL":            "https://pay.example/",
	}
}

// TestParseStripe: -provider stripe names every missing variable at once,
// and for PostgreSQL a missing encryption key with them; it refuses an
// http public URL and the sandbox's flags.
func TestParseStripe(t *testing.T) {
	t.Parallel()
	getenv := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	_, err := parseStripe(refserver.Settings{DB: "keelpay.db"}, getenv(nil))
	assert.EqualError(t, err, "-provider stripe: cannot start; missing: "+
		"KEELPAY_STRIPE_ACCOUNT (the Stripe account id, acct_...); "+
		"KEELPAY_STRIPE_KEY (a restricted key of the account, rk_live_... or rk_test_...); "+
		"KEELPAY_STRIPE_WEBHOOK_SECRET (the signing secret of the account's webhook endpoint, whsec_...); "+
		"KEELPAY_PUBLIC_URL (this server's public https URL, for Stripe's 3D Secure return and webhooks)")

	// Only what is missing is named; PostgreSQL also needs a key given.
	env := stripeEnv()
	delete(env, "KEELPAY_STRIPE_WEBHOOK_SECRET")
	_, err = parseStripe(refserver.Settings{DB: "postgres://u@127.0.0.1/x"}, getenv(env))
	assert.EqualError(t, err, "-provider stripe: cannot start; missing: "+
		"KEELPAY_STRIPE_WEBHOOK_SECRET (the signing secret of the account's webhook endpoint, whsec_...); "+
		"KEELPAY_ENCRYPTION_KEY or -key-file (the encryption keys a PostgreSQL database needs)")
	env = stripeEnv()
	_, err = parseStripe(refserver.Settings{DB: "postgres://u@127.0.0.1/x", KeyFile: "keys"}, getenv(env))
	assert.NoError(t, err, "a key file is a key given")

	env = stripeEnv()
	env["KEELPAY_PUBLIC_URL"] = "http://pay.example"
	_, err = parseStripe(refserver.Settings{DB: "keelpay.db"}, getenv(env))
	assert.ErrorContains(t, err, "KEELPAY_PUBLIC_URL must be an https URL")

	for _, s := range []refserver.Settings{{DB: "keelpay.db", SandboxURL: "http://127.0.0.1:8080"}, {DB: "keelpay.db", SandboxDB: "sb.db"}} {
		_, err = parseStripe(s, getenv(stripeEnv()))
		assert.ErrorContains(t, err, "belong to -provider sandbox")
	}

	c, err := parseStripe(refserver.Settings{DB: "keelpay.db"}, getenv(stripeEnv()))
	require.NoError(t, err)
	assert.Equal(t, stripeConfig{account: "acct_1", key: "rk_test_1", webhookSecret: "whsec_1", publicURL: "https://pay.example"}, c)
}

func TestStripeRefusesToStartNamingEachMissingVariable(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(built, "-provider", "stripe", "-addr", "127.0.0.1:0")
	cmd.Dir = t.TempDir()
	// The test's own environment may hold some of them.
	cmd.Env = []string{"KEELPAY_STRIPE_ACCOUNT=", "KEELPAY_STRIPE_KEY=", "KEELPAY_STRIPE_WEBHOOK_SECRET=", "KEELPAY_PUBLIC_URL="}
	out, err := cmd.CombinedOutput()
	require.Error(t, err, "%s", out)
	for _, name := range []string{"KEELPAY_STRIPE_ACCOUNT", "KEELPAY_STRIPE_KEY", "KEELPAY_STRIPE_WEBHOOK_SECRET", "KEELPAY_PUBLIC_URL"} {
		assert.Contains(t, string(out), name+" (", "names %s", name)
	}
	assert.True(t, strings.HasPrefix(string(out), "refserver: -provider stripe: cannot start; missing: "), "%s", out)
	assert.NoFileExists(t, filepath.Join(cmd.Dir, "keelpay.db"), "refused before opening anything")
}

// fakeStripeAccount answers what a store's setup asks Stripe: the account
// of the key, and the permission probes (updates of an object that does
// not exist, which a key with the permission gets 404 for).
func fakeStripeAccount(t *testing.T) (*httptest.Server, func() []string) {
	var (
		mu    sync.Mutex
		calls []string
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls = append(calls, r.Method+" "+r.URL.Path)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if r.Header.Get("Authorization") != "Bearer rk_test_1" {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"error":{"type":"invalid_request_error","message":"Invalid API Key provided"}}`)
			return
		}
		if r.Method == http.MethodGet && r.URL.Path == "/v1/account" {
			_ = json.NewEncoder(w).Encode(map[string]any{"id": "acct_1", "object": "account", "default_currency": "eur", "charges_enabled": true})
			return
		}
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"error":{"type":"invalid_request_error","code":"resource_missing","message":"No such object"}}`)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), calls...)
	}
}

func TestServesWithStripe(t *testing.T) {
	t.Parallel()
	fake, calls := fakeStripeAccount(t)
	env := []string{"KEELPAY_ADDR=127.0.0.1:0", "KEELPAY_ENCRYPTION_KEY=" + keyring.Format(keyringtest.Key()), "KEELPAY_KEY_FILE=",
		"KEELPAY_SANDBOX_URL=", "KEELPAY_SANDBOX_DB=", "KEELPAY_STRIPE_API_URL=" + fake.URL}
	for k, v := range stripeEnv() {
		env = append(env, k+"="+v)
	}
	dir := t.TempDir()
	s := start(t, dir, env)
	assert.Contains(t, s.Banner, "Stripe account acct_1; public URL https://pay.example;")
	assert.Contains(t, s.Banner, "https://pay.example/stripe/webhook")
	assert.Contains(t, s.Banner, "Stripe's API is "+fake.URL+" here (KEELPAY_STRIPE_API_URL)", "the override is shown")
	assert.NotContains(t, s.Banner, "rk_test_1", "the key is never printed")

	r := must(t, "GET", s.URL+"/healthz", "", nil)
	assert.Equal(t, http.StatusOK, r.Status)
	// The adapter's routes: an unsigned webhook is refused; the return
	// route answers the buyer.
	r = must(t, "POST", s.URL+"/stripe/webhook", "", nil)
	assert.Equal(t, http.StatusBadRequest, r.Status)
	r = must(t, "GET", s.URL+"/stripe/return", "", nil)
	assert.Equal(t, http.StatusOK, r.Status)
	// Nothing of sandbox mode.
	for _, p := range []string{"/sandbox/", "/sandbox/clock", "/sandbox/trigger", "/sandbox/webhooks/faults", "/sandbox/3ds/x", "/sandbox/provider/x"} {
		r = must(t, "GET", s.URL+p, "", nil)
		assert.Equal(t, http.StatusNotFound, r.Status, p)
	}
	r = must(t, "POST", s.URL+"/sandbox/clock", "", map[string]any{"advance_seconds": 60})
	assert.Equal(t, http.StatusNotFound, r.Status)

	// Setup reaches Stripe (the fake) with the store's key; an insecure
	// webhook URL is refused before that.
	r = must(t, "POST", s.URL+"/v1/setup", "", map[string]any{
		"client_id": "acct_1", "client_secret": "rk_test_1", "webhook_url": "http://127.0.0.1:9000/webhooks"})
	assert.Equal(t, "invalid_request", r.Code(), "%v", r.Body)
	assert.Empty(t, calls())
	r = must(t, "POST", s.URL+"/v1/setup", "", map[string]any{
		"client_id": "acct_1", "client_secret": "rk_test_1", "webhook_url": "https://store.example/webhooks"})
	require.Equal(t, http.StatusCreated, r.Status, "%v", r.Body)
	assert.Equal(t, "EUR", r.Str("currency"), "%v", r.Body)
	assert.Contains(t, calls(), "GET /v1/account")

	logs := s.Stop(t)
	assert.NotContains(t, logs, "rk_test_1")
	assert.NoFileExists(t, filepath.Join(dir, "keelpay.sandbox.db"), "no sandbox with Stripe")
}

// TestStripeUnreachableIsLogged: with KEELPAY_STRIPE_API_URL pointing
// where nothing listens, the banner and the start's log show the override,
// a setup answers 503 provider_api_unavailable (and tells the client no
// more), and the log says why, under the request's id, without the key,
// the webhook secret or the client secret.
func TestStripeUnreachableIsLogged(t *testing.T) {
	t.Parallel()
	nowhere := "http://" + servertest.FreeAddr(t)
	env := []string{"KEELPAY_ADDR=127.0.0.1:0", "KEELPAY_ENCRYPTION_KEY=" + keyring.Format(keyringtest.Key()), "KEELPAY_KEY_FILE=",
		"KEELPAY_SANDBOX_URL=", "KEELPAY_SANDBOX_DB=", "KEELPAY_STRIPE_API_URL=" + nowhere}
	for k, v := range stripeEnv() {
		env = append(env, k+"="+v)
	}
	s := start(t, t.TempDir(), env)
	assert.Contains(t, s.Banner, "Stripe's API is "+nowhere+" here (KEELPAY_STRIPE_API_URL)")

	r := must(t, "POST", s.URL+"/v1/setup", "", map[string]any{
		"client_id": "acct_1", "client_secret": "rk_test_storesecret", "webhook_url": "https://store.example/webhooks"})
	require.Equal(t, http.StatusServiceUnavailable, r.Status, "%v", r.Body)
	assert.Equal(t, "provider_api_unavailable", r.Code())
	reqID := r.Header.Get("Request-Id")
	require.NotEmpty(t, reqID)

	logs := s.Stop(t)
	assert.Contains(t, logs, "stripe_api_url="+nowhere, "the start's log line shows the override")
	var line string
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, "provider unavailable") {
			line = l
		}
	}
	require.NotEmpty(t, line, "the cause is logged:\n%s", logs)
	t.Logf("logged: %s", line)
	assert.Contains(t, line, "request_id="+reqID)
	assert.Contains(t, line, "call=CheckApplication")
	assert.Contains(t, line, "kind=unavailable")
	assert.Contains(t, line, "connection refused", "the cause itself")
	for _, secret := range []string{"rk_test_1", "whsec_1", "rk_test_storesecret"} {
		assert.NotContains(t, logs, secret)
	}
}
