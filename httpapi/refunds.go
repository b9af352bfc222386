package httpapi

import (
	"net/http"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/refunds"
)

// refundRoutes are the routes of refunds.
func (a *api) refundRoutes() []route {
	return []route{
		{"POST", "/v1/refunds", authSecret, keyed, a.sendRefund},
		{"GET", "/v1/refunds/{id}", authSecret, noKey, a.getRefund},
	}
}

func (a *api) sendRefund(w http.ResponseWriter, r *http.Request, c caller) {
	body, err := readBody(w, r)
	var p refunds.Params
	if err == nil {
		p, err = refunds.DecodeParams(body)
	}
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	p.Idempotency = c.key
	res, err := a.cfg.Refunds.Send(r.Context(), c.store, p)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeRefund(w, res.Refund)
}

// writeRefund writes the answer to a send of refund ref: the answer its
// service stores with an idempotency key.
func writeRefund(w http.ResponseWriter, ref *keelpay.Refund) {
	writeRaw(w, refunds.SendStatus(ref), refunds.JSON(ref))
}

func (a *api) getRefund(w http.ResponseWriter, r *http.Request, c caller) {
	ref, err := a.cfg.Refunds.Get(r.Context(), c.store, r.PathValue("id"))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeRaw(w, http.StatusOK, refunds.JSON(ref))
}
