package httpapi

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"runtime"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/internal/statuswriter"
	"github.com/keelpay/keelpay/internal/tracing"
)

type httpMetrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec

	// series holds the counter and histogram of each method, route and
	// code seen so far, so that a request finds its two series with one
	// lookup in a map that is never written, instead of hashing and
	// checking its three labels twice (WithLabelValues). A new series
	// copies the map under mu.
	mu     sync.Mutex
	series atomic.Pointer[map[seriesKey]*httpSeries]
}

type seriesKey struct {
	method, route string
	status        int
}

type httpSeries struct {
	requests prometheus.Counter
	duration prometheus.Observer
}

// observe counts a request and its time under its method, route and
// status code.
func (m *httpMetrics) observe(method, route string, status int, seconds float64) {
	k := seriesKey{method, route, status}
	s := (*m.series.Load())[k]
	if s == nil {
		s = m.newSeries(k)
	}
	s.requests.Inc()
	s.duration.Observe(seconds)
}

func (m *httpMetrics) newSeries(k seriesKey) *httpSeries {
	m.mu.Lock()
	defer m.mu.Unlock()
	old := *m.series.Load()
	if s := old[k]; s != nil {
		return s
	}
	code := strconv.Itoa(k.status)
	s := &httpSeries{
		requests: m.requests.WithLabelValues(k.method, k.route, code),
		duration: m.duration.WithLabelValues(k.method, k.route, code),
	}
	series := make(map[seriesKey]*httpSeries, len(old)+1)
	maps.Copy(series, old)
	series[k] = s
	m.series.Store(&series)
	return s
}

// routeUnmatched is the route label of a path that no route has (the 404
// not_found).
const routeUnmatched = "unmatched"

func newHTTPMetrics(reg prometheus.Registerer) *httpMetrics {
	labels := []string{"method", "route", "code"}
	m := &httpMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "keelpay_http_requests_total",
			Help: "HTTP requests by method, route (the path pattern, or unmatched) and status code.",
		}, labels),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "keelpay_http_request_duration_seconds",
			Help:    "HTTP request latency by method, route (the path pattern, or unmatched) and status code.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, labels),
	}
	buildInfo := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "keelpay_build_info",
		Help: "A metric with a constant 1 value labelled by the keelpay version and the Go version it was built with.",
	}, []string{"version", "goversion"})
	buildInfo.WithLabelValues(keelpay.Version, runtime.Version()).Set(1)
	reg.MustRegister(m.requests, m.duration, buildInfo)
	m.series.Store(&map[seriesKey]*httpSeries{})
	return m
}

// methodLabel is the method as a metric label: the standard methods as
// they are, anything else "other", so that clients cannot grow the
// number of series.
func methodLabel(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return method
	}
	return "other"
}

// middleware gives every request an id (the Request-Id header, and in the
// context for the logs: see [keelpay.NewLogHandler]), turns a panic into
// 500 internal_error with the detail only in the log, counts and times the
// request by method, route and status code, and logs one line for it. It
// never logs bodies, query strings or headers.
func (a *api) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		// One allocation holds the request's state, its context and the
		// writer that remembers its status.
		st := &requestState{Context: r.Context(), id: keelpay.NewID(keelpay.PrefixRequest), route: routeUnmatched}
		st.sw.ResponseWriter = w
		sw := &st.sw
		ctx := keelpay.ContextWithRequestID(st, st.id)
		if a.tracer != nil {
			var span trace.Span
			ctx, span = a.startSpan(ctx, r)
			// Deferred first, so it runs last: after the recovery below
			// has written the status, even when it panics again.
			defer a.endSpan(span, r, sw, st)
		}
		r = r.WithContext(ctx)
		st.idHeader[0] = st.id
		w.Header()["Request-Id"] = st.idHeader[:]
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				a.log.ErrorContext(ctx, "panic", slog.String("panic", fmt.Sprint(p)), slog.String("stack", string(debug.Stack())))
				if sw.Status == 0 {
					a.writeError(sw, r, keelpay.NewError(keelpay.CodeInternalError, "Internal error."))
				}
			}
			if sw.Status == 0 { // nothing written: net/http sends 200
				sw.Status = http.StatusOK
			}
			method := methodLabel(r.Method)
			elapsed := time.Since(start).Seconds()
			a.metrics.observe(method, st.route, sw.Status, elapsed)
			var buf [5]slog.Attr
			attrs := append(buf[:0],
				slog.String("method", method),
				slog.String("route", st.route),
				slog.Int("status", sw.Status),
				slog.Float64("duration_seconds", elapsed))
			if st.storeID != "" {
				attrs = append(attrs, slog.String("store_id", st.storeID))
			}
			a.logRequest(ctx, attrs)
		}()
		next.ServeHTTP(sw, r)
	})
}

// logRequest logs a request's line as a.log.LogAttrs would from the
// middleware, but finds the line's source (for a handler that shows it)
// once: LogAttrs walks the stack for it at every line, which costs more
// than the rest of the call but the handler's formatting and write.
func (a *api) logRequest(ctx context.Context, attrs []slog.Attr) {
	if !a.log.Enabled(ctx, slog.LevelInfo) {
		return
	}
	pc := requestLogPC.Load()
	if pc == 0 {
		var pcs [1]uintptr
		runtime.Callers(2, pcs[:]) // Callers, logRequest: the middleware's call
		pc = pcs[0]
		requestLogPC.Store(pc)
	}
	r := slog.NewRecord(time.Now(), slog.LevelInfo, "request", pc)
	r.AddAttrs(attrs...)
	_ = a.log.Handler().Handle(ctx, r)
}

// requestLogPC is the source of the request lines, found by the first.
var requestLogPC atomic.Uintptr

// startSpan starts the server span of a request, under the caller's span
// when the global propagator finds one in the headers. Its name is the
// method until the route is known (endSpan).
func (a *api) startSpan(ctx context.Context, r *http.Request) (context.Context, trace.Span) {
	ctx = otel.GetTextMapPropagator().Extract(ctx, propagation.HeaderCarrier(r.Header))
	return a.tracer.Start(ctx, methodLabel(r.Method), trace.WithSpanKind(trace.SpanKindServer))
}

// endSpan names the span by its route and sets what the request turned
// out to be: route, status code, store and request id. Never the path's
// values, the query, a header or a body.
func (a *api) endSpan(span trace.Span, r *http.Request, sw *statuswriter.Writer, st *requestState) {
	if span.IsRecording() {
		status := sw.Status
		if status == 0 {
			status = http.StatusOK
		}
		method := methodLabel(r.Method)
		attrs := make([]attribute.KeyValue, 0, 5)
		attrs = append(attrs,
			attribute.String("http.request.method", method),
			attribute.Int("http.response.status_code", status),
			attribute.String(tracing.AttrRequestID, st.id))
		if st.route != routeUnmatched {
			span.SetName(method + " " + st.route)
			attrs = append(attrs, attribute.String("http.route", st.route))
		}
		if st.storeID != "" {
			attrs = append(attrs, attribute.String(tracing.AttrStoreID, st.storeID))
		}
		span.SetAttributes(attrs...)
		if status >= 500 {
			span.SetStatus(codes.Error, http.StatusText(status))
		}
	}
	span.End()
}
