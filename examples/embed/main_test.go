package main

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// serve runs the example until the test ends and returns its base URL.
func serve(t *testing.T, o options) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	o.addr = ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, o) }()
	t.Cleanup(func() { cancel(); require.NoError(t, <-done) })

	// Up when /internal/healthz answers; a run that ends first failed to start.
	base := "http://" + o.addr
	for start := time.Now(); ; {
		resp, err := http.Get(base + "/internal/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case err := <-done:
			done <- err // for the cleanup
			t.Fatalf("the example stopped before it served: %v", err)
		case <-time.After(10 * time.Millisecond):
		}
		require.Less(t, time.Since(start), 2*time.Minute, "server up")
	}
	return base
}

func TestEmbeddedUnderAPrefix(t *testing.T) {
	t.Setenv("KEELPAY_ENCRYPTION_KEY", "")
	dbPath := filepath.Join(t.TempDir(), "embed.db")
	base := serve(t, options{dbPath: dbPath, insecureWebhooks: true})

	// The key file beside the database, for the owner only.
	fi, err := os.Stat(dbPath + ".key")
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	resp, err := http.Get(base + "/")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "the store's own routes still answer")

	resp, err = http.Post(base+"/payments/v1/setup", "application/json", strings.NewReader(
		`{"client_id":"app_embed","client_secret":"secret_embed","webhook_url":"http://127.0.0.1:9/hooks"}`))
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	var store map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&store))
	require.Regexp(t, `^sk_`, store["secret_key"])
}

func TestProductionWebhookPolicyByDefault(t *testing.T) {
	t.Setenv("KEELPAY_ENCRYPTION_KEY", "")
	base := serve(t, options{dbPath: filepath.Join(t.TempDir(), "embed.db")})
	resp, err := http.Post(base+"/payments/v1/setup", "application/json", strings.NewReader(
		`{"client_id":"app_embed","client_secret":"secret_embed","webhook_url":"http://127.0.0.1:9/hooks"}`))
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	var body struct {
		Error struct {
			Message string         `json:"message"`
			Details map[string]any `json:"details"`
		} `json:"error"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	require.Equal(t, "invalid_webhook_url", body.Error.Details["code"])
	// The message says how a local receiver is allowed, and never echoes
	// the URL.
	require.Contains(t, body.Error.Message, "AllowInsecureWebhooks")
	require.Contains(t, body.Error.Message, "sandbox mode")
	require.NotContains(t, body.Error.Message, "127.0.0.1:9")
}
