package httpapi_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/events"
	"github.com/keelpay/keelpay/storage"
)

// failAll runs the dispatcher through all seven attempts of what is due,
// so every delivery pending now ends failed.
func (b *bundle) failAll(t *testing.T, d *events.Dispatcher) {
	t.Helper()
	for i := range events.MaxAttempts {
		b.runDispatcher(t, d)
		if i < events.MaxAttempts-1 {
			b.clock.Advance(events.RetryDelay(i + 1))
		}
	}
}

func TestBulkRedeliverReplaysWhatFailed(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.hookStore(t, "app_shop")
	d := b.dispatcher
	s.rec.SetStatus(http.StatusServiceUnavailable)
	start := b.clock.Now()
	var ids []string
	for range 3 {
		ids = append(ids, b.insertEvent(t, s.id).ID)
		b.clock.Advance(time.Minute)
	}
	other := b.hookStore(t, "app_other")
	other.rec.SetStatus(http.StatusServiceUnavailable)
	otherEvent := b.insertEvent(t, other.id)
	b.failAll(t, d)
	state := func(id string) string {
		t.Helper()
		return delivery(t, b.do(t, req{method: "GET", path: "/v1/events/" + id, key: s.key}))["status"].(string)
	}
	for _, id := range ids {
		require.Equal(t, "failed", state(id))
	}

	// A window that holds only the middle event.
	r := b.do(t, req{method: "POST", path: "/v1/events/redeliver", key: s.key, body: map[string]any{
		"type":           "webhook.test",
		"created_after":  start.Format(time.RFC3339),
		"created_before": start.Add(2 * time.Minute).Format(time.RFC3339),
	}})
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
	require.Equal(t, map[string]any{"object": "redelivery", "queued": 1.0, "has_more": false, "next_starting_after": nil}, r.Body)
	require.Equal(t, []string{"failed", "pending", "failed"}, []string{state(ids[0]), state(ids[1]), state(ids[2])})

	// The receiver is back: replay every failed delivery in one call,
	// under an Idempotency-Key.
	s.rec.SetStatus(http.StatusNoContent)
	key := map[string]string{"Idempotency-Key": "replay-after-outage"}
	r = b.do(t, req{method: "POST", path: "/v1/events/redeliver", key: s.key, header: key})
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
	require.Equal(t, 2.0, r.Body["queued"], "the default status is failed")
	b.runDispatcher(t, d)
	for _, id := range ids {
		require.Equal(t, "succeeded", state(id))
	}
	again := b.do(t, req{method: "POST", path: "/v1/events/redeliver", key: s.key, header: key})
	require.Equal(t, r.Raw, again.Raw)
	require.Equal(t, "true", again.Header.Get("Idempotent-Replayed"))
	require.Zero(t, b.runDispatcher(t, d), "the replayed answer queued nothing")
	require.Equal(t, "failed", delivery(t, b.do(t, req{method: "GET", path: "/v1/events/" + otherEvent.ID, key: other.key}))["status"],
		"another store's events are untouched")

	// Succeeded ones on request.
	r = b.do(t, req{method: "POST", path: "/v1/events/redeliver", key: s.key, body: `{"status":"succeeded"}`})
	require.Equal(t, 3.0, r.Body["queued"], "%s", r.Raw)

	// The path is not an event id; the single-event redelivery still works.
	r = b.do(t, req{method: "GET", path: "/v1/events/redeliver", key: s.key})
	requireError(t, r, http.StatusMethodNotAllowed, "method_not_allowed")
	require.Equal(t, "POST", r.Header.Get("Allow"))
	requireError(t, b.do(t, req{method: "DELETE", path: "/v1/events/redeliver", key: s.key}), http.StatusMethodNotAllowed, "method_not_allowed")
	require.Equal(t, http.StatusOK, b.do(t, req{method: "POST", path: "/v1/events/" + ids[0] + "/redeliver", key: s.key}).Status)
	requireError(t, b.do(t, req{method: "GET", path: "/v1/events/" + ids[0] + "/redeliver", key: s.key}), http.StatusMethodNotAllowed, "method_not_allowed")
	requireError(t, b.do(t, req{method: "POST", path: "/v1/events/redeliver"}), http.StatusUnauthorized, "invalid_api_key")
}

func TestBulkRedeliverIsBoundedWithACursor(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.hookStore(t, "app_shop")
	ctx := context.Background()
	var last string
	require.NoError(t, b.db.WithTx(ctx, func(ctx context.Context, tx storage.Executor) error {
		for i := range events.RedeliverMax + 1 {
			e, err := events.NewEvent(s.id, keelpay.EventWebhookTest, map[string]string{"message": "test"}, b.clock.Now())
			if err != nil {
				return err
			}
			if err := tx.EventInsert(ctx, e); err != nil {
				return err
			}
			if i == events.RedeliverMax-1 {
				last = e.ID
			}
		}
		return nil
	}))
	r := b.do(t, req{method: "POST", path: "/v1/events/redeliver", key: s.key, body: `{"status":"pending"}`})
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
	require.Equal(t, float64(events.RedeliverMax), r.Body["queued"])
	require.Equal(t, true, r.Body["has_more"])
	require.Equal(t, last, r.Body["next_starting_after"])
	r = b.do(t, req{method: "POST", path: "/v1/events/redeliver", key: s.key, body: map[string]any{"status": "pending", "starting_after": last}})
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
	require.Equal(t, 1.0, r.Body["queued"])
	require.Equal(t, false, r.Body["has_more"])
}

func TestBulkRedeliverBadRequests(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.hookStore(t, "app_shop")
	other := b.hookStore(t, "app_other")
	otherID := b.insertEvent(t, other.id).ID
	for _, tc := range []struct{ body, field, code string }{
		{`{"status":"nope"}`, "status", "invalid_status"},
		{`{"status":""}`, "status", "invalid_status"},
		{`{"status":5}`, "status", "invalid_status"},
		{`{"type":"nope"}`, "type", "invalid_type"},
		{`{"type":""}`, "type", "invalid_type"},
		{`{"created_after":"yesterday"}`, "created_after", "invalid_created_after"},
		{`{"created_after":""}`, "created_after", "invalid_created_after"},
		{`{"created_before":1700000000}`, "created_before", "invalid_created_before"},
		{`{"created_after":"2026-11-21T10:00:00Z","created_before":"2026-11-21T10:00:00Z"}`, "created_before", "invalid_created_before"},
		{`{"starting_after":"evt_nope"}`, "starting_after", "invalid_starting_after"},
		{`{"starting_after":"` + otherID + `"}`, "starting_after", "invalid_starting_after"},
		{`{"colour":"red"}`, "colour", "unknown_field"},
		{`{"status":"failed","status":"failed"}`, "status", "duplicate_field"},
	} {
		requireInvalid(t, b.do(t, req{method: "POST", path: "/v1/events/redeliver", key: s.key, body: tc.body}), tc.field, tc.code)
	}
	requireInvalid(t, b.do(t, req{method: "POST", path: "/v1/events/redeliver", key: s.key, body: `[]`}), "", "invalid_json")
}
