package httpapi

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/keelpay/keelpay"
)

type httpMetrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

func newHTTPMetrics(reg prometheus.Registerer) *httpMetrics {
	m := &httpMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "keelpay_http_requests_total",
			Help: "HTTP requests by route and status.",
		}, []string{"route", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "keelpay_http_request_duration_seconds",
			Help:    "HTTP request latency by route and status.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"route", "status"}),
	}
	reg.MustRegister(m.requests, m.duration)
	return m
}

// statusWriter remembers the status written.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// middleware gives every request an id (the Request-Id header and the
// logs), turns a panic into 500 internal_error with the detail only in the
// log, counts and times the request by route, and logs one line for it.
// It never logs bodies, query strings or headers.
func (a *api) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		st := &requestState{id: keelpay.NewID(keelpay.PrefixRequest), route: "unknown"}
		r = r.WithContext(context.WithValue(r.Context(), stateKey{}, st))
		w.Header().Set("Request-Id", st.id)
		sw := &statusWriter{ResponseWriter: w}
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				a.log.ErrorContext(r.Context(), "panic", slog.String("request_id", st.id),
					slog.String("panic", fmt.Sprint(p)), slog.String("stack", string(debug.Stack())))
				if sw.status == 0 {
					a.writeError(sw, r, keelpay.NewError(http.StatusInternalServerError, keelpay.CodeInternalError, "Internal error."))
				}
			}
			status := strconv.Itoa(sw.status)
			elapsed := time.Since(start)
			a.metrics.requests.WithLabelValues(st.route, status).Inc()
			a.metrics.duration.WithLabelValues(st.route, status).Observe(elapsed.Seconds())
			attrs := []slog.Attr{
				slog.String("request_id", st.id),
				slog.String("route", st.route),
				slog.Int("status", sw.status),
				slog.Duration("duration", elapsed),
			}
			if st.storeID != "" {
				attrs = append(attrs, slog.String("store_id", st.storeID))
			}
			a.log.LogAttrs(r.Context(), slog.LevelInfo, "request", attrs...)
		}()
		next.ServeHTTP(sw, r)
	})
}
