package httpapi_test

import (
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/httpapi"
	"github.com/keelpay/keelpay/keelpaytest"
	"github.com/keelpay/keelpay/keyring/keyringtest"
	"github.com/keelpay/keelpay/provider"
	"github.com/keelpay/keelpay/provider/sandbox"
	"github.com/keelpay/keelpay/storage/sqlite"
	"github.com/keelpay/keelpay/stores"
)

// TestAdmissionShedsBeforeAnyWork holds the one payments slot with a
// refund stuck at the provider: a create that finds the slot taken and
// the wait over is answered 429 rate_limited with Retry-After, having
// created nothing and taken no key; reads and health still answer; once
// the slot is free, the same request with the same key is its first run.
func TestAdmissionShedsBeforeAnyWork(t *testing.T) {
	t.Parallel()
	gate := &gatedRefund{entered: make(chan struct{}, 1), release: make(chan struct{})}
	b := setup(t, func(o *options) {
		o.wrap = func(p provider.Provider) provider.Provider { gate.Provider = p; return gate }
		o.admission = httpapi.AdmissionConfig{Payments: 1, Queue: 1, Wait: 50 * time.Millisecond, RetryAfter: 2 * time.Second}
	})
	release := sync.OnceFunc(func() { close(gate.release) })
	t.Cleanup(release) // also when the test fails while the refund waits
	s := b.shop(t, "app_shop")
	pi := b.paid(t, s, sandbox.CardVisa)

	refunded := make(chan *response, 1)
	go func() {
		refunded <- b.do(t, keyed("POST", "/v1/refunds", s.sk, "refund-1", refundBody(pi)))
	}()
	<-gate.entered // the refund holds the one slot, at the provider

	create := keyed("POST", "/v1/payment_intents", s.sk, "create-1", intentBody(s, 1200))
	shed := b.do(t, create)
	requireError(t, shed, http.StatusTooManyRequests, string(keelpay.CodeRateLimited))
	require.Equal(t, "2", shed.Header.Get("Retry-After"))
	list := b.do(t, req{method: "GET", path: "/v1/payment_intents", key: s.sk})
	require.Equal(t, http.StatusOK, list.Status, "reads have slots of their own")
	require.Len(t, list.Body["data"], 1, "the shed create made no intent")
	require.Equal(t, http.StatusOK, b.do(t, req{method: "GET", path: "/healthz"}).Status)
	shedTotal := map[string]float64{}
	for _, m := range scrape(t, b)["keelpay_http_shed_total"].GetMetric() {
		shedTotal[m.GetLabel()[0].GetValue()] = m.GetCounter().GetValue()
	}
	require.Equal(t, map[string]float64{"payments": 1, "confirms": 0, "writes": 0, "reads": 0, "browser": 0}, shedTotal)

	release()
	require.Equal(t, http.StatusCreated, (<-refunded).Status)
	again := b.do(t, create)
	require.Equal(t, http.StatusCreated, again.Status, "%s", again.Raw)
	require.Empty(t, again.Header.Get("Idempotent-Replayed"), "the shed request took no key: this is its first run")
	requireReplay(t, again, b.do(t, create))
}

// TestAdmissionOffQueuesAsBefore: with the payments limit off, the same
// create waits for nothing and is answered.
func TestAdmissionOffQueuesAsBefore(t *testing.T) {
	t.Parallel()
	gate := &gatedRefund{entered: make(chan struct{}, 1), release: make(chan struct{})}
	b := setup(t, func(o *options) {
		o.wrap = func(p provider.Provider) provider.Provider { gate.Provider = p; return gate }
		o.admission = httpapi.AdmissionConfig{Payments: httpapi.AdmissionOff}
	})
	release := sync.OnceFunc(func() { close(gate.release) })
	t.Cleanup(release)
	s := b.shop(t, "app_shop")
	pi := b.paid(t, s, sandbox.CardVisa)
	refunded := make(chan *response, 1)
	go func() {
		refunded <- b.do(t, keyed("POST", "/v1/refunds", s.sk, "refund-1", refundBody(pi)))
	}()
	<-gate.entered
	require.Equal(t, http.StatusCreated, b.do(t, keyed("POST", "/v1/payment_intents", s.sk, "create-1", intentBody(s, 1200))).Status)
	release()
	require.Equal(t, http.StatusCreated, (<-refunded).Status)
}

// TestAdmissionConfigIsChecked: settings that cannot work are errors of
// New that name them.
func TestAdmissionConfigIsChecked(t *testing.T) {
	t.Parallel()
	db, err := sqlite.Open(t.Context(), sqlite.Config{Keyring: keyringtest.Keyring(), Path: t.TempDir() + "/keelpay.db"})
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	clock := keelpaytest.NewClock(time.Now())
	prov := sandbox.New(sandbox.Config{Clock: clock})
	st := mustNew(stores.New(stores.Config{Clock: clock, Provider: prov, Storage: db}))
	cfg := httpapi.Config{Clock: clock, Logger: discardLogger(), Storage: db, Stores: st,
		Admission: httpapi.AdmissionConfig{Queue: -1, Wait: -time.Second, RetryAfter: -time.Second}}
	_, err = httpapi.New(cfg)
	require.ErrorContains(t, err, "Config.Admission.Queue")
	require.ErrorContains(t, err, "Config.Admission.Wait")
	require.ErrorContains(t, err, "Config.Admission.RetryAfter")
}
