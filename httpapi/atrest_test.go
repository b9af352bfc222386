package httpapi_test

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay/provider/sandbox"
	"github.com/keelpay/keelpay/storage/postgres/postgrestest"
	"github.com/keelpay/keelpay/webhooks/webhookstest"
)

// secrets are the values a tour handed out that must never be at rest in
// plain text, by what they are.
type secrets map[string]string

// tour calls every endpoint with distinctive values and returns what must
// not be at rest.
func tour(t *testing.T, b *bundle) secrets {
	t.Helper()
	var nonce [6]byte
	_, _ = rand.Read(nonce[:])
	name := "atrest" + hex.EncodeToString(nonce[:])
	clientID := "app_" + name
	found := secrets{"provider client secret": "secret_" + name}
	add := func(what string, v string) {
		require.NotEmpty(t, v, what)
		found[fmt.Sprintf("%s %d", what, len(found))] = v
	}

	hooks := webhookstest.NewRecorder(t, "")
	first := b.do(t, req{method: "POST", path: "/v1/setup", body: setupBody(clientID, hooks.URL()+"/hooks")})
	require.Equal(t, http.StatusCreated, first.Status, "%s", first.Raw)
	sk, pk := first.str("secret_key"), first.str("publishable_key")
	add("secret key", sk)
	add("webhook secret", first.str("webhook_secret"))
	s := shop{id: first.str("id"), sk: sk, pk: pk, currency: first.str("currency")}

	// A rotation of both secrets with an Idempotency-Key: its response,
	// with the new ones, is kept for replays.
	rot := setupBody(clientID, hooks.URL()+"/hooks2")
	rot["rotate_secret_key"], rot["rotate_webhook_secret"] = true, true
	r := b.keyed(t, sk, "rotate-1", rot)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
	sk = r.str("secret_key")
	s.sk = sk
	add("secret key", sk)
	add("webhook secret", r.str("webhook_secret"))
	require.Equal(t, http.StatusOK, b.keyed(t, s.sk, "rotate-1", rot).Status, "replayed")
	require.NoError(t, hooks.SetSecrets(r.str("webhook_secret")))

	r = b.do(t, req{method: "POST", path: "/v1/webhooks/test", key: sk, header: map[string]string{"Idempotency-Key": "hook-1"}})
	require.Equal(t, http.StatusAccepted, r.Status, "%s", r.Raw)
	events := b.do(t, req{method: "GET", path: "/v1/events?limit=10", key: sk})
	require.Equal(t, http.StatusOK, events.Status, "%s", events.Raw)
	eventID := events.Body["data"].([]any)[0].(map[string]any)["id"].(string)
	require.Equal(t, http.StatusOK, b.do(t, req{method: "GET", path: "/v1/events/" + eventID, key: sk}).Status)
	b.do(t, req{method: "POST", path: "/v1/events/" + eventID + "/redeliver", key: sk})

	session := b.do(t, req{method: "POST", path: "/v1/card_sessions", key: sk, body: map[string]any{
		"customer": customerJSON(), "page_origins": []string{"https://shop.example"}},
		header: map[string]string{"Idempotency-Key": "session-1"}})
	require.Equal(t, http.StatusCreated, session.Status, "%s", session.Raw)
	add("card session client secret", session.str("client_secret"))
	require.Equal(t, http.StatusOK, b.do(t, req{method: "GET", path: "/v1/card_sessions/" + session.str("id"), key: sk}).Status)
	page, _ := b.get(t, cardFieldQuery("key", pk, "card_session", session.str("id"), "client_secret", session.str("client_secret"),
		"origin", "https://shop.example"), nil)
	require.Equal(t, http.StatusOK, page.StatusCode)
	card := b.capture(t, s, session, sandbox.CardMastercard)
	require.Equal(t, http.StatusCreated, card.Status, "%s", card.Raw)
	require.Equal(t, http.StatusOK, b.do(t, req{method: "GET", path: "/v1/cards/" + card.str("id"), key: sk}).Status)

	intent := b.do(t, req{method: "POST", path: "/v1/payment_intents", key: sk, body: intentBody(s, 4321),
		header: map[string]string{"Idempotency-Key": "intent-1"}})
	require.Equal(t, http.StatusCreated, intent.Status, "%s", intent.Raw)
	add("intent client secret", intent.str("client_secret"))
	require.Equal(t, http.StatusOK, b.do(t, req{method: "GET", path: "/v1/payment_intents/" + intent.str("id") + "?client_secret=" + intent.str("client_secret"), key: pk}).Status)
	require.Equal(t, http.StatusOK, b.confirmNew(t, s, intent, sandbox.CardVisa, map[string]any{
		"billing": map[string]any{"country": "FI", "postal_code": "00100"}}).Status)
	require.Equal(t, http.StatusOK, b.do(t, req{method: "GET", path: "/v1/payment_intents?limit=5", key: sk}).Status)

	saved := b.createIntent(t, s, intentBody(s, 999))
	add("intent client secret", saved.str("client_secret"))
	r = b.do(t, req{method: "POST", path: "/v1/payment_intents/" + saved.str("id") + "/confirm", key: sk,
		body: map[string]any{"payment_method": card.str("id")}, header: map[string]string{"Idempotency-Key": "confirm-1"}})
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
	canceled := b.createIntent(t, s, intentBody(s, 555))
	add("intent client secret", canceled.str("client_secret"))
	require.Equal(t, http.StatusOK, b.do(t, req{method: "POST", path: "/v1/payment_intents/" + canceled.str("id") + "/cancel", key: sk,
		body: map[string]any{"cancellation_reason": "requested_by_customer"}}).Status)

	refund := b.do(t, req{method: "POST", path: "/v1/refunds", key: sk, body: map[string]any{"payment_intent": intent.str("id"), "reason": "customer asked"},
		header: map[string]string{"Idempotency-Key": "refund-1"}})
	require.Equal(t, http.StatusCreated, refund.Status, "%s", refund.Raw)
	require.Equal(t, http.StatusOK, b.do(t, req{method: "GET", path: "/v1/refunds/" + refund.str("id"), key: sk}).Status)

	// The deliveries are signed with the webhook secret itself, opened
	// from its sealed form: the receiver verifies every one.
	require.Positive(t, b.runDispatcher(t, b.dispatcher))
	delivered := hooks.Deliveries()
	require.NotEmpty(t, delivered)
	for _, d := range delivered {
		require.NoError(t, d.Err, "signature of a delivery")
	}
	return found
}

// forms are the ways a value could be at rest: as it is, hex (PostgreSQL
// shows bytea as hex), and base64 in either alphabet at every alignment
// inside a longer base64 text (a JSON []byte, a blob encoded whole). A
// webhook secret is base64 itself: its key bytes are looked for too.
func forms(v string) map[string][]byte {
	out := map[string][]byte{"plain": []byte(v), "hex": []byte(hex.EncodeToString([]byte(v)))}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
		for pad := range 3 {
			e := enc.EncodeToString(append(bytes.Repeat([]byte{0}, pad), v...))
			// Drop what the padding and the end touch.
			out[fmt.Sprintf("base64 at %d", pad)] = []byte(e[4 : len(e)-4])
		}
	}
	if raw, ok := strings.CutPrefix(v, "whsec_"); ok {
		out["without prefix"] = []byte(raw)
		key, err := base64.StdEncoding.DecodeString(raw)
		if err == nil {
			out["key bytes"] = key
			out["key bytes hex"] = []byte(hex.EncodeToString(key))
			out["key bytes base64url"] = []byte(base64.RawURLEncoding.EncodeToString(key))
		}
	}
	return out
}

// requireNothingAtRest fails for every secret, card number or CVC found in
// data (what where names).
func requireNothingAtRest(t *testing.T, where string, data []byte, found secrets) {
	t.Helper()
	for what, v := range found {
		for form, needle := range forms(v) {
			if bytes.Contains(data, needle) {
				t.Errorf("%s: %s %q is at rest (%s)", where, what, v, form)
			}
		}
	}
	for _, number := range []string{sandbox.CardVisa, sandbox.CardMastercard} {
		for form, needle := range forms(number) {
			if form == "plain" || form == "hex" {
				if bytes.Contains(data, needle) {
					t.Errorf("%s: card number %s is at rest (%s)", where, number, form)
				}
			}
		}
	}
	// The CVC is short; look for it where it would have a name.
	for _, needle := range []string{`"cvc"`, `cvc=`, `"cvc":"123"`} {
		if bytes.Contains(data, []byte(needle)) {
			t.Errorf("%s: a CVC is at rest (%s)", where, needle)
		}
	}
}

func TestNoSecretAtRestSQLite(t *testing.T) {
	t.Parallel()
	b := setup(t)
	found := tour(t, b)
	var all []byte
	for _, suffix := range []string{"", "-wal", "-shm"} {
		data, err := os.ReadFile(b.path + suffix)
		if os.IsNotExist(err) {
			continue
		}
		require.NoError(t, err)
		requireNothingAtRest(t, "file keelpay.db"+suffix, data, found)
		all = append(all, data...)
	}
	// The check is able to see: distinctive values that are kept in plain
	// text by design (the customer's id) are there.
	require.True(t, bytes.Contains(all, []byte(custID)), "the tour's data is in the file")
	require.False(t, bytes.Contains(all, []byte(custEmail)), "the customer's email is sealed")
	require.True(t, bytes.Contains(all, []byte("enc:v1:test:")), "sealed values are in the file")
}

func TestNoSecretAtRestPostgreSQL(t *testing.T) {
	t.Parallel()
	dsn := postgrestest.DSN(t)
	schema := postgrestest.NewSchema(t)
	b := setup(t, func(o *options) { o.db = postgrestest.Open(t, schema) })
	found := tour(t, b)

	all := tablesText(t, dsn, schema, func(table string, data []byte) {
		requireNothingAtRest(t, "table "+table, data, found)
	})
	require.True(t, bytes.Contains(all, []byte(custID)), "the tour's data is in the tables")
	require.False(t, bytes.Contains(all, []byte(custEmail)), "the customer's email is sealed")
	require.True(t, bytes.Contains(all, []byte("enc:v1:test:")), "sealed values are in the tables")
}
