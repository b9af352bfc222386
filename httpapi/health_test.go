package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// pinger is a database whose answer to Ping the test chooses.
type pinger struct {
	calls   atomic.Int64
	mu      sync.Mutex
	err     error         // the answer
	hold    chan struct{} // when set, Ping waits for it to close (or ctx)
	entered chan struct{} // receives once per Ping that starts waiting
}

func (p *pinger) set(err error, hold chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.err, p.hold = err, hold
}

func (p *pinger) Ping(ctx context.Context) error {
	p.calls.Add(1)
	p.mu.Lock()
	err, hold := p.err, p.hold
	p.mu.Unlock()
	if hold != nil {
		if p.entered != nil {
			p.entered <- struct{}{}
		}
		select {
		case <-hold:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return err
}

func newHealth(p *pinger, logs *bytes.Buffer) *health {
	h := Health(HealthConfig{Storage: p, Logger: slog.New(slog.NewTextHandler(logs, nil))}).(*health)
	h.cacheFor = 0 // every probe checks, unless a test says otherwise
	return h
}

func probe(h http.Handler, method string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, "/healthz", nil))
	return rec
}

func requireUnavailable(t *testing.T, rec *httptest.ResponseRecorder) {
	t.Helper()
	require.Equal(t, http.StatusServiceUnavailable, rec.Code, rec.Body.String())
	require.Equal(t, "application/json", rec.Header().Get("Content-Type"))
	require.Regexp(t, `^req_\w{24}$`, rec.Header().Get("Request-Id"))
	var body errorBody
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &body))
	require.Equal(t, "database_unavailable", string(body.Error.Code))
	require.NotEmpty(t, body.Error.Message)
}

func TestHealthAnswersWhetherTheDatabaseDoes(t *testing.T) {
	t.Parallel()
	p := &pinger{}
	var logs bytes.Buffer
	h := newHealth(p, &logs)

	rec := probe(h, http.MethodGet)
	require.Equal(t, http.StatusOK, rec.Code)
	require.JSONEq(t, `{"status":"ok"}`, rec.Body.String())
	require.Regexp(t, `^req_\w{24}$`, rec.Header().Get("Request-Id"))
	require.Equal(t, http.StatusOK, probe(h, http.MethodHead).Code)

	p.set(errors.New("dial tcp: connection refused detail-xyz"), nil)
	rec = probe(h, http.MethodGet)
	requireUnavailable(t, rec)
	require.NotContains(t, rec.Body.String(), "detail-xyz", "the cause goes to the log only")
	require.Equal(t, http.StatusServiceUnavailable, probe(h, http.MethodHead).Code)
	require.Equal(t, 1, bytes.Count(logs.Bytes(), []byte("the database does not answer")), "one warning per outage: %s", logs.String())
	require.Contains(t, logs.String(), "detail-xyz")

	p.set(nil, nil)
	require.Equal(t, http.StatusOK, probe(h, http.MethodGet).Code)
	require.Contains(t, logs.String(), "the database answers again")

	rec = probe(h, http.MethodPost)
	require.Equal(t, http.StatusMethodNotAllowed, rec.Code)
	require.Equal(t, "GET", rec.Header().Get("Allow"))
}

func TestHealthDoesNotWaitLongerThanItsTimeout(t *testing.T) {
	t.Parallel()
	p := &pinger{}
	h := newHealth(p, &bytes.Buffer{})
	h.timeout = 50 * time.Millisecond
	p.set(nil, make(chan struct{})) // a database that never answers
	requireUnavailable(t, probe(h, http.MethodGet))
}

func TestHealthProbesShareOneCheck(t *testing.T) {
	t.Parallel()
	p := &pinger{entered: make(chan struct{}, 1)}
	h := newHealth(p, &bytes.Buffer{})
	h.cacheFor = time.Hour
	release := make(chan struct{})
	p.set(nil, release)

	const probes = 50
	codes := make(chan int, probes)
	var wg sync.WaitGroup
	for range probes {
		wg.Go(func() { codes <- probe(h, http.MethodGet).Code })
	}
	<-p.entered // one check is running; the other probes wait for it or come after it
	close(release)
	wg.Wait()
	close(codes)
	for c := range codes {
		require.Equal(t, http.StatusOK, c)
	}
	require.EqualValues(t, 1, p.calls.Load(), "a storm of probes is one ping")

	// The result is reused while fresh: a failure is not seen until the
	// next check.
	p.set(errors.New("down"), nil)
	require.Equal(t, http.StatusOK, probe(h, http.MethodGet).Code)
	require.EqualValues(t, 1, p.calls.Load())
	h.mu.Lock()
	h.checked = time.Now().Add(-2 * time.Hour)
	h.mu.Unlock()
	requireUnavailable(t, probe(h, http.MethodGet))
	require.EqualValues(t, 2, p.calls.Load())
}

func TestHealthWithoutStorageIsLiveness(t *testing.T) {
	t.Parallel()
	rec := probe(Health(HealthConfig{}), http.MethodGet)
	require.Equal(t, http.StatusOK, rec.Code)
	require.JSONEq(t, `{"status":"ok"}`, rec.Body.String())
}

func TestHealthProbeThatGoesAwayStopsWaiting(t *testing.T) {
	t.Parallel()
	p := &pinger{}
	h := newHealth(p, &bytes.Buffer{})
	p.set(nil, make(chan struct{}))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil).WithContext(ctx))
	require.Equal(t, statusClientClosed, rec.Code)
}
