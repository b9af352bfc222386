package main

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestEveryAnswerHasARequestIDAndItsLogLinesToo: the API, /healthz,
// /metrics, the sandbox clock and the 3D Secure page all answer with
// Request-Id, and the lines the
// server logs while serving one (the clock's, the payments service's
// warning) carry the same request_id.
func TestEveryAnswerHasARequestIDAndItsLogLinesToo(t *testing.T) {
	t.Parallel()
	s := start(t, t.TempDir(), []string{"KEELPAY_LOG_FORMAT=json"}, "-addr", "127.0.0.1:0", "-db", "keelpay.db")
	sh := setupShop(t, s, "app_reqid", "http://127.0.0.1:1/hooks")

	ids := map[string]string{} // what -> request id
	check := func(what string, r reply) {
		t.Helper()
		id := r.Header.Get("Request-Id")
		require.Regexp(t, `^req_\w{24}$`, id, "%s answered without Request-Id", what)
		ids[what] = id
	}
	check("GET /healthz", must(t, "GET", s.URL+"/healthz", "", nil))
	check("GET /metrics", must(t, "GET", s.URL+"/metrics", "", nil))
	check("GET /sandbox/clock", must(t, "GET", s.URL+"/sandbox/clock", "", nil))
	check("POST /sandbox/clock", must(t, "POST", s.URL+"/sandbox/clock", "", map[string]any{"advance_seconds": 1}))
	check("PUT /sandbox/clock", must(t, "PUT", s.URL+"/sandbox/clock", "", nil))

	intent := must(t, "POST", s.URL+"/v1/payment_intents", sh.sk, intentBody(1000))
	require.Equal(t, http.StatusCreated, intent.Status)
	r := must(t, "POST", s.URL+"/v1/payment_intents/"+intent.Str("id")+"/confirm", sh.pk, confirmBody(intent, "4000000000000259"))
	require.Equal(t, "processing", r.Str("status"))
	check("confirm", r)

	intent = must(t, "POST", s.URL+"/v1/payment_intents", sh.sk, intentBody(1000))
	r = must(t, "POST", s.URL+"/v1/payment_intents/"+intent.Str("id")+"/confirm", sh.pk, confirmBody(intent, "4000000000003220"))
	next, _ := r.Body["next_action"].(map[string]any)
	page, _ := next["url"].(string)
	require.NotEmpty(t, page)
	check("GET 3-D Secure page", must(t, "GET", page, "", nil))
	check("POST 3-D Secure page", must(t, "POST", page, "", url.Values{"result": {"complete"}}))

	require.NoError(t, s.Cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, s.Cmd.Wait())
	logged := map[string][]string{} // request id -> messages
	for _, line := range strings.Split(strings.TrimSpace(s.Stderr.String()), "\n") {
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &rec), line)
		if id, ok := rec["request_id"].(string); ok {
			logged[id] = append(logged[id], rec["msg"].(string))
		}
	}
	require.Contains(t, logged[ids["POST /sandbox/clock"]], "sandbox clock advanced")
	require.Contains(t, logged[ids["confirm"]], "payment attempt stays open after a provider error")
	require.Contains(t, logged[ids["confirm"]], "request")
}
