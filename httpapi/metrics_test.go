package httpapi_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/httpapi"
	"github.com/keelpay/keelpay/provider/sandbox"
	"github.com/keelpay/keelpay/stores"
)

// scrape reads GET /metrics with the Prometheus text parser.
func scrape(t *testing.T, b *bundle) map[string]*dto.MetricFamily {
	t.Helper()
	r := b.do(t, req{method: "GET", path: "/metrics"})
	require.Equal(t, http.StatusOK, r.Status)
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(bytes.NewReader(r.Raw))
	require.NoError(t, err, "GET /metrics is not in the Prometheus text format")
	return families
}

// counts returns the value of every series of a counter, keyed by its
// labels as method route code.
func counts(t *testing.T, f *dto.MetricFamily) map[string]float64 {
	t.Helper()
	require.NotNil(t, f)
	out := map[string]float64{}
	for _, m := range f.GetMetric() {
		l := map[string]string{}
		for _, p := range m.GetLabel() {
			l[p.GetName()] = p.GetValue()
		}
		require.Len(t, l, 3, "labels of %s: %v", f.GetName(), l)
		key := l["method"] + " " + l["route"] + " " + l["code"]
		if f.GetType() == dto.MetricType_HISTOGRAM {
			out[key] = float64(m.GetHistogram().GetSampleCount())
		} else {
			out[key] = m.GetCounter().GetValue()
		}
	}
	return out
}

// TestMetricsFollowPrometheusConventions checks the HTTP metrics as a
// Prometheus server reads them: method, route (the pattern) and code as
// separate labels, 405s with their
// method, unknown paths as route="unmatched", and keelpay_build_info.
func TestMetricsFollowPrometheusConventions(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.shop(t, "app_shop")                                                  // POST /v1/setup 201
	b.do(t, req{method: "GET", path: "/v1/payment_intents/pi_nope", key: s.sk}) // 404 of the route
	b.do(t, req{method: "GET", path: "/v1/payment_intents/pi_nope", key: s.sk})
	b.do(t, req{method: "DELETE", path: "/v1/payment_intents/pi_nope", key: s.sk}) // 405
	b.do(t, req{method: "GET", path: "/nope"})                                     // no route
	b.do(t, req{method: "BREW", path: "/nope"})                                    // no such method either

	families := scrape(t, b)
	want := map[string]float64{
		"POST /v1/setup 201":                  1,
		"GET /v1/payment_intents/{id} 404":    2,
		"DELETE /v1/payment_intents/{id} 405": 1,
		"GET unmatched 404":                   1,
		"other unmatched 404":                 1,
	}
	require.Equal(t, want, counts(t, families["keelpay_http_requests_total"]))
	require.Equal(t, dto.MetricType_HISTOGRAM, families["keelpay_http_request_duration_seconds"].GetType())
	require.Equal(t, want, counts(t, families["keelpay_http_request_duration_seconds"]))

	info := families["keelpay_build_info"]
	require.NotNil(t, info, "keelpay_build_info is missing")
	require.Equal(t, dto.MetricType_GAUGE, info.GetType())
	require.Len(t, info.GetMetric(), 1)
	labels := map[string]string{}
	for _, p := range info.GetMetric()[0].GetLabel() {
		labels[p.GetName()] = p.GetValue()
	}
	require.Equal(t, map[string]string{"version": keelpay.Version, "goversion": runtime.Version()}, labels)
	require.Equal(t, 1.0, info.GetMetric()[0].GetGauge().GetValue())
}

// TestEveryLogLineOfARequestCarriesItsRequestID: a warning written by the
// payments service while it serves a confirm names the request, as the
// request's own line does, and durations are seconds named so.
func TestEveryLogLineOfARequestCarriesItsRequestID(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.shop(t, "app_shop")
	intent := b.createIntent(t, s, intentBody(s, 1000))
	r := b.confirmNew(t, s, intent, sandbox.CardOutcomeUnknown, nil) // the provider times out: a warning
	require.Equal(t, http.StatusOK, r.Status)
	id := r.Header.Get("Request-Id")
	require.NotEmpty(t, id)

	var lines []map[string]any
	sc := bufio.NewScanner(strings.NewReader(b.logs.String()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var line map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &line))
		if line["request_id"] == id {
			lines = append(lines, line)
		}
	}
	var msgs []string
	for _, l := range lines {
		msgs = append(msgs, l["level"].(string)+" "+l["msg"].(string))
	}
	require.Contains(t, msgs, "WARN payment attempt stays open after a provider error")
	last := lines[len(lines)-1]
	require.Equal(t, "request", last["msg"])
	require.Equal(t, "POST", last["method"])
	require.Equal(t, "/v1/payment_intents/{id}/confirm", last["route"])
	require.IsType(t, float64(0), last["duration_seconds"])
	require.NotContains(t, last, "duration")
}

// TestTheLineAndSeriesOfARead: a read of an intent is logged with its
// fields in their order, the line's source the middleware (for a handler
// that shows sources), the request id of its Request-Id header, and
// counted in its series, read after read.
func TestTheLineAndSeriesOfARead(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.shop(t, "app_shop")
	id := b.createIntent(t, s, intentBody(s, 1000)).str("id")

	var logs syncBuffer
	logger := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{AddSource: true}))
	reg := prometheus.NewRegistry()
	st := mustNew(stores.New(stores.Config{AllowInsecureWebhooks: true, Clock: b.clock, Provider: b.sandbox, Storage: b.db}))
	srv := httptest.NewServer(newAPI(t, httpapi.Config{Clock: b.clock, Logger: logger, Metrics: reg, Storage: b.db, Stores: st}, b.sandbox))
	t.Cleanup(srv.Close)
	other := *b
	other.srv = srv

	var ids []string
	for range 3 {
		r := other.do(t, req{method: "GET", path: "/v1/payment_intents/" + id, key: s.sk})
		require.Equal(t, http.StatusOK, r.Status)
		require.Equal(t, "application/json", r.Header.Get("Content-Type"))
		require.Equal(t, strconv.Itoa(len(r.Raw)), r.Header.Get("Content-Length"))
		ids = append(ids, r.Header.Get("Request-Id"))
	}
	other.do(t, req{method: "GET", path: "/v1/payment_intents/pi_nope", key: s.sk})

	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	require.Len(t, lines, 4)
	for i, line := range lines[:3] {
		// The keys in the order they are written.
		var keys []string
		dec := json.NewDecoder(strings.NewReader(line))
		_, err := dec.Token()
		require.NoError(t, err)
		for dec.More() {
			k, err := dec.Token()
			require.NoError(t, err)
			keys = append(keys, k.(string))
			var skip json.RawMessage
			require.NoError(t, dec.Decode(&skip))
		}
		require.Equal(t, []string{"time", "level", "source", "msg", "method", "route", "status", "duration_seconds", "store_id", "request_id"}, keys)
		var l map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &l))
		require.Equal(t, "request", l["msg"])
		require.Equal(t, "GET", l["method"])
		require.Equal(t, "/v1/payment_intents/{id}", l["route"])
		require.Equal(t, 200.0, l["status"])
		require.Equal(t, s.id, l["store_id"])
		require.Equal(t, ids[i], l["request_id"])
		require.True(t, strings.HasSuffix(l["source"].(map[string]any)["file"].(string), "httpapi/middleware.go"), "source %v", l["source"])
	}

	families, err := reg.Gather()
	require.NoError(t, err)
	want := map[string]float64{"GET /v1/payment_intents/{id} 200": 3, "GET /v1/payment_intents/{id} 404": 1}
	for _, f := range families {
		switch f.GetName() {
		case "keelpay_http_requests_total", "keelpay_http_request_duration_seconds":
			require.Equal(t, want, counts(t, f), f.GetName())
		}
	}
}
