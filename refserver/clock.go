package refserver

import (
	"context"
	"encoding/json"
	"log/slog"
	"math"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/keelpay/keelpay"
)

// maxAdvance bounds one move of the sandbox clock (a year).
const maxAdvance = 366 * 24 * 3600

// sandboxClock serves GET and POST /sandbox/clock (sandbox mode only): POST
// {"advance_seconds": N} moves the service's clock forward for everything
// that is scheduled, as Stripe's test clocks do; webhook-timestamp stays
// real time. Both answer {"offset_seconds", "now"}. A POST whose
// Content-Type is not application/json is 415 unsupported_media_type. After a move, due runs
// the work that became due before the answer.
func sandboxClock(clock *keelpay.OffsetClock, log *slog.Logger, due func(context.Context) error) http.Handler {
	type state struct {
		OffsetSeconds int64  `json:"offset_seconds"`
		Now           string `json:"now"`
	}
	reply := func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(state{
			OffsetSeconds: int64(clock.Offset() / time.Second),
			Now:           clock.Now().Format(time.RFC3339),
		})
	}
	fail := func(w http.ResponseWriter, status int, code keelpay.Code, detail, msg string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		e := map[string]any{"code": code, "message": msg}
		if detail != "" {
			e["details"] = map[string]string{"field": "advance_seconds", "code": detail}
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"error": e})
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodGet:
			reply(w)
		case http.MethodPost:
			// As the API: a body is JSON, and says so (a form-encoded
			// advance_seconds is refused, not misread).
			mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
			if err != nil || mt != "application/json" || (params["charset"] != "" && !strings.EqualFold(params["charset"], "utf-8")) {
				fail(w, http.StatusUnsupportedMediaType, keelpay.CodeUnsupportedMediaType, "",
					"Content-Type must be application/json.")
				return
			}
			var body struct {
				AdvanceSeconds *float64 `json:"advance_seconds"`
			}
			dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<10))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&body); err != nil {
				fail(w, http.StatusBadRequest, keelpay.CodeInvalidRequest, "invalid_json", "The body must be {\"advance_seconds\": N}.")
				return
			}
			n := body.AdvanceSeconds
			if n == nil || *n != math.Trunc(*n) || *n < 1 || *n > maxAdvance {
				fail(w, http.StatusBadRequest, keelpay.CodeInvalidRequest, "invalid_advance_seconds",
					"advance_seconds must be a whole number of seconds from 1 to 31622400.")
				return
			}
			clock.Advance(time.Duration(*n) * time.Second)
			log.InfoContext(r.Context(), "sandbox clock advanced", slog.Int64("seconds", int64(*n)),
				slog.Int64("offset_seconds", int64(clock.Offset()/time.Second)))
			if err := due(r.Context()); err != nil {
				log.ErrorContext(r.Context(), "sandbox clock: due work", slog.Any("error", err))
			}
			reply(w)
		default:
			w.Header().Set("Allow", "GET, POST")
			fail(w, http.StatusMethodNotAllowed, keelpay.CodeMethodNotAllowed, "", "Use GET or POST.")
		}
	})
}
