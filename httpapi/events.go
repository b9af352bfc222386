package httpapi

import (
	"bytes"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/events"
	"github.com/keelpay/keelpay/internal/wirejson"
)

// eventRoutes are the routes of webhook tests and events.
func (a *api) eventRoutes() []route {
	return []route{
		{"POST", "/v1/webhooks/test", authSecret, keyed, a.webhookTest},
		{"GET", "/v1/events", authSecret, noKey, a.listEvents},
		{"GET", "/v1/events/{id}", authSecret, noKey, a.getEvent},
		{"POST", "/v1/events/{id}/redeliver", authSecret, keyed, a.redeliverEvent},
		{"POST", "/v1/events/redeliver", authSecret, keyed, a.redeliverEvents},
		{"GET", "/v1/events/{id}/attempts", authSecret, noKey, a.listAttempts},
	}
}

// eventJSON is the stored envelope, byte for byte, with the delivery
// state added as its last field.
func eventJSON(e *keelpay.Event) []byte {
	return appendEvent(make([]byte, 0, len(e.Body)+192), e)
}

// appendEvent appends the event as eventJSON renders it. The stored bytes
// are not decoded or re-encoded: they are the JSON the service committed.
func appendEvent(out []byte, e *keelpay.Event) []byte {
	body := bytes.TrimRight(e.Body, " \n")
	out = append(out, body[:len(body)-1]...)
	out = append(out, `,"delivery":{"status":`...)
	d := e.Delivery
	out = wirejson.AppendString(out, string(d.Status))
	out = append(out, `,"attempts":`...)
	out = strconv.AppendInt(out, int64(d.Attempts), 10)
	out = append(out, `,"last_attempt_at":`...)
	out = appendTime(out, d.LastAttemptAt)
	out = append(out, `,"next_attempt_at":`...)
	out = appendTime(out, d.NextAttemptAt)
	out = append(out, `,"last_status_code":`...)
	if d.LastStatusCode != 0 {
		out = strconv.AppendInt(out, int64(d.LastStatusCode), 10)
	} else {
		out = append(out, "null"...)
	}
	out = append(out, `,"last_failure":`...)
	if d.LastFailure != "" {
		out = wirejson.AppendString(out, string(d.LastFailure))
	} else {
		out = append(out, "null"...)
	}
	return append(out, "}}"...)
}

func appendTime(out []byte, t time.Time) []byte {
	if t.IsZero() {
		return append(out, "null"...)
	}
	out = append(out, '"')
	out = t.UTC().AppendFormat(out, time.RFC3339)
	return append(out, '"')
}

// requireNoBody rejects a body with any field on routes that take none.
func requireNoBody(w http.ResponseWriter, r *http.Request) error {
	obj, err := readObject(w, r, true)
	if err != nil {
		return err
	}
	return obj.CheckUnknown()
}

func (a *api) webhookTest(w http.ResponseWriter, r *http.Request, c caller) {
	if err := requireNoBody(w, r); err != nil {
		a.writeError(w, r, err)
		return
	}
	e, err := a.cfg.Events.SendTest(r.Context(), c.store.ID, c.key)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	a.writeObject(w, r, http.StatusAccepted, e, true)
}

func (a *api) listEvents(w http.ResponseWriter, r *http.Request, c caller) {
	q, err := parseQuery(r.URL.RawQuery, "type", "limit", "starting_after", "ending_before")
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	p := events.ListParams{StoreID: c.store.ID, Type: keelpay.EventType(q["type"]),
		StartingAfter: q["starting_after"], EndingBefore: q["ending_before"]}
	if _, ok := q["type"]; ok && !keelpay.ValidEventType(q["type"]) {
		a.writeError(w, r, keelpay.InvalidRequest("type", "invalid_type", "type must be one of the event types."))
		return
	}
	if p.Limit, err = queryLimit(q); err != nil {
		a.writeError(w, r, err)
		return
	}
	list, more, err := a.cfg.Events.List(r.Context(), p)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	// The list is written around the stored bytes of its events, which
	// encoding/json would decode and compact again, into a buffer used
	// again by later lists (a page is up to a hundred events).
	n := 64
	for _, e := range list {
		n += len(e.Body) + 192
	}
	buf := listBuffers.Get().(*[]byte)
	defer putListBuffer(buf)
	if cap(*buf) < n {
		*buf = make([]byte, 0, n)
	}
	out := append((*buf)[:0], `{"object":"list","data":[`...)
	for i, e := range list {
		if i > 0 {
			out = append(out, ',')
		}
		out = appendEvent(out, e)
	}
	out = append(out, `],"has_more":`...)
	out = strconv.AppendBool(out, more)
	out = append(out, '}')
	writeRaw(w, http.StatusOK, out)
	*buf = out
}

// listBuffers keeps the buffers of written event lists for the next ones.
var listBuffers = sync.Pool{New: func() any { return new([]byte) }}

// putListBuffer returns a buffer to listBuffers, unless it grew beyond
// what lists usually need (it is then left to the garbage collector).
func putListBuffer(b *[]byte) {
	if cap(*b) <= 1<<20 {
		listBuffers.Put(b)
	}
}

func (a *api) getEvent(w http.ResponseWriter, r *http.Request, c caller) {
	e, err := a.cfg.Events.Get(r.Context(), c.store.ID, r.PathValue("id"))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeRaw(w, http.StatusOK, eventJSON(e))
}

func (a *api) redeliverEvent(w http.ResponseWriter, r *http.Request, c caller) {
	if err := requireNoBody(w, r); err != nil {
		a.writeError(w, r, err)
		return
	}
	e, err := a.cfg.Events.Redeliver(r.Context(), c.store.ID, r.PathValue("id"))
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	writeRaw(w, http.StatusOK, eventJSON(e))
}

// attemptJSON is one delivery attempt. It carries the receiver's answer,
// never the request's signature or the webhook secret.
type attemptJSON struct {
	ID           string  `json:"id"`
	Object       string  `json:"object"`
	Event        string  `json:"event"`
	StartedAt    string  `json:"started_at"`
	DurationMS   int64   `json:"duration_ms"`
	StatusCode   *int    `json:"status_code"`
	Failure      *string `json:"failure"`
	ResponseBody string  `json:"response_body"`
}

func newAttemptJSON(at *keelpay.DeliveryAttempt) attemptJSON {
	out := attemptJSON{
		ID: at.ID, Object: "delivery_attempt", Event: at.EventID,
		StartedAt: at.StartedAt.UTC().Format(time.RFC3339), DurationMS: at.Duration.Milliseconds(), ResponseBody: at.ResponseBody,
	}
	if at.StatusCode != 0 {
		out.StatusCode = &at.StatusCode
	}
	if at.Failure != "" {
		f := string(at.Failure)
		out.Failure = &f
	}
	return out
}

func (a *api) listAttempts(w http.ResponseWriter, r *http.Request, c caller) {
	q, err := parseQuery(r.URL.RawQuery, "limit", "starting_after", "ending_before")
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	p := events.AttemptListParams{StoreID: c.store.ID, EventID: r.PathValue("id"),
		StartingAfter: q["starting_after"], EndingBefore: q["ending_before"]}
	if p.Limit, err = queryLimit(q); err != nil {
		a.writeError(w, r, err)
		return
	}
	list, more, err := a.cfg.Events.Attempts(r.Context(), p)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	out := struct {
		Object  string        `json:"object"`
		Data    []attemptJSON `json:"data"`
		HasMore bool          `json:"has_more"`
	}{Object: "list", Data: make([]attemptJSON, len(list)), HasMore: more}
	for i, at := range list {
		out.Data[i] = newAttemptJSON(at)
	}
	writeJSON(w, http.StatusOK, out)
}

func (a *api) redeliverEvents(w http.ResponseWriter, r *http.Request, c caller) {
	obj, err := readObject(w, r, true)
	if err == nil {
		err = obj.CheckUnknown("status", "type", "created_after", "created_before", "starting_after")
	}
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	p := events.RedeliverManyParams{StoreID: c.store.ID}
	var status, typ string
	f := obj.Decoder()
	f.Str("status", false, &status)
	f.Str("type", false, &typ)
	f.Timestamp("created_after", &p.CreatedAfter)
	f.Timestamp("created_before", &p.CreatedBefore)
	f.Str("starting_after", false, &p.StartingAfter)
	if err := f.Err(); err != nil {
		a.writeError(w, r, err)
		return
	}
	p.Status, p.Type = keelpay.DeliveryStatus(status), keelpay.EventType(typ)
	if f.Form().Sent("status") && status == "" {
		p.Status = "invalid"
	}
	if f.Form().Sent("type") && typ == "" {
		a.writeError(w, r, keelpay.InvalidRequest("type", "invalid_type", "type must be one of the event types."))
		return
	}
	p.Idempotency = c.key
	res, err := a.cfg.Events.RedeliverMany(r.Context(), p)
	if err != nil {
		a.writeError(w, r, err)
		return
	}
	a.writeObject(w, r, http.StatusOK, res, true)
}
