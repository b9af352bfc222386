package httpapi

import (
	"net/http"

	"github.com/keelpay/keelpay/internal/check"
	"github.com/keelpay/keelpay/stores"
)

// storeJSON is the response of a setup. Keys and secrets appear only when
// they were issued by this call.
type storeJSON struct {
	ID             string `json:"id"`
	Object         string `json:"object"`
	Currency       string `json:"currency"`
	PublishableKey string `json:"publishable_key"`
	SecretKey      string `json:"secret_key,omitempty"`
	WebhookURL     string `json:"webhook_url"`
	WebhookSecret  string `json:"webhook_secret,omitempty"`
}

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
	answersWith(r, setupAnswer)
	res, err := a.cfg.Stores.Setup(r.Context(), p)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	setStore(r, res.Store.ID)
	writeAnswer(w, res, setupAnswer)
}

// setupAnswer is 201 for a store's first setup and 200 for a change.
func setupAnswer(res *stores.SetupResult) (int, any) {
	status := http.StatusOK
	if res.Created {
		status = http.StatusCreated
	}
	return status, storeJSON{
		ID:             res.Store.ID,
		Object:         "store",
		Currency:       res.Store.Currency,
		PublishableKey: res.Store.PublishableKey,
		SecretKey:      res.SecretKey,
		WebhookURL:     res.Store.WebhookURL,
		WebhookSecret:  res.WebhookSecret,
	}
}
