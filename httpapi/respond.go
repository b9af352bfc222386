package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/events"
	"github.com/keelpay/keelpay/idempotency"
	"github.com/keelpay/keelpay/internal/render"
	"github.com/keelpay/keelpay/payments"
	"github.com/keelpay/keelpay/stores"
)

// statusClientClosed is the status logged for a request whose client went
// away before it was answered.
const statusClientClosed = 499

// writeJSON writes v, marshalled by encoding/json, as the JSON response
// with the given status: for the API's own bodies (errors, health). The
// objects of the services are written with writeObject, from the one
// function that renders each of them (appendObject), which also renders
// the answer an idempotency key stores.
func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		// Every response type marshals; this is a programming error.
		panic("httpapi: marshal response: " + err.Error())
	}
	writeRaw(w, status, body)
}

// writeRaw writes body, JSON, followed by a newline, with the given
// status.
func writeRaw(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h["Content-Type"] = contentTypeJSON
	h["Content-Length"] = contentLength(len(body) + 1)
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}

// contentTypeJSON is the value of every JSON answer's Content-Type
// header, set as it is into the header map: net/http copies the values
// when the status is written and never changes them, and an Add appends
// to a slice of full capacity, which copies it.
var contentTypeJSON = []string{"application/json"}[:1:1]

// contentLengths are the Content-Length values of the bodies of up to
// maxCachedLength bytes seen so far, each made once (see contentTypeJSON).
var contentLengths [maxCachedLength + 1]atomic.Pointer[[]string]

const maxCachedLength = 8191

func contentLength(n int) []string {
	if n > maxCachedLength {
		return []string{strconv.Itoa(n)}
	}
	if v := contentLengths[n].Load(); v != nil {
		return *v
	}
	v := []string{strconv.Itoa(n)}[:1:1]
	contentLengths[n].Store(&v)
	return v
}

type errorBody struct {
	Error errorFields `json:"error"`
}

type errorFields struct {
	Code    keelpay.Code   `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details,omitempty"`
}

// writeError renders err through the one error table: a *keelpay.Error is
// shown as it is; anything else is 500 internal_error, with the detail only
// in the log. A request run under its Idempotency-Key learns the error's
// code, and whether the key was busy, through its keyRun.
func (a *api) writeError(w http.ResponseWriter, r *http.Request, err error) {
	run := keyRunOf(r.Context())
	if run != nil && errors.Is(err, idempotency.ErrKeyBusy) {
		run.busy = true
	}
	e, ok := keelpay.AsError(err)
	if !ok && r.Context().Err() != nil && errors.Is(err, r.Context().Err()) {
		// The client went away before a read finished (a POST's work is
		// not tied to its client). Not an internal error: 499, as proxies
		// log a closed request, for the metrics and the log line.
		a.log.InfoContext(r.Context(), "client closed the request", slog.String("request_id", requestID(r.Context())))
		w.WriteHeader(statusClientClosed)
		return
	}
	if !ok {
		if !errors.Is(err, idempotency.ErrKeyBusy) {
			// (A busy key's answer is discarded: the request is answered
			// as a retry of the run that holds the key.)
			a.log.ErrorContext(r.Context(), "internal error", slog.Any("error", err))
		}
		e = keelpay.NewError(keelpay.CodeInternalError, "Internal error.")
	}
	if run != nil {
		run.code = e.Code
	}
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(e.RetryAfter.Seconds()))))
	}
	writeJSON(w, Status(e.Code), errorBody{Error: errorFields{Code: e.Code, Message: e.Message, Details: e.Details}})
}

// bufPool holds the buffers objects are rendered into: an intent is the
// answer of most requests. Buffers that grew past maxPooledBuf are
// dropped rather than kept.
var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 2048); return &b }}

const maxPooledBuf = 64 << 10

// writeObject writes v, an object a service returned, as the JSON
// response with the given status (see render.AppendIntent for
// personal). A request run under its Idempotency-Key whose key stored the
// answer about v with the service's last change is sent that answer, as
// stored: the key rendered it with renderObject too, so both are one
// rendering, and nothing is left to store.
func (a *api) writeObject(w http.ResponseWriter, r *http.Request, status int, v any, personal bool) {
	if run := keyRunOf(r.Context()); run != nil {
		if status, body, ok := run.key.Answer(v); ok {
			run.sentStored = true
			h := w.Header()
			h["Content-Type"] = contentTypeJSON
			h["Content-Length"] = contentLength(len(body))
			w.WriteHeader(status)
			_, _ = w.Write(body)
			return
		}
	}
	writeRendered(w, status, v, personal)
}

// writeRendered writes v rendered by appendObject, from a pooled buffer.
func writeRendered(w http.ResponseWriter, status int, v any, personal bool) {
	bp := bufPool.Get().(*[]byte)
	b := appendObject((*bp)[:0], v, personal)
	writeRaw(w, status, b) // the writer copies b before it returns
	if cap(b) <= maxPooledBuf {
		*bp = b[:0]
		bufPool.Put(bp)
	}
}

// renderObject is the idempotency.Key's Render: the answer of a keyed
// request, made with the secret key, is rendered as writeObject renders
// it for the secret key, with the status of its outcome.
func renderObject(o idempotency.Outcome, v any) (int, []byte, error) {
	if !renderable(v) {
		return 0, nil, fmt.Errorf("httpapi: no rendering for %T", v)
	}
	return outcomeStatus(o), appendObject(nil, v, true), nil
}

// outcomeStatus is the status of the answer that reports a request's
// outcome: 201 for an object it made, 200 otherwise.
func outcomeStatus(o idempotency.Outcome) int {
	if o == idempotency.OutcomeCreated {
		return http.StatusCreated
	}
	return http.StatusOK
}

// appendObject appends the JSON of an object a service returns, rendered
// by the one function for its kind. personal is for payment intents and
// card sessions (see render.AppendIntent).
func appendObject(b []byte, v any, personal bool) []byte {
	switch o := v.(type) {
	case *keelpay.PaymentIntent:
		return render.AppendIntent(b, o, personal)
	case *keelpay.CardSession:
		return append(b, render.CardSession(o, personal)...)
	case *keelpay.Card:
		return append(b, render.Card(o)...)
	case *payments.Erasure:
		return append(b, erasureJSON(o)...)
	case *keelpay.Refund:
		return append(b, render.Refund(o)...)
	case *stores.SetupResult:
		return append(b, render.Setup(o.Store, o.SecretKey, o.WebhookSecret)...)
	case events.RedeliverManyResult:
		return append(b, render.Redelivery(o.Queued, o.Next)...)
	case *keelpay.Event:
		return appendEvent(b, o)
	}
	panic(fmt.Sprintf("httpapi: no rendering for %T", v))
}

// renderable reports whether appendObject renders v.
func renderable(v any) bool {
	switch v.(type) {
	case *keelpay.PaymentIntent, *keelpay.CardSession, *keelpay.Card, *payments.Erasure,
		*keelpay.Refund, *stores.SetupResult, events.RedeliverManyResult, *keelpay.Event:
		return true
	}
	return false
}
