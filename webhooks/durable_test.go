package webhooks_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay/webhooks"
)

// serve mounts h on a real HTTP server and returns a bundle to send to it.
func serve(t *testing.T, h http.Handler) *handlerBundle {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &handlerBundle{signer: newSigner(t, secretA), url: srv.URL, client: &http.Client{Timeout: 10 * time.Second}}
}

// deliver posts a signed delivery of event id and returns the response.
func (b *handlerBundle) deliver(t *testing.T, id string) *http.Response {
	t.Helper()
	body := eventBody(id)
	req, err := http.NewRequest(http.MethodPost, b.url, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header = b.sign(id, body)
	resp, err := b.client.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	return resp
}

// within waits for a value on c, failing the test after 10 seconds.
func within[T any](t *testing.T, c <-chan T) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(10 * time.Second):
		t.Fatal("nothing arrived in 10 seconds")
		var zero T
		return zero
	}
}

// A full handler turns deliveries away with 503 before it records their
// ids, so the retry is processed rather than dropped as a repeat; Wait
// returns once the processing running has ended.
func TestAsyncHandlerBoundsConcurrency(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	started := make(chan string, 10)
	processed := make(chan string, 10)
	h := webhooks.NewAsyncHandler(newVerifier(t, secretA), func(_ context.Context, e webhooks.Event, _ []byte) {
		started <- e.ID
		<-release
		processed <- e.ID
	}, webhooks.WithMaxConcurrent(2))
	b := serve(t, h)

	for _, id := range []string{"evt_1", "evt_2"} {
		require.Equal(t, http.StatusNoContent, b.deliver(t, id).StatusCode)
		within(t, started)
	}
	resp := b.deliver(t, "evt_3")
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "two events are being processed")
	require.Equal(t, "60", resp.Header.Get("Retry-After"))

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	require.ErrorIs(t, h.Wait(ctx), context.Canceled, "processing is still running")
	close(release)
	require.NoError(t, h.Wait(t.Context()))
	require.ElementsMatch(t, []string{"evt_1", "evt_2"}, []string{within(t, processed), within(t, processed)})

	require.Equal(t, http.StatusNoContent, b.deliver(t, "evt_3").StatusCode, "the retry")
	require.NoError(t, h.Wait(t.Context()))
	require.Equal(t, "evt_3", within(t, processed), "the retry of the event turned away is processed")
}

// A panic in fn is reported to the error handler; the process goes on and
// so does the handler.
func TestAsyncHandlerRecoversPanics(t *testing.T) {
	t.Parallel()
	errs := make(chan error, 10)
	processed := make(chan string, 10)
	boom := errors.New("boom")
	h := webhooks.NewAsyncHandler(newVerifier(t, secretA), func(_ context.Context, e webhooks.Event, _ []byte) {
		if e.ID == "evt_panic" {
			panic(boom)
		}
		processed <- e.ID
	}, webhooks.WithErrorHandler(func(_ context.Context, e webhooks.Event, err error) {
		errs <- err
	}))
	b := serve(t, h)

	require.Equal(t, http.StatusNoContent, b.deliver(t, "evt_panic").StatusCode)
	err := within(t, errs)
	pe, ok := errors.AsType[*webhooks.PanicError](err)
	require.True(t, ok, "%T", err)
	require.ErrorIs(t, err, boom)
	require.Contains(t, string(pe.Stack), "durable_test.go", "the stack is fn's")

	require.Equal(t, http.StatusNoContent, b.deliver(t, "evt_next").StatusCode)
	require.Equal(t, "evt_next", within(t, processed))
	require.NoError(t, h.Close(t.Context()))
}

// Close turns new deliveries away with 503 and waits for the processing
// running.
func TestHandlerClose(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	started := make(chan struct{}, 10)
	var mu sync.Mutex
	var finished []string
	h := webhooks.NewAsyncHandler(newVerifier(t, secretA), func(_ context.Context, e webhooks.Event, _ []byte) {
		started <- struct{}{}
		<-release
		mu.Lock()
		finished = append(finished, e.ID)
		mu.Unlock()
	})
	b := serve(t, h)
	require.Equal(t, http.StatusNoContent, b.deliver(t, "evt_1").StatusCode)
	within(t, started)

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	require.ErrorIs(t, h.Close(ctx), context.Canceled, "fn is still running")
	resp := b.deliver(t, "evt_2")
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "closed")
	require.Equal(t, "60", resp.Header.Get("Retry-After"))
	close(release)
	require.NoError(t, h.Close(t.Context()))
	mu.Lock()
	require.Equal(t, []string{"evt_1"}, finished, "Close returned after fn")
	mu.Unlock()
	resp = b.deliver(t, "evt_3")
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	require.Equal(t, "60", resp.Header.Get("Retry-After"))
}

// The durable handler answers 204 only when fn returned nil; a failure or
// a panic is answered 500, and the delivery sent again is processed again.
func TestDurableHandler(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	calls := map[string]int{}
	errs := make(chan error, 10)
	h := webhooks.NewDurableHandler(newVerifier(t, secretA), func(ctx context.Context, e webhooks.Event, body []byte) error {
		mu.Lock()
		calls[e.ID]++
		n := calls[e.ID]
		mu.Unlock()
		if ctx.Err() != nil || !bytes.Equal(body, eventBody(e.ID)) {
			t.Errorf("fn got context error %v and body %s", ctx.Err(), body)
		}
		switch {
		case n == 1 && e.ID == "evt_fails":
			return errors.New("database is down: secret detail")
		case n == 1 && e.ID == "evt_panics":
			panic("nil map")
		}
		return nil
	}, webhooks.WithErrorHandler(func(_ context.Context, _ webhooks.Event, err error) { errs <- err }))
	b := serve(t, h)

	require.Equal(t, http.StatusNoContent, b.deliver(t, "evt_ok").StatusCode)
	require.Equal(t, http.StatusNoContent, b.deliver(t, "evt_ok").StatusCode, "a repeat")

	body := eventBody("evt_fails")
	status, text := b.send(t, http.MethodPost, b.sign("evt_fails", body), bytes.NewReader(body))
	require.Equal(t, http.StatusInternalServerError, status)
	require.NotContains(t, text, "secret detail", "the answer never shows fn's error")
	require.ErrorContains(t, within(t, errs), "database is down")
	require.Equal(t, http.StatusNoContent, b.deliver(t, "evt_fails").StatusCode, "the retry is processed")

	require.Equal(t, http.StatusInternalServerError, b.deliver(t, "evt_panics").StatusCode)
	_, ok := errors.AsType[*webhooks.PanicError](within(t, errs))
	require.True(t, ok)
	require.Equal(t, http.StatusNoContent, b.deliver(t, "evt_panics").StatusCode, "the retry is processed")
	require.Equal(t, http.StatusNoContent, b.deliver(t, "evt_panics").StatusCode, "a repeat")

	mu.Lock()
	require.Equal(t, map[string]int{"evt_ok": 1, "evt_fails": 2, "evt_panics": 2}, calls)
	mu.Unlock()
	require.Empty(t, errs)
}

// A repeat of an event being processed is not acknowledged before the
// processing has succeeded: were it, a failure of the first would lose the
// event.
func TestDurableHandlerRepeatWhileProcessing(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	started := make(chan struct{}, 10)
	h := webhooks.NewDurableHandler(newVerifier(t, secretA), func(context.Context, webhooks.Event, []byte) error {
		started <- struct{}{}
		<-release
		return errors.New("failed")
	}, webhooks.WithErrorHandler(func(context.Context, webhooks.Event, error) {}))
	b := serve(t, h)

	first := make(chan int)
	go func() {
		body := eventBody("evt_1")
		req, _ := http.NewRequest(http.MethodPost, b.url, bytes.NewReader(body))
		req.Header = b.sign("evt_1", body)
		resp, err := b.client.Do(req)
		if err != nil {
			first <- 0
			return
		}
		resp.Body.Close()
		first <- resp.StatusCode
	}()
	within(t, started)
	resp := b.deliver(t, "evt_1")
	require.Equal(t, http.StatusConflict, resp.StatusCode)
	require.Equal(t, "60", resp.Header.Get("Retry-After"))
	close(release)
	require.Equal(t, http.StatusInternalServerError, within(t, first))
	require.Equal(t, http.StatusInternalServerError, b.deliver(t, "evt_1").StatusCode, "processed again, failing again")
	require.NoError(t, h.Close(t.Context()))
}

func TestDurableHandlerNeedsForgetter(t *testing.T) {
	t.Parallel()
	require.PanicsWithValue(t, "webhooks: NewDurableHandler needs a Seen that implements Forgetter", func() {
		webhooks.NewDurableHandler(newVerifier(t, secretA), func(context.Context, webhooks.Event, []byte) error { return nil },
			webhooks.WithSeen(failingSeen{}))
	})
}

func TestMemorySeenForget(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := webhooks.NewMemorySeen(2)
	seen := func(id string) bool {
		t.Helper()
		ok, err := s.SeenBefore(ctx, id)
		require.NoError(t, err)
		return ok
	}
	require.False(t, seen("a"))
	require.NoError(t, s.Forget(ctx, "a"))
	require.False(t, seen("a"), "forgotten")
	require.True(t, seen("a"))
	// "a" now fills both slots; evicting its old slot keeps the new record.
	require.False(t, seen("b"), "evicts the forgotten a's slot")
	require.True(t, seen("a"), "the second record of a is kept")
	require.True(t, seen("b"))
	require.NoError(t, s.Forget(ctx, "never seen"))
}

// ContextWithProcessing's start is called, before ServeHTTP returns, only
// for an event processed after the answer, and its end once fn returned.
func TestContextWithProcessing(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	fnDone := make(chan string, 10)
	v := newVerifier(t, secretA)
	async := webhooks.NewAsyncHandler(v, func(_ context.Context, e webhooks.Event, _ []byte) {
		<-release
		fnDone <- e.ID
	})
	durable := webhooks.NewDurableHandler(v, func(context.Context, webhooks.Event, []byte) error { return nil })

	type report struct {
		started bool
		ended   chan struct{}
	}
	// serve runs h on a real server whose requests carry the hook, and
	// returns what the hook saw once ServeHTTP returned.
	serveWithHook := func(h http.Handler, id string, signed bool) (int, *report) {
		rep := &report{ended: make(chan struct{})}
		returned := make(chan struct{})
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			defer close(returned)
			ctx := webhooks.ContextWithProcessing(r.Context(), func() func() {
				rep.started = true
				return func() { close(rep.ended) }
			})
			h.ServeHTTP(w, r.WithContext(ctx))
		}))
		defer srv.Close()
		b := &handlerBundle{signer: newSigner(t, secretA), url: srv.URL, client: &http.Client{Timeout: 10 * time.Second}}
		body := eventBody(id)
		hdr := b.sign(id, body)
		if !signed {
			hdr.Set(webhooks.HeaderSignature, "v1,forged")
		}
		status, _ := b.send(t, http.MethodPost, hdr, bytes.NewReader(body))
		within(t, returned)
		return status, rep
	}

	status, rep := serveWithHook(async, "evt_1", true)
	require.Equal(t, http.StatusNoContent, status)
	require.True(t, rep.started, "start is called before ServeHTTP returns")
	select {
	case <-rep.ended:
		t.Fatal("end was called before fn returned")
	default:
	}
	close(release)
	require.Equal(t, "evt_1", within(t, fnDone))
	within(t, rep.ended)

	for _, c := range []struct {
		name   string
		h      http.Handler
		id     string
		signed bool
		status int
	}{
		{"a repeat", async, "evt_1", true, http.StatusNoContent},
		{"a forged delivery", async, "evt_2", false, http.StatusBadRequest},
		{"the durable handler", durable, "evt_3", true, http.StatusNoContent},
	} {
		status, rep := serveWithHook(c.h, c.id, c.signed)
		require.Equal(t, c.status, status, c.name)
		require.False(t, rep.started, "%s: nothing goes on after ServeHTTP", c.name)
	}
	require.NoError(t, async.Close(t.Context()))
}
