package webhookstest_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/keelpay/keelpay/webhooks"
	"github.com/keelpay/keelpay/webhooks/webhookstest"
	"github.com/stretchr/testify/require"
)

const (
	secret      = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	otherSecret = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD"
)

var noRedirects = &http.Client{
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	Timeout:       10 * time.Second,
	// A transport of its own: an httptest server that closes (another
	// parallel test's recorder) closes http.DefaultTransport's idle
	// connections, and broke a request of this test that was about to
	// reuse one ("CloseIdleConnections called").
	Transport: &http.Transport{},
}

func newRequest(ctx context.Context, t *testing.T, url, secret, id string) *http.Request {
	t.Helper()
	body := []byte(`{"id":"` + id + `","type":"webhook.test","created_at":"2025-03-14T15:09:26Z","data":{"object":{"message":"test"}}}`)
	s, err := webhooks.NewSigner(secret)
	require.NoError(t, err)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	require.NoError(t, err)
	now := time.Now()
	req.Header.Set(webhooks.HeaderID, id)
	req.Header.Set(webhooks.HeaderTimestamp, strconv.FormatInt(now.Unix(), 10))
	req.Header.Set(webhooks.HeaderSignature, s.Sign(id, now, body))
	req.Header.Set(webhooks.HeaderEventType, "webhook.test")
	return req
}

func deliver(t *testing.T, url, secret, id string) int {
	t.Helper()
	resp, err := noRedirects.Do(newRequest(t.Context(), t, url, secret, id))
	require.NoError(t, err)
	resp.Body.Close()
	return resp.StatusCode
}

func TestRecorderRecords(t *testing.T) {
	t.Parallel()
	rec := webhookstest.NewRecorder(t, secret)
	start := time.Now()

	require.Equal(t, http.StatusNoContent, deliver(t, rec.URL(), secret, "evt_1"))
	require.Equal(t, http.StatusBadRequest, deliver(t, rec.URL(), otherSecret, "evt_2"))

	got := rec.Wait(t, 2)
	require.Len(t, got, 2)
	require.NoError(t, got[0].Err)
	require.Equal(t, http.MethodPost, got[0].Method)
	require.Equal(t, "evt_1", got[0].Header.Get(webhooks.HeaderID))
	require.Equal(t, "webhook.test", got[0].Header.Get(webhooks.HeaderEventType))
	require.False(t, got[0].Received.Before(start))
	e, err := got[0].Event()
	require.NoError(t, err)
	require.Equal(t, "evt_1", e.ID)
	require.JSONEq(t, `{"message":"test"}`, string(e.Data.Object))

	require.ErrorIs(t, got[1].Err, webhooks.ErrNoValidSignature)
	require.Equal(t, got, rec.Deliveries())
}

func TestRecorderWithClock(t *testing.T) {
	t.Parallel()
	rec := webhookstest.NewRecorder(t, secret, webhooks.WithClock(func() time.Time { return time.Now().Add(time.Hour) }))

	require.Equal(t, http.StatusBadRequest, deliver(t, rec.URL(), secret, "evt_1"))
	require.ErrorIs(t, rec.Wait(t, 1)[0].Err, webhooks.ErrTooOld)
}

func TestRecorderWaitsForConcurrentDeliveries(t *testing.T) {
	t.Parallel()
	rec := webhookstest.NewRecorder(t, secret)

	const n = 10
	for i := range n {
		req := newRequest(context.Background(), t, rec.URL(), secret, "evt_"+strconv.Itoa(i))
		go func() {
			resp, err := noRedirects.Do(req)
			if err == nil {
				resp.Body.Close()
			}
		}()
	}
	got := rec.Wait(t, n)
	require.Len(t, got, n)
	ids := map[string]bool{}
	for _, d := range got {
		require.NoError(t, d.Err)
		ids[d.Header.Get(webhooks.HeaderID)] = true
	}
	require.Len(t, ids, n)
}

func TestRecorderAnswers(t *testing.T) {
	t.Parallel()
	rec := webhookstest.NewRecorder(t, secret)

	rec.SetStatus(http.StatusInternalServerError)
	require.Equal(t, http.StatusInternalServerError, deliver(t, rec.URL(), secret, "evt_1"))
	require.Equal(t, http.StatusBadRequest, deliver(t, rec.URL(), otherSecret, "evt_1"), "invalid deliveries still get 400")

	rec.SetResponder(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "https://elsewhere.example/hook", http.StatusFound)
	})
	require.Equal(t, http.StatusFound, deliver(t, rec.URL(), secret, "evt_1"))

	rec.SetResponder(nil)
	rec.SetStatus(http.StatusOK)
	require.Equal(t, http.StatusOK, deliver(t, rec.URL(), secret, "evt_1"))
	require.Len(t, rec.Deliveries(), 4, "every request is recorded, whatever the answer")
}

func TestRecorderHangingResponder(t *testing.T) {
	t.Parallel()
	rec := webhookstest.NewRecorder(t, secret)
	rec.SetResponder(func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() })

	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	var err error
	req := newRequest(ctx, t, rec.URL(), secret, "evt_1")
	wg.Go(func() {
		var resp *http.Response
		resp, err = noRedirects.Do(req)
		if err == nil {
			resp.Body.Close()
		}
	})
	rec.Wait(t, 1) // recorded before the responder hangs
	cancel()       // the sender gives up, as after its time-out
	wg.Wait()
	require.ErrorIs(t, err, context.Canceled)
}

func TestRecorderCloseEndsHangingRequests(t *testing.T) {
	t.Parallel()
	rec := webhookstest.NewRecorder(t, secret)
	rec.SetResponder(func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() })

	errs := make(chan error, 1)
	req := newRequest(context.Background(), t, rec.URL(), secret, "evt_1")
	go func() {
		resp, err := noRedirects.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		errs <- err
	}()
	rec.Wait(t, 1)
	rec.Close()
	require.Error(t, <-errs)
}

// A responder reads the body as it came, after the recorder read it.
func TestRecorderResponderReadsTheBody(t *testing.T) {
	t.Parallel()
	rec := webhookstest.NewRecorder(t, secret)
	v, err := webhooks.NewVerifier([]string{secret})
	require.NoError(t, err)
	verified := make(chan error, 1)
	rec.SetResponder(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err == nil {
			err = v.Verify(body, r.Header)
		}
		verified <- err
		w.WriteHeader(http.StatusAccepted)
	})
	require.Equal(t, http.StatusAccepted, deliver(t, rec.URL(), secret, "evt_1"))
	require.NoError(t, <-verified)
}

// Watch's channel is closed by the next delivery, not before.
func TestRecorderWatch(t *testing.T) {
	t.Parallel()
	rec := webhookstest.NewRecorder(t, secret)
	got, next := rec.Watch()
	require.Empty(t, got)
	select {
	case <-next:
		t.Fatal("closed before any delivery")
	default:
	}
	deliver(t, rec.URL(), secret, "evt_1")
	<-next
	got, _ = rec.Watch()
	require.Len(t, got, 1)
	require.NoError(t, got[0].Err)
}
