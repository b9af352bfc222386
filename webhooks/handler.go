package webhooks

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
)

// MaxBodyBytes is the largest body [NewHandler] reads; a larger one is
// answered with 413.
const MaxBodyBytes = 1 << 20

// HandlerOption configures the handler of [NewHandler].
type HandlerOption func(*handler)

// WithSeen sets where the handler records event ids to drop repeated
// deliveries; the default is a [NewMemorySeen] of [DefaultSeenSize].
func WithSeen(s Seen) HandlerOption {
	return func(h *handler) {
		if s != nil {
			h.seen = s
		}
	}
}

// WithDone sets a function the handler calls once for every request it
// serves, whatever the outcome, after everything it started for that request
// has finished: for an accepted event, after fn has returned. Tests use it to
// wait for processing without sleeping.
func WithDone(done func()) HandlerOption {
	return func(h *handler) { h.done = done }
}

type handler struct {
	done func()
	fn   func(context.Context, Event, []byte)
	seen Seen
	v    *Verifier
}

// NewHandler returns the receiving end of deliveries, to be mounted at the
// store's webhook_url. For each request it:
//
//   - answers 405 to any method but POST;
//   - reads the body, answering 413 beyond [MaxBodyBytes];
//   - verifies it with v, answering 400 with the error's text (which never
//     contains anything from the request) when it fails;
//   - decodes the [Event], answering 400 if the body is not an envelope with an
//     id equal to webhook-id and a type;
//   - records the id with [Seen], answering 500 if that fails;
//   - answers 204 and flushes the response;
//   - then, unless the id had been seen before, calls fn with the event and the
//     raw body on a new goroutine, with the request's context detached from
//     its cancellation ([context.WithoutCancel]), so that the service gets its
//     answer at once and slow processing never causes a retry.
//
// Once the 204 is sent the service will not deliver the event again, so fn
// owns it from then on: it should record the event durably before acting on
// it. [net/http.Server.Shutdown] does not wait for fn calls still running; an
// event cut short by the process exiting is not delivered again, and a store
// finds it with GET /v1/events. A panic in fn is not recovered.
func NewHandler(v *Verifier, fn func(ctx context.Context, e Event, body []byte), opts ...HandlerOption) http.Handler {
	if v == nil || fn == nil {
		panic("webhooks: NewHandler needs a Verifier and a function")
	}
	h := &handler{fn: fn, v: v}
	for _, o := range opts {
		o(h)
	}
	if h.seen == nil {
		h.seen = NewMemorySeen(DefaultSeenSize)
	}
	return h
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	e, body, ok := h.accept(w, r)
	if !ok {
		if h.done != nil {
			h.done()
		}
		return
	}
	ctx := context.WithoutCancel(r.Context())
	go func() {
		if h.done != nil {
			defer h.done()
		}
		h.fn(ctx, e, body)
	}()
}

// accept answers the request and reports whether fn is to be called.
func (h *handler) accept(w http.ResponseWriter, r *http.Request) (Event, []byte, bool) {
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
	dup, err := h.seen.SeenBefore(r.Context(), e.ID)
	if err != nil {
		http.Error(w, "webhooks: cannot record event id", http.StatusInternalServerError)
		return e, nil, false
	}
	w.WriteHeader(http.StatusNoContent)
	if dup {
		return e, nil, false
	}
	// The event must not wait for the handler to return to be acknowledged.
	_ = http.NewResponseController(w).Flush()
	return e, body, true
}
