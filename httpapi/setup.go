package httpapi

import (
	"net/http"

	"github.com/keelpay/keelpay/internal/check"
	"github.com/keelpay/keelpay/stores"
)

func (a *api) setup(w http.ResponseWriter, r *http.Request, c caller) {
	obj, err := readObject(w, r, false)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	if err := obj.checkUnknown("client_id", "client_secret", "webhook_url", "rotate_webhook_secret", "rotate_secret_key"); err != nil {
		a.writeError(w, r, err)
		return
	}
	var p stores.SetupParams
	allowInsecure := a.cfg.Stores.AllowInsecureWebhooks()
	f := obj.fields()
	f.str("client_id", true, &p.ClientID, check.ClientID)
	f.str("client_secret", true, &p.ClientSecret, check.AppClientSecret)
	f.str("webhook_url", true, &p.WebhookURL, func(s string) error { return check.WebhookURL(s, allowInsecure) })
	f.boolean("rotate_webhook_secret", &p.RotateWebhookSecret)
	f.boolean("rotate_secret_key", &p.RotateSecretKey)
	if f.err != nil {
		a.writeError(w, r, f.err)
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
	writeRaw(w, res.Status(), res.JSON())
}
