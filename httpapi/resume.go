package httpapi

import (
	"encoding/json"
	"net/http"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/internal/idem"
	"github.com/keelpay/keelpay/payments"
	"github.com/keelpay/keelpay/refunds"
	"github.com/keelpay/keelpay/storage"
)

// answersWith tells the request's Idempotency-Key claim, when it has one,
// how the handler answers with the result of the service's last change:
// the service then stores that answer in the same transaction as the
// change, so a retry after a crash gets it and nothing runs twice. The
// handler must answer with exactly render(result) when the service
// returns result.
func answersWith[T any](r *http.Request, render func(T) (status int, body any)) {
	c := idem.FromContext(r.Context())
	if c == nil {
		return
	}
	c.Render = func(v any) (int, []byte, bool) {
		t, ok := v.(T)
		if !ok {
			return 0, nil, false
		}
		status, body := render(t)
		return status, append(marshal(body), '\n'), true
	}
}

// writeAnswer writes render(v), the answer that answersWith announced.
func writeAnswer[T any](w http.ResponseWriter, v T, render func(T) (int, any)) {
	status, body := render(v)
	writeJSON(w, status, body)
}

func marshal(v any) []byte {
	if o, ok := v.(*payments.IntentObject); ok {
		// The same bytes, without reflection (intentjson.go).
		return appendIntent(nil, o)
	}
	body, err := json.Marshal(v)
	if err != nil {
		// Every response type marshals; this is a programming error.
		panic("httpapi: marshal response: " + err.Error())
	}
	return body
}

// The answers of the requests whose services store them with their last
// change.

func intentCreated(pi *keelpay.PaymentIntent) (int, any) {
	return http.StatusCreated, payments.NewIntentObject(pi, true)
}

func intentAnswer(pi *keelpay.PaymentIntent) (int, any) {
	return http.StatusOK, payments.NewIntentObject(pi, true)
}

func cardSessionCreated(cs *keelpay.CardSession) (int, any) {
	return http.StatusCreated, payments.NewCardSessionObject(cs, true)
}

// refundAnswer is 201 for the refund's first send and 200 for a send
// again.
func refundAnswer(r *keelpay.Refund) (int, any) {
	if r.Attempts == 1 {
		return http.StatusCreated, refunds.NewObject(r)
	}
	return http.StatusOK, refunds.NewObject(r)
}

// resume answers a request that took over the key of a run that did not
// finish, from the last step that run committed (rec.RecoveryPoint and
// rec.ObjectID), instead of running committed work again. It reports false
// when the request should simply run: nothing it would repeat was
// committed.
func (a *api) resume(w http.ResponseWriter, r *http.Request, c caller, rec *storage.IdempotencyRecord) bool {
	ctx := r.Context()
	switch rec.RecoveryPoint {
	case idem.Attempt:
		// A confirm whose attempt committed: carry that attempt to its
		// end and answer with it.
		return resumeWith(a, w, r, intentAnswer, func() (*keelpay.PaymentIntent, bool, error) {
			return a.cfg.Payments.ResumeConfirm(ctx, c.store, rec.ObjectID)
		})
	case idem.CancelMarked:
		// A cancel of an intent in 3D Secure: done when the intent is
		// canceled; otherwise cancelling again is safe.
		pi, err := a.cfg.Payments.GetIntent(ctx, c.store, rec.ObjectID)
		if err != nil || pi.Status != keelpay.IntentCanceled {
			return false
		}
		writeAnswer(w, pi, intentAnswer)
		return true
	case idem.RefundSent:
		return resumeWith(a, w, r, refundAnswer, func() (*keelpay.Refund, bool, error) {
			res, found, err := a.cfg.Refunds.Resume(ctx, c.store, rec.ObjectID)
			if res == nil {
				return nil, found, err
			}
			return res.Refund, found, err
		})
	case idem.Created:
		// A webhook test whose event was created: answer with that event
		// rather than sending another.
		e, err := a.cfg.Events.Get(ctx, c.store.ID, rec.ObjectID)
		if err != nil {
			return false
		}
		writeRaw(w, http.StatusAccepted, eventJSON(e))
		return true
	}
	return false
}

// resumeWith answers with what resume returns, rendered by render (and
// stored with the service's last change, see answersWith). It reports
// false when resume found nothing to resume: the request then runs.
func resumeWith[T any](a *api, w http.ResponseWriter, r *http.Request, render func(T) (int, any), resume func() (T, bool, error)) bool {
	answersWith(r, render)
	v, found, err := resume()
	switch {
	case !found && err == nil:
		return false
	case err != nil:
		a.writeError(w, r, err)
	default:
		writeAnswer(w, v, render)
	}
	return true
}
