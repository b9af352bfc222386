package main

import (
	"bufio"
	"context"
	"crypto/sha512"
	"encoding/base64"
	"errors"
	"fmt"
	"html"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay/webhooks"
)

// keelpayURL is the reference server that TestMain builds and starts: a
// real process on 127.0.0.1, with its own SQLite file, as a store would
// run next to it. Its origin differs from the checkouts' (localhost).
var keelpayURL string

func TestMain(m *testing.M) {
	os.Exit(runTests(m))
}

func runTests(m *testing.M) int {
	dir, err := os.MkdirTemp("", "checkout-test")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "refserver")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/keelpay/keelpay/cmd/refserver").CombinedOutput(); err != nil {
		panic("build refserver: " + err.Error() + "\n" + string(out))
	}
	cmd := exec.Command(bin, "-addr", "127.0.0.1:0", "-db", filepath.Join(dir, "keelpay.db"), "-log-format", "json")
	cmd.Dir = dir
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		panic(err)
	}
	logs, err := os.Create(filepath.Join(dir, "refserver.log"))
	if err != nil {
		panic(err)
	}
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		panic(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if m := regexp.MustCompile(`listening on (http://\S+)`).FindStringSubmatch(sc.Text()); m != nil {
			keelpayURL = m[1]
			break
		}
	}
	if keelpayURL == "" {
		panic("the reference server printed no URL")
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()

	code := m.Run()
	if code != 0 {
		// The server's log helps to understand a failure.
		if data, err := os.ReadFile(logs.Name()); err == nil {
			fmt.Fprintf(os.Stderr, "--- reference server log (last 8 KiB):\n%s\n", tail(data, 8<<10))
		}
	}
	return code
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// checkout is a checkout server of one test, on its own sandbox
// application (so its own store), listening on localhost.
type checkout struct {
	srv    *server
	url    string
	events chan webhooks.Event

	mu       sync.Mutex
	requests []string // every request it got: method, URI and body
}

var storeSeq atomic.Int64

// newClientID returns a sandbox application id of its own for a test.
func newClientID(t *testing.T) string {
	name := strings.ToLower(regexp.MustCompile(`[^A-Za-z0-9]+`).ReplaceAllString(t.Name(), "_"))
	if len(name) > 40 {
		name = name[:40]
	}
	return fmt.Sprintf("app_ck_%s_%d_%d", name, time.Now().UnixNano()%1e6, storeSeq.Add(1))
}

// startCheckout starts a checkout server for the application clientID.
func startCheckout(t *testing.T, clientID string) *checkout {
	t.Helper()
	ln, origin, err := listen("localhost:0")
	require.NoError(t, err)
	c := &checkout{url: origin, events: make(chan webhooks.Event, 100)}
	c.srv, err = newServer(context.Background(), config{
		keelpay:      keelpayURL,
		clientID:     clientID,
		clientSecret: "secret_" + strings.TrimPrefix(clientID, "app_"),
		origin:       origin,
		log:          slog.New(slog.NewTextHandler(io.Discard, nil)),
		observe: func(method, uri string, body []byte) {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.requests = append(c.requests, method+" "+uri+"\n"+string(body))
		},
		onEvent: func(e webhooks.Event) { c.events <- e },
	})
	if err != nil {
		ln.Close()
		require.NoError(t, err)
	}
	hs := &http.Server{Handler: c.srv, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() { _ = hs.Close() })
	return c
}

// waitEvent waits for a webhook of type typ about object id (any object
// when id is empty) and returns it.
func (c *checkout) waitEvent(t *testing.T, typ, id string) webhooks.Event {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case e := <-c.events:
			if e.Type == typ && (id == "" || strings.Contains(string(e.Data.Object), `"id":"`+id+`"`)) {
				return e
			}
		case <-timeout:
			t.Fatalf("no %s webhook about %q arrived", typ, id)
		}
	}
}

// requireNeverSaw asserts that no request the checkout got carried any of
// the values, in its address or its body.
func (c *checkout) requireNeverSaw(t *testing.T, values ...string) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	require.NotEmpty(t, c.requests)
	for _, r := range c.requests {
		for _, v := range values {
			require.NotContains(t, r, v)
			// Also written in groups, as the field shows it.
			require.NotContains(t, r, strings.Join(regexp.MustCompile(`.{1,4}`).FindAllString(v, -1), " "))
		}
	}
}

// keelpayCall calls keelpay's API; any 2xx is reported as 200.
func keelpayCall(t *testing.T, method, path, key string, body any) (int, map[string]any) {
	t.Helper()
	c := &apiClient{base: keelpayURL, secretKey: key, http: httpClient}
	var out map[string]any
	err := c.call(context.Background(), method, path, body, &out)
	var e *apiError
	if errors.As(err, &e) {
		return e.Status, map[string]any{"error": map[string]any{"code": e.Code}}
	}
	require.NoError(t, err)
	return http.StatusOK, out
}

func TestCheckoutSetsItsStoreUpOnEveryStart(t *testing.T) {
	clientID := newClientID(t)
	first := startCheckout(t, clientID)
	status, _ := keelpayCall(t, "POST", "/v1/webhooks/test", first.srv.keys.SecretKey, nil)
	require.Equal(t, http.StatusOK, status)
	first.waitEvent(t, "webhook.test", "")

	// A second start of the same application: the same store, fresh
	// secrets; the first process's secret key stops working and its
	// webhook secret stops signing.
	second := startCheckout(t, clientID)
	require.Equal(t, first.srv.keys.ID, second.srv.keys.ID)
	require.Equal(t, first.srv.keys.PublishableKey, second.srv.keys.PublishableKey)
	require.NotEqual(t, first.srv.keys.SecretKey, second.srv.keys.SecretKey)
	require.NotEqual(t, first.srv.keys.WebhookSecret, second.srv.keys.WebhookSecret)
	status, body := keelpayCall(t, "POST", "/v1/webhooks/test", first.srv.keys.SecretKey, nil)
	require.Equal(t, http.StatusUnauthorized, status, "%v", body)
	status, _ = keelpayCall(t, "POST", "/v1/webhooks/test", second.srv.keys.SecretKey, nil)
	require.Equal(t, http.StatusOK, status)
	second.waitEvent(t, "webhook.test", "")
}

func TestCheckoutPageAndItsAPI(t *testing.T) {
	c := startCheckout(t, newClientID(t))
	resp, err := http.Get(c.url + "/")
	require.NoError(t, err)
	page, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "default-src 'none'; script-src 'self' "+keelpayURL+"; style-src 'self'; connect-src 'self'; frame-src "+
		keelpayURL+"; img-src 'self'; form-action 'none'; base-uri 'none'; frame-ancestors 'none'",
		resp.Header.Get("Content-Security-Policy"))

	// keelpay.js is pinned to the bytes keelpay serves.
	resp, err = http.Get(keelpayURL + "/js/v1/keelpay.js")
	require.NoError(t, err)
	script, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	sum := sha512.Sum384(script)
	// (html/template writes the base64 "+" as "&#43;", which is the same
	// attribute value.)
	require.Contains(t, html.UnescapeString(string(page)), `<script src="`+keelpayURL+`/js/v1/keelpay.js" integrity="sha384-`+
		base64.StdEncoding.EncodeToString(sum[:])+`" crossorigin="anonymous"></script>`)
	require.Contains(t, string(page), `data-publishable-key="`+c.srv.keys.PublishableKey+`"`)
	require.NotContains(t, string(page), c.srv.keys.SecretKey)

	// The store's API has no place for card details.
	resp, err = http.Post(c.url+"/api/payments", "application/json",
		strings.NewReader(`{"amount":100,"customer":"cus_1","number":"4242424242424242"}`))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	resp, err = http.Post(c.url+"/api/payments", "application/json", strings.NewReader(`{"amount":100,"customer":"cus_1"}`))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	// keelpay's refusals reach the page with their code.
	resp, err = http.Post(c.url+"/api/payments", "application/json", strings.NewReader(`{"amount":0,"customer":"cus_1"}`))
	require.NoError(t, err)
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusBadGateway, resp.StatusCode)
	require.Contains(t, string(data), `"code":"invalid_request"`)

	// Its webhook endpoint takes only deliveries signed for this store.
	resp, err = http.Post(c.url+"/webhooks", "application/json", strings.NewReader(`{"id":"evt_x","type":"webhook.test"}`))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
}

// TestSavedCardsListEachCardOnce: the same card saved twice (a new card id
// each time) is listed once, as the newer of the two, whatever order the
// page's call and the card.created webhooks arrive in.
func TestSavedCardsListEachCardOnce(t *testing.T) {
	visa := func(id, created string) *card {
		c := &card{ID: id, Brand: "visa", Last4: "4242", ExpMonth: 12, ExpYear: 2030, CreatedAt: created}
		c.Customer.ID = "cus_1"
		return c
	}
	older, newer := visa("card_a", "2026-11-22T10:00:00Z"), visa("card_b", "2026-11-22T10:05:00Z")
	other := visa("card_c", "2026-11-22T10:06:00Z")
	other.ExpYear = 2031
	for _, order := range [][]*card{{older, newer, other}, {newer, older, other}, {other, newer, older, newer}} {
		s := &server{cards: map[string][]*card{}, known: map[string]struct{}{}}
		for _, c := range order {
			s.recordCard(c)
		}
		var ids []string
		for _, c := range s.customerCards("cus_1") {
			ids = append(ids, c.ID)
		}
		if len(ids) != 2 || !slices.Contains(ids, "card_b") || !slices.Contains(ids, "card_c") {
			t.Errorf("recorded in the order %s, %s, ...: listed %v, want card_b and card_c", order[0].ID, order[1].ID, ids)
		}
	}
}
