package httpapi_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/events"
	"github.com/keelpay/keelpay/provider/sandbox"
)

func TestAttemptHistory(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.hookStore(t, "app_shop")
	d := mustNew(events.NewDispatcher(events.DispatcherConfig{AllowInsecureWebhooks: true, AttemptTimeout: 300 * time.Millisecond, Clock: b.clock, Storage: b.db}))
	e := b.insertEvent(t, s.id)

	// First the receiver fails with a long answer that is not UTF-8, then
	// it redirects, then it accepts.
	long := strings.Repeat("é", 600) + "\xff"
	s.rec.SetResponder(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = w.Write([]byte("\xffbad " + long))
	})
	require.Equal(t, 1, b.runDispatcher(t, d))
	first := b.clock.Now()
	b.clock.Advance(events.RetryDelay(1))
	s.rec.SetResponder(func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/x", http.StatusFound) })
	require.Equal(t, 1, b.runDispatcher(t, d))
	b.clock.Advance(events.RetryDelay(2))
	s.rec.SetResponder(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(`{"ok":true}`)) })
	require.Equal(t, 1, b.runDispatcher(t, d))

	r := b.do(t, req{method: "GET", path: "/v1/events/" + e.ID + "/attempts", key: s.key})
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
	require.Equal(t, "list", r.str("object"))
	require.Equal(t, false, r.Body["has_more"])
	data := r.Body["data"].([]any)
	require.Len(t, data, 3)
	newest, mid, oldest := data[0].(map[string]any), data[1].(map[string]any), data[2].(map[string]any)
	for _, a := range data {
		m := a.(map[string]any)
		require.True(t, keelpay.ValidID(keelpay.PrefixAttempt, m["id"].(string)), m["id"])
		require.Equal(t, "delivery_attempt", m["object"])
		require.Equal(t, e.ID, m["event"])
		require.GreaterOrEqual(t, m["duration_ms"], 0.0)
		require.ElementsMatch(t, []string{"id", "object", "event", "started_at", "duration_ms", "status_code", "failure", "response_body"}, keys(m))
	}
	require.Equal(t, 200.0, newest["status_code"])
	require.Nil(t, newest["failure"])
	require.Equal(t, `{"ok":true}`, newest["response_body"])
	require.Equal(t, 302.0, mid["status_code"])
	require.Equal(t, "redirect", mid["failure"])
	require.Equal(t, 500.0, oldest["status_code"])
	require.Equal(t, "http_status", oldest["failure"])
	require.Equal(t, first.Format(time.RFC3339), oldest["started_at"])
	body := oldest["response_body"].(string)
	require.LessOrEqual(t, len(body), keelpay.AttemptBodyMax)
	require.True(t, strings.HasPrefix(body, "\uFFFDbad éé"), "invalid UTF-8 is replaced: %q", body[:10])
	// Never the signature or the secret.
	require.NotContains(t, string(r.Raw), s.secret)
	require.NotContains(t, string(r.Raw), "v1,")

	// Cursors.
	page := b.do(t, req{method: "GET", path: "/v1/events/" + e.ID + "/attempts?limit=1&starting_after=" + newest["id"].(string), key: s.key})
	require.Equal(t, http.StatusOK, page.Status, "%s", page.Raw)
	require.Equal(t, mid["id"], page.Body["data"].([]any)[0].(map[string]any)["id"])
	require.Equal(t, true, page.Body["has_more"])
	page = b.do(t, req{method: "GET", path: "/v1/events/" + e.ID + "/attempts?ending_before=" + oldest["id"].(string), key: s.key})
	require.Len(t, page.Body["data"], 2)

	// A connection that fails has no status and no body.
	f := b.insertEvent(t, s.id)
	s.rec.Close()
	require.Equal(t, 1, b.runDispatcher(t, d))
	r = b.do(t, req{method: "GET", path: "/v1/events/" + f.ID + "/attempts", key: s.key})
	only := r.Body["data"].([]any)[0].(map[string]any)
	require.Nil(t, only["status_code"])
	require.Equal(t, "connection_error", only["failure"])
	require.Equal(t, "", only["response_body"])

	// Bad requests.
	path := "/v1/events/" + e.ID + "/attempts"
	for _, tc := range []struct{ query, field, code string }{
		{"?limit=0", "limit", "invalid_limit"},
		{"?limit=101", "limit", "invalid_limit"},
		{"?colour=red", "colour", "unknown_parameter"},
		{"?limit=1&limit=2", "limit", "duplicate_parameter"},
		{"?starting_after=att_nope", "starting_after", "invalid_starting_after"},
		{"?starting_after=" + only["id"].(string), "starting_after", "invalid_starting_after"},
		{"?ending_before=" + e.ID, "ending_before", "invalid_ending_before"},
		{"?starting_after=" + newest["id"].(string) + "&ending_before=" + oldest["id"].(string), "ending_before", "invalid_ending_before"},
	} {
		requireInvalid(t, b.do(t, req{method: "GET", path: path + tc.query, key: s.key}), tc.field, tc.code)
	}
	other := b.setupStore(t, "app_other")
	requireError(t, b.do(t, req{method: "GET", path: path, key: other.str("secret_key")}), http.StatusNotFound, "event_not_found")
	requireError(t, b.do(t, req{method: "GET", path: "/v1/events/evt_nope/attempts", key: s.key}), http.StatusNotFound, "event_not_found")
	requireError(t, b.do(t, req{method: "GET", path: path}), http.StatusUnauthorized, "invalid_api_key")
}

func keys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestDelayFaultHoldsTheFirstAttemptOnTheServiceClock(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.hookStore(t, "app_shop")
	require.NoError(t, b.faults.Set(s.id, sandbox.Faults{Delay: 1, DelayBy: 2 * time.Minute}))
	e := b.insertEvent(t, s.id)
	require.Equal(t, 1, b.runDispatcher(t, b.dispatcher))
	require.Empty(t, s.rec.Deliveries(), "held")
	r := b.do(t, req{method: "GET", path: "/v1/events/" + e.ID, key: s.key})
	d := delivery(t, r)
	require.Equal(t, "pending", d["status"])
	require.EqualValues(t, 0, d["attempts"], "a hold is no attempt")
	require.Equal(t, b.clock.Now().Add(2*time.Minute).Format(time.RFC3339), d["next_attempt_at"])
	b.clock.Advance(2*time.Minute - time.Second)
	require.Zero(t, b.runDispatcher(t, b.dispatcher))
	b.clock.Advance(time.Second)
	require.Equal(t, 1, b.runDispatcher(t, b.dispatcher))
	require.Len(t, s.rec.Deliveries(), 1, "sent once the hold is over, and held only once")
	require.Equal(t, "succeeded", delivery(t, b.do(t, req{method: "GET", path: "/v1/events/" + e.ID, key: s.key}))["status"])

	require.Error(t, b.faults.Set(s.id, sandbox.Faults{Fail: 1.5}))
	require.NoError(t, b.faults.Set(s.id, sandbox.Faults{}))
	require.Equal(t, sandbox.Faults{}, b.faults.Get(s.id))
}

// The sandbox tools (console, trigger, faults) belong to the reference
// server's sandbox mode: the library's handler has none of them.
func TestSandboxToolsAreNotInTheLibraryHandler(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.hookStore(t, "app_shop")
	for _, rq := range []req{
		{method: "GET", path: "/sandbox/"},
		{method: "GET", path: "/sandbox/console.js"},
		{method: "POST", path: "/sandbox/trigger", key: s.key, body: `{"type":"webhook.test"}`},
		{method: "POST", path: "/sandbox/webhooks/faults", key: s.key, body: `{"fail":1}`},
	} {
		requireError(t, b.do(t, rq), http.StatusNotFound, "not_found")
	}
}
