package httpapi_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay/httpapi"
	"github.com/keelpay/keelpay/provider"
)

func TestContentTypeMustBeJSON(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, ct := range []string{"text/plain", "application/x-www-form-urlencoded", "application/json; charset=latin1", "garbage;;"} {
		r := b.do(t, req{method: "POST", path: "/v1/setup", body: `{}`, header: map[string]string{"Content-Type": ct}})
		requireError(t, r, http.StatusUnsupportedMediaType, "unsupported_media_type")
	}
	r := b.do(t, req{method: "POST", path: "/v1/setup", body: `{}`, header: map[string]string{"Content-Type": ""}})
	requireError(t, r, http.StatusUnsupportedMediaType, "unsupported_media_type")
	r = b.do(t, req{method: "POST", path: "/v1/setup", body: `{}`, header: map[string]string{"Content-Type": "application/json; charset=UTF-8"}})
	requireInvalid(t, r, "client_id", "missing_client_id")
}

func TestBodyOver16KiB(t *testing.T) {
	t.Parallel()
	b := setup(t)
	big := `{"client_id":"` + strings.Repeat("a", 16<<10) + `"}`
	requireError(t, b.do(t, req{method: "POST", path: "/v1/setup", body: big}), http.StatusRequestEntityTooLarge, "request_too_large")

	// Chunked: no Content-Length, so the limit must hold while reading.
	pr, pw := io.Pipe()
	go func() {
		_, _ = pw.Write([]byte(big))
		pw.Close()
	}()
	hr, err := http.NewRequest("POST", b.srv.URL+"/v1/setup", pr)
	require.NoError(t, err)
	hr.Header.Set("Content-Type", "application/json")
	hr.ContentLength = -1
	hr.TransferEncoding = []string{"chunked"}
	resp, err := b.srv.Client().Do(hr)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)

	// Exactly 16 KiB is accepted (and fails validation instead).
	exact := `{"client_id":"` + strings.Repeat("a", 16<<10-16) + `"}`
	require.Len(t, exact, 16<<10)
	requireInvalid(t, b.do(t, req{method: "POST", path: "/v1/setup", body: exact}), "client_id", "invalid_client_id")
}

func TestStrictJSON(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for name, body := range map[string]string{
		"array":          `[]`,
		"string":         `"x"`,
		"number":         `5`,
		"null":           `null`,
		"trailing data":  `{} {}`,
		"trailing comma": `{"client_id":"a",}`,
		"truncated":      `{"client_id":`,
		"invalid utf-8":  "{\"client_id\":\"\xff\"}",
		"empty":          ``,
	} {
		r := b.do(t, req{method: "POST", path: "/v1/setup", body: body})
		requireInvalid(t, r, "", "invalid_json")
		require.NotContains(t, string(r.Raw), "client_id\":", name)
	}
}

func TestMessagesNeverEchoInput(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const marker = "zq_marker_value_zq"
	for _, body := range []string{
		`{"client_id":"` + marker + ` x"}`,
		`{"client_id":"app_x","client_secret":"` + marker + ` "}`,
		`{"client_id":"app_x","client_secret":"s","webhook_url":"` + marker + `"}`,
		`{"` + marker + `":1}`,
	} {
		r := b.do(t, req{method: "POST", path: "/v1/setup", body: body})
		require.Equal(t, http.StatusBadRequest, r.Status)
		msg := r.Body["error"].(map[string]any)["message"].(string)
		require.NotContains(t, msg, marker)
	}
}

func TestUnknownRoutesAndMethodsAreJSON(t *testing.T) {
	t.Parallel()
	b := setup(t)
	requireError(t, b.do(t, req{method: "GET", path: "/v1/nothing"}), http.StatusNotFound, "not_found")
	requireError(t, b.do(t, req{method: "GET", path: "/"}), http.StatusNotFound, "not_found")
	r := b.do(t, req{method: "GET", path: "/v1/setup"})
	requireError(t, r, http.StatusMethodNotAllowed, "method_not_allowed")
	require.Equal(t, "POST", r.Header.Get("Allow"))
	requireError(t, b.do(t, req{method: "DELETE", path: "/healthz"}), http.StatusMethodNotAllowed, "method_not_allowed")
}

func TestInvalidAPIKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	store := b.setupStore(t, "app_shop")
	body := setupBody("app_shop", "https://store.example/hooks")
	for name, header := range map[string]string{
		"unknown key":     "Bearer sk_AAAAAAAAAAAAAAAAAAAAAAAA",
		"malformed key":   "Bearer sk_short",
		"publishable key": "Bearer " + store.str("publishable_key"),
		"no scheme":       store.str("secret_key"),
		"basic":           "Basic " + store.str("secret_key"),
		"empty":           "Bearer ",
	} {
		r := b.do(t, req{method: "POST", path: "/v1/setup", body: body, header: map[string]string{"Authorization": header}})
		requireError(t, r, http.StatusUnauthorized, "invalid_api_key")
		_ = name
	}
}

// panicky panics or fails inside the provider, to reach the server's last
// line of defence through the real API.
type panicky struct {
	provider.Provider
	panicNow bool
}

func (p *panicky) CheckApplication(ctx context.Context, c provider.Credentials) (*provider.Application, error) {
	if p.panicNow {
		panic("provider exploded with detail-xyz")
	}
	return nil, errors.New("socket closed: detail-abc")
}

func TestInternalErrorsAndPanicsAre500WithDetailOnlyInLogs(t *testing.T) {
	t.Parallel()
	p := &panicky{}
	b := setup(t, func(o *options) { o.wrap = func(sb provider.Provider) provider.Provider { p.Provider = sb; return p } })
	r := b.do(t, req{method: "POST", path: "/v1/setup", body: setupBody("app_shop", "https://store.example/hooks")})
	requireError(t, r, http.StatusInternalServerError, "internal_error")
	require.NotContains(t, string(r.Raw), "detail-abc")
	require.Contains(t, b.logs.String(), "detail-abc")
	require.Contains(t, b.logs.String(), r.Header.Get("Request-Id"))

	p.panicNow = true
	r = b.do(t, req{method: "POST", path: "/v1/setup", body: setupBody("app_shop", "https://store.example/hooks")})
	requireError(t, r, http.StatusInternalServerError, "internal_error")
	require.NotContains(t, string(r.Raw), "detail-xyz")
	require.Contains(t, b.logs.String(), "detail-xyz")
}

func TestHealthzAndMetrics(t *testing.T) {
	t.Parallel()
	b := setup(t)
	requireError(t, b.do(t, req{method: "DELETE", path: "/healthz"}), http.StatusMethodNotAllowed, "method_not_allowed")
	r := b.do(t, req{method: "GET", path: "/healthz"})
	require.Equal(t, http.StatusOK, r.Status)
	require.Equal(t, "ok", r.str("status"))
	b.setupStore(t, "app_shop")
	requireError(t, b.do(t, req{method: "GET", path: "/nope"}), http.StatusNotFound, "not_found")

	r = b.do(t, req{method: "GET", path: "/metrics"})
	require.Equal(t, http.StatusOK, r.Status)
	metrics := string(r.Raw)
	require.Contains(t, metrics, `keelpay_http_requests_total{code="201",method="POST",route="/v1/setup"} 1`)
	require.NotContains(t, metrics, `route="/healthz"`, "health and metrics are beside the API, not in it")
	require.Contains(t, metrics, `keelpay_http_requests_total{code="404",method="GET",route="unmatched"} 1`)
	require.Contains(t, metrics, `keelpay_http_request_duration_seconds_bucket{code="201",method="POST",route="/v1/setup",le=`)
}

func TestLogsCarryNoSecrets(t *testing.T) {
	t.Parallel()
	b := setup(t)
	first := b.setupStore(t, "app_shop")
	body := setupBody("app_shop", "https://store.example/other")
	body["rotate_secret_key"] = true
	second := b.do(t, req{method: "POST", path: "/v1/setup", key: first.str("secret_key"), body: body})
	require.Equal(t, http.StatusOK, second.Status)
	b.do(t, req{method: "POST", path: "/v1/setup", body: map[string]any{"client_id": "app_shop", "client_secret": "secret_wrong_guess", "webhook_url": "https://s.example"}})

	logs := b.logs.String()
	require.Contains(t, logs, first.str("id"), "the logs do name the store")
	for _, secret := range []string{
		"secret_shop", "secret_wrong_guess",
		first.str("secret_key"), second.str("secret_key"),
		first.str("webhook_secret"), second.str("webhook_secret"),
		strings.TrimPrefix(first.str("webhook_secret"), "whsec_"),
	} {
		require.NotEmpty(t, secret)
		require.NotContains(t, logs, secret)
	}
}

func TestNewRefusesAConfigWithoutItsParts(t *testing.T) {
	t.Parallel()
	h, err := httpapi.New(httpapi.Config{})
	require.Nil(t, h)
	for _, part := range []string{"Events", "Payments", "Refunds", "Storage", "Stores"} {
		require.ErrorContains(t, err, "httpapi: Config."+part+" is required")
	}
}
