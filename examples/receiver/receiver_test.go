package main

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay/webhooks"
)

const (
	secret      = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	otherSecret = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD"
)

// testReceiver is a receiver on a real SQLite file behind a real HTTP server.
type testReceiver struct {
	r      *receiver
	url    string
	served chan struct{} // one value per request handled completely
	logs   *lockedBuffer
	close  func() error // stops the server, waits for the processing, closes the database
}

// stop closes tr and fails the test if that takes more than 10 seconds.
func (tr *testReceiver) stop(t *testing.T) {
	t.Helper()
	errc := make(chan error, 1)
	go func() { errc <- tr.close() }()
	select {
	case err := <-errc:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("the receiver did not stop")
	}
}

// startReceiver starts a receiver on the database file at path, verifying
// with secrets (default: secret). It is closed when the test ends.
func startReceiver(t *testing.T, path string, secrets ...string) *testReceiver {
	t.Helper()
	if len(secrets) == 0 {
		secrets = []string{secret}
	}
	tr, h := newTestReceiver(t, path, secrets)
	srv := httptest.NewServer(h)
	tr.url = srv.URL + "/webhooks"
	closeDB := tr.close
	tr.close = sync.OnceValue(func() error {
		srv.Close()
		return closeDB()
	})
	return tr
}

// newTestReceiver opens a receiver on the database file at path, verifying
// with secrets, and returns it with its handler, for the test to serve.
// It is closed when the test ends: tr.close waits for the processing, then
// closes the database.
func newTestReceiver(t *testing.T, path string, secrets []string) (*testReceiver, http.Handler) {
	t.Helper()
	v, err := webhooks.NewVerifier(secrets)
	require.NoError(t, err)
	db, err := openDB(t.Context(), path)
	require.NoError(t, err)
	logs := &lockedBuffer{}
	tr := &testReceiver{
		r:      &receiver{db: db, log: slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{ReplaceAttr: dropTime}))},
		served: make(chan struct{}, 1000),
		logs:   logs,
	}
	tr.close = sync.OnceValue(func() error {
		tr.r.wait()
		return db.Close()
	})
	// tr.stop reads tr.close when the test ends, so that startReceiver can
	// wrap it.
	t.Cleanup(func() { tr.stop(t) })
	return tr, tr.r.newHandler(v, func() { tr.served <- struct{}{} })
}

func dbPath(t *testing.T) string { return filepath.Join(t.TempDir(), "receiver.db") }

// deliver posts body as event id, signed now with signingSecret the way the
// service signs, and returns the status.
func (tr *testReceiver) deliver(t *testing.T, signingSecret, id string, body []byte) int {
	t.Helper()
	status, err := tr.post(signingSecret, id, body)
	require.NoError(t, err)
	return status
}

// post is deliver for other goroutines than the test's.
func (tr *testReceiver) post(signingSecret, id string, body []byte) (int, error) {
	s, err := webhooks.NewSigner(signingSecret)
	if err != nil {
		return 0, err
	}
	req, err := http.NewRequest(http.MethodPost, tr.url, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	ts := time.Now()
	req.Header.Set(webhooks.HeaderID, id)
	req.Header.Set(webhooks.HeaderTimestamp, strconv.FormatInt(ts.Unix(), 10))
	req.Header.Set(webhooks.HeaderSignature, s.Sign(id, ts, body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, err
}

// deliverConcurrently delivers each of bodies (by event id) at the same time
// and checks that every delivery is answered with 204.
func (tr *testReceiver) deliverConcurrently(t *testing.T, ids []string, bodies [][]byte) {
	t.Helper()
	var wg sync.WaitGroup
	statuses, errs := make([]int, len(ids)), make([]error, len(ids))
	start := make(chan struct{})
	for i := range ids {
		wg.Go(func() {
			<-start
			statuses[i], errs[i] = tr.post(secret, ids[i], bodies[i])
		})
	}
	close(start)
	wg.Wait()
	for i, s := range statuses {
		require.NoError(t, errs[i])
		require.Equal(t, http.StatusNoContent, s, ids[i])
	}
}

// waitServed waits until the receiver has finished n requests, processing
// included.
func (tr *testReceiver) waitServed(t *testing.T, n int) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for range n {
		select {
		case <-tr.served:
		case <-timeout:
			t.Fatalf("receiver did not finish %d requests in time", n)
		}
	}
}

// processed is how many times the event was processed: processing logs
// exactly one line with the event's id.
func (tr *testReceiver) processed(t *testing.T, id string) int {
	t.Helper()
	n := 0
	for _, l := range tr.logLines(t) {
		if l["event_id"] == id {
			n++
		}
	}
	return n
}

func (tr *testReceiver) logLines(t *testing.T) []map[string]any {
	t.Helper()
	var lines []map[string]any
	for line := range strings.Lines(tr.logs.String()) {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m))
		lines = append(lines, m)
	}
	return lines
}

func (tr *testReceiver) count(t *testing.T, query string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, tr.r.db.QueryRowContext(t.Context(), query, args...).Scan(&n))
	return n
}

func (tr *testReceiver) fulfilments(t *testing.T, intent string) int {
	t.Helper()
	return tr.count(t, `SELECT count(*) FROM orders_fulfilled WHERE payment_intent = ?`, intent)
}

// intentEvent is the body of an event about a payment intent.
func intentEvent(t *testing.T, id, typ, intent, status string) []byte {
	t.Helper()
	body, err := json.Marshal(map[string]any{
		"id": id, "type": typ, "created_at": "2025-03-14T15:09:26Z",
		"data": map[string]any{"object": map[string]any{
			"id": intent, "object": "payment_intent", "status": status,
			"amount": 4200, "currency": "EUR", "reference": "order-1001",
			"metadata": map[string]string{"cart": "c_77"},
		}},
	})
	require.NoError(t, err)
	return body
}

func TestSignature(t *testing.T) {
	t.Parallel()
	tr := startReceiver(t, dbPath(t))
	body := intentEvent(t, "evt_1", "payment_intent.succeeded", "pi_1", "succeeded")

	require.Equal(t, http.StatusBadRequest, tr.deliver(t, otherSecret, "evt_1", body), "signed with another secret")
	tampered := bytes.Replace(body, []byte("4200"), []byte("4201"), 1)
	req, err := http.NewRequest(http.MethodPost, tr.url, bytes.NewReader(tampered))
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusBadRequest, resp.StatusCode, "not signed")
	tr.waitServed(t, 2)
	require.Zero(t, tr.count(t, `SELECT count(*) FROM seen_events`), "an invalid delivery is not recorded")
	require.Zero(t, tr.fulfilments(t, "pi_1"))

	require.Equal(t, http.StatusNoContent, tr.deliver(t, secret, "evt_1", body))
	tr.waitServed(t, 1)
	require.Equal(t, 1, tr.fulfilments(t, "pi_1"))
	require.Equal(t, 1, tr.processed(t, "evt_1"))
}

func TestSameEventConcurrently(t *testing.T) {
	t.Parallel()
	tr := startReceiver(t, dbPath(t))
	body := intentEvent(t, "evt_dup", "payment_intent.succeeded", "pi_1", "succeeded")

	const n = 20
	ids, bodies := make([]string, n), make([][]byte, n)
	for i := range n {
		ids[i], bodies[i] = "evt_dup", body
	}
	tr.deliverConcurrently(t, ids, bodies)
	tr.waitServed(t, n)
	require.Equal(t, 1, tr.fulfilments(t, "pi_1"))
	require.Equal(t, 1, tr.processed(t, "evt_dup"))

	var reference string
	var amount int
	require.NoError(t, tr.r.db.QueryRow(`SELECT reference, amount FROM orders_fulfilled WHERE payment_intent = 'pi_1'`).Scan(&reference, &amount))
	require.Equal(t, "order-1001", reference)
	require.Equal(t, 4200, amount)
}

func TestDifferentEventsSameIntent(t *testing.T) {
	t.Parallel()
	tr := startReceiver(t, dbPath(t))

	// Events are unordered and are snapshots: any payment_intent event whose
	// object has succeeded fulfils, once.
	ids := []string{"evt_a", "evt_b", "evt_c", "evt_d"}
	bodies := [][]byte{
		intentEvent(t, "evt_a", "payment_intent.succeeded", "pi_1", "succeeded"),
		intentEvent(t, "evt_b", "payment_intent.succeeded", "pi_1", "succeeded"),
		intentEvent(t, "evt_c", "payment_intent.succeeded", "pi_1", "succeeded"),
		intentEvent(t, "evt_d", "payment_intent.payment_failed", "pi_1", "succeeded"),
	}
	tr.deliverConcurrently(t, ids, bodies)
	tr.waitServed(t, len(ids))
	require.Equal(t, 1, tr.fulfilments(t, "pi_1"))
	for _, id := range ids {
		require.Equal(t, 1, tr.processed(t, id), id)
	}
	require.Equal(t, 1, tr.count(t, `SELECT count(*) FROM orders_fulfilled`))
}

func TestOnlySucceededStatusFulfils(t *testing.T) {
	t.Parallel()
	tr := startReceiver(t, dbPath(t))

	deliveries := []struct{ id, typ, intent, status string }{
		{"evt_1", "payment_intent.succeeded", "pi_1", "processing"},
		{"evt_2", "payment_intent.succeeded", "pi_2", "requires_action"},
		{"evt_3", "payment_intent.payment_failed", "pi_3", "requires_payment_method"},
		{"evt_4", "payment_intent.canceled", "pi_4", "canceled"},
	}
	for _, d := range deliveries {
		require.Equal(t, http.StatusNoContent, tr.deliver(t, secret, d.id, intentEvent(t, d.id, d.typ, d.intent, d.status)))
	}
	// Not a payment intent, though the type says so.
	body := []byte(`{"id":"evt_5","type":"payment_intent.succeeded","created_at":"2025-03-14T15:09:26Z","data":{"object":{"id":"re_1","object":"refund","status":"succeeded"}}}`)
	require.Equal(t, http.StatusNoContent, tr.deliver(t, secret, "evt_5", body))
	tr.waitServed(t, len(deliveries)+1)

	require.Zero(t, tr.count(t, `SELECT count(*) FROM orders_fulfilled`))
	require.Zero(t, tr.count(t, `SELECT count(*) FROM seen_events WHERE processed_at IS NULL`), "all processed")
}

func TestOtherEvents(t *testing.T) {
	t.Parallel()
	tr := startReceiver(t, dbPath(t))

	bodies := map[string]string{
		"evt_r1": `{"id":"evt_r1","type":"refund.succeeded","created_at":"2025-03-14T15:09:26Z","data":{"object":{"id":"re_1","status":"succeeded"}}}`,
		"evt_r2": `{"id":"evt_r2","type":"refund.failed","created_at":"2025-03-14T15:09:26Z","data":{"object":{"id":"re_2","status":"failed","last_error":{"code":"refund_rejected"}}}}`,
		"evt_c":  `{"id":"evt_c","type":"card.created","created_at":"2025-03-14T15:09:26Z","data":{"object":{"id":"card_1","card_session":"cs_1"}}}`,
		"evt_t":  `{"id":"evt_t","type":"webhook.test","created_at":"2025-03-14T15:09:26Z","data":{"object":{"message":"test"}}}`,
		"evt_x":  `{"id":"evt_x","type":"something.new","created_at":"2025-03-14T15:09:26Z","data":{"object":{}}}`,
	}
	for id, body := range bodies {
		require.Equal(t, http.StatusNoContent, tr.deliver(t, secret, id, []byte(body)), id)
	}
	tr.waitServed(t, len(bodies))
	for id := range bodies {
		require.Equal(t, 1, tr.processed(t, id), id)
	}
	require.Zero(t, tr.count(t, `SELECT count(*) FROM orders_fulfilled`))
	require.Zero(t, tr.count(t, `SELECT count(*) FROM seen_events WHERE processed_at IS NULL`))
}

func TestSeenSurvivesRestart(t *testing.T) {
	t.Parallel()
	path := dbPath(t)
	body := intentEvent(t, "evt_1", "payment_intent.succeeded", "pi_1", "succeeded")

	first := startReceiver(t, path)
	require.Equal(t, http.StatusNoContent, first.deliver(t, secret, "evt_1", body))
	first.waitServed(t, 1)
	require.Equal(t, 1, first.processed(t, "evt_1"))
	first.stop(t)

	second := startReceiver(t, path)
	require.Equal(t, http.StatusNoContent, second.deliver(t, secret, "evt_1", body), "a repeat is acknowledged")
	second.waitServed(t, 1)
	require.Zero(t, second.processed(t, "evt_1"), "and not processed again")
	require.Equal(t, 1, second.fulfilments(t, "pi_1"))

	other := intentEvent(t, "evt_2", "payment_intent.succeeded", "pi_2", "succeeded")
	require.Equal(t, http.StatusNoContent, second.deliver(t, secret, "evt_2", other))
	second.waitServed(t, 1)
	require.Equal(t, 1, second.processed(t, "evt_2"))
	require.Equal(t, 2, second.count(t, `SELECT count(*) FROM orders_fulfilled`))
}

func TestWarnUnprocessed(t *testing.T) {
	t.Parallel()
	tr := startReceiver(t, dbPath(t))
	seen, err := tr.r.SeenBefore(t.Context(), "evt_lost") // accepted, then the process died
	require.NoError(t, err)
	require.False(t, seen)
	seen, err = tr.r.SeenBefore(t.Context(), "evt_lost")
	require.NoError(t, err)
	require.True(t, seen)

	require.NoError(t, tr.r.warnUnprocessed(t.Context()))
	lines := tr.logLines(t)
	require.Len(t, lines, 1)
	require.Equal(t, "evt_lost", lines[0]["event_id"])
	require.Equal(t, "WARN", lines[0]["level"])
}

func TestRotation(t *testing.T) {
	t.Parallel()
	secrets := parseSecrets(" " + otherSecret + " ," + secret + ",")
	require.Equal(t, []string{otherSecret, secret}, secrets)
	require.Empty(t, parseSecrets(" , "))

	tr := startReceiver(t, dbPath(t), secrets...)
	for i, s := range []string{secret, otherSecret} {
		id := "evt_" + strconv.Itoa(i)
		require.Equal(t, http.StatusNoContent, tr.deliver(t, s, id, intentEvent(t, id, "webhook.test", "pi_1", "succeeded")))
	}
	tr.waitServed(t, 2)
}

// dropTime leaves the time out of the test's log records: its digits could
// hold a short value a test looks for, such as an amount.
func dropTime(groups []string, a slog.Attr) slog.Attr {
	if len(groups) == 0 && a.Key == slog.TimeKey {
		return slog.Attr{}
	}
	return a
}

func TestLogsNoBodiesOrSecrets(t *testing.T) {
	t.Parallel()
	tr := startReceiver(t, dbPath(t))
	body := intentEvent(t, "evt_1", "payment_intent.succeeded", "pi_1", "succeeded")
	require.Equal(t, http.StatusNoContent, tr.deliver(t, secret, "evt_1", body))
	tr.waitServed(t, 1)

	logs := tr.logs.String()
	require.Contains(t, logs, `"event_id":"evt_1"`)
	require.Contains(t, logs, `"type":"payment_intent.succeeded"`)
	for _, s := range []string{"order-1001", "c_77", "4200", secret, secret[len("whsec_"):]} {
		require.NotContains(t, logs, s)
	}
}

// A signature entry of 44 base64 characters without padding decodes to 33
// bytes. Whatever the verifier does with it, the delivery is not accepted and
// the receiver still stops: wait does not hang on the request.
func TestUnpaddedSignatureThenStop(t *testing.T) {
	t.Parallel()
	tr := startReceiver(t, dbPath(t))
	body := intentEvent(t, "evt_1", "payment_intent.succeeded", "pi_1", "succeeded")
	req, err := http.NewRequest(http.MethodPost, tr.url, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set(webhooks.HeaderID, "evt_1")
	req.Header.Set(webhooks.HeaderTimestamp, strconv.FormatInt(time.Now().Unix(), 10))
	req.Header.Set(webhooks.HeaderSignature, "v1,"+strings.Repeat("A", 44))
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	} // else the handler panicked and net/http closed the connection
	tr.stop(t)
}

func TestWAL(t *testing.T) {
	t.Parallel()
	tr := startReceiver(t, dbPath(t))
	var mode string
	require.NoError(t, tr.r.db.QueryRow(`PRAGMA journal_mode`).Scan(&mode))
	require.Equal(t, "wal", mode)
}

// lockedBuffer is a bytes.Buffer safe for concurrent use.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
