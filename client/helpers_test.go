package client_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/keelpay/keelpay/client"
	"github.com/keelpay/keelpay/keelpaytest"
)

// sleeps records the waits of a client instead of waiting.
type sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sleeps) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.d = append(s.d, d)
	s.mu.Unlock()
	return ctx.Err()
}

func (s *sleeps) get() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.d...)
}

// newClient is a strict client of url with the store's key, recording its
// waits in sl (when not nil). Keep-alives are off so that net/http never
// repeats a request on its own: every try the proxy sees is the client's.
func newClient(t *testing.T, url, key string, sl *sleeps, opts ...client.Option) *client.Client {
	t.Helper()
	all := []client.Option{client.WithHTTPClient(&http.Client{
		Timeout:   30 * time.Second,
		Transport: &http.Transport{DisableKeepAlives: true},
	})}
	if sl != nil {
		all = append(all, client.WithSleep(sl.sleep))
	}
	c, err := client.New(url, key, append(all, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	client.SetStrict(c)
	return c
}

// try is one request the proxy received.
type try struct {
	Method, Path   string
	IdempotencyKey string
	// Status is what the client was answered: the injected or the
	// server's status; 0 when the connection was dropped.
	Status int
	// ServerStatus is the real server's status, 0 when the request did
	// not reach it.
	ServerStatus int
}

// fault is what the proxy does to the n-th request (from 1): nil passes
// it on to the server.
type fault func(p *proxy, w http.ResponseWriter, r *http.Request, body []byte, rec *try)

// proxy stands between the client and a real keelpay, injecting faults
// and recording every try.
type proxy struct {
	t        *testing.T
	upstream string
	URL      string

	mu     sync.Mutex
	faults map[int]fault
	tries  []try
}

func newProxy(t *testing.T, upstream string) *proxy {
	p := &proxy{t: t, upstream: upstream, faults: map[int]fault{}}
	srv := httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(srv.Close)
	p.URL = srv.URL
	return p
}

// inject sets the faults of the next requests, counted from the next one.
func (p *proxy) inject(fs ...fault) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, f := range fs {
		p.faults[len(p.tries)+1+i] = f
	}
}

func (p *proxy) recorded() []try {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]try(nil), p.tries...)
}

func (p *proxy) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rec := &try{Method: r.Method, Path: r.URL.Path, IdempotencyKey: r.Header.Get("Idempotency-Key")}
	p.mu.Lock()
	n := len(p.tries) + 1
	f := p.faults[n]
	p.tries = append(p.tries, try{})
	p.mu.Unlock()
	if f == nil {
		f = pass
	}
	f(p, w, r, body, rec)
	p.mu.Lock()
	p.tries[n-1] = *rec
	p.mu.Unlock()
}

// forward sends the request to the real server and returns its answer.
func (p *proxy) forward(r *http.Request, body []byte) (*http.Response, []byte) {
	req, err := http.NewRequest(r.Method, p.upstream+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		p.t.Errorf("proxy: %v", err)
		return nil, nil
	}
	req.Header = r.Header.Clone()
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		p.t.Errorf("proxy: %v", err)
		return nil, nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

// pass forwards the request and its answer.
func pass(p *proxy, w http.ResponseWriter, r *http.Request, body []byte, rec *try) {
	resp, b := p.forward(r, body)
	if resp == nil {
		w.WriteHeader(http.StatusBadGateway)
		return
	}
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(b)
	rec.Status, rec.ServerStatus = resp.StatusCode, resp.StatusCode
}

// answer answers the request itself with an API error.
func answer(status int, code string, retryAfter int) fault {
	return func(p *proxy, w http.ResponseWriter, r *http.Request, body []byte, rec *try) {
		if retryAfter > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(retryAfter))
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Request-Id", "req_injected")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, `{"error":{"code":"`+code+`","message":"injected"}}`)
		rec.Status = status
	}
}

// hangUp closes the connection without an answer.
func hangUp(p *proxy, w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		p.t.Errorf("proxy: hijack: %v", err)
		return
	}
	_ = conn.Close()
}

// drop closes the connection before the request reaches the server.
func drop(p *proxy, w http.ResponseWriter, r *http.Request, body []byte, rec *try) {
	hangUp(p, w)
}

// lose passes the request to the server, which answers, and closes the
// client's connection instead of passing the answer on: a crash between
// the server's answer and the client.
func lose(p *proxy, w http.ResponseWriter, r *http.Request, body []byte, rec *try) {
	resp, _ := p.forward(r, body)
	if resp != nil {
		rec.ServerStatus = resp.StatusCode
	}
	hangUp(p, w)
}

// kit starts a keelpay with one store.
func kit(t *testing.T) (*keelpaytest.Kit, *keelpaytest.Store) {
	t.Helper()
	kp := keelpaytest.Start(t)
	return kp, kp.Store(t)
}
