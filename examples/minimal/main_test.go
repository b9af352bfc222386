package main

import (
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestTheReadmeShowsThisProgram: the go block of the README's "Embedding"
// section is this file, from its package clause on.
func TestTheReadmeShowsThisProgram(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(readme), "\n### Embedding\n")
	require.True(t, ok, "README.md has a section \"### Embedding\"")
	_, block, ok := strings.Cut(section, "\n```go\n")
	require.True(t, ok, "the Embedding section has a go block")
	block, _, ok = strings.Cut(block, "\n```\n")
	require.True(t, ok, "the go block ends")

	src, err := os.ReadFile("main.go")
	require.NoError(t, err)
	i := bytes.Index(src, []byte("package main\n"))
	require.GreaterOrEqual(t, i, 0)
	require.Equal(t, strings.TrimSuffix(string(src[i:]), "\n"), block,
		"README.md's Embedding block must be examples/minimal/main.go from \"package main\" on")
}

// TestTheReadmeProgramRuns builds the program, runs it on a free port and
// pays with the 3D Secure test card through it: the API and the challenge
// page answer under /payments/, with the keys in shop.db.key.
func TestTheReadmeProgramRuns(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "minimal")
	out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "%s", out)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(bin)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "ADDR="+addr)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	var waitErr error
	exited := make(chan struct{})
	go func() { waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})

	base := "http://" + addr
	client := &http.Client{Timeout: 30 * time.Second}
	require.Eventually(t, func() bool {
		resp, err := client.Get(base + "/internal/healthz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, time.Minute, 20*time.Millisecond, "the program serves; stderr: %s", &stderr)
	fi, err := os.Stat(filepath.Join(dir, "shop.db.key"))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	call := func(method, path, key string, body any, want int) map[string]any {
		t.Helper()
		b, err := json.Marshal(body)
		require.NoError(t, err)
		req, err := http.NewRequest(method, base+path, bytes.NewReader(b))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := client.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		var v map[string]any
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&v))
		require.Equal(t, want, resp.StatusCode, "%s %s: %v", method, path, v)
		return v
	}
	store := call("POST", "/payments/v1/setup", "", map[string]any{
		"client_id": "app_readme", "client_secret": "secret_readme", "webhook_url": "https://shop.example/webhooks"}, http.StatusCreated)
	sk, pk := store["secret_key"].(string), store["publishable_key"].(string)
	pi := call("POST", "/payments/v1/payment_intents", sk, map[string]any{"amount": 1000, "currency": "EUR",
		"customer": map[string]any{"id": "cus_1", "name": "Ada Lovelace", "email": "ada@example.com", "phone": "+358401234567"}}, http.StatusCreated)
	id := pi["id"].(string)
	confirmed := call("POST", "/payments/v1/payment_intents/"+id+"/confirm", pk, map[string]any{
		"client_secret": pi["client_secret"], "number": "4000000000003220", "exp_month": 12, "exp_year": time.Now().Year() + 2, "cvc": "123"}, http.StatusOK)
	require.Equal(t, "requires_action", confirmed["status"])
	page := confirmed["next_action"].(map[string]any)["url"].(string)
	require.True(t, strings.HasPrefix(page, base+"/payments/sandbox/3ds/"), page)

	resp, err := client.Get(page)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "the challenge page is mounted")
	resp, err = client.PostForm(page, url.Values{"result": {"complete"}})
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Eventually(t, func() bool {
		return call("GET", "/payments/v1/payment_intents/"+id, sk, nil, http.StatusOK)["status"] == "succeeded"
	}, time.Minute, 20*time.Millisecond, "the intent succeeds once the buyer completes the challenge")

	// An interrupt stops it cleanly.
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	select {
	case <-exited:
		require.NoError(t, waitErr, "stderr: %s", &stderr)
	case <-time.After(time.Minute):
		t.Fatal("the program did not stop on SIGINT")
	}
}
