package main

import (
	"context"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay/internal/browsertest"
)

// The sandbox console in headless Chromium, against the reference server
// binary: trigger a payment, watch its deliveries fail against a stopped
// receiver, start the receiver, replay the failed deliveries.

// waitJS waits until the expression is true in the page.
func waitJS(t *testing.T, ctx context.Context, what, expr string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		// !!: an expression such as `row && row.x` is null, not false,
		// while the row is not there yet.
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool]("!!("+expr+")"))
		require.NoError(t, err)
		if ok {
			return
		}
		if time.Now().After(deadline) {
			text, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
			t.Fatalf("waiting for %s; the page shows:\n%s", what, text)
		}
		time.Sleep(50 * time.Millisecond) // polling the page, not waiting for work
	}
}

// receiverAt is a store's receiver on a fixed address that can be started
// after the store was set up with it.
type receiverAt struct {
	addr string
	mu   sync.Mutex
	ids  []string
	srv  *http.Server
}

func (r *receiverAt) start(t *testing.T) {
	t.Helper()
	ln, err := net.Listen("tcp", r.addr)
	require.NoError(t, err)
	r.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.ids = append(r.ids, req.Header.Get("webhook-id"))
		r.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	})}
	go func() { _ = r.srv.Serve(ln) }()
	t.Cleanup(func() { r.srv.Close() })
}

func TestSandboxConsole(t *testing.T) {
	t.Parallel()
	ctx := browsertest.New(t, 3*time.Minute)
	s := start(t, t.TempDir(), []string{"KEELPAY_ADDR=127.0.0.1:0"})
	// The receiver's address is reserved and released: nothing listens
	// there until the receiver starts.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	rec := &receiverAt{addr: ln.Addr().String()}
	require.NoError(t, ln.Close())
	r := must(t, "POST", s.URL+"/v1/setup", "", map[string]any{
		"client_id": "app_console", "client_secret": "secret_console", "webhook_url": "http://" + rec.addr + "/webhooks"})
	require.Equal(t, http.StatusCreated, r.Status)
	key := r.Str("secret_key")

	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(s.URL+"/sandbox/"),
		chromedp.WaitVisible(chromedp.ID("key")),
		chromedp.SendKeys(chromedp.ID("key"), key),
		chromedp.Click(chromedp.CSS(`#connect button[type=submit]`)),
		chromedp.WaitVisible(chromedp.ID("main")),
	))
	stored, err := chromedp.Run(ctx, chromedp.Evaluate[string](`JSON.stringify(localStorage)+JSON.stringify(sessionStorage)+document.cookie+document.getElementById("key").value`))
	require.NoError(t, err)
	require.NotContains(t, stored, key, "the key is kept in memory only")

	// Trigger a payment: its events fail against the stopped receiver.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.SetValue(chromedp.ID("trigger-type"), "payment_intent.succeeded"),
		chromedp.Click(chromedp.CSS(`#trigger button[type=submit]`)),
	))
	waitJS(t, ctx, "the trigger's answer", `document.getElementById("trigger-result").textContent.includes("event evt_")`)
	result, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("trigger-result")))
	require.NoError(t, err)
	eventID := result[strings.Index(result, "evt_"):][:len("evt_")+24]
	row := `document.querySelector('tr[data-event-id="` + eventID + `"]')`
	waitJS(t, ctx, "the first failed attempt", row+` && `+row+`.dataset.attempts === "1"`)

	// Move the clock through the retry schedule until the delivery fails.
	for n := 2; n <= 7; n++ {
		require.NoError(t, chromedp.Do(ctx,
			chromedp.SetValue(chromedp.ID("clock-seconds"), "86400"),
			chromedp.Click(chromedp.CSS(`#clock button[type=submit]`)),
		))
		waitJS(t, ctx, "attempt "+strconv.Itoa(n), row+`.dataset.attempts === "`+strconv.Itoa(n)+`"`)
	}
	waitJS(t, ctx, "the failed delivery", row+`.dataset.delivery === "failed"`)
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`tr[data-event-id="`+eventID+`"] td.actions button`))))
	waitJS(t, ctx, "seven failed attempts",
		`document.querySelectorAll('#attempts tbody tr[data-failure="connection_error"]').length === 7`)
	browsertest.Screenshot(t, ctx, "console-deliveries-failed.png")

	// Start the receiver; replay what failed in one call.
	rec.start(t)
	require.NoError(t, chromedp.Do(ctx,
		chromedp.SetValue(chromedp.ID("replay-status"), "failed"),
		chromedp.Click(chromedp.CSS(`#replay button[type=submit]`)),
	))
	waitJS(t, ctx, "the replay's answer", `document.getElementById("replay-result").textContent.startsWith("Queued 2 failed")`)
	waitJS(t, ctx, "the delivery succeeded", row+`.dataset.delivery === "succeeded"`)
	waitJS(t, ctx, "the successful attempt", `document.querySelectorAll('#attempts tbody tr[data-failure="none"]').length === 1`)
	waitJS(t, ctx, "the intent", `document.querySelector('#intents tbody').textContent.includes("succeeded")`)
	browsertest.Screenshot(t, ctx, "console-replayed.png")
	rec.mu.Lock()
	require.Contains(t, rec.ids, eventID)
	rec.mu.Unlock()

	// Faults are set from the console.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.SetValue(chromedp.ID("f-duplicate"), "1"),
		chromedp.Click(chromedp.CSS(`#faults button[type=submit]`)),
	))
	waitJS(t, ctx, "faults on", `document.getElementById("faults-result").textContent === "Faults on: duplicate 1."`)
	f := must(t, "GET", s.URL+"/sandbox/webhooks/faults", key, nil)
	require.EqualValues(t, 1, f.Body["duplicate"])
	// And turned off.
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.ID("faults-off"))))
	waitJS(t, ctx, "faults off", `document.getElementById("faults-result").textContent === "Faults off."`)
	f = must(t, "GET", s.URL+"/sandbox/webhooks/faults", key, nil)
	require.EqualValues(t, 0, f.Body["duplicate"])
}

func TestSandboxConsoleIsServedWithAStrictPolicy(t *testing.T) {
	t.Parallel()
	s := start(t, t.TempDir(), []string{"KEELPAY_ADDR=127.0.0.1:0"})
	for _, path := range []string{"/sandbox/", "/sandbox/console.js", "/sandbox/console.css"} {
		resp, err := client.Get(s.URL + path)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode, path)
		require.Contains(t, resp.Header.Get("Content-Security-Policy"), "script-src 'self'", path)
		require.Equal(t, "nosniff", resp.Header.Get("X-Content-Type-Options"))
	}
	resp, err := client.Get(s.URL + "/sandbox/nope.js")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
}
