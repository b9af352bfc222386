package httpapi_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite"

	"github.com/keelpay/keelpay/keyring"
	"github.com/keelpay/keelpay/keyring/keyringtest"
	"github.com/keelpay/keelpay/provider/sandbox"
	"github.com/keelpay/keelpay/storage/sqlite"
	"github.com/keelpay/keelpay/stores"
)

// fromAddr makes the bundle take the client address from the X-Test-Addr
// header, as an embedder behind a proxy would from the proxy's header: so
// one test plays many clients.
func fromAddr(o *options) {
	o.clientAddr = func(r *http.Request) string { return r.Header.Get("X-Test-Addr") }
}

func (b *bundle) setupFrom(t *testing.T, addr, key string, body map[string]any) *response {
	t.Helper()
	return b.do(t, req{method: "POST", path: "/v1/setup", key: key, body: body, header: map[string]string{"X-Test-Addr": addr}})
}

func withSecret(body map[string]any, secret string) map[string]any {
	body["client_secret"] = secret
	return body
}

// TestSetupFloodLocksNoOwnerOut: sixty setups with made-up application ids
// and four with a wrong secret for a store's client id, all within one
// minute, used to fill the limits that the store's owner and the next new
// store needed. Now failures have budgets of their own.
func TestSetupFloodLocksNoOwnerOut(t *testing.T) {
	t.Parallel()
	b := setup(t, fromAddr)
	owner := b.setupFrom(t, "192.0.2.1", "", setupBody("app_owner", "https://store.example/hooks"))
	require.Equal(t, http.StatusCreated, owner.Status, "%s", owner.Raw)

	for i := range 60 {
		r := b.setupFrom(t, fmt.Sprintf("198.51.100.%d", i), "", withSecret(setupBody(fmt.Sprintf("app_madeup%d", i), "https://evil.example/"), "wrong"))
		requireError(t, r, http.StatusUnauthorized, "invalid_credentials")
	}
	for i := range 4 {
		r := b.setupFrom(t, fmt.Sprintf("203.0.113.%d", i), "", withSecret(setupBody("app_owner", "https://evil.example/"), "guess"+strconv.Itoa(i)))
		requireError(t, r, http.StatusUnauthorized, "invalid_credentials")
	}

	// At once, within the same minute: a new store's first setup ...
	r := b.setupFrom(t, "192.0.2.2", "", setupBody("app_newcomer", "https://newcomer.example/hooks"))
	require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
	// ... the owner's own rotation with its secret key ...
	rot := setupBody("app_owner", "https://store.example/hooks")
	rot["rotate_secret_key"] = true
	r = b.setupFrom(t, "192.0.2.1", owner.str("secret_key"), rot)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
	require.Regexp(t, `^sk_`, r.str("secret_key"))
	sk := r.str("secret_key")
	// ... and a change with its client secret alone (no secret key),
	// which the stored hash proves.
	r = b.setupFrom(t, "192.0.2.1", "", setupBody("app_owner", "https://store.example/hooks2"))
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)

	// The client id's budget of unproven setups is full (its first setup
	// and the four guesses): more guesses are refused, yet the secret key
	// still works.
	r = b.setupFrom(t, "203.0.113.9", "", withSecret(setupBody("app_owner", "https://evil.example/"), "guess9"))
	requireError(t, r, http.StatusTooManyRequests, "rate_limited")
	r = b.setupFrom(t, "192.0.2.1", sk, setupBody("app_owner", "https://store.example/hooks3"))
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
}

// TestSetupGuessingIsStillThrottled: one address guessing at speed, and
// many addresses guessing one client id, get 429 with Retry-After.
func TestSetupGuessingIsStillThrottled(t *testing.T) {
	t.Parallel()
	b := setup(t, fromAddr)
	b.setupFrom(t, "192.0.2.1", "", setupBody("app_victim", "https://store.example/hooks"))

	// One address, many client ids.
	for i := range stores.SetupUnprovenLimitPerAddress {
		r := b.setupFrom(t, "198.51.100.7", "", withSecret(setupBody(fmt.Sprintf("app_try%d", i), "https://evil.example/"), "x"))
		requireError(t, r, http.StatusUnauthorized, "invalid_credentials")
	}
	r := b.setupFrom(t, "198.51.100.7", "", withSecret(setupBody("app_victim", "https://evil.example/"), "x"))
	requireError(t, r, http.StatusTooManyRequests, "rate_limited")
	require.Equal(t, "60", r.Header.Get("Retry-After"))

	// Many addresses, one client id (whose first setup took one).
	for i := range stores.SetupUnprovenLimitPerClient - 1 {
		r := b.setupFrom(t, fmt.Sprintf("203.0.113.%d", i), "", withSecret(setupBody("app_victim", "https://evil.example/"), "y"))
		requireError(t, r, http.StatusUnauthorized, "invalid_credentials")
	}
	b.clock.Advance(10 * time.Second)
	r = b.setupFrom(t, "203.0.113.200", "", withSecret(setupBody("app_victim", "https://evil.example/"), "y"))
	requireError(t, r, http.StatusTooManyRequests, "rate_limited")
	require.Equal(t, "50", r.Header.Get("Retry-After"))

	// IPv6 addresses count per /64: a host does not get a new budget for
	// every address of its network.
	for i := range stores.SetupUnprovenLimitPerAddress {
		r := b.setupFrom(t, fmt.Sprintf("2001:db8:1:2::%x", i+1), "", withSecret(setupBody(fmt.Sprintf("app_six%d", i), "https://evil.example/"), "x"))
		requireError(t, r, http.StatusUnauthorized, "invalid_credentials")
	}
	r = b.setupFrom(t, "2001:db8:1:2:ffff::1", "", withSecret(setupBody("app_six_more", "https://evil.example/"), "x"))
	requireError(t, r, http.StatusTooManyRequests, "rate_limited")
	r = b.setupFrom(t, "2001:db8:1:3::1", "", withSecret(setupBody("app_six_more", "https://evil.example/"), "x"))
	requireError(t, r, http.StatusUnauthorized, "invalid_credentials")

	// A minute later both budgets have room again.
	b.clock.Advance(time.Minute)
	r = b.setupFrom(t, "198.51.100.7", "", withSecret(setupBody("app_victim", "https://evil.example/"), "z"))
	requireError(t, r, http.StatusUnauthorized, "invalid_credentials")
}

// TestPublishableKeyOnSecretKeyRoutes calls every route that needs the
// secret key with the store's publishable key, on objects of that store:
// 401 invalid_api_key everywhere. Of the routes that also take the
// publishable key, reading an intent without its client_secret is 401 too.
func TestPublishableKeyOnSecretKeyRoutes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.shop(t, "app_pk")
	session := b.session(t, s)
	card := b.capture(t, s, session, sandbox.CardVisa)
	require.Equal(t, http.StatusCreated, card.Status, "%s", card.Raw)
	intent := b.createIntent(t, s, intentBody(s, 1200))
	require.Equal(t, http.StatusOK, b.confirmSaved(t, s, intent.str("id"), card.str("id")).Status)
	refund := b.do(t, req{method: "POST", path: "/v1/refunds", key: s.sk, body: map[string]any{"payment_intent": intent.str("id"), "reason": "customer asked"}})
	require.Equal(t, http.StatusCreated, refund.Status, "%s", refund.Raw)
	event := b.do(t, req{method: "POST", path: "/v1/webhooks/test", key: s.sk})
	require.Equal(t, http.StatusAccepted, event.Status, "%s", event.Raw)

	ids := map[string]string{
		"/v1/events/{id}":                  event.str("id"),
		"/v1/events/{id}/redeliver":        event.str("id"),
		"/v1/events/{id}/attempts":         event.str("id"),
		"/v1/card_sessions/{id}":           session.str("id"),
		"/v1/cards/{id}":                   card.str("id"),
		"/v1/payment_intents/{id}":         intent.str("id"),
		"/v1/payment_intents/{id}/confirm": intent.str("id"),
		"/v1/payment_intents/{id}/cancel":  intent.str("id"),
		"/v1/refunds/{id}":                 refund.str("id"),
		"/v1/card_sessions/{id}/cards":     session.str("id"),
		"/v1/customers/{id}/erase":         custID,
	}
	raw, err := os.ReadFile(filepath.Join("..", "docs", "openapi.json"))
	require.NoError(t, err)
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	require.NoError(t, json.Unmarshal(raw, &doc))
	bodies := map[string]any{
		"POST /v1/setup":                       setupBody("app_pk", "https://store.example/rotated"),
		"POST /v1/card_sessions":               map[string]any{"customer": customerJSON()},
		"POST /v1/payment_intents":             intentBody(s, 500),
		"POST /v1/refunds":                     map[string]any{"payment_intent": intent.str("id"), "reason": "customer asked"},
		"POST /v1/payment_intents/{id}/cancel": map[string]any{},
	}
	checked := 0
	for path, ops := range doc.Paths {
		for method, rawOp := range ops {
			var op struct {
				Security []map[string]any `json:"security"`
			}
			if json.Unmarshal(rawOp, &op) != nil {
				continue
			}
			secret, publishable := false, false
			for _, req := range op.Security {
				_, sk := req["secretKey"]
				_, pk := req["publishableKey"]
				secret, publishable = secret || sk, publishable || pk
			}
			name := strings.ToUpper(method) + " " + path
			switch {
			case secret && !publishable:
			case name == "GET /v1/payment_intents/{id}":
				// Without the client_secret, the browser's only way in.
			default:
				continue
			}
			u := path
			if strings.Contains(path, "{id}") {
				require.Contains(t, ids, path, "an id for %s", path)
				u = strings.ReplaceAll(path, "{id}", ids[path])
			}
			r := b.do(t, req{method: strings.ToUpper(method), path: u, key: s.pk, body: bodies[name]})
			requireError(t, r, http.StatusUnauthorized, "invalid_api_key")
			checked++
		}
	}
	require.Equal(t, 20, checked, "setup, the eighteen routes that need the secret key, and the intent read")
	// The card the publishable key tried to delete, and its customer's
	// data it tried to erase, are still there.
	require.Equal(t, http.StatusOK, b.do(t, req{method: "GET", path: "/v1/cards/" + card.str("id"), key: s.sk}).Status)
	require.Equal(t, custName, b.getIntent(t, s, intent.str("id")).Body["customer"].(map[string]any)["name"])
	// Nothing changed: the intent is still succeeded, the store keeps its
	// webhook URL.
	require.Equal(t, "succeeded", b.getIntent(t, s, intent.str("id")).str("status"))
	st, err := b.db.StoreGetByID(context.Background(), s.id)
	require.NoError(t, err)
	require.Equal(t, "https://store.example/hooks", st.WebhookURL)
}

// TestTakeoverFromACopyOfTheDatabase: with a copy of the database, an
// attacker used to read client_id and client_secret from the stores table
// and set the store up again with rotate_secret_key, taking its secret key
// and its webhooks. The copy now has neither the client secret nor, without
// the keys, anything sealed.
func TestTakeoverFromACopyOfTheDatabase(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.shop(t, "app_victim")

	// The attacker's copy: the file and its write-ahead log.
	dir := t.TempDir()
	for _, suffix := range []string{"", "-wal"} {
		data, err := os.ReadFile(b.path + suffix)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "copy.db"+suffix), data, 0o600))
	}
	copyPath := filepath.Join(dir, "copy.db")
	db, err := sql.Open("sqlite", "file:"+copyPath)
	require.NoError(t, err)
	var clientID, clientSecret, hash, whsec string
	require.NoError(t, db.QueryRow(`SELECT client_id, client_secret, client_secret_hash, webhook_secret FROM stores WHERE id = ?`, s.id).
		Scan(&clientID, &clientSecret, &hash, &whsec))
	require.NoError(t, db.Close())
	require.Equal(t, "app_victim", clientID)
	require.Empty(t, clientSecret, "the client secret is not kept")
	require.True(t, keyring.IsSecretHash(hash))
	require.True(t, keyring.IsSealed(whsec))

	// Whatever the copy offers as a client secret, setup refuses it.
	for _, guess := range []string{clientSecret, hash, whsec} {
		if guess == "" {
			continue
		}
		body := withSecret(setupBody(clientID, "https://evil.example/hooks"), guess)
		body["rotate_secret_key"] = true
		requireError(t, b.do(t, req{method: "POST", path: "/v1/setup", body: body}), http.StatusUnauthorized, "invalid_credentials")
	}

	// The copy opens only with the keys that sealed it.
	other, err := keyring.Generate("test")
	require.NoError(t, err)
	otherRing, err := keyring.New(other)
	require.NoError(t, err)
	_, err = sqlite.Open(context.Background(), sqlite.Config{Keyring: otherRing, Path: copyPath})
	require.ErrorContains(t, err, `the key with id "test" is not the key this database knows`)
	_, err = sqlite.Open(context.Background(), sqlite.Config{Path: copyPath})
	require.ErrorContains(t, err, "Keyring is required")
	reopened, err := sqlite.Open(context.Background(), sqlite.Config{Keyring: keyringtest.Keyring(), Path: copyPath})
	require.NoError(t, err)
	defer reopened.Close()
	st, err := reopened.StoreGetByID(context.Background(), s.id)
	require.NoError(t, err)
	require.Regexp(t, `^whsec_`, st.WebhookSecret, "with its keys the copy is whole")
}
