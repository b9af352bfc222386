package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/stretchr/testify/require"

	"go.opentelemetry.io/otel/trace"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/events"
	"github.com/keelpay/keelpay/httpapi"
	"github.com/keelpay/keelpay/internal/eventshook"
	"github.com/keelpay/keelpay/keelpaytest"
	"github.com/keelpay/keelpay/keyring/keyringtest"
	"github.com/keelpay/keelpay/payments"
	"github.com/keelpay/keelpay/provider"
	"github.com/keelpay/keelpay/provider/sandbox"
	"github.com/keelpay/keelpay/refunds"
	"github.com/keelpay/keelpay/storage"
	"github.com/keelpay/keelpay/storage/sqlite"
	"github.com/keelpay/keelpay/stores"
)

// bundle is one keelpay server on a fresh SQLite file, the sandbox provider
// and a manual clock, served by a real HTTP server.
type bundle struct {
	srv     *httptest.Server
	clock   *keelpaytest.Clock
	sandbox *sandbox.Sandbox
	db      storage.Storage
	// path is the SQLite file, when the bundle made one.
	path string
	logs *syncBuffer
	// dispatcher runs only when a test drives it (runDispatcher), after
	// moving the clock.
	dispatcher *events.Dispatcher
	// faults are the dispatcher's sandbox delivery faults.
	faults *sandbox.WebhookFaults
	// refunds' reconciler is driven by the tests too.
	refunds *refunds.Service
}

type options struct {
	// wrap, when set, stands between the service and the sandbox.
	wrap func(provider.Provider) provider.Provider
	// wrapStorage, when set, stands between httpapi (not the services)
	// and the database.
	wrapStorage func(storage.Storage) storage.Storage
	// wrapHandler, when set, stands between the HTTP server and httpapi.
	wrapHandler func(http.Handler) http.Handler
	// wrapPayments, when set, stands between the payments service and
	// the database.
	wrapPayments func(storage.Storage) storage.Storage
	// db, when set, is the database instead of a fresh SQLite file.
	db storage.Storage
	// clientAddr, when set, is httpapi.Config.ClientAddr.
	clientAddr func(*http.Request) string
	// tracerProvider, when set, is httpapi.Config.TracerProvider.
	tracerProvider trace.TracerProvider
	// answerTimeout, when set, is the payments' and refunds'
	// AnswerTimeout; writeTimeout the HTTP server's WriteTimeout.
	answerTimeout, writeTimeout time.Duration
	// admission is httpapi.Config.Admission.
	admission httpapi.AdmissionConfig
}

func setup(t *testing.T, opts ...func(*options)) *bundle {
	t.Helper()
	var o options
	for _, f := range opts {
		f(&o)
	}
	ctx := context.Background()
	db, path := o.db, ""
	if db == nil {
		path = filepath.Join(t.TempDir(), "keelpay.db")
		sdb, err := sqlite.Open(ctx, sqlite.Config{Keyring: keyringtest.Keyring(), Path: path})
		require.NoError(t, err)
		t.Cleanup(func() { sdb.Close() })
		db = sdb
	}
	clock := keelpaytest.NewClock(time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC))
	sb := sandbox.New(sandbox.Config{Clock: clock})
	var p provider.Provider = sb
	if o.wrap != nil {
		p = o.wrap(sb)
	}
	logs := &syncBuffer{}
	// As docs/operating.md asks: one logger for every service, built on
	// keelpay.NewLogHandler, so that their lines carry the request id.
	logger := slog.New(keelpay.NewLogHandler(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	st := mustNew(stores.New(stores.Config{AllowInsecureWebhooks: true, Clock: clock, Provider: p, Storage: db}))
	metrics := prometheus.NewRegistry()
	faults := sandbox.NewWebhookFaults()
	dispatcher := mustNew(events.NewDispatcher(events.DispatcherConfig{AllowInsecureWebhooks: true, Clock: clock, Logger: logger, Metrics: metrics, Storage: db}))
	eventshook.SetInterceptor(dispatcher, faults)
	ev := mustNew(events.New(events.Config{Clock: clock, Dispatcher: dispatcher, Storage: db}))
	// Each committed event wakes the dispatcher: its webhook leaves at once.
	wake := func(context.Context, *keelpay.Event) { dispatcher.Notify() }
	var payDB storage.Storage = db
	if o.wrapPayments != nil {
		payDB = o.wrapPayments(db)
	}
	pay := mustNew(payments.New(payments.Config{AnswerTimeout: o.answerTimeout, Clock: clock, Committed: wake, Logger: logger, Metrics: metrics, Provider: p, Storage: payDB}))
	// The sandbox's notifications go to this service, through the
	// wrapper when it passes them on.
	if n, ok := p.(provider.Notifier); ok {
		n.SetNotifier(pay.Notify)
	} else {
		sb.SetNotifier(pay.Notify)
	}
	ref := mustNew(refunds.New(refunds.Config{AnswerTimeout: o.answerTimeout, Clock: clock, Committed: wake, Logger: logger, Metrics: metrics, Provider: p, Storage: db}))
	if n, ok := p.(provider.RefundNotifier); ok {
		n.SetRefundNotifier(ref.NotifyRefund)
	} else {
		sb.SetRefundNotifier(ref.NotifyRefund)
	}
	var apiDB storage.Storage = db
	if o.wrapStorage != nil {
		apiDB = o.wrapStorage(db)
	}
	h, err := httpapi.New(httpapi.Config{Admission: o.admission, ClientAddr: o.clientAddr, Clock: clock, Events: ev, Logger: logger, Metrics: metrics, Payments: pay, Refunds: ref, Storage: apiDB, Stores: st,
		TracerProvider: o.tracerProvider})
	require.NoError(t, err)
	if o.wrapHandler != nil {
		h = o.wrapHandler(h)
	}
	mux := http.NewServeMux()
	mux.Handle("/sandbox/3ds/", sb.ChallengeHandler())
	mux.Handle("/sandbox/elements/", sb.ElementHandler())
	// Health and metrics are the embedder's to mount; the reference
	// server mounts them here too.
	mux.Handle("/healthz", httpapi.Health(httpapi.HealthConfig{Storage: apiDB, Logger: logger}))
	mux.Handle("GET /metrics", promhttp.HandlerFor(metrics, promhttp.HandlerOpts{}))
	mux.Handle("/", h)
	srv := httptest.NewUnstartedServer(mux)
	srv.Config.WriteTimeout = o.writeTimeout
	srv.Start()
	sb.SetBaseURL(srv.URL)
	t.Cleanup(srv.Close)
	return &bundle{srv: srv, clock: clock, sandbox: sb, db: db, path: path, logs: logs, dispatcher: dispatcher, faults: faults, refunds: ref}
}

// response is a decoded API response.
type response struct {
	Status int
	Header http.Header
	Raw    []byte
	Body   map[string]any
}

// errCode returns error.code of an error response.
func (r *response) errCode() string {
	e, _ := r.Body["error"].(map[string]any)
	s, _ := e["code"].(string)
	return s
}

func (r *response) details() map[string]any {
	e, _ := r.Body["error"].(map[string]any)
	d, _ := e["details"].(map[string]any)
	return d
}

func (r *response) str(key string) string {
	s, _ := r.Body[key].(string)
	return s
}

// req is one request: a JSON body (string or value), a key, extra headers.
type req struct {
	method string
	path   string
	key    string
	body   any
	header map[string]string
}

func (b *bundle) do(t *testing.T, rq req) *response {
	t.Helper()
	var body io.Reader
	switch v := rq.body.(type) {
	case nil:
	case string:
		body = strings.NewReader(v)
	case []byte:
		body = bytes.NewReader(v)
	default:
		data, err := json.Marshal(v)
		require.NoError(t, err)
		body = bytes.NewReader(data)
	}
	r, err := http.NewRequest(rq.method, b.srv.URL+rq.path, body)
	require.NoError(t, err)
	if body != nil {
		r.Header.Set("Content-Type", "application/json")
	}
	if rq.key != "" {
		r.Header.Set("Authorization", "Bearer "+rq.key)
	}
	for k, v := range rq.header {
		if v == "" {
			r.Header.Del(k)
		} else {
			r.Header.Set(k, v)
		}
	}
	resp, err := b.srv.Client().Do(r)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	out := &response{Status: resp.StatusCode, Header: resp.Header, Raw: raw}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		require.NoError(t, json.Unmarshal(raw, &out.Body), "body %s", raw)
	}
	if rq.path != "/healthz" && rq.path != "/metrics" { // mounted beside the API
		require.NotEmpty(t, resp.Header.Get("Request-Id"), "every response of the API has a Request-Id")
	}
	return out
}

// requireError asserts an error response's status and code.
func requireError(t *testing.T, r *response, status int, code string) {
	t.Helper()
	require.Equal(t, status, r.Status, "body: %s", r.Raw)
	require.Equal(t, code, r.errCode(), "body: %s", r.Raw)
	require.Equal(t, "application/json", r.Header.Get("Content-Type"))
	e := r.Body["error"].(map[string]any)
	require.NotEmpty(t, e["message"])
}

// requireInvalid asserts a 400 invalid_request with details.field and
// details.code.
func requireInvalid(t *testing.T, r *response, field, code string) {
	t.Helper()
	requireError(t, r, http.StatusBadRequest, "invalid_request")
	d := r.details()
	require.Equal(t, code, d["code"], "details.code; body %s", r.Raw)
	if field != "" {
		require.Equal(t, field, d["field"], "details.field; body %s", r.Raw)
	} else {
		require.NotContains(t, d, "field")
	}
}

// setupStore sets a sandbox store up and returns the response.
func (b *bundle) setupStore(t *testing.T, clientID string) *response {
	t.Helper()
	r := b.do(t, req{method: "POST", path: "/v1/setup", body: setupBody(clientID, "https://store.example/hooks")})
	require.Equal(t, http.StatusCreated, r.Status, "body: %s", r.Raw)
	return r
}

func setupBody(clientID, webhookURL string) map[string]any {
	return map[string]any{
		"client_id":     clientID,
		"client_secret": "secret_" + strings.TrimPrefix(clientID, "app_"),
		"webhook_url":   webhookURL,
	}
}

// syncBuffer is a bytes.Buffer safe for the server's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// newAPI returns the API over db and prov with cfg's parts, and real
// services for the parts cfg leaves out.
func newAPI(t testing.TB, cfg httpapi.Config, prov provider.Provider) http.Handler {
	t.Helper()
	if cfg.Events == nil {
		d := mustNew(events.NewDispatcher(events.DispatcherConfig{AllowInsecureWebhooks: true, Clock: cfg.Clock, Storage: cfg.Storage}))
		cfg.Events = mustNew(events.New(events.Config{Clock: cfg.Clock, Dispatcher: d, Storage: cfg.Storage}))
	}
	if cfg.Payments == nil {
		cfg.Payments = mustNew(payments.New(payments.Config{Clock: cfg.Clock, Logger: cfg.Logger, Provider: prov, Storage: cfg.Storage}))
	}
	if cfg.Refunds == nil {
		cfg.Refunds = mustNew(refunds.New(refunds.Config{Clock: cfg.Clock, Logger: cfg.Logger, Provider: prov, Storage: cfg.Storage}))
	}
	h, err := httpapi.New(cfg)
	require.NoError(t, err)
	return h
}
