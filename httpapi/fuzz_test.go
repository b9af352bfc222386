package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/keelpay/keelpay/httpapi"
	"github.com/keelpay/keelpay/keelpaytest"
	"github.com/keelpay/keelpay/keyring/keyringtest"
	"github.com/keelpay/keelpay/provider/sandbox"
	"github.com/keelpay/keelpay/storage/sqlite"
	"github.com/keelpay/keelpay/stores"
)

// FuzzSetupRequest sends arbitrary bodies and content types to POST
// /v1/setup: every answer is JSON, every error has a code and a message,
// and nothing panics or is a 500 (the only 5xx are the provider's 503s of
// docs/errors.md, reachable through the sandbox's magic client ids). Run it longer with
//
//	go test ./httpapi -run '^$' -fuzz FuzzSetupRequest -fuzztime 3m
func FuzzSetupRequest(f *testing.F) {
	for _, seed := range []string{
		`{"client_id":"app_shop","client_secret":"secret_shop","webhook_url":"https://store.example/hooks"}`,
		`{"client_id":"app_shop","client_secret":"secret_shop","webhook_url":"https://store.example/hooks","rotate_secret_key":true}`,
		`{"client_id":"app_x_missing_roles","client_secret":"secret_x_missing_roles","webhook_url":"http://127.0.0.1:1/"}`,
		`{"client_id":"app_x_unavailable","client_secret":"secret_x_unavailable","webhook_url":"https://s.example"}`,
		`{"client_id":"app_a","client_id":"app_b"}`,
		`{"client_id":5}`, `[]`, `{} {}`, "{\"a\":\"\xff\"}", `{"a":{"b":[1,2,{"c":null}]}}`, ``,
		`{"client_id":"app_shop","client_secret":"secret_shop","webhook_url":"https://u:p@h/#f"}`,
	} {
		f.Add(seed, "application/json")
	}
	f.Add(`{}`, "text/plain")
	f.Add(`{}`, "application/json; charset=utf-8")

	db, err := sqlite.Open(context.Background(), sqlite.Config{Keyring: keyringtest.Keyring(), Path: filepath.Join(f.TempDir(), "fuzz.db")})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { db.Close() })
	clock := keelpaytest.NewClock(time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC))
	sb := sandbox.New(sandbox.Config{Clock: clock})
	st := mustNew(stores.New(stores.Config{AllowInsecureWebhooks: true, Clock: clock, Provider: sb, Storage: db}))
	h := newAPI(f, httpapi.Config{Clock: clock, Metrics: prometheus.NewRegistry(), Storage: db, Stores: st, Logger: discardLogger()}, sb)

	f.Fuzz(func(t *testing.T, body, contentType string) {
		// Keep the rate limits from answering everything.
		clock.Advance(time.Minute)
		r := httptest.NewRequest("POST", "/v1/setup", strings.NewReader(body))
		r.Header.Set("Content-Type", contentType)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code == http.StatusInternalServerError || w.Code > http.StatusServiceUnavailable {
			t.Fatalf("status %d for %q (%q): %s", w.Code, body, contentType, w.Body)
		}
		var out struct {
			Error *struct {
				Code    string `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil {
			t.Fatalf("not JSON: %s", w.Body)
		}
		if w.Code >= 400 && (out.Error == nil || out.Error.Code == "" || out.Error.Message == "") {
			t.Fatalf("error without code or message: %s", w.Body)
		}
		// The only 503s of setup are the provider's (docs/errors.md).
		if w.Code == http.StatusServiceUnavailable && !strings.HasPrefix(out.Error.Code, "provider_") && !strings.HasPrefix(out.Error.Code, "platform_") {
			t.Fatalf("unexpected 503 %s", w.Body)
		}
		if w.Code < 400 && w.Code != http.StatusOK && w.Code != http.StatusCreated {
			t.Fatalf("unexpected status %d", w.Code)
		}
	})
}
