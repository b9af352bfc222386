package httpapi_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"runtime"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/provider/sandbox"
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
