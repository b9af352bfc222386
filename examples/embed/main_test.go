package main

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestEmbeddedUnderAPrefix(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- run(ctx, addr, filepath.Join(t.TempDir(), "embed.db")) }()
	defer func() { cancel(); require.NoError(t, <-done) }()

	base := "http://" + addr
	require.Eventually(t, func() bool {
		resp, err := http.Get(base + "/payments/healthz")
		if err == nil {
			resp.Body.Close()
		}
		return err == nil && resp.StatusCode == http.StatusOK
	}, 5*time.Second, 5*time.Millisecond, "server up")

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
