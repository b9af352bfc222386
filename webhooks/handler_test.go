package webhooks_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/keelpay/keelpay/webhooks"
	"github.com/stretchr/testify/require"
)

type call struct {
	ctxErr error
	event  webhooks.Event
	body   []byte
}

type handlerBundle struct {
	client  *http.Client
	url     string
	signer  *webhooks.Signer
	calls   chan call     // one per call of fn
	served  chan struct{} // one per request the handler finished with
	release chan struct{} // fn returns once this is closed
}

func setupHandler(t *testing.T, opts ...webhooks.HandlerOption) *handlerBundle {
	t.Helper()
	release := make(chan struct{})
	close(release)
	return setupHandlerWithRelease(t, release, opts...)
}

// setupHandlerWithRelease sets up a handler whose fn waits for release to be
// closed before it records its call.
func setupHandlerWithRelease(t *testing.T, release chan struct{}, opts ...webhooks.HandlerOption) *handlerBundle {
	t.Helper()
	b := &handlerBundle{
		signer:  newSigner(t, secretA),
		calls:   make(chan call, 100),
		served:  make(chan struct{}, 100),
		release: release,
	}
	fn := func(ctx context.Context, e webhooks.Event, body []byte) {
		<-b.release
		b.calls <- call{ctxErr: ctx.Err(), event: e, body: body}
	}
	opts = append([]webhooks.HandlerOption{webhooks.WithDone(func() { b.served <- struct{}{} })}, opts...)
	srv := httptest.NewServer(webhooks.NewHandler(newVerifier(t, secretA), fn, opts...))
	t.Cleanup(srv.Close)
	b.url = srv.URL
	// The timeout turns a handler that waits for fn before answering into a
	// failure instead of a hang.
	b.client = &http.Client{Timeout: 10 * time.Second}
	return b
}

// waitServed waits until the handler has finished with n requests.
func (b *handlerBundle) waitServed(t *testing.T, n int) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for range n {
		select {
		case <-b.served:
		case <-timeout:
			t.Fatalf("handler did not finish %d requests in time", n)
		}
	}
}

func (b *handlerBundle) sign(id string, body []byte) http.Header {
	h := http.Header{}
	h.Set(webhooks.HeaderID, id)
	h.Set(webhooks.HeaderTimestamp, strconv.FormatInt(now.Unix(), 10))
	h.Set(webhooks.HeaderSignature, b.signer.Sign(id, now, body))
	h.Set(webhooks.HeaderEventType, "payment_intent.succeeded")
	h.Set("Content-Type", "application/json")
	return h
}

// send posts body with h and returns the status and response body.
func (b *handlerBundle) send(t *testing.T, method string, h http.Header, body io.Reader) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, b.url, body)
	require.NoError(t, err)
	req.Header = h
	resp, err := b.client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	text, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(text)
}

func eventBody(id string) []byte {
	return []byte(`{"id":"` + id + `","type":"payment_intent.succeeded","created_at":"2025-03-14T15:09:20Z","data":{"object":{"id":"pi_1","object":"payment_intent","status":"succeeded"}}}`)
}

func TestHandlerAcceptsThenProcesses(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	b := setupHandlerWithRelease(t, release) // fn waits until the 204 has arrived
	body := eventBody("evt_1")

	status, text := b.send(t, http.MethodPost, b.sign("evt_1", body), bytes.NewReader(body))
	require.Equal(t, http.StatusNoContent, status)
	require.Empty(t, text)
	close(release)
	b.waitServed(t, 1)

	c := <-b.calls
	require.NoError(t, c.ctxErr, "fn's context outlives the request")
	require.Equal(t, body, c.body)
	want := webhooks.Event{ID: "evt_1", Type: "payment_intent.succeeded", CreatedAt: time.Date(2025, 3, 14, 15, 9, 20, 0, time.UTC)}
	want.Data.Object = []byte(`{"id":"pi_1","object":"payment_intent","status":"succeeded"}`)
	if diff := cmp.Diff(want, c.event); diff != "" {
		t.Errorf("event (-want +got):\n%s", diff)
	}
}

func TestHandlerRejects(t *testing.T) {
	t.Parallel()
	const marker = "<INPUT-MARKER>"

	tests := []struct {
		name     string
		request  func(b *handlerBundle) (http.Header, []byte)
		wantText string
	}{
		{"bad signature", func(b *handlerBundle) (http.Header, []byte) {
			body := eventBody("evt_" + marker)
			h := b.sign("evt_"+marker, body)
			h.Set(webhooks.HeaderSignature, "v1,"+strings.Repeat("A", 43)+"=")
			return h, body
		}, webhooks.ErrNoValidSignature.Error()},
		{"tampered body", func(b *handlerBundle) (http.Header, []byte) {
			body := eventBody("evt_1")
			return b.sign("evt_1", body), bytes.Replace(body, []byte("succeeded"), []byte(marker), 1)
		}, webhooks.ErrNoValidSignature.Error()},
		{"missing signature", func(b *handlerBundle) (http.Header, []byte) {
			body := eventBody("evt_1")
			h := b.sign("evt_1", body)
			h.Del(webhooks.HeaderSignature)
			return h, body
		}, webhooks.ErrMissingHeaders.Error()},
		{"timestamp not a number", func(b *handlerBundle) (http.Header, []byte) {
			body := eventBody("evt_1")
			h := b.sign("evt_1", body)
			h.Set(webhooks.HeaderTimestamp, marker)
			return h, body
		}, webhooks.ErrInvalidTimestamp.Error()},
		{"signed but not JSON", func(b *handlerBundle) (http.Header, []byte) {
			body := []byte(marker)
			return b.sign("evt_1", body), body
		}, "not an event envelope"},
		{"signed JSON array", func(b *handlerBundle) (http.Header, []byte) {
			body := []byte(`["` + marker + `"]`)
			return b.sign("evt_1", body), body
		}, "not an event envelope"},
		{"signed envelope without type", func(b *handlerBundle) (http.Header, []byte) {
			body := []byte(`{"id":"evt_1","data":{"object":{}}}`)
			return b.sign("evt_1", body), body
		}, "not an event envelope"},
		{"signed envelope with another id", func(b *handlerBundle) (http.Header, []byte) {
			body := eventBody("evt_" + marker)
			return b.sign("evt_1", body), body
		}, "not an event envelope"},
		{"signed envelope with bad created_at", func(b *handlerBundle) (http.Header, []byte) {
			body := []byte(`{"id":"evt_1","type":"webhook.test","created_at":"` + marker + `"}`)
			return b.sign("evt_1", body), body
		}, "not an event envelope"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setupHandler(t)
			h, body := tt.request(b)

			status, text := b.send(t, http.MethodPost, h, bytes.NewReader(body))
			require.Equal(t, http.StatusBadRequest, status)
			require.Contains(t, text, tt.wantText)
			require.NotContains(t, text, marker, "the answer never echoes the request")
			b.waitServed(t, 1)
			require.Empty(t, b.calls)
		})
	}
}

func TestHandlerMethodNotAllowed(t *testing.T) {
	t.Parallel()
	b := setupHandler(t)
	body := eventBody("evt_1")

	for _, method := range []string{http.MethodGet, http.MethodPut, http.MethodHead} {
		req, err := http.NewRequest(method, b.url, bytes.NewReader(body))
		require.NoError(t, err)
		req.Header = b.sign("evt_1", body)
		resp, err := b.client.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode, method)
		require.Equal(t, http.MethodPost, resp.Header.Get("Allow"))
	}
	b.waitServed(t, 3)
	require.Empty(t, b.calls)
}

func TestHandlerBodyLimit(t *testing.T) {
	t.Parallel()

	// A signed envelope of exactly n bytes.
	envelope := func(n int) []byte {
		body := eventBody("evt_big")
		return append(body[:len(body)-1], append(bytes.Repeat([]byte(" "), n-len(body)), '}')...)
	}
	t.Run("at the limit", func(t *testing.T) {
		t.Parallel()
		b := setupHandler(t)
		body := envelope(webhooks.MaxBodyBytes)
		require.Len(t, body, webhooks.MaxBodyBytes)
		status, _ := b.send(t, http.MethodPost, b.sign("evt_big", body), bytes.NewReader(body))
		require.Equal(t, http.StatusNoContent, status)
		b.waitServed(t, 1)
		require.Len(t, b.calls, 1)
	})
	t.Run("over the limit with a length", func(t *testing.T) {
		t.Parallel()
		b := setupHandler(t)
		body := envelope(webhooks.MaxBodyBytes + 1)
		status, _ := b.send(t, http.MethodPost, b.sign("evt_big", body), bytes.NewReader(body))
		require.Equal(t, http.StatusRequestEntityTooLarge, status)
		b.waitServed(t, 1)
		require.Empty(t, b.calls)
	})
	t.Run("over the limit chunked", func(t *testing.T) {
		t.Parallel()
		b := setupHandler(t)
		body := envelope(webhooks.MaxBodyBytes + 1)
		// A reader of unknown length makes the client send it chunked.
		status, _ := b.send(t, http.MethodPost, b.sign("evt_big", body), io.MultiReader(bytes.NewReader(body)))
		require.Equal(t, http.StatusRequestEntityTooLarge, status)
		b.waitServed(t, 1)
		require.Empty(t, b.calls)
	})
}

func TestHandlerDropsRepeatedEvents(t *testing.T) {
	t.Parallel()
	b := setupHandler(t)
	body := eventBody("evt_dup")

	const senders = 20
	var wg sync.WaitGroup
	statuses := make(chan int, senders)
	for range senders {
		wg.Go(func() {
			req, err := http.NewRequest(http.MethodPost, b.url, bytes.NewReader(body))
			if err != nil {
				panic(err)
			}
			req.Header = b.sign("evt_dup", body)
			resp, err := b.client.Do(req)
			if err != nil {
				statuses <- 0
				return
			}
			resp.Body.Close()
			statuses <- resp.StatusCode
		})
	}
	wg.Wait()
	close(statuses)
	for s := range statuses {
		require.Equal(t, http.StatusNoContent, s, "repeated deliveries are acknowledged too")
	}
	b.waitServed(t, senders)
	require.Len(t, b.calls, 1)

	// Other events still pass, and later repeats are still dropped.
	for _, id := range []string{"evt_other", "evt_dup", "evt_other"} {
		body := eventBody(id)
		status, _ := b.send(t, http.MethodPost, b.sign(id, body), bytes.NewReader(body))
		require.Equal(t, http.StatusNoContent, status)
	}
	b.waitServed(t, 3)
	require.Len(t, b.calls, 2)
}

type failingSeen struct{}

func (failingSeen) SeenBefore(context.Context, string) (bool, error) {
	return false, errors.New("database is down")
}

func TestHandlerSeenFails(t *testing.T) {
	t.Parallel()
	b := setupHandler(t, webhooks.WithSeen(failingSeen{}))
	body := eventBody("evt_1")

	status, text := b.send(t, http.MethodPost, b.sign("evt_1", body), bytes.NewReader(body))
	require.Equal(t, http.StatusInternalServerError, status, "the service retries")
	require.NotContains(t, text, "database")
	b.waitServed(t, 1)
	require.Empty(t, b.calls)
}

func TestHandlerSharedSeen(t *testing.T) {
	t.Parallel()
	seen := webhooks.NewMemorySeen(10)
	b1 := setupHandler(t, webhooks.WithSeen(seen))
	b2 := setupHandler(t, webhooks.WithSeen(seen))
	body := eventBody("evt_1")

	for _, b := range []*handlerBundle{b1, b2} {
		status, _ := b.send(t, http.MethodPost, b.sign("evt_1", body), bytes.NewReader(body))
		require.Equal(t, http.StatusNoContent, status)
		b.waitServed(t, 1)
	}
	require.Equal(t, 1, len(b1.calls)+len(b2.calls))
}

func TestMemorySeen(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := webhooks.NewMemorySeen(3)
	seen := func(id string) bool {
		t.Helper()
		ok, err := s.SeenBefore(ctx, id)
		require.NoError(t, err)
		return ok
	}

	for _, id := range []string{"a", "b", "c"} {
		require.False(t, seen(id), id)
	}
	require.True(t, seen("a"))
	require.True(t, seen("c"))
	require.False(t, seen("d"), "evicts a, the oldest")
	require.False(t, seen("a"), "a was forgotten; now evicts b")
	require.True(t, seen("c"))
	require.True(t, seen("d"))
	require.False(t, seen("b"))

	var wg sync.WaitGroup
	firsts := make(chan string, 100)
	s = webhooks.NewMemorySeen(0)
	for i := range 100 {
		wg.Go(func() {
			id := strconv.Itoa(i % 10)
			if ok, _ := s.SeenBefore(ctx, id); !ok {
				firsts <- id
			}
		})
	}
	wg.Wait()
	require.Len(t, firsts, 10, "exactly one caller per id is first")
}
