package events

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/keelpay/keelpay/storage"
)

type dispatcherMetrics struct {
	attempts *prometheus.CounterVec
	latency  *prometheus.HistogramVec
}

func newDispatcherMetrics(reg prometheus.Registerer, st storage.Storage, limits *storeLimits) (*dispatcherMetrics, error) {
	m := &dispatcherMetrics{
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "keelpay_webhook_attempts_total",
			Help: "Webhook delivery attempts by outcome (succeeded, timeout, connection_error, redirect, http_status, tls_error).",
		}, []string{"outcome"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "keelpay_webhook_attempt_duration_seconds",
			Help:    "Webhook delivery attempt latency by outcome.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"outcome"}),
	}
	throttled := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "keelpay_webhook_stores_throttled",
		Help: "Stores whose receiver failed or timed out recently, held to fewer attempts in flight than a new store (this process).",
	}, func() float64 { return float64(limits.throttled()) })
	return m, errors.Join(reg.Register(m.attempts), reg.Register(m.latency), reg.Register(throttled), reg.Register(&deliveryCollector{st: st}))
}

// deliveryCollector reports pending and failed deliveries from storage at
// scrape time, so the figure is the database's, whichever process asks.
type deliveryCollector struct {
	st storage.Storage
}

var deliveriesDesc = prometheus.NewDesc("keelpay_webhook_deliveries",
	"Webhook deliveries by status (pending, failed).", []string{"status"}, nil)

func (c *deliveryCollector) Describe(ch chan<- *prometheus.Desc) { ch <- deliveriesDesc }

func (c *deliveryCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	pending, failed, err := c.st.DeliveryCounts(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(deliveriesDesc, err)
		return
	}
	ch <- prometheus.MustNewConstMetric(deliveriesDesc, prometheus.GaugeValue, float64(pending), "pending")
	ch <- prometheus.MustNewConstMetric(deliveriesDesc, prometheus.GaugeValue, float64(failed), "failed")
}
