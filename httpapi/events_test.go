package httpapi_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/events"
	"github.com/keelpay/keelpay/internal/eventshook"
	"github.com/keelpay/keelpay/webhooks"
	"github.com/keelpay/keelpay/webhooks/webhookstest"
)

// hookStore is a store whose webhook_url is a recorder verifying with the
// store's secret.
type hookStore struct {
	id, key, secret string
	rec             *webhookstest.Recorder
}

func (b *bundle) hookStore(t *testing.T, clientID string) *hookStore {
	t.Helper()
	rec := webhookstest.NewRecorder(t, "")
	r := b.do(t, req{method: "POST", path: "/v1/setup", body: setupBody(clientID, rec.URL()+"/hooks")})
	require.Equal(t, http.StatusCreated, r.Status, "%s", r.Raw)
	require.NoError(t, rec.SetSecrets(r.str("webhook_secret")))
	return &hookStore{id: r.str("id"), key: r.str("secret_key"), secret: r.str("webhook_secret"), rec: rec}
}

// insertEvent writes a due event of the store straight into the outbox, as
// a state change does.
func (b *bundle) insertEvent(t *testing.T, storeID string) *keelpay.Event {
	t.Helper()
	e, err := events.NewEvent(storeID, keelpay.EventWebhookTest, map[string]string{"message": "test"}, b.clock.Now())
	require.NoError(t, err)
	require.NoError(t, b.db.EventInsert(context.Background(), e))
	return e
}

// driven holds the dispatchers that runDispatcher started.
var driven sync.Map // *events.Dispatcher -> true

// runDispatcher has d claim every delivery due now, attempt them and
// record the results, and returns how many attempts it made. The first
// call starts d's loop (Run) in manual mode, where only these calls make
// it claim, until the test ends.
func (b *bundle) runDispatcher(t *testing.T, d *events.Dispatcher) int {
	t.Helper()
	if _, started := driven.LoadOrStore(d, true); !started {
		eventshook.Manual(d)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { d.Run(ctx); close(done) }()
		t.Cleanup(func() { cancel(); <-done; driven.Delete(d) })
	}
	n, err := eventshook.Deliver(t.Context(), d)
	require.NoError(t, err)
	return n
}

func delivery(t *testing.T, r *response) map[string]any {
	t.Helper()
	d, ok := r.Body["delivery"].(map[string]any)
	require.True(t, ok, "no delivery in %s", r.Raw)
	return d
}

func TestWebhookTestIsDeliveredSignedAndReadable(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.hookStore(t, "app_shop")

	r := b.do(t, req{method: "POST", path: "/v1/webhooks/test", key: s.key})
	require.Equal(t, http.StatusAccepted, r.Status, "%s", r.Raw)
	id := r.str("id")
	require.True(t, keelpay.ValidID("evt_", id))
	require.Equal(t, "webhook.test", r.str("type"))
	require.Equal(t, map[string]any{"object": map[string]any{"message": "test"}}, r.Body["data"])
	_, err := time.Parse(time.RFC3339, r.str("created_at"))
	require.NoError(t, err)
	d := delivery(t, r)
	require.Equal(t, "succeeded", d["status"])
	require.EqualValues(t, 1, d["attempts"])
	require.EqualValues(t, 204, d["last_status_code"])
	require.Nil(t, d["last_failure"])
	require.Nil(t, d["next_attempt_at"])

	got := s.rec.Deliveries()
	require.Len(t, got, 1, "the first attempt finished before the 202")
	del := got[0]
	require.NoError(t, del.Err, "verified by package webhooks")
	require.Equal(t, "POST", del.Method)
	require.Equal(t, id, del.Header.Get("webhook-id"))
	require.Equal(t, "webhook.test", del.Header.Get("service-event-type"))
	require.Equal(t, "application/json", del.Header.Get("Content-Type"))
	require.Equal(t, "keelpay/"+keelpay.Version, del.Header.Get("User-Agent"))
	ts, err := strconv.ParseInt(del.Header.Get("webhook-timestamp"), 10, 64)
	require.NoError(t, err)
	require.InDelta(t, time.Now().Unix(), ts, 60, "webhook-timestamp is real time")
	require.Regexp(t, `^v1,[A-Za-z0-9+/]+=*$`, del.Header.Get("webhook-signature"))

	// Any Standard Webhooks library accepts it too.
	lib, err := standardwebhooks.NewWebhook(s.secret)
	require.NoError(t, err)
	require.NoError(t, lib.Verify(del.Body, del.Header))

	// GET /v1/events/{id} is the delivered envelope plus its delivery.
	read := b.do(t, req{method: "GET", path: "/v1/events/" + id, key: s.key})
	require.Equal(t, http.StatusOK, read.Status)
	var delivered map[string]any
	require.NoError(t, json.Unmarshal(del.Body, &delivered))
	withoutDelivery := map[string]any{}
	for k, v := range read.Body {
		if k != "delivery" {
			withoutDelivery[k] = v
		}
	}
	require.Equal(t, delivered, withoutDelivery)
	require.Equal(t, "event", delivered["object"])
	require.Equal(t, d, delivery(t, read))

	// Another store does not see it.
	other := b.setupStore(t, "app_other")
	requireError(t, b.do(t, req{method: "GET", path: "/v1/events/" + id, key: other.str("secret_key")}), http.StatusNotFound, "event_not_found")
}

func TestWebhookTestRateLimitPerStore(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.hookStore(t, "app_shop")
	for i := range 10 {
		r := b.do(t, req{method: "POST", path: "/v1/webhooks/test", key: s.key})
		require.Equal(t, http.StatusAccepted, r.Status, "test %d", i)
		b.clock.Advance(time.Second)
	}
	r := b.do(t, req{method: "POST", path: "/v1/webhooks/test", key: s.key})
	requireError(t, r, http.StatusTooManyRequests, "rate_limited")
	require.Equal(t, "50", r.Header.Get("Retry-After"))
	other := b.hookStore(t, "app_other")
	require.Equal(t, http.StatusAccepted, b.do(t, req{method: "POST", path: "/v1/webhooks/test", key: other.key}).Status)
	b.clock.Advance(50 * time.Second)
	require.Equal(t, http.StatusAccepted, b.do(t, req{method: "POST", path: "/v1/webhooks/test", key: s.key}).Status)

	requireInvalid(t, b.do(t, req{method: "POST", path: "/v1/webhooks/test", key: s.key, body: `{"x":1}`}), "x", "unknown_field")
	requireError(t, b.do(t, req{method: "POST", path: "/v1/webhooks/test"}), http.StatusUnauthorized, "invalid_api_key")
}

// TestDeliveryWalksAllSevenAttempts fails one delivery every way docs/webhooks.md
// names, at the scheduled times, and checks each attempt and the state
// after it; the seventh attempt succeeds. A second delivery fails seven
// times and is failed, until it is redelivered.
func TestDeliveryWalksAllSevenAttempts(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.hookStore(t, "app_shop")
	d := mustNew(events.NewDispatcher(events.DispatcherConfig{AllowInsecureWebhooks: true, AttemptTimeout: 300 * time.Millisecond, Clock: b.clock, Storage: b.db}))

	reset := func(w http.ResponseWriter, _ *http.Request) {
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			_ = conn.(*net.TCPConn).SetLinger(0)
			conn.Close()
		}
	}
	status := func(code int) func(w http.ResponseWriter, r *http.Request) {
		return func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(code) }
	}
	hang := func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }
	redirect := func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/elsewhere", http.StatusFound) }
	steps := []struct {
		respond    func(http.ResponseWriter, *http.Request)
		failure    any
		statusCode any
	}{
		{status(500), "http_status", 500.0},
		{hang, "timeout", nil},
		{redirect, "redirect", 302.0},
		{reset, "connection_error", nil},
		{status(404), "http_status", 404.0},
		{status(503), "http_status", 503.0},
		{status(204), nil, 204.0},
	}
	e := b.insertEvent(t, s.id)
	start := b.clock.Now()
	at := start
	var bodies [][]byte
	for i, step := range steps {
		if i > 0 {
			// Not a moment early.
			b.clock.Set(at.Add(-time.Second))
			require.Zero(t, b.runDispatcher(t, d), "attempt %d is not due yet", i+1)
		}
		b.clock.Set(at)
		s.rec.SetResponder(step.respond)
		require.Equal(t, 1, b.runDispatcher(t, d), "attempt %d", i+1)

		r := b.do(t, req{method: "GET", path: "/v1/events/" + e.ID, key: s.key})
		del := delivery(t, r)
		require.EqualValues(t, i+1, del["attempts"])
		require.Equal(t, at.Format(time.RFC3339), del["last_attempt_at"])
		require.Equal(t, step.failure, del["last_failure"], "attempt %d", i+1)
		require.Equal(t, step.statusCode, del["last_status_code"], "attempt %d", i+1)
		if i < len(steps)-1 {
			require.Equal(t, "pending", del["status"])
			at = at.Add(events.RetryDelay(i + 1))
			require.Equal(t, at.Format(time.RFC3339), del["next_attempt_at"], "attempt %d", i+1)
		} else {
			require.Equal(t, "succeeded", del["status"])
			require.Nil(t, del["next_attempt_at"])
		}
		got := s.rec.Deliveries()
		last := got[len(got)-1]
		require.Equal(t, e.ID, last.Header.Get("webhook-id"))
		require.NoError(t, last.Err, "attempt %d is signed", i+1)
		bodies = append(bodies, last.Body)
	}
	for i := range bodies {
		require.Equal(t, []byte(e.Body), bodies[i], "attempt %d sends the stored bytes", i+1)
	}
	require.Equal(t, 24*time.Hour+6*time.Hour+2*time.Hour+36*time.Minute, at.Sub(start))

	// Seven failures: failed. Redelivery: pending again, fresh count.
	s.rec.SetResponder(status(500))
	f := b.insertEvent(t, s.id)
	for i := range 7 {
		require.Equal(t, 1, b.runDispatcher(t, d), "attempt %d", i+1)
		if i < 6 {
			b.clock.Advance(events.RetryDelay(i + 1))
		}
	}
	r := b.do(t, req{method: "GET", path: "/v1/events/" + f.ID, key: s.key})
	require.Equal(t, "failed", delivery(t, r)["status"])
	require.EqualValues(t, 7, delivery(t, r)["attempts"])
	b.clock.Advance(48 * time.Hour)
	require.Zero(t, b.runDispatcher(t, d), "a failed delivery is not retried")

	r = b.do(t, req{method: "POST", path: "/v1/events/" + f.ID + "/redeliver", key: s.key})
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
	require.Equal(t, "pending", delivery(t, r)["status"])
	require.EqualValues(t, 0, delivery(t, r)["attempts"])
	s.rec.SetResponder(status(200))
	require.Equal(t, 1, b.runDispatcher(t, d))
	r = b.do(t, req{method: "GET", path: "/v1/events/" + f.ID, key: s.key})
	require.Equal(t, "succeeded", delivery(t, r)["status"])
	require.EqualValues(t, 1, delivery(t, r)["attempts"])

	requireError(t, b.do(t, req{method: "POST", path: "/v1/events/evt_nope/redeliver", key: s.key}), http.StatusNotFound, "event_not_found")
}

func TestRotationAndNewURLMidRetry(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.hookStore(t, "app_shop")
	s.rec.SetStatus(http.StatusInternalServerError)
	r := b.do(t, req{method: "POST", path: "/v1/webhooks/test", key: s.key})
	require.Equal(t, "pending", delivery(t, r)["status"])
	id := r.str("id")

	// Rotate the secret: the next attempt verifies only with the new one.
	body := setupBody("app_shop", s.rec.URL()+"/hooks")
	body["rotate_webhook_secret"] = true
	rot := b.do(t, req{method: "POST", path: "/v1/setup", key: s.key, body: body})
	require.Equal(t, http.StatusOK, rot.Status)
	newSecret := rot.str("webhook_secret")
	s.rec.SetStatus(http.StatusNoContent)
	require.NoError(t, s.rec.SetSecrets(newSecret))
	b.clock.Advance(time.Minute)
	require.Equal(t, 1, b.runDispatcher(t, b.dispatcher))
	got := s.rec.Deliveries()
	last := got[len(got)-1]
	require.NoError(t, last.Err, "signed with the new secret")
	oldOnly, err := webhooks.NewVerifier([]string{s.secret})
	require.NoError(t, err)
	require.ErrorIs(t, oldOnly.Verify(last.Body, last.Header), webhooks.ErrNoValidSignature, "and only with it")
	require.Equal(t, id, last.Header.Get("webhook-id"))

	// A new webhook_url: later attempts go there, with its new secret.
	s.rec.SetStatus(http.StatusInternalServerError)
	b.clock.Advance(time.Minute)
	e := b.insertEvent(t, s.id)
	require.Equal(t, 1, b.runDispatcher(t, b.dispatcher))
	moved := webhookstest.NewRecorder(t, "")
	ch := b.do(t, req{method: "POST", path: "/v1/setup", key: s.key, body: setupBody("app_shop", moved.URL()+"/new")})
	require.Equal(t, http.StatusOK, ch.Status)
	require.NoError(t, moved.SetSecrets(ch.str("webhook_secret")))
	b.clock.Advance(time.Minute)
	require.Equal(t, 1, b.runDispatcher(t, b.dispatcher))
	arrived := moved.Wait(t, 1)
	require.NoError(t, arrived[0].Err)
	require.Equal(t, e.ID, arrived[0].Header.Get("webhook-id"))
}

func TestDispatcherStoppedMidAttemptFinishesIt(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.hookStore(t, "app_shop")
	entered := make(chan struct{}, 1)
	release := make(chan struct{})
	s.rec.SetResponder(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		<-release
		w.WriteHeader(http.StatusNoContent)
	})
	e := b.insertEvent(t, s.id)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { b.dispatcher.Run(ctx); close(done) }()
	<-entered
	cancel() // stop while the receiver is still answering
	select {
	case <-done:
		t.Fatal("Run returned before the attempt in flight was over")
	default:
	}
	close(release)
	<-done

	stored, err := b.db.EventGet(context.Background(), s.id, e.ID)
	require.NoError(t, err)
	require.Equal(t, keelpay.DeliverySucceeded, stored.Delivery.Status, "the attempt was finished and recorded")
	require.Equal(t, 1, stored.Delivery.Attempts)
}

func TestReceiverDownForAnHourStillGetsEveryEvent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.hookStore(t, "app_shop")
	s.rec.SetStatus(http.StatusServiceUnavailable)
	var ids []string
	for range 5 {
		ids = append(ids, b.insertEvent(t, s.id).ID)
		b.clock.Advance(time.Minute)
	}
	back := b.clock.Now().Add(time.Hour)
	// Drive the dispatcher minute by minute for a day, as Run would.
	for end := b.clock.Now().Add(24 * time.Hour); b.clock.Now().Before(end); b.clock.Advance(time.Minute) {
		if !b.clock.Now().Before(back) {
			s.rec.SetStatus(http.StatusNoContent)
		}
		b.runDispatcher(t, b.dispatcher)
	}
	for _, id := range ids {
		e, err := b.db.EventGet(context.Background(), s.id, id)
		require.NoError(t, err)
		require.Equal(t, keelpay.DeliverySucceeded, e.Delivery.Status, id)
		require.Equal(t, 5, e.Delivery.Attempts, "0, 1, 6, 36 min failed; 2 h 36 min succeeded")
	}
}

func TestSlowReceiverDoesNotDelayOtherStores(t *testing.T) {
	t.Parallel()
	b := setup(t)
	slow := b.hookStore(t, "app_slow")
	fast := b.hookStore(t, "app_fast")
	release := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	slow.rec.SetResponder(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	for range 20 {
		b.insertEvent(t, slow.id)
	}
	b.clock.Advance(time.Second)
	d := mustNew(events.NewDispatcher(events.DispatcherConfig{AllowInsecureWebhooks: true, Clock: b.clock, Storage: b.db,
		Concurrency: 6, PerStore: 2, PollInterval: 10 * time.Millisecond}))

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { d.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	// The slow store holds at most 2 workers; the fast one is served.
	b.insertEvent(t, fast.id)
	d.Notify()
	got := fast.rec.Wait(t, 1)
	require.NoError(t, got[0].Err)
	require.LessOrEqual(t, len(slow.rec.Deliveries()), 2)
	once.Do(func() { close(release) })
}

func TestInternalAddressesRefusedAtDialTime(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.hookStore(t, "app_shop")
	strict := mustNew(events.NewDispatcher(events.DispatcherConfig{Clock: b.clock, Storage: b.db}))
	e := b.insertEvent(t, s.id)
	require.Equal(t, 1, b.runDispatcher(t, strict))
	stored, err := b.db.EventGet(context.Background(), s.id, e.ID)
	require.NoError(t, err)
	require.Equal(t, keelpay.FailureConnectionError, stored.Delivery.LastFailure)
	require.Empty(t, s.rec.Deliveries(), "nothing reached the loopback receiver")
	require.NotContains(t, b.logs.String(), s.rec.URL(), "logs never carry webhook URLs")
}

func TestEventsList(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.hookStore(t, "app_shop")
	var ids []string
	for range 5 {
		ids = append(ids, b.do(t, req{method: "POST", path: "/v1/webhooks/test", key: s.key}).str("id"))
		b.clock.Advance(time.Second)
	}
	list := func(query string) ([]string, bool) {
		t.Helper()
		r := b.do(t, req{method: "GET", path: "/v1/events" + query, key: s.key})
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
		require.Equal(t, "list", r.str("object"))
		var got []string
		for _, e := range r.Body["data"].([]any) {
			m := e.(map[string]any)
			require.Contains(t, m, "delivery")
			got = append(got, m["id"].(string))
		}
		return got, r.Body["has_more"].(bool)
	}
	got, more := list("")
	require.Equal(t, []string{ids[4], ids[3], ids[2], ids[1], ids[0]}, got)
	require.False(t, more)
	got, more = list("?limit=2")
	require.Equal(t, []string{ids[4], ids[3]}, got)
	require.True(t, more)
	got, more = list("?limit=2&starting_after=" + ids[3])
	require.Equal(t, []string{ids[2], ids[1]}, got)
	require.True(t, more)
	got, _ = list("?ending_before=" + ids[1] + "&limit=2")
	require.Equal(t, []string{ids[3], ids[2]}, got)
	got, _ = list("?type=webhook.test&limit=1")
	require.Equal(t, []string{ids[4]}, got)
	got, more = list("?type=card.created")
	require.Empty(t, got)
	require.False(t, more)

	other := b.setupStore(t, "app_other")
	r := b.do(t, req{method: "GET", path: "/v1/events", key: other.str("secret_key")})
	require.Empty(t, r.Body["data"])
}

func TestEventsBadQueries(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.hookStore(t, "app_shop")
	id := b.do(t, req{method: "POST", path: "/v1/webhooks/test", key: s.key}).str("id")
	other := b.hookStore(t, "app_other")
	otherID := b.do(t, req{method: "POST", path: "/v1/webhooks/test", key: other.key}).str("id")
	tests := []struct{ query, field, code string }{
		{"?type=nope", "type", "invalid_type"},
		{"?type=", "type", "invalid_type"},
		{"?limit=0", "limit", "invalid_limit"},
		{"?limit=101", "limit", "invalid_limit"},
		{"?limit=abc", "limit", "invalid_limit"},
		{"?limit=-1", "limit", "invalid_limit"},
		{"?limit=1.5", "limit", "invalid_limit"},
		{"?limit=", "limit", "invalid_limit"},
		{"?limit=99999999999999999999", "limit", "invalid_limit"},
		{"?colour=red", "colour", "unknown_parameter"},
		{"?Limit=5", "Limit", "unknown_parameter"},
		{"?limit=5&limit=6", "limit", "duplicate_parameter"},
		{"?type=%zz", "", "invalid_query"},
		{"?a;b", "", "invalid_query"},
		{"?starting_after=evt_nope", "starting_after", "invalid_starting_after"},
		{"?starting_after=" + otherID, "starting_after", "invalid_starting_after"},
		{"?ending_before=" + otherID, "ending_before", "invalid_ending_before"},
		{"?starting_after=" + id + "&ending_before=" + id, "ending_before", "invalid_ending_before"},
	}
	for _, tc := range tests {
		r := b.do(t, req{method: "GET", path: "/v1/events" + tc.query, key: s.key})
		requireInvalid(t, r, tc.field, tc.code)
	}
	for _, path := range []string{"/v1/events/evt_nope", "/v1/events/" + otherID, "/v1/events/" + strings.ToUpper(id)} {
		requireError(t, b.do(t, req{method: "GET", path: path, key: s.key}), http.StatusNotFound, "event_not_found")
	}
	requireError(t, b.do(t, req{method: "GET", path: "/v1/events"}), http.StatusUnauthorized, "invalid_api_key")
	requireError(t, b.do(t, req{method: "GET", path: "/v1/events/" + id}), http.StatusUnauthorized, "invalid_api_key")
}

func TestDeliveryMetrics(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.hookStore(t, "app_shop")
	require.Equal(t, http.StatusAccepted, b.do(t, req{method: "POST", path: "/v1/webhooks/test", key: s.key}).Status)
	s.rec.SetStatus(http.StatusInternalServerError)
	b.clock.Advance(time.Second)
	require.Equal(t, http.StatusAccepted, b.do(t, req{method: "POST", path: "/v1/webhooks/test", key: s.key}).Status)
	m := string(b.do(t, req{method: "GET", path: "/metrics"}).Raw)
	require.Contains(t, m, `keelpay_webhook_attempts_total{outcome="succeeded"} 1`)
	require.Contains(t, m, `keelpay_webhook_attempts_total{outcome="http_status"} 1`)
	require.Contains(t, m, `keelpay_webhook_attempt_duration_seconds_count{outcome="succeeded"} 1`)
	require.Contains(t, m, `keelpay_webhook_deliveries{status="pending"} 1`)
	require.Contains(t, m, `keelpay_webhook_deliveries{status="failed"} 0`)
}
