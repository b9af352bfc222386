package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// chromium returns the path of the installed Chromium, or skips t (fails
// it under KEELPAY_REQUIRE_CHROMIUM=1) when there is none.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	if os.Getenv("KEELPAY_REQUIRE_CHROMIUM") == "1" {
		t.Fatal("no Chromium found, and KEELPAY_REQUIRE_CHROMIUM=1 requires the browser tests (apt-get install chromium)")
	}
	t.Skip("no Chromium found: browser tests skipped (apt-get install chromium)")
	return ""
}

// newBrowser starts a headless Chromium with a fresh profile for the test
// and returns its tab, bounded by timeout (starting the browser is not
// counted). The page's console goes to the test log when the test fails.
func newBrowser(t *testing.T, timeout time.Duration) context.Context {
	t.Helper()
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(chromium(t)),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		// Without these, a machine with no outside network refuses
		// Chromium's own connections.
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 1000),
	)
	ctx, cancel := chromedp.NewContext(allocCtx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	require.NoError(t, chromedp.Do(ctx)) // starts the browser, without the time limit below

	var mu sync.Mutex
	var console []string
	consoleCtx, stopConsole := context.WithCancel(ctx)
	messages := chromedp.Console(consoleCtx)
	go func() {
		for m, err := range messages {
			if err != nil {
				return
			}
			mu.Lock()
			console = append(console, m.String())
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		stopConsole()
		if t.Failed() {
			mu.Lock()
			t.Logf("page console:\n%s", strings.Join(console, "\n"))
			mu.Unlock()
		}
	})
	tctx, tcancel := context.WithTimeout(ctx, timeout)
	t.Cleanup(tcancel)
	return tctx
}

// screenshot saves the whole page as a PNG test artifact named name, in
// $KEELPAY_ARTIFACTS or else testdata/artifacts of the test's package.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	dir := os.Getenv("KEELPAY_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join("testdata", "artifacts")
	}
	dir, err := filepath.Abs(dir)
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	path := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(path, png, 0o644))
	t.Logf("screenshot: %s", path)
}
