package main

import (
	"encoding/json"
	"io"
	"maps"
	"mime"
	"net/http"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/internal/openapicheck"
)

const (
	sandboxOpenAPIPath = "../../docs/sandbox.openapi.json"
	sandboxOpenAPIName = "docs/sandbox.openapi.json"
)

// TestSandboxOpenAPIIsOpenAPI31 checks docs/sandbox.openapi.json as
// httpapi's tests check docs/openapi.json: JSON, OpenAPI 3.1, every $ref
// resolves, every component used; and its event types are keelpay's.
func TestSandboxOpenAPIIsOpenAPI31(t *testing.T) {
	t.Parallel()
	doc, err := openapicheck.Read(sandboxOpenAPIPath, sandboxOpenAPIName)
	require.NoError(t, err)
	require.Empty(t, doc.BrokenRefs(), "%s: $refs that do not resolve", sandboxOpenAPIName)
	require.Empty(t, doc.UnusedComponents(), "%s: unused components", sandboxOpenAPIName)

	types, err := doc.Resolve("#/components/schemas/EventType/enum")
	require.NoError(t, err)
	var documented []string
	for _, v := range types.([]any) {
		documented = append(documented, v.(string))
		require.True(t, keelpay.ValidEventType(v.(string)), "%s lists %v, not an event type", sandboxOpenAPIName, v)
	}
	for _, typ := range []keelpay.EventType{keelpay.EventCardCreated, keelpay.EventPaymentIntentSucceeded,
		keelpay.EventPaymentIntentPaymentFailed, keelpay.EventPaymentIntentCanceled, keelpay.EventRefundSucceeded,
		keelpay.EventRefundFailed, keelpay.EventWebhookTest} {
		require.Contains(t, documented, string(typ), "%s: the trigger's types", sandboxOpenAPIName)
	}
}

// sandboxCall is one request to a documented operation and the status it
// must answer.
type sandboxCall struct {
	op     string // "METHOD /path" as in the document
	path   string // the path called, with ids
	key    string
	body   any // JSON, url.Values for a form, nil for none
	status int
}

// TestSandboxOpenAPIRoutesAnswerAsDescribed calls every operation of
// docs/sandbox.openapi.json on a built reference server, with good and bad
// requests, and checks each answer against the document: its status is one
// the operation lists, its content type the one described for that status,
// a JSON body has the described schema, and Request-Id is there. Every
// documented operation must be called, and only documented ones.
func TestSandboxOpenAPIRoutesAnswerAsDescribed(t *testing.T) {
	t.Parallel()
	doc, err := openapicheck.Read(sandboxOpenAPIPath, sandboxOpenAPIName)
	require.NoError(t, err)
	ops := doc.Operations()

	s := start(t, t.TempDir(), []string{"KEELPAY_ADDR=127.0.0.1:0"})
	sh := setupShop(t, s, "app_sbxdoc", "http://127.0.0.1:9/webhooks")
	sk := sh.sk
	// A challenge to answer: an intent confirmed with the 3D Secure card.
	pi := must(t, "POST", s.URL+"/v1/payment_intents", sk, intentBody(900))
	require.Equal(t, http.StatusCreated, pi.Status, "%v", pi.Body)
	three := must(t, "POST", s.URL+"/v1/payment_intents/"+pi.Str("id")+"/confirm", sh.pk, confirmBody(pi, "4000000000003220"))
	require.Equal(t, "requires_action", three.Str("status"), "%v", three.Body)
	challenge := path.Base(three.Body["next_action"].(map[string]any)["url"].(string))

	calls := []sandboxCall{
		{op: "GET /sandbox/clock", path: "/sandbox/clock", status: 200},
		{op: "POST /sandbox/clock", path: "/sandbox/clock", body: map[string]any{"advance_seconds": 60}, status: 200},
		{op: "POST /sandbox/clock", path: "/sandbox/clock", body: map[string]any{"advance_seconds": 0}, status: 400},
		{op: "POST /sandbox/clock", path: "/sandbox/clock", body: map[string]any{"seconds": 5}, status: 400},
		{op: "POST /sandbox/clock", path: "/sandbox/clock", body: url.Values{"advance_seconds": {"60"}}, status: 415},
		{op: "POST /sandbox/trigger", path: "/sandbox/trigger", key: sk, body: map[string]any{"type": "webhook.test"}, status: 200},
		{op: "POST /sandbox/trigger", path: "/sandbox/trigger", key: sk, body: map[string]any{"type": "payment_intent.succeeded"}, status: 200},
		{op: "POST /sandbox/trigger", path: "/sandbox/trigger", key: sk, body: map[string]any{"type": "nope"}, status: 400},
		{op: "POST /sandbox/trigger", path: "/sandbox/trigger", body: map[string]any{"type": "webhook.test"}, status: 401},
		{op: "GET /sandbox/webhooks/faults", path: "/sandbox/webhooks/faults", key: sk, status: 200},
		{op: "GET /sandbox/webhooks/faults", path: "/sandbox/webhooks/faults", key: "sk_nope", status: 401},
		{op: "POST /sandbox/webhooks/faults", path: "/sandbox/webhooks/faults", key: sk, body: map[string]any{"duplicate": 0.5, "seed": 3}, status: 200},
		{op: "POST /sandbox/webhooks/faults", path: "/sandbox/webhooks/faults", key: sk, body: map[string]any{}, status: 400},
		{op: "POST /sandbox/webhooks/faults", path: "/sandbox/webhooks/faults", key: sk, body: map[string]any{"fail": 2}, status: 400},
		{op: "POST /sandbox/webhooks/faults", path: "/sandbox/webhooks/faults", key: sk, body: map[string]any{"seed": strings.Repeat("x", 5000)}, status: 413},
		{op: "DELETE /sandbox/webhooks/faults", path: "/sandbox/webhooks/faults", key: sk, status: 200},
		{op: "DELETE /sandbox/webhooks/faults", path: "/sandbox/webhooks/faults", status: 401},
		{op: "GET /sandbox/3ds/{id}", path: "/sandbox/3ds/" + challenge, status: 200},
		{op: "GET /sandbox/3ds/{id}", path: "/sandbox/3ds/ch_nope", status: 404},
		{op: "POST /sandbox/3ds/{id}", path: "/sandbox/3ds/" + challenge, body: url.Values{"result": {"maybe"}}, status: 400},
		{op: "POST /sandbox/3ds/{id}", path: "/sandbox/3ds/" + challenge, body: url.Values{"result": {"complete"}}, status: 200},
		{op: "POST /sandbox/3ds/{id}", path: "/sandbox/3ds/" + challenge, body: url.Values{"result": {"fail"}}, status: 409},
		{op: "POST /sandbox/3ds/{id}", path: "/sandbox/3ds/ch_nope", body: url.Values{"result": {"fail"}}, status: 404},
	}
	// 405 where the document lists it: a method the path does not take.
	for op, desc := range ops {
		if responses, _ := desc["responses"].(map[string]any); responses["405"] != nil {
			p := strings.SplitN(op, " ", 2)[1]
			calls = append(calls, sandboxCall{op: op, path: p, key: sk, status: 405})
		}
	}

	called := map[string]bool{}
	for _, c := range calls {
		desc, ok := ops[c.op]
		require.True(t, ok, "%s is called but not in %s", c.op, sandboxOpenAPIName)
		called[c.op] = true
		method := strings.SplitN(c.op, " ", 2)[0]
		if c.status == 405 {
			method = "PUT"
		}
		t.Run(c.op+" "+strconv.Itoa(c.status), func(t *testing.T) {
			checkSandboxAnswer(t, doc, desc, method, s.URL+c.path, c)
		})
	}
	for op := range ops {
		require.True(t, called[op], "%s is in %s but the test does not call it", op, sandboxOpenAPIName)
	}
	// DELETE left every fault off.
	require.EqualValues(t, 0, must(t, "GET", s.URL+"/sandbox/webhooks/faults", sk, nil).Body["duplicate"])
}

func checkSandboxAnswer(t *testing.T, doc *openapicheck.Doc, op map[string]any, method, u string, c sandboxCall) {
	var rd io.Reader
	contentType := ""
	switch b := c.body.(type) {
	case nil:
	case url.Values:
		rd, contentType = strings.NewReader(b.Encode()), "application/x-www-form-urlencoded"
	default:
		raw, err := json.Marshal(b)
		require.NoError(t, err)
		rd, contentType = strings.NewReader(string(raw)), "application/json"
	}
	req, err := http.NewRequest(method, u, rd)
	require.NoError(t, err)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, c.status, resp.StatusCode, "%s %s: %s", method, u, body)

	responses, _ := op["responses"].(map[string]any)
	r, ok := responses[strconv.Itoa(resp.StatusCode)]
	require.True(t, ok, "%s answered %d, which the document does not list", c.op, resp.StatusCode)
	if ref, ok := r.(map[string]any)["$ref"].(string); ok {
		r, err = doc.Resolve(ref)
		require.NoError(t, err)
	}
	described := r.(map[string]any)
	require.Regexp(t, regexp.MustCompile(`^req_[0-9A-Za-z]{24}$`), resp.Header.Get("Request-Id"), "%s: Request-Id", c.op)
	if headers, _ := described["headers"].(map[string]any); headers["Allow"] != nil {
		require.NotEmpty(t, resp.Header.Get("Allow"), "%s: Allow", c.op)
	}
	content, _ := described["content"].(map[string]any)
	mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	require.NoError(t, err)
	media, ok := content[mt].(map[string]any)
	require.True(t, ok, "%s %d: Content-Type %s is not described (%v)", c.op, resp.StatusCode, mt, slices.Collect(maps.Keys(content)))
	if mt != "application/json" {
		return
	}
	var v any
	require.NoError(t, json.Unmarshal(body, &v))
	require.Empty(t, doc.Check(media["schema"], v), "%s %d: %s", c.op, resp.StatusCode, body)
}
