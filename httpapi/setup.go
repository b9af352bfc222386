package httpapi

import (
	"net/http"

	"github.com/keelpay/keelpay/httpapi/internal/decode"
	"github.com/keelpay/keelpay/stores"
)

func (a *api) setup(w http.ResponseWriter, r *http.Request, c caller) {
	body, err := readBody(w, r)
	var p stores.SetupParams
	if err == nil {
		p, err = decode.Setup(body)
	}
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	if c.store != nil {
		p.StoreID = c.store.ID
	}
	p.ClientAddr = a.cfg.ClientAddr(r)
	p.Idempotency = c.key
	res, err := a.cfg.Stores.Setup(r.Context(), p)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	setStore(r, res.Store.ID)
	a.writeObject(w, r, outcomeStatus(res.Outcome()), res, true)
}
