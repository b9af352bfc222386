package httpapi

import (
	"net/http"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/idempotency"
	"github.com/keelpay/keelpay/storage"
)

// resume answers a request that took over the key of a run that did not
// finish, from the last step that run committed (rec.RecoveryPoint and
// rec.ObjectID), instead of running committed work again. It reports false
// when the request should simply run: nothing it would repeat was
// committed. c.key is the key it took over: the service that carries the
// step to its end stores the answer with its change.
func (a *api) resume(w http.ResponseWriter, r *http.Request, c caller, rec *storage.IdempotencyRecord) bool {
	ctx := r.Context()
	switch rec.RecoveryPoint {
	case idempotency.Attempt:
		// A confirm whose attempt committed: carry that attempt to its
		// end and answer with it.
		pi, found, err := a.cfg.Payments.ResumeConfirm(ctx, c.store, rec.ObjectID, c.key)
		switch {
		case !found && err == nil:
			return false
		case err != nil:
			a.writeError(w, r, err)
		default:
			a.writeObject(w, r, http.StatusOK, pi, true)
		}
		return true
	case idempotency.CancelMarked:
		// A cancel of an intent in 3D Secure: done when the intent is
		// canceled; otherwise cancelling again is safe.
		pi, err := a.cfg.Payments.GetIntent(ctx, c.store, rec.ObjectID)
		if err != nil || pi.Status != keelpay.IntentCanceled {
			return false
		}
		a.writeObject(w, r, http.StatusOK, pi, true)
		return true
	case idempotency.RefundSent:
		res, found, err := a.cfg.Refunds.Resume(ctx, c.store, rec.ObjectID, c.key)
		switch {
		case !found && err == nil:
			return false
		case err != nil:
			a.writeError(w, r, err)
		default:
			a.writeRefund(w, r, res.Refund)
		}
		return true
	case idempotency.Created:
		// A webhook test whose event was created: answer with that event
		// rather than sending another.
		e, err := a.cfg.Events.Get(ctx, c.store.ID, rec.ObjectID)
		if err != nil {
			return false
		}
		a.writeObject(w, r, http.StatusAccepted, e, true)
		return true
	}
	return false
}
