package refserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/httpapi"
	"github.com/keelpay/keelpay/provider/sandbox"
	"github.com/keelpay/keelpay/stores"
)

// The sandbox tools of the reference server: routes under /sandbox/ that
// exist only in sandbox mode, beside the API, and never in the library's
// handler (httpapi.New). See docs/sandbox.md.

// sandboxBodyMax bounds the body of a sandbox request.
const sandboxBodyMax = 4 << 10

// sandboxAPI serves the sandbox routes that act for a store.
type sandboxAPI struct {
	webhookFaults *sandbox.WebhookFaults
	log           *slog.Logger
	stores        *stores.Service
	trigger       *trigger
}

// writeSandboxError renders err in the API's error envelope; anything that
// is not a keelpay.Error is 500 internal_error, its detail only in the log.
func (s *sandboxAPI) writeError(w http.ResponseWriter, r *http.Request, err error) {
	e, ok := keelpay.AsError(err)
	if !ok {
		s.log.ErrorContext(r.Context(), "sandbox: internal error", slog.String("path", r.URL.Path), slog.Any("error", err))
		e = keelpay.NewError(keelpay.CodeInternalError, "Internal error.")
	}
	body := map[string]any{"code": e.Code, "message": e.Message}
	if len(e.Details) > 0 {
		body["details"] = e.Details
	}
	writeSandboxJSON(w, httpapi.Status(e.Code), map[string]any{"error": body})
}

func writeSandboxJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// authed wraps a handler of a store's sandbox route: the store's secret
// key in "Authorization: Bearer", as on the API.
func (s *sandboxAPI) authed(methods string, h func(w http.ResponseWriter, r *http.Request, st *keelpay.Store)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.Contains(", "+methods+",", ", "+r.Method+",") {
			w.Header().Set("Allow", methods)
			s.writeError(w, r, keelpay.NewError(keelpay.CodeMethodNotAllowed,
				"The method is not allowed on this path; see the Allow header."))
			return
		}
		scheme, key, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		if !strings.EqualFold(scheme, "Bearer") {
			s.writeError(w, r, stores.ErrInvalidAPIKey())
			return
		}
		st, err := s.stores.Authenticate(r.Context(), key)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		h(w, r, st)
	})
}

// decodeSandbox reads a JSON object body strictly into dst (an empty body
// is {}): unknown fields and bad JSON are 400 invalid_request.
func decodeSandbox(w http.ResponseWriter, r *http.Request, dst any) error {
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, sandboxBodyMax)); err != nil {
		return keelpay.NewError(keelpay.CodeRequestTooLarge, "The body is too large.")
	}
	if buf.Len() == 0 {
		return nil
	}
	dec := json.NewDecoder(&buf)
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil || dec.More() {
		if f, ok := strings.CutPrefix(errString(err), "json: unknown field "); ok {
			field := strings.Trim(f, `"`)
			return keelpay.InvalidRequest(field, "unknown_field", "The request has an unknown field; see details.field.")
		}
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return keelpay.InvalidRequest(te.Field, "invalid_"+te.Field, te.Field+" is not valid.")
		}
		return keelpay.InvalidRequest("", "invalid_json", "The body must be one JSON object.")
	}
	return nil
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// faultsJSON is the body and the answer of /sandbox/webhooks/faults.
type faultsJSON struct {
	Duplicate          float64 `json:"duplicate"`
	Reorder            float64 `json:"reorder"`
	ReorderHoldSeconds float64 `json:"reorder_hold_seconds"`
	Delay              float64 `json:"delay"`
	DelaySeconds       float64 `json:"delay_seconds"`
	Fail               float64 `json:"fail"`
	Seed               int64   `json:"seed"`
}

func newFaultsJSON(f sandbox.Faults) faultsJSON {
	if f == (sandbox.Faults{}) {
		return faultsJSON{}
	}
	return faultsJSON{
		Duplicate: f.Duplicate, Reorder: f.Reorder, ReorderHoldSeconds: f.ReorderHold.Seconds(),
		Delay: f.Delay, DelaySeconds: f.DelayBy.Seconds(), Fail: f.Fail, Seed: f.Seed,
	}
}

// faultsChange is the body of POST /sandbox/webhooks/faults: only the
// fields present change (null is the same as absent).
type faultsChange struct {
	Duplicate          *float64 `json:"duplicate"`
	Reorder            *float64 `json:"reorder"`
	ReorderHoldSeconds *float64 `json:"reorder_hold_seconds"`
	Delay              *float64 `json:"delay"`
	DelaySeconds       *float64 `json:"delay_seconds"`
	Fail               *float64 `json:"fail"`
	Seed               *int64   `json:"seed"`
}

// faults serves /sandbox/webhooks/faults: GET reads the store's delivery
// faults; POST changes the fields its body names and keeps the others (a
// body that names none is 400 no_fields, so that nothing changes by
// accident); DELETE turns every fault off. Each answer is the faults now
// in force. Faults act while any share is above 0.
func (s *sandboxAPI) faults(w http.ResponseWriter, r *http.Request, st *keelpay.Store) {
	switch r.Method {
	case http.MethodDelete:
		if err := s.webhookFaults.Set(st.ID, sandbox.Faults{}); err != nil {
			s.writeError(w, r, err)
			return
		}
		s.log.Info("sandbox faults off", slog.String("store_id", st.ID))
	case http.MethodPost:
		var body faultsChange
		if err := decodeSandbox(w, r, &body); err != nil {
			s.writeError(w, r, err)
			return
		}
		if body == (faultsChange{}) {
			s.writeError(w, r, keelpay.InvalidRequest("", "no_fields",
				"The body names no fault to change: give the fields to change; DELETE turns every fault off."))
			return
		}
		for _, d := range []struct {
			name string
			v    *float64
		}{{"reorder_hold_seconds", body.ReorderHoldSeconds}, {"delay_seconds", body.DelaySeconds}} {
			if d.v != nil && (*d.v != math.Trunc(*d.v) || *d.v < 0 || *d.v > sandbox.FaultWaitMax.Seconds()) {
				s.writeError(w, r, keelpay.InvalidRequest(d.name, "invalid_"+d.name, d.name+" must be from 1 to 86400."))
				return
			}
		}
		f := s.webhookFaults.Get(st.ID)
		for _, c := range []struct {
			to   *float64
			from *float64
		}{{&f.Duplicate, body.Duplicate}, {&f.Reorder, body.Reorder}, {&f.Delay, body.Delay}, {&f.Fail, body.Fail}} {
			if c.from != nil {
				*c.to = *c.from
			}
		}
		if body.ReorderHoldSeconds != nil {
			f.ReorderHold = time.Duration(*body.ReorderHoldSeconds) * time.Second
		}
		if body.DelaySeconds != nil {
			f.DelayBy = time.Duration(*body.DelaySeconds) * time.Second
		}
		if body.Seed != nil {
			f.Seed = *body.Seed
		}
		if err := s.webhookFaults.Set(st.ID, f); err != nil {
			s.writeError(w, r, err)
			return
		}
		s.log.Info("sandbox faults set", slog.String("store_id", st.ID), slog.Any("faults", newFaultsJSON(s.webhookFaults.Get(st.ID))))
	}
	writeSandboxJSON(w, http.StatusOK, newFaultsJSON(s.webhookFaults.Get(st.ID)))
}
