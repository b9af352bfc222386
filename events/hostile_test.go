package events_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/events"
	"github.com/keelpay/keelpay/keelpaytest"
	"github.com/keelpay/keelpay/storage"
	"github.com/keelpay/keelpay/storage/storagetest"
	"github.com/keelpay/keelpay/webhooks"
)

// hits records when each event reached a receiver, and lets a test wait
// for a condition on them.
type hits struct {
	mu      sync.Mutex
	changed *sync.Cond
	got     map[string][]time.Time
}

func newHits() *hits {
	h := &hits{got: map[string][]time.Time{}}
	h.changed = sync.NewCond(&h.mu)
	return h
}

func (h *hits) add(r *http.Request) {
	h.mu.Lock()
	defer h.mu.Unlock()
	id := r.Header.Get(webhooks.HeaderID)
	h.got[id] = append(h.got[id], time.Now())
	h.changed.Broadcast()
}

// count returns how many times each of ids arrived.
func (h *hits) count(ids []string) []int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := make([]int, len(ids))
	for i, id := range ids {
		n[i] = len(h.got[id])
	}
	return n
}

// await waits until every id of ids arrived n times, or fails the test
// after limit.
func (h *hits) await(t *testing.T, what string, ids []string, n int, limit time.Duration) {
	t.Helper()
	expired := false
	timer := time.AfterFunc(limit, func() {
		h.mu.Lock()
		expired = true
		h.changed.Broadcast()
		h.mu.Unlock()
	})
	defer timer.Stop()
	h.mu.Lock()
	defer h.mu.Unlock()
	for {
		done := 0
		for _, id := range ids {
			if len(h.got[id]) >= n {
				done++
			}
		}
		if done == len(ids) {
			return
		}
		if expired {
			t.Fatalf("waited %v for %s: %d of %d arrived %d times", limit, what, done, len(ids), n)
		}
		h.changed.Wait()
	}
}

// hostileServer serves handle, counting each request in h. release, once
// closed, ends what a handler holds.
func hostileServer(t *testing.T, db storage.Storage, h *hits, handle http.HandlerFunc) *keelpay.Store {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.add(r)
		handle(w, r)
	}))
	t.Cleanup(srv.Close)
	store := storagetest.NewStoreRecord(time.Now().UTC())
	store.WebhookURL = srv.URL + "/webhooks"
	require.NoError(t, db.StoreInsert(context.Background(), store))
	return store
}

func throttledStores(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() == "keelpay_webhook_stores_throttled" {
			return f.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatal("no keelpay_webhook_stores_throttled")
	return 0
}

// Four hostile receivers, each with a backlog, beside a healthy store E
// whose events keep arriving: a receiver that hangs until the attempt
// time-out, one that sends its headers a byte a second, one that answers
// 500, one that redirects; and one that answers 200 with an endless body
// (a success: only the start of a body is read). E's webhooks never wait
// behind theirs, the failing stores show in the throttled gauge, and every
// hostile delivery keeps the retry schedule: each attempted once while the
// clock stands, none again before its retry is due, each again once it is.
func TestDispatcherHostileReceiversLeaveAHealthyStoreAlone(t *testing.T) {
	t.Parallel()
	forEachStorage(t, testHostileReceivers)
}

func testHostileReceivers(t *testing.T, db storage.Storage) {
	ctx := context.Background()
	t0 := time.Now().UTC().Truncate(time.Second)
	clock := keelpaytest.NewClock(t0)

	release := make(chan struct{})
	released := sync.OnceFunc(func() { close(release) })
	type hostile struct {
		name    string
		backlog int
		handle  http.HandlerFunc
		fails   bool
		h       *hits
		storeID string
		ids     []string
	}
	stores := []*hostile{
		{name: "hang", backlog: 130, fails: true, handle: func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-release:
				w.WriteHeader(http.StatusInternalServerError)
			case <-r.Context().Done():
			}
		}},
		{name: "drip", backlog: 130, fails: true, handle: func(w http.ResponseWriter, r *http.Request) {
			conn, _, err := http.NewResponseController(w).Hijack()
			if err != nil {
				return
			}
			defer conn.Close()
			head := "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
			tick := time.NewTicker(time.Second)
			defer tick.Stop()
			for i := range len(head) {
				if _, err := conn.Write([]byte{head[i]}); err != nil {
					return
				}
				select {
				case <-tick.C:
				case <-release:
					_, _ = conn.Write([]byte(head[i+1:]))
					return
				}
			}
		}},
		{name: "500", backlog: 20, fails: true, handle: func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusInternalServerError)
		}},
		{name: "redirect", backlog: 20, fails: true, handle: func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "/elsewhere", http.StatusFound)
		}},
		{name: "endless body", backlog: 20, handle: func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusOK)
			chunk := make([]byte, 32<<10)
			for sent := 0; sent < 1<<30; sent += len(chunk) {
				if _, err := w.Write(chunk); err != nil {
					return
				}
			}
		}},
	}
	for _, s := range stores {
		s.h = newHits()
		store := hostileServer(t, db, s.h, s.handle)
		s.storeID = store.ID
		s.ids = insertEvents(t, db, store, s.backlog, t0)
	}
	t.Cleanup(released) // before the servers close, should the test fail
	healthy := newHits()
	storeE := hostileServer(t, db, healthy, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })

	const timeout = 4 * time.Second
	reg := prometheus.NewRegistry()
	d := mustNew(events.NewDispatcher(events.DispatcherConfig{AllowInsecureWebhooks: true, Logger: quiet, Storage: db, Clock: clock,
		AttemptTimeout: timeout, Metrics: reg}))

	stop := runDispatcher(t, d)

	// E's events arrive one every 50 ms for 5 s: past the first time-outs
	// of the hanging receivers' attempts. Each must arrive well within
	// half the time-out: on the old per-store cap alone, the hanging
	// receivers held every slot until their attempts timed out.
	var eIDs []string
	sent := map[string]time.Time{}
	tick := time.NewTicker(50 * time.Millisecond)
	for range 100 {
		<-tick.C
		e := storagetest.NewEventRecord(storeE.ID, keelpay.EventWebhookTest, clock.Now())
		sent[e.ID] = time.Now()
		require.NoError(t, db.EventInsert(ctx, e))
		d.Notify()
		eIDs = append(eIDs, e.ID)
	}
	tick.Stop()
	healthy.await(t, "E's events", eIDs, 1, time.Minute)
	latencies := make([]time.Duration, len(eIDs))
	healthy.mu.Lock()
	for i, id := range eIDs {
		latencies[i] = healthy.got[id][0].Sub(sent[id])
	}
	healthy.mu.Unlock()
	sorted := slices.Clone(latencies)
	slices.Sort(sorted)
	t.Logf("E's event to webhook beside four hostile receivers: p50 %v, p99 %v, max %v (%d events)",
		sorted[len(sorted)/2], sorted[len(sorted)*99/100], sorted[len(sorted)-1], len(sorted))
	for i, l := range latencies {
		require.Less(t, l, timeout/2, "E's event %d waited behind the hostile receivers", i)
	}

	// The hanging receivers answer 500 from now on: every hostile
	// delivery gets its first attempt while the clock stands at t0, and
	// none a second.
	released()
	for _, s := range stores {
		s.h.await(t, s.name+"'s first attempts", s.ids, 1, time.Minute)
	}
	stop()
	// Every result is in: the four failing stores are throttled, the one
	// whose receiver answers 200 is not.
	require.Equal(t, 4.0, throttledStores(t, reg))
	check := func(attempts int, last time.Time) {
		t.Helper()
		for _, s := range stores {
			for i, n := range s.h.count(s.ids) {
				want := attempts
				if !s.fails {
					want = 1 // succeeded: never again
				}
				require.Equal(t, want, n, "%s: requests for event %d", s.name, i)
			}
			for i, id := range s.ids {
				e, err := db.EventGet(ctx, s.storeID, id)
				require.NoError(t, err)
				want := keelpay.Delivery{Status: keelpay.DeliverySucceeded, Attempts: 1, LastAttemptAt: t0, LastStatusCode: http.StatusOK}
				if s.fails {
					want = keelpay.Delivery{Status: keelpay.DeliveryPending, Attempts: attempts, LastAttemptAt: last,
						NextAttemptAt: last.Add(events.RetryDelay(attempts))}
				}
				got := e.Delivery
				if s.fails { // a time-out, a status, or a redirect
					got.LastStatusCode, got.LastFailure = 0, ""
				}
				require.Equal(t, want, got, "%s: delivery of event %d", s.name, i)
			}
		}
	}
	check(1, t0)

	// A second before the retries are due, E's next event goes out and no
	// hostile delivery does: it would have been in the same claim.
	clock.Set(t0.Add(events.RetryDelay(1) - time.Second))
	stop = runDispatcher(t, d)
	e := storagetest.NewEventRecord(storeE.ID, keelpay.EventWebhookTest, clock.Now())
	require.NoError(t, db.EventInsert(ctx, e))
	d.Notify()
	healthy.await(t, "E's event before the retries", []string{e.ID}, 1, time.Minute)
	stop()
	check(1, t0)

	// At their due time each failed delivery is attempted again, once, and
	// scheduled by the next delay.
	retry := t0.Add(events.RetryDelay(1))
	clock.Set(retry)
	stop = runDispatcher(t, d)
	for _, s := range stores {
		if s.fails {
			s.h.await(t, s.name+"'s second attempts", s.ids, 2, time.Minute)
		}
	}
	stop()
	check(2, retry)
}
