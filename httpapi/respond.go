package httpapi

import (
	"encoding/json"
	"log/slog"
	"math"
	"net/http"
	"strconv"

	"github.com/keelpay/keelpay"
)

// writeJSON writes v as the JSON response with the given status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := json.Marshal(v)
	if err != nil {
		// Every response type marshals; this is a programming error.
		panic("httpapi: marshal response: " + err.Error())
	}
	writeRaw(w, status, body)
}

func writeRaw(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)+1))
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
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
// in the log.
func (a *api) writeError(w http.ResponseWriter, r *http.Request, err error) {
	e, ok := keelpay.AsError(err)
	if !ok {
		a.log.ErrorContext(r.Context(), "internal error", slog.Any("error", err))
		e = keelpay.NewError(http.StatusInternalServerError, keelpay.CodeInternalError, "Internal error.")
	}
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(e.RetryAfter.Seconds()))))
	}
	writeJSON(w, e.Status, errorBody{Error: errorFields{Code: e.Code, Message: e.Message, Details: e.Details}})
}
