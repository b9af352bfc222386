package webhooks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"runtime/debug"
	"sync"
)

// MaxBodyBytes is the largest body a [Handler] reads; a larger one is
// answered with 413.
const MaxBodyBytes = 1 << 20

// DefaultMaxConcurrent is how many events a [Handler] processes at a time
// unless [WithMaxConcurrent] says otherwise.
const DefaultMaxConcurrent = 64

// retryAfter is the Retry-After of a 503. keelpay retries on its own
// schedule (docs/webhooks.md), the first retry a minute after the failure;
// the header tells other senders the same.
const retryAfter = "60"

// HandlerOption configures a [Handler].
type HandlerOption func(*handlerConfig)

type handlerConfig struct {
	done    func()
	max     int
	onError func(context.Context, Event, error)
	seen    Seen
}

// WithSeen sets where the handler records event ids to drop repeated
// deliveries; the default is a [NewMemorySeen] of [DefaultSeenSize].
// [NewDurableHandler] needs a Seen that also implements [Forgetter].
func WithSeen(s Seen) HandlerOption {
	return func(c *handlerConfig) {
		if s != nil {
			c.seen = s
		}
	}
}

// WithDone sets a function the handler calls once for every request it
// serves, whatever the outcome, after everything it started for that request
// has finished: for an accepted event, after fn has returned. Tests use it to
// wait for processing without sleeping.
func WithDone(done func()) HandlerOption {
	return func(c *handlerConfig) { c.done = done }
}

// WithMaxConcurrent sets how many events the handler processes at a time;
// n < 1 means [DefaultMaxConcurrent]. A delivery that arrives while n are
// being processed is answered 503 with Retry-After before its id is
// recorded, so the service delivers it again later rather than losing it
// (and, in keelpay, sends this store fewer deliveries at a time).
func WithMaxConcurrent(n int) HandlerOption {
	return func(c *handlerConfig) { c.max = n }
}

// WithErrorHandler sets a function the handler calls when fn panics (err is
// a [*PanicError]) or, for [NewDurableHandler], returns an error. It is
// called on the goroutine that ran fn, with fn's context. The default logs
// with [slog.Default]. A panic in fn never crashes the process.
func WithErrorHandler(f func(ctx context.Context, e Event, err error)) HandlerOption {
	return func(c *handlerConfig) { c.onError = f }
}

// PanicError is the error a [Handler] reports through [WithErrorHandler]
// when fn panicked.
type PanicError struct {
	Value any    // what fn panicked with
	Stack []byte // the stack of the panicking goroutine
}

func (e *PanicError) Error() string { return fmt.Sprintf("webhooks: processing panicked: %v", e.Value) }

// Unwrap returns Value when it is an error.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// Forgetter is a [Seen] that can forget an event id. [NewDurableHandler]
// records an id before it calls fn and forgets it when fn fails, so that the
// delivery the service sends again is processed. [MemorySeen] implements it.
type Forgetter interface {
	Seen
	Forget(ctx context.Context, eventID string) error
}

type processingKey struct{}

// ContextWithProcessing returns a copy of ctx that tells a [Handler] serving
// a request with that context to report the processing it leaves running
// after it answers. Before ServeHTTP returns, the handler calls start once for
// an event it will go on processing in the background (the handlers of
// [NewAsyncHandler] and [NewHandler]), and calls the function start returned
// once that processing has finished, fn returned or panicked. A handler that
// processes before it answers ([NewDurableHandler]), or that processes
// nothing for the request, does not call start.
//
// It is a hook for test harnesses that must know when a store's processing of
// a delivery is over, such as keelpaytest's Kit.RequireHandled; a store has
// no need of it.
func ContextWithProcessing(ctx context.Context, start func() (end func())) context.Context {
	return context.WithValue(ctx, processingKey{}, start)
}

// Handler receives keelpay's deliveries at a store's webhook_url: it
// verifies them, drops repeated ones and calls the store's function, either
// after it answered 204 ([NewAsyncHandler]) or before it answers
// ([NewDurableHandler]). It processes at most [WithMaxConcurrent] events at a
// time. [Handler.Close] stops it at shutdown, after the processing running.
// It is safe for concurrent use.
type Handler struct {
	cfg   handlerConfig
	v     *Verifier
	async func(context.Context, Event, []byte)
	sync  func(context.Context, Event, []byte) error
	slots chan struct{} // one per event being processed

	mu       sync.Mutex
	running  int           // events being processed
	idle     chan struct{} // closed when running drops to 0; nil while 0
	closed   bool
	inflight map[string]struct{} // ids being processed (durable)
}

// NewHandler returns the handler of [NewAsyncHandler] as an [http.Handler]:
// 204 first, processing afterwards. It is kept for the stores that mount it
// as it is; use NewAsyncHandler for a [Handler] that can be waited for at
// shutdown.
func NewHandler(v *Verifier, fn func(ctx context.Context, e Event, body []byte), opts ...HandlerOption) http.Handler {
	if v == nil || fn == nil {
		panic("webhooks: NewHandler needs a Verifier and a function")
	}
	return NewAsyncHandler(v, fn, opts...)
}

// NewAsyncHandler returns the receiving end of deliveries that answers
// first and processes afterwards, as the reference receiver of
// docs/webhooks.md does. For each request it:
//
//   - answers 405 to any method but POST;
//   - reads the body, answering 413 beyond [MaxBodyBytes];
//   - verifies it with v, answering 400 with the error's text (which never
//     contains anything from the request) when it fails;
//   - decodes the [Event], answering 400 if the body is not an envelope with an
//     id equal to webhook-id and a type;
//   - answers 503 with Retry-After when [WithMaxConcurrent] events are being
//     processed or the handler is closed, so that the service retries;
//   - records the id with [Seen], answering 500 if that fails;
//   - answers 204 and flushes the response;
//   - then, unless the id had been seen before, calls fn with the event and the
//     raw body on a new goroutine, with the request's context detached from
//     its cancellation ([context.WithoutCancel]), so that the service gets its
//     answer at once and slow processing never causes a retry.
//
// Once the 204 is sent the service will not deliver the event again, so fn
// owns it from then on: it should record the event durably before acting on
// it. An event cut short by the process exiting or by a panic in fn is not
// delivered again; a store finds it with GET /v1/events. A panic in fn is
// recovered and reported to [WithErrorHandler]. Call [Handler.Close] after
// [net/http.Server.Shutdown] to wait for the fn calls still running. A store
// that must not lose an event its process did not finish uses
// [NewDurableHandler].
func NewAsyncHandler(v *Verifier, fn func(ctx context.Context, e Event, body []byte), opts ...HandlerOption) *Handler {
	if v == nil || fn == nil {
		panic("webhooks: NewAsyncHandler needs a Verifier and a function")
	}
	h := newHandler(v, opts)
	h.async = fn
	return h
}

// NewDurableHandler returns the receiving end of deliveries that processes
// first and answers afterwards: the event is delivered at least once into
// the store. It checks a request as [NewAsyncHandler] does, then calls fn on
// the request's goroutine with the request's context and answers 204 only
// once fn returned nil. When fn returns an error or panics, it answers 500
// (with no detail) and reports the error to [WithErrorHandler], and the
// service delivers the event again: an event whose processing did not finish
// (an error, a panic, the process dying) is never acknowledged.
//
// The service waits 10 seconds for the answer (docs/webhooks.md); fn's
// context is done when the service gives up, and the delivery is then
// retried, a minute later first. fn must finish well within 10 seconds, and
// must be idempotent: an event it processed may come again when the answer
// was lost or late. Record the event id in the same transaction as the
// event's effects and return nil when it is there already.
//
// Repeated deliveries are dropped with [Seen] as NewAsyncHandler does, but
// the id is forgotten when fn fails, so the Seen of [WithSeen] must implement
// [Forgetter] (NewDurableHandler panics otherwise). A delivery of an event
// that this Handler is processing at that moment is answered 409 with
// Retry-After, never 204, until the processing has ended.
func NewDurableHandler(v *Verifier, fn func(ctx context.Context, e Event, body []byte) error, opts ...HandlerOption) *Handler {
	if v == nil || fn == nil {
		panic("webhooks: NewDurableHandler needs a Verifier and a function")
	}
	h := newHandler(v, opts)
	if _, ok := h.cfg.seen.(Forgetter); !ok {
		panic("webhooks: NewDurableHandler needs a Seen that implements Forgetter")
	}
	h.sync = fn
	h.inflight = make(map[string]struct{})
	return h
}

func newHandler(v *Verifier, opts []HandlerOption) *Handler {
	h := &Handler{v: v}
	for _, o := range opts {
		o(&h.cfg)
	}
	if h.cfg.seen == nil {
		h.cfg.seen = NewMemorySeen(DefaultSeenSize)
	}
	if h.cfg.max < 1 {
		h.cfg.max = DefaultMaxConcurrent
	}
	if h.cfg.onError == nil {
		h.cfg.onError = func(ctx context.Context, e Event, err error) {
			slog.Default().ErrorContext(ctx, "webhooks: processing failed", "event", e.ID, "type", e.Type, "err", err)
		}
	}
	h.slots = make(chan struct{}, h.cfg.max)
	return h
}

// Wait waits until no event is being processed, or ctx is done, whichever
// comes first; it returns ctx's error in the second case. The handler goes on
// taking deliveries.
func (h *Handler) Wait(ctx context.Context) error {
	h.mu.Lock()
	idle := h.idle
	h.mu.Unlock()
	if idle == nil {
		return nil
	}
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close makes the handler answer 503 with Retry-After to every delivery from
// now on, so that the service delivers them again later (to this process
// after a restart, or to another), and waits as [Handler.Wait] does. Call it
// after [net/http.Server.Shutdown], which waits for the requests but not for
// the processing NewAsyncHandler left running.
func (h *Handler) Close(ctx context.Context) error {
	h.mu.Lock()
	h.closed = true
	h.mu.Unlock()
	return h.Wait(ctx)
}

// begin takes a processing slot, or reports why not with a status.
func (h *Handler) begin(id string) int {
	select {
	case h.slots <- struct{}{}:
	default:
		return http.StatusServiceUnavailable
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	status := 0
	switch {
	case h.closed:
		status = http.StatusServiceUnavailable
	case h.inflight != nil:
		if _, ok := h.inflight[id]; ok {
			status = http.StatusConflict
		} else {
			h.inflight[id] = struct{}{}
		}
	}
	if status != 0 {
		<-h.slots
		return status
	}
	h.running++
	if h.idle == nil {
		h.idle = make(chan struct{})
	}
	return 0
}

// end gives back the slot of begin.
func (h *Handler) end(id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.inflight != nil {
		delete(h.inflight, id)
	}
	h.running--
	if h.running == 0 {
		close(h.idle)
		h.idle = nil
	}
	<-h.slots
}

// ServeHTTP implements [http.Handler].
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	e, body, ok := h.accept(w, r)
	if !ok || h.sync != nil {
		if ok {
			h.serveDurable(w, r, e, body)
		}
		if h.cfg.done != nil {
			h.cfg.done()
		}
		return
	}
	ctx := context.WithoutCancel(r.Context())
	end := func() {}
	if start, ok := r.Context().Value(processingKey{}).(func() func()); ok && start != nil {
		end = start()
	}
	go func() {
		defer end()
		if h.cfg.done != nil {
			defer h.cfg.done()
		}
		defer h.end(e.ID)
		_ = h.call(ctx, e, body)
	}()
}

// serveDurable processes the event, then answers.
func (h *Handler) serveDurable(w http.ResponseWriter, r *http.Request, e Event, body []byte) {
	defer h.end(e.ID)
	if err := h.call(r.Context(), e, body); err != nil {
		if ferr := h.cfg.seen.(Forgetter).Forget(context.WithoutCancel(r.Context()), e.ID); ferr != nil {
			h.cfg.onError(r.Context(), e, fmt.Errorf("webhooks: forget %s after a failure: %w", e.ID, ferr))
		}
		http.Error(w, "webhooks: processing failed", http.StatusInternalServerError)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// call runs fn, recovering a panic; it reports a failure to onError and
// returns it.
func (h *Handler) call(ctx context.Context, e Event, body []byte) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &PanicError{Value: p, Stack: debug.Stack()}
		}
		if err != nil {
			h.cfg.onError(ctx, e, err)
		}
	}()
	if h.sync != nil {
		return h.sync(ctx, e, body)
	}
	h.async(ctx, e, body)
	return nil
}

// accept answers the request unless fn is to be called, and reports whether
// it is; then the caller holds a slot of begin.
func (h *Handler) accept(w http.ResponseWriter, r *http.Request) (Event, []byte, bool) {
	var e Event
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return e, nil, false
	}
	if r.ContentLength > MaxBodyBytes {
		http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
		return e, nil, false
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
		} else {
			http.Error(w, "cannot read body", http.StatusBadRequest)
		}
		return e, nil, false
	}
	if err := h.v.Verify(body, r.Header); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return e, nil, false
	}
	if err := json.Unmarshal(body, &e); err != nil || e.ID == "" || e.Type == "" || e.ID != first(r.Header, canonicalID) {
		http.Error(w, "webhooks: body is not an event envelope", http.StatusBadRequest)
		return e, nil, false
	}
	// The slot comes before the id is recorded: a delivery turned away must
	// not be taken for a repeat when it comes again.
	switch h.begin(e.ID) {
	case 0:
	case http.StatusConflict:
		w.Header().Set("Retry-After", retryAfter)
		http.Error(w, "webhooks: event is being processed", http.StatusConflict)
		return e, nil, false
	default:
		w.Header().Set("Retry-After", retryAfter)
		http.Error(w, "webhooks: busy", http.StatusServiceUnavailable)
		return e, nil, false
	}
	dup, err := h.cfg.seen.SeenBefore(r.Context(), e.ID)
	if err != nil {
		h.end(e.ID)
		http.Error(w, "webhooks: cannot record event id", http.StatusInternalServerError)
		return e, nil, false
	}
	if dup {
		h.end(e.ID)
		w.WriteHeader(http.StatusNoContent)
		return e, nil, false
	}
	if h.sync != nil {
		return e, body, true
	}
	w.WriteHeader(http.StatusNoContent)
	// The event must not wait for the handler to return to be acknowledged.
	_ = http.NewResponseController(w).Flush()
	return e, body, true
}
