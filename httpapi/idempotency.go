package httpapi

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/idempotency"
	"github.com/keelpay/keelpay/storage"
)

// Idempotency-Key handling, as in Stripe (idempotency keys with recovery
// points) and the IETF idempotency-key draft. docs/api.md describes it for
// clients.
const (
	// IdempotencyKeyTTL is how long a response is kept for its key,
	// counted on the service clock from when the first request started.
	// After it the key is free again.
	IdempotencyKeyTTL = 24 * time.Hour
	// IdempotencyLockTimeout is how long a request may hold its key
	// before the key counts as abandoned (its process died mid-request):
	// from then on a retry with the same request takes the key over and
	// resumes from the last step the first run committed. Every step is
	// committed only while its run still holds the key, so a live request
	// that takes longer commits nothing more once it is taken over; and a
	// provider call of an attempt is looked up only once it cannot still
	// be under way.
	IdempotencyLockTimeout = time.Minute
)

// maxIdempotencyKey is the longest Idempotency-Key accepted. Expired
// records are deleted by the retention worker (service.Service.Purge),
// never by a request.
const maxIdempotencyKey = 255

// idempotent runs a secret-key POST under its Idempotency-Key.
//
// Without the header the handler runs as usual. A header that is not 1 to
// 255 printable ASCII characters (or appears twice) is 400 invalid_request
// with details.code invalid_idempotency_key. Keys are scoped per store.
//
// With a valid key the body is read here (a body over MaxBodyBytes or one
// that cannot be read skips idempotency: the handler answers 413 or 400 and
// nothing is stored) and the request is identified by the SHA-256 of its
// method, path and body. Then, in storage, so that it holds across every
// process on the database:
//
//   - the key is free: it is locked for this request and the handler runs;
//     its response is stored (see [storedResponse] for which are) and sent.
//     The handler passes the key (c.key, an [idempotency.Key]) to its
//     service, which records each step the request commits in the same
//     transaction, and stores the answer in the transaction of the last
//     change where it can;
//   - the key was held by a run that did not finish (its process died, or
//     it failed after a change): this request takes it over and resumes
//     from the last step committed (see [api.resume]) instead of running
//     the committed work again;
//   - the key was used by another request (method, path or body): 422
//     idempotency_key_reused, whatever the state of the first one;
//   - the first request is still running: 409 idempotency_key_in_use with
//     Retry-After: 1;
//   - the first request finished: its status and body bytes are sent again
//     with Idempotent-Replayed: true; the handler does not run.
//
// The steps, in order: a route with mode keyInTx first runs the handler
// with the key to be taken by the service's first change (no commit of its
// own, see [api.runKeyInTx]); only a key found in use goes on. Then the
// record, if any, answers a retry (reused, in use, replay); then the key
// is taken in a commit of its own, and the handler (or the resumption of
// an abandoned run) runs holding it.
func (a *api) idempotent(w http.ResponseWriter, r *http.Request, c caller, h handlerFunc, mode keyMode) {
	values, present := r.Header["Idempotency-Key"]
	if !present {
		h(w, r, c)
		return
	}
	if len(values) != 1 || !validIdempotencyKey(values[0]) {
		a.writeError(w, r, keelpay.InvalidRequest("", "invalid_idempotency_key",
			"The Idempotency-Key header must be 1 to 255 printable ASCII characters."))
		return
	}
	// It may be the retry of a request whose key this process could not
	// settle yet.
	a.unsettled.poke()
	body, ok := bufferBody(r)
	if !ok {
		h(w, r, c)
		return
	}
	now := a.cfg.Clock.Now().Truncate(time.Microsecond)
	begin := storage.IdempotencyBeginParams{
		StoreID:     c.store.ID,
		Key:         values[0],
		Fingerprint: requestFingerprint(r.Method, r.URL.Path, body),
		LockToken:   rand.Text(),
		Now:         now,
		LockedUntil: now.Add(IdempotencyLockTimeout),
		ExpiresAt:   now.Add(IdempotencyKeyTTL),
	}

	if mode == keyInTx {
		if a.runKeyInTx(w, r, c, h, begin) == keyAnswered {
			return
		}
		// The key was in use: this request is a retry. The handler read
		// the body: it is put back for the run below.
		r.Body = readCloser{bytes.NewReader(body), r.Body}
		if a.answerFromRecord(w, r, begin) {
			return
		}
	}

	// begin's lock token holds no record here: runKeyInTx gives up only
	// when it took nothing, so the same token takes the key below.
	rec, ok := a.takeKey(w, r, begin)
	if !ok {
		return
	}
	a.runHoldingKey(w, r, c, h, begin, rec)
}

// keyOutcome is what runKeyInTx did.
type keyOutcome int

const (
	// keyAnswered: the request was answered (and its key settled).
	keyAnswered keyOutcome = iota
	// keyInUse: the key was in use; nothing was sent, and the request is
	// to be answered as a retry.
	keyInUse
)

// answerFromRecord answers, from a read of the key's record, a request
// whose key was in use: reused, in use or replayed. It reports false when
// the request is to take the key with a write: the key was left by an
// abandoned run, or freed, or expired meanwhile.
func (a *api) answerFromRecord(w http.ResponseWriter, r *http.Request, begin storage.IdempotencyBeginParams) bool {
	rec, err := a.cfg.Storage.IdempotencyGet(r.Context(), begin.StoreID, begin.Key)
	switch {
	case errors.Is(err, storage.ErrNotFound) || err == nil && !begin.Now.Before(rec.ExpiresAt):
		return false
	case err != nil:
		a.writeError(w, r, fmt.Errorf("idempotency: read: %w", err))
	case !bytes.Equal(rec.Fingerprint, begin.Fingerprint):
		a.writeError(w, r, errKeyReused())
	case rec.Completed():
		writeReplay(w, rec.Status, rec.Body)
	case begin.Now.Before(rec.LockedUntil):
		a.writeError(w, r, keelpay.ErrIdempotencyKeyInUse(time.Second))
	default:
		return false
	}
	return true
}

// takeKey locks the key for this request in a commit of its own, and
// returns its record. ok is false when the request was answered instead:
// the key is reused, in use, or answered (a replay).
func (a *api) takeKey(w http.ResponseWriter, r *http.Request, begin storage.IdempotencyBeginParams) (rec *storage.IdempotencyRecord, ok bool) {
	rec, began, err := a.cfg.Storage.IdempotencyBegin(r.Context(), begin)
	switch {
	case err != nil:
		a.writeError(w, r, fmt.Errorf("idempotency: begin: %w", err))
	case !bytes.Equal(rec.Fingerprint, begin.Fingerprint):
		a.writeError(w, r, errKeyReused())
	case !began && !rec.Completed():
		a.writeError(w, r, keelpay.ErrIdempotencyKeyInUse(time.Second))
	case !began:
		writeReplay(w, rec.Status, rec.Body)
	default:
		return rec, true
	}
	return nil, false
}

// runHoldingKey runs the handler, or resumes the run that left the key at
// rec's recovery point, holding the key begin took; then stores the
// response, or frees the key.
func (a *api) runHoldingKey(w http.ResponseWriter, r *http.Request, c caller, h handlerFunc, begin storage.IdempotencyBeginParams, rec *storage.IdempotencyRecord) {
	c.key = &idempotency.Key{StoreID: begin.StoreID, Key: begin.Key, LockToken: begin.LockToken, Render: renderObject}
	run := &keyRun{key: c.key}
	r = r.WithContext(withKeyRun(r.Context(), run))
	rw := &recordingWriter{ResponseWriter: w}
	defer func() {
		p := recover()
		if p != nil && rw.status == 0 {
			// The middleware would answer 500 internal_error (and log the
			// panic, re-raised below); answering it here, through rw,
			// stores the body that is sent.
			a.writeError(rw, r, keelpay.NewError(keelpay.CodeInternalError, "Internal error."))
		}
		a.finishIdempotent(r, run, rw)
		if p != nil {
			panic(p)
		}
	}()
	if rec.RecoveryPoint != "" && a.resume(rw, r, c, rec) {
		return
	}
	h(rw, r, c)
}

func errKeyReused() error {
	return keelpay.NewError(keelpay.CodeIdempotencyKeyReused,
		"The Idempotency-Key was already used with another method, path or body.")
}

// keyRun is a request's run under its Idempotency-Key, as the flow learns
// it from the handler. It rides in the request's context, not in the
// ResponseWriter, so that whatever wraps the writer the flow still learns
// it: writeError sets busy and code, writeObject sentStored.
type keyRun struct {
	key *idempotency.Key
	// busy: the service's error was idempotency.ErrKeyBusy (another run
	// holds the key, answered it, or left progress on it).
	busy bool
	// code is the error code of the answer, when it is an error.
	code keelpay.Code
	// sentStored: the answer sent is the one key stored with the
	// service's last change (idempotency.Key.Answer); nothing is left to
	// store.
	sentStored bool
}

type keyRunKey struct{}

func withKeyRun(ctx context.Context, run *keyRun) context.Context {
	return context.WithValue(ctx, keyRunKey{}, run)
}

// keyRunOf is the keyRun of a request run under its key, or nil.
func keyRunOf(ctx context.Context) *keyRun {
	run, _ := ctx.Value(keyRunKey{}).(*keyRun)
	return run
}

// runKeyInTx runs the handler of a request whose key is free as far as
// the flow knows, without a commit for the key: the first change the
// service makes takes the key in its own transaction (Begin of the
// [idempotency.Key] the handler passes it), and the last one stores the
// answer with it, so a create or a confirm costs no commit more than
// without a key. The response is held until then. It reports keyInUse,
// having sent nothing, when the key turned out to be in use (held,
// answered, or left with progress by a run that did not finish): the
// caller then answers as for a retry. A response stored without a change
// is 409 or 404 about the state of things.
func (a *api) runKeyInTx(w http.ResponseWriter, r *http.Request, c caller, h handlerFunc, begin storage.IdempotencyBeginParams) keyOutcome {
	claim := &idempotency.Key{StoreID: begin.StoreID, Key: begin.Key, LockToken: begin.LockToken, Begin: &begin, Render: renderObject}
	c.key = claim
	run := &keyRun{key: claim}
	r = r.WithContext(withKeyRun(r.Context(), run))
	rw := &recordingWriter{ResponseWriter: w, header: http.Header{}}
	panicked := true
	defer func() {
		if !panicked {
			return
		}
		// The middleware answers 500 and logs the panic; a lock this run
		// took is freed, as for any 500.
		if claim.Began() {
			_ = a.settleKey(context.WithoutCancel(r.Context()), run, http.StatusInternalServerError, nil, nil)
		}
	}()
	h(rw, r, c)
	panicked = false
	if claim.Busy() || run.busy {
		// The key learns it from its take that failed; the error the
		// handler answered with says the same.
		return keyInUse
	}
	status := sentStatus(rw.status)
	body := rw.body.Bytes()
	ctx := context.WithoutCancel(r.Context())
	stored := storedResponse(status, rw.header, run.code)
	var err error
	if claim.Began() {
		err = a.settleKey(ctx, run, status, rw.header, body)
	}
	if (!claim.Began() || errors.Is(err, storage.ErrNotFound)) && stored {
		// No commit took the key (or it is gone): the answer, decided
		// without a change, is kept in one commit.
		err = a.storeAnswer(ctx, begin, status, body)
	} else if errors.Is(err, storage.ErrNotFound) {
		err = nil // nothing to free
	}
	if errors.Is(err, idempotency.ErrKeyBusy) {
		return keyInUse
	}
	if err != nil {
		a.log.ErrorContext(ctx, "idempotency: store the response", slog.String("request_id", requestID(ctx)), slog.Any("error", err))
	}
	rw.flush()
	return keyAnswered
}

// storeAnswer keeps the answer of a request that changed nothing for its
// key, in one commit; idempotency.ErrKeyBusy when another run took the key
// meanwhile.
func (a *api) storeAnswer(ctx context.Context, begin storage.IdempotencyBeginParams, status int, body []byte) error {
	return a.cfg.Storage.IdempotencyTake(ctx, storage.IdempotencyTakeParams{
		IdempotencyBeginParams: begin, RecoveryPoint: idempotency.Done, Status: status, Body: body,
	})
}

// finishIdempotent stores the response of a request that started, or
// frees the key of one that did not. The response is already written: a
// failure here is only logged. It runs even when the client went away, so
// that a request that changed something is not run again.
func (a *api) finishIdempotent(r *http.Request, run *keyRun, rw *recordingWriter) {
	ctx := context.WithoutCancel(r.Context())
	err := a.settleKey(ctx, run, sentStatus(rw.status), rw.Header(), rw.body.Bytes())
	if errors.Is(err, storage.ErrNotFound) {
		a.log.WarnContext(ctx, "idempotency: the request outlived its key's lock; its response was not stored",
			slog.String("request_id", requestID(ctx)), slog.Duration("lock_timeout", IdempotencyLockTimeout))
	} else if err != nil {
		a.log.ErrorContext(ctx, "idempotency: store the response", slog.String("request_id", requestID(ctx)), slog.Any("error", err))
	}
}

// sentStatus is the status net/http sends for a handler that wrote nothing.
func sentStatus(status int) int {
	if status == 0 {
		return http.StatusOK
	}
	return status
}

// storedResponse reports whether a response is kept for its key; code is
// its error code, when it is an error. A request that did not start
// stores nothing, so that a retry with the same key runs again:
//
//   - 400, 401, 413, 415: rejected by validation or authentication before
//     anything happened (docs/api.md: "a request rejected by validation
//     stores nothing"; setup's 401 invalid_credentials changes nothing).
//   - 429 and 503: the client is to retry after Retry-After, and a 503
//     means the provider did nothing; the next POST does it.
//   - 500 and any other 5xx: the request did not finish its work. What it
//     committed stays recorded on the key, which is unlocked at once, so a
//     retry with the same key resumes it and gets the real outcome.
//   - any other response with Retry-After (409 refund_in_progress): the
//     server asks for that retry.
//   - 409 setup_conflict: nothing changed, and the client is to repeat
//     at once.
//
// Everything else is stored and replayed: 2xx, 404, and the other 409s
// and 422s (answers about the state of things).
func storedResponse(status int, header http.Header, code keelpay.Code) bool {
	switch status {
	case http.StatusBadRequest, http.StatusUnauthorized, http.StatusRequestEntityTooLarge,
		http.StatusUnsupportedMediaType, http.StatusTooManyRequests:
		return false
	}
	if status >= 500 {
		return false
	}
	if header.Get("Retry-After") != "" {
		return false
	}
	return code != keelpay.CodeSetupConflict
}

// validIdempotencyKey reports whether k is 1 to 255 printable ASCII
// characters (space to tilde).
func validIdempotencyKey(k string) bool {
	if len(k) == 0 || len(k) > maxIdempotencyKey {
		return false
	}
	for i := range len(k) {
		if k[i] < ' ' || k[i] > '~' {
			return false
		}
	}
	return true
}

// requestFingerprint identifies a request by its method, path and body.
// The lengths keep the parts apart.
func requestFingerprint(method, path string, body []byte) []byte {
	h := sha256.New()
	for _, part := range [][]byte{[]byte(method), []byte(path), body} {
		h.Write(strconv.AppendInt(nil, int64(len(part)), 10))
		h.Write([]byte{':'})
		h.Write(part)
	}
	return h.Sum(nil)
}

// bufferBody reads the body, up to MaxBodyBytes, and puts back an r.Body
// that yields the same bytes, so the handler reads it as usual. ok is false
// when the body is larger or could not be read: what is put back then
// fails for the handler as the original would have (413, or a read error).
func bufferBody(r *http.Request) (body []byte, ok bool) {
	if r.ContentLength > MaxBodyBytes {
		return nil, false
	}
	orig := r.Body
	body, err := io.ReadAll(io.LimitReader(orig, MaxBodyBytes+1))
	switch {
	case err != nil:
		r.Body = readCloser{io.MultiReader(bytes.NewReader(body), errReader{err}), orig}
		return nil, false
	case len(body) > MaxBodyBytes:
		r.Body = readCloser{io.MultiReader(bytes.NewReader(body), orig), orig}
		return nil, false
	}
	r.Body = readCloser{bytes.NewReader(body), orig}
	return body, true
}

type readCloser struct {
	io.Reader
	io.Closer
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// writeReplay sends a stored response again.
func writeReplay(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("Idempotent-Replayed", "true")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// recordingWriter writes the response through and keeps a copy of its
// status and body. A held one (header set) writes nothing until flush.
type recordingWriter struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
	header http.Header // held: the response's header, sent by flush
}

func (w *recordingWriter) Header() http.Header {
	if w.header != nil {
		return w.header
	}
	return w.ResponseWriter.Header()
}

func (w *recordingWriter) WriteHeader(code int) {
	if w.status == 0 && code >= 200 {
		w.status = code
	}
	if w.header == nil {
		w.ResponseWriter.WriteHeader(code)
	}
}

func (w *recordingWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	w.body.Write(b)
	if w.header != nil {
		return len(b), nil
	}
	return w.ResponseWriter.Write(b)
}

// flush sends a held response.
func (w *recordingWriter) flush() {
	h := w.ResponseWriter.Header()
	for k, v := range w.header {
		h[k] = v
	}
	w.ResponseWriter.WriteHeader(sentStatus(w.status))
	_, _ = w.ResponseWriter.Write(w.body.Bytes())
}

func (w *recordingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
