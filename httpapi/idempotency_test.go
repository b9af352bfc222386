package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay/httpapi"
	"github.com/keelpay/keelpay/provider"
	"github.com/keelpay/keelpay/provider/sandbox"
	"github.com/keelpay/keelpay/stores"
)

// hold stands between the service and the sandbox and, once armed, holds
// the next CheckApplication call until released, so a setup can be kept
// running inside the provider.
type hold struct {
	provider.Provider
	mu    sync.Mutex
	calls int
	next  *heldCall
}

type heldCall struct {
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

func (c *heldCall) open() { c.once.Do(func() { close(c.release) }) }

// arm makes the next call wait; the test's end releases it in any case, so
// that the server can shut down.
func (h *hold) arm(t *testing.T) *heldCall {
	c := &heldCall{entered: make(chan struct{}), release: make(chan struct{})}
	t.Cleanup(c.open)
	h.mu.Lock()
	h.next = c
	h.mu.Unlock()
	return c
}

func (h *hold) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.calls
}

func (h *hold) CheckApplication(ctx context.Context, cr provider.Credentials) (*provider.Application, error) {
	h.mu.Lock()
	h.calls++
	c := h.next
	h.next = nil
	h.mu.Unlock()
	if c != nil {
		close(c.entered)
		<-c.release
	}
	return h.Provider.CheckApplication(ctx, cr)
}

func setupWithHold(t *testing.T) (*bundle, *hold) {
	h := &hold{}
	b := setup(t, func(o *options) { o.wrap = func(p provider.Provider) provider.Provider { h.Provider = p; return h } })
	return b, h
}

// keyed is a POST /v1/setup with the store's secret key and an
// Idempotency-Key.
func (b *bundle) keyed(t *testing.T, secretKey, idemKey string, body any) *response {
	t.Helper()
	return b.do(t, req{method: "POST", path: "/v1/setup", key: secretKey, body: body,
		header: map[string]string{"Idempotency-Key": idemKey}})
}

func requireFresh(t *testing.T, r *response, status int) {
	t.Helper()
	require.Equal(t, status, r.Status, "body: %s", r.Raw)
	require.Empty(t, r.Header.Values("Idempotent-Replayed"), "not a replay")
}

func requireReplay(t *testing.T, first, r *response) {
	t.Helper()
	require.Equal(t, first.Status, r.Status, "body: %s", r.Raw)
	require.Equal(t, string(first.Raw), string(r.Raw), "the same body bytes")
	require.Equal(t, "true", r.Header.Get("Idempotent-Replayed"))
	require.Equal(t, "application/json", r.Header.Get("Content-Type"))
	require.NotEqual(t, first.Header.Get("Request-Id"), r.Header.Get("Request-Id"), "a request of its own")
}

func TestIdempotencyReplaysTheFirstResponse(t *testing.T) {
	t.Parallel()
	b := setup(t)
	store := b.setupStore(t, "app_shop")
	sk := store.str("secret_key")
	body := setupBody("app_shop", "https://store.example/new-hooks")

	first := b.keyed(t, sk, "order-1", body)
	requireFresh(t, first, http.StatusOK)
	require.NotEmpty(t, first.str("webhook_secret"))

	again := b.keyed(t, sk, "order-1", body)
	requireReplay(t, first, again)

	// The store was changed once: without the key the same change is
	// store_already_enabled, and the replay still answers 200.
	requireError(t, b.do(t, req{method: "POST", path: "/v1/setup", key: sk, body: body}), http.StatusConflict, "store_already_enabled")
	requireReplay(t, first, b.keyed(t, sk, "order-1", body))
	stored, err := b.db.StoreGetByID(context.Background(), store.str("id"))
	require.NoError(t, err)
	require.EqualValues(t, 2, stored.Version)
	require.Equal(t, first.str("webhook_secret"), stored.WebhookSecret)

	// Another body or path with the key: 422, and nothing runs.
	other := setupBody("app_shop", "https://store.example/other")
	requireError(t, b.keyed(t, sk, "order-1", other), http.StatusUnprocessableEntity, "idempotency_key_reused")
	requireError(t, b.do(t, req{method: "POST", path: "/v1/webhooks/test", key: sk,
		header: map[string]string{"Idempotency-Key": "order-1"}}), http.StatusUnprocessableEntity, "idempotency_key_reused")
	stored, err = b.db.StoreGetByID(context.Background(), store.str("id"))
	require.NoError(t, err)
	require.Equal(t, "https://store.example/new-hooks", stored.WebhookURL)

	// Bodies are compared as bytes: the same JSON spelled otherwise is
	// another request.
	requireError(t, b.keyed(t, sk, "order-1", `{"webhook_url":"https://store.example/new-hooks","client_id":"app_shop","client_secret":"secret_shop"}`),
		http.StatusUnprocessableEntity, "idempotency_key_reused")
}

func TestIdempotencyWithoutSecretKeyIsIgnored(t *testing.T) {
	t.Parallel()
	b := setup(t)
	// A first setup has no secret key: the header does nothing.
	r := b.do(t, req{method: "POST", path: "/v1/setup", body: setupBody("app_shop", "https://store.example/hooks"),
		header: map[string]string{"Idempotency-Key": "k"}})
	requireFresh(t, r, http.StatusCreated)
	r = b.do(t, req{method: "POST", path: "/v1/setup", body: setupBody("app_shop", "https://store.example/other"),
		header: map[string]string{"Idempotency-Key": "k"}})
	requireFresh(t, r, http.StatusOK)
}

func TestIdempotencyKeyHeaderValidation(t *testing.T) {
	t.Parallel()
	b := setup(t)
	sk := b.setupStore(t, "app_shop").str("secret_key")
	body := setupBody("app_shop", "https://store.example/hooks")
	for name, values := range map[string][]string{
		"empty":     {""},
		"too long":  {strings.Repeat("k", 256)},
		"non-ASCII": {"ключ"},
		"tab":       {"a\tb"},
		"twice":     {"a", "b"},
	} {
		r := doKeyHeader(t, b, sk, values, body)
		requireInvalid(t, r, "", "invalid_idempotency_key")
		require.Contains(t, r.Body["error"].(map[string]any)["message"], "Idempotency-Key", name)
	}
	// The longest key, with every printable character.
	longest := strings.Repeat(" !~azAZ09", 28) + "abc"
	require.Len(t, longest, 255)
	requireError(t, doKeyHeader(t, b, sk, []string{longest}, body), http.StatusConflict, "store_already_enabled")
}

// doKeyHeader sends the Idempotency-Key values as they are, which b.do
// cannot (an empty value, twice).
func doKeyHeader(t *testing.T, b *bundle, sk string, values []string, body map[string]any) *response {
	t.Helper()
	data, err := json.Marshal(body)
	require.NoError(t, err)
	rq, err := http.NewRequest("POST", b.srv.URL+"/v1/setup", bytes.NewReader(data))
	require.NoError(t, err)
	rq.Header.Set("Content-Type", "application/json")
	rq.Header.Set("Authorization", "Bearer "+sk)
	rq.Header["Idempotency-Key"] = values
	resp, err := b.srv.Client().Do(rq)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	out := &response{Status: resp.StatusCode, Header: resp.Header, Raw: raw}
	require.NoError(t, json.Unmarshal(raw, &out.Body), "body %s", raw)
	return out
}

func TestIdempotencyRejectedRequestStoresNothing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const clientID = "app_shop"
	sk := b.setupStore(t, clientID).str("secret_key")
	tests := []struct {
		name   string
		before func() *response // the rejected request, made with the key
		status int
	}{
		{"400 invalid_request", func() *response {
			return b.keyed(t, sk, "k-400", map[string]any{"client_id": clientID, "client_secret": "secret_shop"})
		}, http.StatusBadRequest},
		{"401 invalid_credentials", func() *response {
			body := setupBody(clientID, "https://store.example/401")
			body["client_secret"] = "secret_wrong"
			return b.keyed(t, sk, "k-401", body)
		}, http.StatusUnauthorized},
		{"413 request_too_large", func() *response {
			return b.keyed(t, sk, "k-413", `{"client_id":"`+strings.Repeat("a", httpapi.MaxBodyBytes)+`"}`)
		}, http.StatusRequestEntityTooLarge},
		{"415 unsupported_media_type", func() *response {
			return b.do(t, req{method: "POST", path: "/v1/setup", key: sk, body: setupBody(clientID, "https://store.example/415"),
				header: map[string]string{"Idempotency-Key": "k-415", "Content-Type": "text/plain"}})
		}, http.StatusUnsupportedMediaType},
		{"429 rate_limited", func() *response {
			for range 5 {
				b.do(t, req{method: "POST", path: "/v1/setup", key: sk, body: setupBody(clientID, "https://store.example/hooks")})
			}
			return b.keyed(t, sk, "k-429", setupBody(clientID, "https://store.example/429"))
		}, http.StatusTooManyRequests},
		{"503 provider_api_unavailable", func() *response {
			b.sandbox.SetApplication(clientID, sandbox.AppBehavior{Outcome: provider.KindUnavailable})
			defer b.sandbox.SetApplication(clientID, sandbox.AppBehavior{})
			return b.keyed(t, sk, "k-503", setupBody(clientID, "https://store.example/503"))
		}, http.StatusServiceUnavailable},
	}
	for i, tc := range tests {
		r := tc.before()
		require.Equal(t, tc.status, r.Status, "%s: %s", tc.name, r.Raw)
		// The same key with a valid body (another one, where the first was
		// not valid) runs: nothing was stored.
		key := "k-" + tc.name[:3]
		b.clock.Advance(time.Minute) // the setup rate limit
		r = b.keyed(t, sk, key, setupBody(clientID, fmt.Sprintf("https://store.example/%d", i)))
		requireFresh(t, r, http.StatusOK)
		b.clock.Advance(time.Minute)
	}
}

func TestIdempotencySetupConflictStoresNothing(t *testing.T) {
	t.Parallel()
	g := &gate{n: 3, waiting: 2, open: make(chan struct{})}
	b := setup(t, func(o *options) { o.wrap = func(p provider.Provider) provider.Provider { g.Provider = p; return g } })
	sk := b.setupStore(t, "app_shop").str("secret_key")
	g.mu.Lock()
	g.waiting, g.n, g.open = 0, 2, make(chan struct{})
	g.mu.Unlock()

	// Two changes at once, each with its key: one loses with setup_conflict.
	results := make([]*response, 2)
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Go(func() {
			results[i] = b.keyed(t, sk, fmt.Sprintf("k%d", i), setupBody("app_shop", fmt.Sprintf("https://store.example/hooks-%d", i)))
		})
	}
	wg.Wait()
	loser := 0
	if results[0].Status < 300 {
		loser = 1
	}
	requireError(t, results[loser], http.StatusConflict, "setup_conflict")
	requireFresh(t, results[1-loser], http.StatusOK)

	// The loser repeats at once with its key, as the spec says, and runs.
	g.mu.Lock()
	g.n = 1
	g.mu.Unlock()
	r := b.keyed(t, sk, fmt.Sprintf("k%d", loser), setupBody("app_shop", fmt.Sprintf("https://store.example/hooks-%d", loser)))
	requireFresh(t, r, http.StatusOK)
}

// failSecond calls fail instead of the second CheckApplication (the first
// is the store's own setup).
type failSecond struct {
	provider.Provider
	fail  func() error
	mu    sync.Mutex
	calls int
}

func (f *failSecond) CheckApplication(ctx context.Context, c provider.Credentials) (*provider.Application, error) {
	f.mu.Lock()
	f.calls++
	n := f.calls
	f.mu.Unlock()
	if n == 2 {
		return nil, f.fail()
	}
	return f.Provider.CheckApplication(ctx, c)
}

func (f *failSecond) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

// TestIdempotencyInternalErrorIsNotStored: a 500 means the request did not
// finish its work, so it is not replayed (also when the handler panicked):
// the key is free at once and a retry with it runs and gets the real
// outcome.
func TestIdempotencyInternalErrorIsNotStored(t *testing.T) {
	t.Parallel()
	for name, fail := range map[string]func() error{
		// Not a provider error: setup answers 500 internal_error.
		"error": func() error { return errors.New("connection reset") },
		"panic": func() error { panic("provider bug") },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := &failSecond{fail: fail}
			b := setup(t, func(o *options) { o.wrap = func(p provider.Provider) provider.Provider { f.Provider = p; return f } })
			sk := b.setupStore(t, "app_shop").str("secret_key")
			body := setupBody("app_shop", "https://store.example/new")
			first := b.keyed(t, sk, "k", body)
			requireError(t, first, http.StatusInternalServerError, "internal_error")
			retry := b.keyed(t, sk, "k", body)
			requireFresh(t, retry, http.StatusOK)
			require.NotEmpty(t, retry.Body["webhook_secret"])
			require.Equal(t, 3, f.count(), "the retry ran the setup")
			// From then on the key answers with the retry's response.
			requireReplay(t, retry, b.keyed(t, sk, "k", body))
		})
	}
}

func TestIdempotencyExpiresAfter24Hours(t *testing.T) {
	t.Parallel()
	b := setup(t)
	sk := b.setupStore(t, "app_shop").str("secret_key")
	body := setupBody("app_shop", "https://store.example/new")
	first := b.keyed(t, sk, "k", body)
	requireFresh(t, first, http.StatusOK)

	b.clock.Advance(httpapi.IdempotencyKeyTTL - time.Second)
	requireReplay(t, first, b.keyed(t, sk, "k", body))
	other := setupBody("app_shop", "https://store.example/other")
	requireError(t, b.keyed(t, sk, "k", other), http.StatusUnprocessableEntity, "idempotency_key_reused")

	// From 24 h on, the key is free for any request.
	b.clock.Advance(time.Second)
	requireFresh(t, b.keyed(t, sk, "k", other), http.StatusOK)
	requireFresh(t, b.keyed(t, sk, "k2", body), http.StatusOK)
	// And the request that expired runs again when repeated later.
	b.clock.Advance(httpapi.IdempotencyKeyTTL)
	requireError(t, b.keyed(t, sk, "k2", body), http.StatusConflict, "store_already_enabled")
}

func TestIdempotencyKeyInUse(t *testing.T) {
	t.Parallel()
	b, h := setupWithHold(t)
	sk := b.setupStore(t, "app_shop").str("secret_key")
	body := setupBody("app_shop", "https://store.example/new")

	held := h.arm(t)
	done := make(chan *response)
	go func() { done <- b.keyed(t, sk, "k", body) }()
	<-held.entered

	r := b.keyed(t, sk, "k", body)
	requireError(t, r, http.StatusConflict, "idempotency_key_in_use")
	require.Equal(t, "1", r.Header.Get("Retry-After"))
	requireError(t, b.keyed(t, sk, "k", setupBody("app_shop", "https://store.example/other")),
		http.StatusUnprocessableEntity, "idempotency_key_reused")

	held.open()
	first := <-done
	requireFresh(t, first, http.StatusOK)
	requireReplay(t, first, b.keyed(t, sk, "k", body))
	require.Equal(t, 2, h.count(), "the store's setup and the keyed one")
}

func TestIdempotencyConcurrentRequestsRunOnce(t *testing.T) {
	t.Parallel()
	b, h := setupWithHold(t)
	sk := b.setupStore(t, "app_shop").str("secret_key")
	body := setupBody("app_shop", "https://store.example/new")

	held := h.arm(t)
	const n = 10
	results := make(chan *response, n)
	for range n {
		go func() { results <- b.keyed(t, sk, "k", body) }()
	}
	// The one that runs waits in the provider until the others answered.
	<-held.entered
	var inUse int
	for range n - 1 {
		r := <-results
		requireError(t, r, http.StatusConflict, "idempotency_key_in_use")
		inUse++
	}
	held.open()
	requireFresh(t, <-results, http.StatusOK)
	require.Equal(t, n-1, inUse)
	require.Equal(t, 2, h.count(), "one of the ten reached the provider")
}

func TestIdempotencyAbandonedRequestIsTakenOver(t *testing.T) {
	t.Parallel()
	b, h := setupWithHold(t)
	store := b.setupStore(t, "app_shop")
	sk := store.str("secret_key")
	body := setupBody("app_shop", "https://store.example/new")

	// A request that hangs (as if its process died) holds the key...
	held := h.arm(t)
	done := make(chan *response)
	go func() { done <- b.keyed(t, sk, "k", body) }()
	<-held.entered
	b.clock.Advance(httpapi.IdempotencyLockTimeout - time.Second)
	requireError(t, b.keyed(t, sk, "k", body), http.StatusConflict, "idempotency_key_in_use")

	// ...until the lock time-out; then the same request takes it over and
	// runs. Another request still may not use the key.
	b.clock.Advance(time.Second)
	requireError(t, b.keyed(t, sk, "k", setupBody("app_shop", "https://store.example/other")),
		http.StatusUnprocessableEntity, "idempotency_key_reused")
	second := b.keyed(t, sk, "k", body)
	requireFresh(t, second, http.StatusOK)

	// The hung request ends (here with setup_conflict, as the store
	// changed under it); it no longer owns the key and stores nothing.
	held.open()
	requireError(t, <-done, http.StatusConflict, "setup_conflict")
	requireReplay(t, second, b.keyed(t, sk, "k", body))
	require.Contains(t, b.logs.String(), "outlived its key's lock")
}

func TestIdempotencyKeysArePerStore(t *testing.T) {
	t.Parallel()
	b := setup(t)
	skA := b.setupStore(t, "app_a").str("secret_key")
	skB := b.setupStore(t, "app_b").str("secret_key")
	a := b.keyed(t, skA, "same", setupBody("app_a", "https://store.example/a"))
	requireFresh(t, a, http.StatusOK)
	bb := b.keyed(t, skB, "same", setupBody("app_b", "https://store.example/b"))
	requireFresh(t, bb, http.StatusOK)
	require.NotEqual(t, a.str("id"), bb.str("id"))
	requireReplay(t, a, b.keyed(t, skA, "same", setupBody("app_a", "https://store.example/a")))
	requireReplay(t, bb, b.keyed(t, skB, "same", setupBody("app_b", "https://store.example/b")))
}

// TestIdempotencyAcrossProcesses runs a second server on the same
// database, as a second process would: the database is the only shared
// state.
func TestIdempotencyAcrossProcesses(t *testing.T) {
	t.Parallel()
	b, h := setupWithHold(t)
	sk := b.setupStore(t, "app_shop").str("secret_key")
	st := mustNew(stores.New(stores.Config{AllowInsecureWebhooks: true, Clock: b.clock, Provider: b.sandbox, Storage: b.db}))
	srv := httptest.NewServer(newAPI(t, httpapi.Config{Clock: b.clock, Logger: discardLogger(), Storage: b.db, Stores: st}, b.sandbox))
	t.Cleanup(srv.Close)
	other := *b
	other.srv = srv
	body := setupBody("app_shop", "https://store.example/new")

	held := h.arm(t)
	done := make(chan *response)
	go func() { done <- b.keyed(t, sk, "k", body) }()
	<-held.entered
	requireError(t, other.keyed(t, sk, "k", body), http.StatusConflict, "idempotency_key_in_use")
	held.open()
	first := <-done
	requireFresh(t, first, http.StatusOK)
	requireReplay(t, first, other.keyed(t, sk, "k", body))
}
