package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/events"
	"github.com/keelpay/keelpay/internal/eventshook"
	"github.com/keelpay/keelpay/keelpaytest"
	"github.com/keelpay/keelpay/keyring/keyringtest"
	"github.com/keelpay/keelpay/provider/sandbox"
	"github.com/keelpay/keelpay/storage/sqlite"
	"github.com/keelpay/keelpay/storage/storagetest"
)

// TestFulfilledOnceUnderDuplicatesAndReordering rehearses the receiver
// against keelpay's own dispatcher with sandbox faults on: every delivery is
// sent twice, and the payment_failed events of earlier attempts are held
// back until after the payment_intent.succeeded events. Each order is
// still fulfilled exactly once and no event is processed twice. A receiver
// that passes this is right in production, where the same things happen
// by accident.
func TestFulfilledOnceUnderDuplicatesAndReordering(t *testing.T) {
	t.Parallel()
	tr := startReceiver(t, dbPath(t))
	// Record the requests the receiver gets, to check what was sent twice.
	var mu sync.Mutex
	seen := map[string][]string{} // webhook-id -> bodies
	tr.url = recordingProxy(t, tr.url, func(id, body string) {
		mu.Lock()
		defer mu.Unlock()
		seen[id] = append(seen[id], body)
	})

	ctx := t.Context()
	db, err := sqlite.Open(ctx, sqlite.Config{Keyring: keyringtest.Keyring(), Path: filepath.Join(t.TempDir(), "keelpay.db")})
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	clock := keelpaytest.NewClock(time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC))
	store := storagetest.NewStoreRecord(clock.Now())
	store.WebhookURL, store.WebhookSecret = tr.url, secret
	require.NoError(t, db.StoreInsert(ctx, store))
	faults := sandbox.NewWebhookFaults()
	d := mustNew(events.NewDispatcher(events.DispatcherConfig{AllowInsecureWebhooks: true, Clock: clock, Storage: db}))
	// The dispatcher's loop runs in manual mode: it claims only when the
	// test asks (eventshook.Deliver), after moving the clock.
	eventshook.SetInterceptor(d, faults)
	eventshook.Manual(d)
	runCtx, stop := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { d.Run(runCtx); close(stopped) }()
	t.Cleanup(func() { stop(); <-stopped })

	intent := func(id, status string) map[string]any {
		return map[string]any{"id": id, "object": "payment_intent", "status": status, "amount": 4200, "currency": "EUR", "reference": "order-" + id}
	}
	insert := func(typ keelpay.EventType, object any) string {
		t.Helper()
		e, err := events.NewEvent(store.ID, typ, object, clock.Now())
		require.NoError(t, err)
		require.NoError(t, db.EventInsert(ctx, e))
		clock.Advance(time.Second)
		return e.ID
	}
	intents := []string{"pi_1", "pi_2", "pi_3", "pi_4", "pi_5"}

	// First attempts at paying failed: those events are held back.
	require.NoError(t, faults.Set(store.ID, sandbox.Faults{Duplicate: 1, Reorder: 1, Seed: 1}))
	var ids []string
	for _, pi := range intents {
		ids = append(ids, insert(keelpay.EventPaymentIntentPaymentFailed, intent(pi, "requires_payment_method")))
	}
	n, err := eventshook.Deliver(ctx, d)
	require.NoError(t, err)
	require.Equal(t, 5, n, "claimed and held back")
	// Then the payments succeeded: delivered at once, twice each.
	require.NoError(t, faults.Set(store.ID, sandbox.Faults{Duplicate: 1, Seed: 1}))
	for _, pi := range intents {
		ids = append(ids, insert(keelpay.EventPaymentIntentSucceeded, intent(pi, "succeeded")))
	}
	_, err = eventshook.Deliver(ctx, d)
	require.NoError(t, err)
	tr.waitServed(t, 10)
	for _, pi := range intents {
		require.Equal(t, 1, tr.fulfilments(t, pi), "fulfilled before the older failure arrives")
	}
	// The held failures arrive last, twice each.
	clock.Advance(sandbox.ReorderHoldDefault)
	_, err = eventshook.Deliver(ctx, d)
	require.NoError(t, err)
	tr.waitServed(t, 10)

	for _, pi := range intents {
		require.Equal(t, 1, tr.fulfilments(t, pi), "%s fulfilled once", pi)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, id := range ids {
		require.Len(t, seen[id], 2, "event %s delivered twice", id)
		require.Equal(t, seen[id][0], seen[id][1], "with the same body bytes")
		require.Equal(t, 1, tr.processed(t, id), "event %s processed once", id)
	}
	for _, id := range ids {
		e, err := db.EventGet(ctx, store.ID, id)
		require.NoError(t, err)
		require.Equal(t, keelpay.DeliverySucceeded, e.Delivery.Status)
	}
}

// recordingProxy serves in front of target, reporting each request's
// webhook-id and body, and returns its URL.
func recordingProxy(t *testing.T, target string, report func(id, body string)) string {
	t.Helper()
	srv := newProxy(target, report)
	t.Cleanup(srv.Close)
	return srv.URL + "/webhooks"
}

func newProxy(target string, report func(id, body string)) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		report(r.Header.Get("webhook-id"), string(body))
		req, err := http.NewRequestWithContext(r.Context(), r.Method, target, bytes.NewReader(body))
		if err != nil {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		req.Header = r.Header.Clone()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	}))
}
