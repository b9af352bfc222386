package service_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/keelpaytest"
	"github.com/keelpay/keelpay/keyring/keyringtest"
	"github.com/keelpay/keelpay/provider/sandbox"
	"github.com/keelpay/keelpay/service"
	"github.com/keelpay/keelpay/storage"
	"github.com/keelpay/keelpay/storage/sqlite"
	"github.com/keelpay/keelpay/storage/storagetest"
)

// apiCall sends a request with the secret key and returns the status and
// the decoded JSON answer.
func apiCall(t *testing.T, method, url, key string, body any) (int, map[string]any) {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		require.NoError(t, err)
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, r)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var out map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	return resp.StatusCode, out
}

func requireAPIError(t *testing.T, status int, body map[string]any, wantStatus int, code string) {
	t.Helper()
	require.Equal(t, wantStatus, status, "%v", body)
	errObj, ok := body["error"].(map[string]any)
	require.True(t, ok, "an error answer: %v", body)
	require.Equal(t, code, errObj["code"])
}

// A payment's event is kept for the retention period after it was
// delivered, then reads as not found through the API; the intent and the
// card stay. A card session that saved no card goes sooner.
func TestPurgedEventReadsAsNotFound(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	k := keelpaytest.Start(t, keelpaytest.WithServiceConfig(func(c *service.Config) {
		// The worker's own passes stay out of the way; the test purges.
		c.Retention.Interval = time.Hour
	}))
	s := k.Store(t)
	card := s.SaveCard(t, sandbox.CardVisa)
	pi := s.Pay(t, card, 1999, "eur")
	d := k.RequireEvent(t, keelpay.EventPaymentIntentSucceeded, pi.ID)
	ev, err := d.Event()
	require.NoError(t, err)
	status, unused := apiCall(t, "POST", k.URL+"/v1/card_sessions", s.SecretKey, map[string]any{
		"customer": s.Customer, "page_origins": []string{"https://shop.example"},
	})
	require.Equal(t, http.StatusCreated, status, "%v", unused)
	// Stop waits for the deliveries under way to be recorded: the
	// payment's delivery is over.
	require.NoError(t, k.Service.Stop(ctx))
	eventURL := k.URL + "/v1/events/" + string(ev.ID)
	status, got := apiCall(t, "GET", eventURL, s.SecretKey, nil)
	require.Equal(t, http.StatusOK, status, "%v", got)
	require.Equal(t, "succeeded", got["delivery"].(map[string]any)["status"])

	// A day short of the period: the event stays; the unused card
	// session, expired for weeks, leaves.
	k.Clock.Advance(service.RetentionEventsDefault - 24*time.Hour)
	require.NoError(t, k.Service.Purge(ctx))
	status, got = apiCall(t, "GET", eventURL, s.SecretKey, nil)
	require.Equal(t, http.StatusOK, status, "%v", got)
	status, got = apiCall(t, "GET", k.URL+"/v1/card_sessions/"+unused["id"].(string), s.SecretKey, nil)
	requireAPIError(t, status, got, http.StatusNotFound, "card_session_not_found")

	// Past it: the event and its attempts are gone.
	k.Clock.Advance(2 * 24 * time.Hour)
	require.NoError(t, k.Service.Purge(ctx))
	status, got = apiCall(t, "GET", eventURL, s.SecretKey, nil)
	requireAPIError(t, status, got, http.StatusNotFound, "event_not_found")
	status, got = apiCall(t, "GET", eventURL+"/attempts", s.SecretKey, nil)
	requireAPIError(t, status, got, http.StatusNotFound, "event_not_found")
	status, got = apiCall(t, "POST", eventURL+"/redeliver", s.SecretKey, nil)
	requireAPIError(t, status, got, http.StatusNotFound, "event_not_found")
	status, got = apiCall(t, "GET", k.URL+"/v1/events?type=payment_intent.succeeded", s.SecretKey, nil)
	require.Equal(t, http.StatusOK, status, "%v", got)
	require.Empty(t, got["data"])

	// The store's records stay.
	status, got = apiCall(t, "GET", k.URL+"/v1/payment_intents/"+pi.ID, s.SecretKey, nil)
	require.Equal(t, http.StatusOK, status, "%v", got)
	status, got = apiCall(t, "GET", k.URL+"/v1/cards/"+card, s.SecretKey, nil)
	require.Equal(t, http.StatusOK, status, "%v", got)

	rec := httptest.NewRecorder()
	k.Service.MetricsHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	require.Contains(t, rec.Body.String(), `keelpay_retention_deleted_total{kind="card_session"} 1`)
	require.Regexp(t, `keelpay_retention_deleted_total\{kind="event"\} [1-9]`, rec.Body.String())
}

// oldEvent inserts a store's event created at `at` whose delivery
// succeeded.
func oldEvent(t *testing.T, db storage.Storage, storeID string, at time.Time) *keelpay.Event {
	t.Helper()
	ctx := context.Background()
	e := storagetest.NewEventRecord(storeID, keelpay.EventWebhookTest, at)
	require.NoError(t, db.EventInsert(ctx, e))
	p := storage.DeliveryClaimParams{Now: at, LeaseUntil: at.Add(time.Minute), Limit: 1, PerStore: 1, LeaseToken: keelpay.NewID("lease_")}
	_, err := db.DeliveryClaimEvent(ctx, e.ID, p)
	require.NoError(t, err)
	require.NoError(t, db.DeliveryRecord(ctx, []storage.DeliveryResult{{EventID: e.ID, LeaseToken: p.LeaseToken,
		Delivery: keelpay.Delivery{Status: keelpay.DeliverySucceeded, Attempts: 1, LastAttemptAt: at, LastStatusCode: 204}}}))
	return e
}

// Start runs the retention worker, which works a backlog off in batches
// at once.
func TestStartRunsRetention(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openDB(t)
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	st := storagetest.NewStoreRecord(at)
	require.NoError(t, db.StoreInsert(ctx, st))
	var old []*keelpay.Event
	for i := range 5 {
		old = append(old, oldEvent(t, db, st.ID, at.Add(time.Duration(i)*time.Second)))
	}
	clock := keelpaytest.NewClock(at.Add(service.RetentionEventsDefault + time.Hour))
	recent := oldEvent(t, db, st.ID, clock.Now().Add(-time.Hour))
	svc, err := service.New(service.Config{
		Clock: clock, Provider: sandbox.New(sandbox.Config{Clock: clock}), Storage: db,
		Retention:           service.RetentionConfig{Batch: 2, Interval: time.Hour},
		WebhookPollInterval: time.Hour,
		ExpireInterval:      time.Hour,
		ReconcileInterval:   time.Hour,
	})
	require.NoError(t, err)
	require.NoError(t, svc.Start(ctx))
	t.Cleanup(func() { require.NoError(t, svc.Stop(context.Background())) })
	// The first pass runs as the worker starts; wait for it.
	require.Eventually(t, func() bool {
		_, err := db.EventGet(ctx, st.ID, old[len(old)-1].ID)
		return err != nil
	}, 10*time.Second, 5*time.Millisecond)
	for _, e := range old {
		_, err := db.EventGet(ctx, st.ID, e.ID)
		require.ErrorIs(t, err, storage.ErrNotFound)
	}
	_, err = db.EventGet(ctx, st.ID, recent.ID)
	require.NoError(t, err, "a recent event stays")
}

func TestRetentionKeepForever(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openDB(t)
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	st := storagetest.NewStoreRecord(at)
	require.NoError(t, db.StoreInsert(ctx, st))
	e := oldEvent(t, db, st.ID, at)
	cs := &keelpay.CardSession{ID: keelpay.NewID(keelpay.PrefixCardSession), StoreID: st.ID, ClientSecret: "cs_secret_x",
		Customer: keelpay.Customer{ID: "cus_1"}, PageOrigins: []string{"https://shop.example"},
		Status: keelpay.CardSessionOpen, ExpiresAt: at.Add(30 * time.Minute), CreatedAt: at}
	require.NoError(t, db.CardSessionInsert(ctx, cs))
	clock := keelpaytest.NewClock(at.Add(10 * 365 * 24 * time.Hour))
	newService := func(r service.RetentionConfig) *service.Service {
		svc, err := service.New(service.Config{Clock: clock, Provider: sandbox.New(sandbox.Config{Clock: clock}), Storage: db, Retention: r})
		require.NoError(t, err)
		return svc
	}

	require.NoError(t, newService(service.RetentionConfig{Events: service.KeepForever, CardSessions: service.KeepForever}).Purge(ctx))
	_, err := db.EventGet(ctx, st.ID, e.ID)
	require.NoError(t, err, "kept forever")
	_, err = db.CardSessionGet(ctx, st.ID, cs.ID)
	require.NoError(t, err, "kept forever")

	// Each kind has its own period.
	require.NoError(t, newService(service.RetentionConfig{Events: service.KeepForever}).Purge(ctx))
	_, err = db.EventGet(ctx, st.ID, e.ID)
	require.NoError(t, err)
	_, err = db.CardSessionGet(ctx, st.ID, cs.ID)
	require.ErrorIs(t, err, storage.ErrNotFound)
	require.NoError(t, newService(service.RetentionConfig{}).Purge(ctx))
	_, err = db.EventGet(ctx, st.ID, e.ID)
	require.ErrorIs(t, err, storage.ErrNotFound)
}

func TestRetentionConfigIsValidated(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	sb := sandbox.New(sandbox.Config{})
	for _, tc := range []struct {
		name string
		r    service.RetentionConfig
		want string // "" when valid
	}{
		{"defaults", service.RetentionConfig{}, ""},
		{"keep forever", service.RetentionConfig{Events: service.KeepForever, CardSessions: -time.Hour}, ""},
		{"a year", service.RetentionConfig{Events: 365 * 24 * time.Hour, CardSessions: time.Hour}, ""},
		{"a unit mistake", service.RetentionConfig{Events: 30}, "Config.Retention.Events is 30ns"},
		{"card sessions too short", service.RetentionConfig{CardSessions: time.Minute}, "Config.Retention.CardSessions is 1m0s"},
		{"negative batch", service.RetentionConfig{Batch: -1}, "Config.Retention.Batch is -1"},
		{"huge batch", service.RetentionConfig{Batch: service.RetentionBatchMax + 1}, "Config.Retention.Batch is 10001"},
		{"negative interval", service.RetentionConfig{Interval: -time.Second}, "Config.Retention.Interval is -1s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := service.Config{Provider: sb, Storage: db, Retention: tc.r}.Validate()
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			require.True(t, strings.Contains(err.Error(), tc.want), err.Error())
		})
	}
}

// The retention worker, not a request, deletes expired Idempotency-Key
// records and rate-limit hits that left their window; the live ones stay.
func TestStartSweepsExpiredKeysAndRateLimitHits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "keelpay.db")
	db, err := sqlite.Open(ctx, sqlite.Config{Keyring: keyringtest.Keyring(), Path: path})
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	st := storagetest.NewStoreRecord(at)
	require.NoError(t, db.StoreInsert(ctx, st))
	const ttl = 24 * time.Hour
	begin := func(key string, now time.Time) {
		t.Helper()
		p := storage.IdempotencyBeginParams{StoreID: st.ID, Key: key, Fingerprint: []byte(key), LockToken: keelpay.NewID("lock_"),
			Now: now, LockedUntil: now.Add(time.Minute), ExpiresAt: now.Add(ttl)}
		_, began, err := db.IdempotencyBegin(ctx, p)
		require.NoError(t, err)
		require.True(t, began)
		require.NoError(t, db.IdempotencyComplete(ctx, storage.IdempotencyCompleteParams{
			StoreID: st.ID, Key: key, LockToken: p.LockToken, Status: http.StatusOK, Body: []byte("{}\n")}))
	}
	// Three expired keys with a batch of 2: the pass goes on after a full
	// batch.
	for i := range 3 {
		begin(fmt.Sprintf("old-%d", i), at.Add(time.Duration(i)*time.Second))
	}
	for i := range 3 {
		wait, err := db.RateLimitTake(ctx, at, storage.RateLimit{Key: fmt.Sprintf("setup:client:gone%d", i), Limit: 5, Window: time.Minute})
		require.NoError(t, err)
		require.Zero(t, wait)
	}
	clock := keelpaytest.NewClock(at.Add(ttl + time.Hour))
	begin("recent", clock.Now().Add(-time.Hour))
	wait, err := db.RateLimitTake(ctx, clock.Now(), storage.RateLimit{Key: "setup:client:here", Limit: 5, Window: time.Minute})
	require.NoError(t, err)
	require.Zero(t, wait)

	hits := func() []string {
		raw, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
		require.NoError(t, err)
		defer raw.Close()
		rows, err := raw.Query(`SELECT key FROM rate_limit_hits ORDER BY key`)
		require.NoError(t, err)
		defer rows.Close()
		var keys []string
		for rows.Next() {
			var k string
			require.NoError(t, rows.Scan(&k))
			keys = append(keys, k)
		}
		require.NoError(t, rows.Err())
		return keys
	}
	require.Len(t, hits(), 4)

	svc, err := service.New(service.Config{
		Clock: clock, Provider: sandbox.New(sandbox.Config{Clock: clock}), Storage: db,
		Retention:           service.RetentionConfig{Batch: 2, Interval: time.Hour},
		WebhookPollInterval: time.Hour,
		ExpireInterval:      time.Hour,
		ReconcileInterval:   time.Hour,
	})
	require.NoError(t, err)
	require.NoError(t, svc.Start(ctx))
	t.Cleanup(func() { require.NoError(t, svc.Stop(context.Background())) })
	// The first pass runs as the worker starts; no request is made.
	require.Eventually(t, func() bool { return len(hits()) == 1 }, 10*time.Second, 5*time.Millisecond)
	require.Equal(t, []string{"setup:client:here"}, hits(), "the hit inside its window stays")
	require.Eventually(t, func() bool {
		_, err := db.IdempotencyGet(ctx, st.ID, "old-2")
		return errors.Is(err, storage.ErrNotFound)
	}, 10*time.Second, 5*time.Millisecond)
	for i := range 3 {
		_, err := db.IdempotencyGet(ctx, st.ID, fmt.Sprintf("old-%d", i))
		require.ErrorIs(t, err, storage.ErrNotFound)
	}
	rec, err := db.IdempotencyGet(ctx, st.ID, "recent")
	require.NoError(t, err, "a key inside its 24 hours stays")
	require.True(t, rec.Completed())
}
