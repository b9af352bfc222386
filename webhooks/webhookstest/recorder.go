package webhookstest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/keelpay/keelpay/webhooks"
)

// WaitTimeout is how long [Recorder.Wait] waits before it fails the test.
const WaitTimeout = 10 * time.Second

// Delivery is one request the [Recorder] received.
type Delivery struct {
	Body     []byte
	Err      error // why the body could not be read or verified; nil for a valid delivery
	Header   http.Header
	Method   string
	Received time.Time
}

// Event decodes the body as an event envelope.
func (d Delivery) Event() (webhooks.Event, error) {
	var e webhooks.Event
	err := json.Unmarshal(d.Body, &e)
	return e, err
}

// Recorder is a webhook receiver for tests. It is safe for concurrent use.
type Recorder struct {
	srv  *httptest.Server
	opts []webhooks.Option

	mu         sync.Mutex
	verifier   *webhooks.Verifier // nil until a secret is set
	arrived    chan struct{}      // closed and replaced on every delivery
	deliveries []Delivery
	responder  http.HandlerFunc
	status     int
}

// TB is what NewRecorder needs of a test; testing.TB has it.
type TB interface {
	Cleanup(func())
	Fatalf(format string, args ...any)
	Helper()
}

// NewRecorder starts a Recorder verifying with secret and opts (for example
// [webhooks.WithClock] when the sender runs on a fake clock). It is closed
// when the test ends.
//
// By default it answers 204 to a delivery with a valid signature and 400 to
// any other request, like the reference receiver of docs/webhooks.md.
//
// secret may be "" when the secret is only known later (keelpay issues it
// in the setup that names the recorder's URL): call SetSecrets then; until
// then every delivery is recorded as unverified and answered 400.
func NewRecorder(t TB, secret string, opts ...webhooks.Option) *Recorder {
	t.Helper()
	r := &Recorder{opts: opts, arrived: make(chan struct{}), status: http.StatusNoContent}
	if secret != "" {
		if err := r.SetSecrets(secret); err != nil {
			t.Fatalf("webhookstest: %v", err)
		}
	}
	r.srv = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.Close)
	return r
}

// errNoSecret is the verification error of deliveries that arrive before
// any secret was set.
var errNoSecret = errors.New("webhookstest: no secret set")

// SetSecrets makes the recorder verify with these secrets from now on
// (several during a rotation).
func (r *Recorder) SetSecrets(secrets ...string) error {
	v, err := webhooks.NewVerifier(secrets, r.opts...)
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.verifier = v
	r.mu.Unlock()
	return nil
}

// URL returns the address to deliver to.
func (r *Recorder) URL() string { return r.srv.URL }

// SetStatus sets the status answered to valid deliveries from now on.
func (r *Recorder) SetStatus(code int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.status = code
}

// SetResponder makes fn answer every request from now on, after it has been
// recorded (fn reads the same body); nil restores the default answers. A responder that blocks, to make
// the sender time out, should return when req.Context() is done, which
// [Recorder.Close] ensures.
func (r *Recorder) SetResponder(fn func(w http.ResponseWriter, req *http.Request)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.responder = fn
}

// Deliveries returns the deliveries received so far, oldest first.
func (r *Recorder) Deliveries() []Delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.deliveries)
}

// Watch returns the deliveries received so far, oldest first, and a
// channel that is closed when the next one arrives, so that a test can wait
// on a condition of its own: check the deliveries, and if the condition
// does not hold yet, wait on the channel (or a deadline) and Watch again.
func (r *Recorder) Watch() ([]Delivery, <-chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.deliveries), r.arrived
}

// Wait waits until at least n deliveries have arrived and returns them all.
// It fails the test after [WaitTimeout]; call it from the test's goroutine.
func (r *Recorder) Wait(t testing.TB, n int) []Delivery {
	t.Helper()
	timeout := time.NewTimer(WaitTimeout)
	defer timeout.Stop()
	for {
		r.mu.Lock()
		if len(r.deliveries) >= n {
			d := slices.Clone(r.deliveries)
			r.mu.Unlock()
			return d
		}
		arrived, got := r.arrived, len(r.deliveries)
		r.mu.Unlock()
		select {
		case <-arrived:
		case <-timeout.C:
			t.Fatalf("webhookstest: %d deliveries after %v, want %d", got, WaitTimeout, n)
		}
	}
}

// Close stops the server, cutting off requests still being answered. It is
// called when the test ends; calling it again does nothing.
func (r *Recorder) Close() {
	r.srv.CloseClientConnections()
	r.srv.Close()
}

func (r *Recorder) serve(w http.ResponseWriter, req *http.Request) {
	d := Delivery{Header: req.Header.Clone(), Method: req.Method, Received: time.Now()}
	d.Body, d.Err = io.ReadAll(req.Body)
	r.mu.Lock()
	v := r.verifier
	r.mu.Unlock()
	if d.Err == nil {
		d.Err = errNoSecret
		if v != nil {
			d.Err = v.Verify(d.Body, req.Header)
		}
	}

	r.mu.Lock()
	r.deliveries = append(r.deliveries, d)
	close(r.arrived)
	r.arrived = make(chan struct{})
	responder, status := r.responder, r.status
	r.mu.Unlock()

	switch {
	case responder != nil:
		// The responder reads the body as it came.
		req.Body = io.NopCloser(bytes.NewReader(d.Body))
		responder(w, req)
	case d.Err != nil:
		http.Error(w, d.Err.Error(), http.StatusBadRequest)
	default:
		w.WriteHeader(status)
	}
}
