package stripe_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	sg "github.com/stripe/stripe-go/v84"
	"github.com/stripe/stripe-go/v84/webhook"
)

// fakeStripe is a stateful fake of the parts of Stripe's API the adapter
// uses, with Stripe's documented behaviour where the adapter depends on it:
//
//   - A POST with an Idempotency-Key Stripe has seen in the last 24 hours
//     replays the first answer; with other parameters it is an
//     idempotency_error. A request refused in validation is not saved.
//   - Search shows an object, and each metadata key set on it, only
//     searchLag after it was written; reads by id and lists are current.
//   - Test cards decline with Stripe's codes; 4000002760003184 needs 3D
//     Secure, answered with answer3DS, which sends a signed webhook.
//
// Time is the fake's own clock, moved by advance.
type fakeStripe struct {
	t   *testing.T
	srv *httptest.Server

	mu        sync.Mutex
	now       time.Time
	searchLag time.Duration
	accounts  map[string]*fakeAccount // by key
	seq       int
	idem      map[string]*idemEntry // account + key
	pms       map[string]map[string]any
	customers map[string]bool
	pis       map[string]*fakePI
	refunds   map[string]*fakeRefund
	down      bool            // every request 503 with Retry-After: 30
	searchErr bool            // search answers 500
	dropCards map[string]bool // PaymentIntent creates of these cards lose their answer
	webhooks  []string        // where events go
	charges   map[string]int  // succeeded PaymentIntents by attempt id
	requests  []string        // method and path of every request

	pendingEvents []fakeEvent
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

type fakeAccount struct {
	id             string
	currency       string
	chargesEnabled bool
	forbidden      map[string]bool // permissions the key lacks
	webhookSecret  string
}

type idemEntry struct {
	fingerprint string
	status      int
	body        []byte
	at          time.Time
	drop        bool
}

type fakePI struct {
	id, account     string
	amount          int64
	currency        string
	status          string
	customer, pm    string
	metadata        map[string]string
	metaAt          map[string]time.Time
	lastError       map[string]any
	returnURL       string
	chargeID        string
	amountRefunded  int64
	created         time.Time
	cardNumber      string
	billingPostcode string
}

type fakeRefund struct {
	id, pi   string
	amount   int64
	metadata map[string]string
}

const (
	fakeCardSucceeds     = "4242424242424242"
	fakeCardDeclined     = "4000000000000002"
	fakeCardInsufficient = "4000000000009995"
	fakeCard3DS          = "4000002760003184"
	fakeCardZipCheck     = "4000000000000036"
	fakeCardBadNumber    = "4242424242424241"
	fakeCardLostAnswer   = "4000000000000077"
)

func newFakeStripe(t *testing.T) *fakeStripe {
	f := &fakeStripe{
		t:         t,
		now:       time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC),
		accounts:  map[string]*fakeAccount{},
		idem:      map[string]*idemEntry{},
		pms:       map[string]map[string]any{},
		customers: map[string]bool{},
		pis:       map[string]*fakePI{},
		refunds:   map[string]*fakeRefund{},
		dropCards: map[string]bool{},
		charges:   map[string]int{},
	}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeStripe) addAccount(key string, a *fakeAccount) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if a.forbidden == nil {
		a.forbidden = map[string]bool{}
	}
	f.accounts[key] = a
}

func (f *fakeStripe) advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(d)
}

func (f *fakeStripe) set(fn func(f *fakeStripe)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

func (f *fakeStripe) chargeCount(attemptID string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.charges[attemptID]
}

func (f *fakeStripe) id(prefix string) string {
	f.seq++
	return fmt.Sprintf("%s_fake%06d", prefix, f.seq)
}

type fakeErr struct {
	status int
	body   map[string]any
}

func stripeError(status int, typ, code, msg string) *fakeErr {
	e := map[string]any{"type": typ, "message": msg}
	if code != "" {
		e["code"] = code
	}
	return &fakeErr{status, e}
}

var (
	pathPI       = regexp.MustCompile(`^/v1/payment_intents/(pi_\w+)$`)
	pathPICancel = regexp.MustCompile(`^/v1/payment_intents/(pi_\w+)/cancel$`)
	pathUpdate   = regexp.MustCompile(`^/v1/(customers|payment_methods|payment_intents|refunds)/([\w]+)$`)
	searchQuery  = regexp.MustCompile(`^metadata\['([\w]+)'\]:'([\w]+)'$`)
)

func permissionOf(method, path string) string {
	switch {
	case path == "/v1/account":
		return "account:read"
	case strings.HasPrefix(path, "/v1/customers"):
		return "customers:write"
	case strings.HasPrefix(path, "/v1/payment_methods"):
		return "payment_methods:write"
	case strings.HasPrefix(path, "/v1/payment_intents"):
		return "payment_intents:write"
	case strings.HasPrefix(path, "/v1/refunds"):
		return "refunds:write"
	}
	return ""
}

func (f *fakeStripe) serve(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.requests = append(f.requests, r.Method+" "+r.URL.Path)
	if f.down {
		f.mu.Unlock()
		w.Header().Set("Retry-After", "30")
		writeJSON(w, http.StatusServiceUnavailable, map[string]any{"error": map[string]any{"type": "api_error", "message": "Stripe is down."}})
		return
	}
	key := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	acct := f.accounts[key]
	if acct == nil {
		f.mu.Unlock()
		writeJSON(w, http.StatusUnauthorized, map[string]any{"error": map[string]any{"type": "invalid_request_error", "message": "Invalid API Key provided."}})
		return
	}
	if perm := permissionOf(r.Method, r.URL.Path); acct.forbidden[perm] {
		f.mu.Unlock()
		writeJSON(w, http.StatusForbidden, map[string]any{"error": map[string]any{"type": "invalid_request_error",
			"message": "The provided key does not have the required permissions for this endpoint: " + perm}})
		return
	}
	ikey := r.Header.Get("Idempotency-Key")
	var entry *idemEntry
	if r.Method == http.MethodPost && ikey != "" {
		fp := r.Method + " " + r.URL.Path + "?" + r.PostForm.Encode()
		e := f.idem[acct.id+"|"+ikey]
		if e != nil && f.now.Sub(e.at) >= 24*time.Hour {
			delete(f.idem, acct.id+"|"+ikey)
			e = nil
		}
		if e != nil {
			drop := e.drop && f.dropping(e)
			f.mu.Unlock()
			if e.fingerprint != fp {
				writeJSON(w, http.StatusBadRequest, map[string]any{"error": map[string]any{"type": "idempotency_error",
					"message": "Keys for idempotent requests can only be used with the same parameters they were first used with."}})
				return
			}
			if drop {
				loseAnswer(w)
				return
			}
			w.Header().Set("Idempotent-Replayed", "true")
			writeRaw(w, e.status, e.body)
			return
		}
		entry = &idemEntry{fingerprint: fp, at: f.now}
	}
	var status int
	var body any
	var ferr *fakeErr
	var drop bool
	if r.Form.Has("keelpay_probe") {
		ferr = stripeError(400, "invalid_request_error", "parameter_unknown", "Received unknown parameter: keelpay_probe")
	} else {
		status, body, ferr, drop = f.route(acct, r)
	}
	if ferr != nil {
		status = ferr.status
		body = map[string]any{"error": ferr.body}
	}
	raw, _ := json.Marshal(body)
	// Stripe saves no answer for a request refused in validation.
	if entry != nil && status != http.StatusBadRequest {
		entry.status, entry.body, entry.drop = status, raw, drop
		f.idem[acct.id+"|"+ikey] = entry
	}
	events := f.pendingEvents
	f.pendingEvents = nil
	f.mu.Unlock()
	f.deliver(events)
	if drop {
		loseAnswer(w)
		return
	}
	writeRaw(w, status, raw)
}

// dropping reports whether a replay of e still loses its answer: while its
// card is in dropCards.
func (f *fakeStripe) dropping(e *idemEntry) bool {
	var v struct {
		Metadata map[string]string `json:"metadata"`
		ID       string            `json:"id"`
	}
	_ = json.Unmarshal(e.body, &v)
	if pi := f.pis[v.ID]; pi != nil {
		return f.dropCards[pi.cardNumber]
	}
	return false
}

// loseAnswer closes the connection without an answer, as a time-out on the
// way back does.
func loseAnswer(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err == nil {
		_ = conn.Close()
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	raw, _ := json.Marshal(v)
	writeRaw(w, status, raw)
}

func writeRaw(w http.ResponseWriter, status int, raw []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(raw)
}

func metadataOf(form url.Values) map[string]string {
	m := map[string]string{}
	for k, v := range form {
		if strings.HasPrefix(k, "metadata[") && strings.HasSuffix(k, "]") {
			m[k[len("metadata["):len(k)-1]] = v[0]
		}
	}
	return m
}

func (f *fakeStripe) route(acct *fakeAccount, r *http.Request) (int, any, *fakeErr, bool) {
	p, form := r.URL.Path, r.Form
	switch {
	case r.Method == http.MethodGet && p == "/v1/account":
		return 200, map[string]any{"id": acct.id, "object": "account", "default_currency": acct.currency, "charges_enabled": acct.chargesEnabled}, nil, false
	case r.Method == http.MethodPost && p == "/v1/payment_methods":
		return f.createPM(acct, form)
	case r.Method == http.MethodPost && p == "/v1/customers":
		return f.createCustomer(form)
	case r.Method == http.MethodPost && p == "/v1/payment_intents":
		return f.createPI(acct, form)
	case r.Method == http.MethodGet && p == "/v1/payment_intents/search":
		return f.search(acct, form)
	case r.Method == http.MethodGet && pathPI.MatchString(p):
		pi := f.pis[pathPI.FindStringSubmatch(p)[1]]
		if pi == nil || pi.account != acct.id {
			return 0, nil, stripeError(404, "invalid_request_error", "resource_missing", "No such payment_intent"), false
		}
		return 200, f.piJSON(pi), nil, false
	case r.Method == http.MethodPost && pathPICancel.MatchString(p):
		pi := f.pis[pathPICancel.FindStringSubmatch(p)[1]]
		if pi == nil || pi.account != acct.id {
			return 0, nil, stripeError(404, "invalid_request_error", "resource_missing", "No such payment_intent"), false
		}
		if pi.status == "succeeded" || pi.status == "canceled" {
			return 0, nil, stripeError(400, "invalid_request_error", "payment_intent_unexpected_state", "You cannot cancel this PaymentIntent because it has a status of "+pi.status+"."), false
		}
		pi.status = "canceled"
		f.event("payment_intent.canceled", pi)
		return 200, f.piJSON(pi), nil, false
	case r.Method == http.MethodPost && p == "/v1/refunds":
		return f.createRefund(acct, form)
	case r.Method == http.MethodGet && p == "/v1/refunds":
		var data []any
		for _, id := range sortedKeys(f.refunds) {
			rf := f.refunds[id]
			if rf.pi == form.Get("payment_intent") && f.pis[rf.pi].account == acct.id {
				data = append(data, refundJSON(rf))
			}
		}
		return 200, map[string]any{"object": "list", "data": data, "has_more": false, "url": "/v1/refunds"}, nil, false
	case r.Method == http.MethodPost && pathUpdate.MatchString(p):
		m := pathUpdate.FindStringSubmatch(p)
		switch m[1] {
		case "payment_intents":
			if pi := f.pis[m[2]]; pi != nil && pi.account == acct.id {
				for k, v := range metadataOf(form) {
					pi.metadata[k] = v
					pi.metaAt[k] = f.now
				}
				return 200, f.piJSON(pi), nil, false
			}
		case "payment_methods":
			if pm := f.pms[m[2]]; pm != nil {
				if pc := form.Get("billing_details[address][postal_code]"); pc != "" {
					pm["_postcode"] = pc
				}
				return 200, pm, nil, false
			}
		}
		return 0, nil, stripeError(404, "invalid_request_error", "resource_missing", "No such "+m[1]+": "+m[2]), false
	}
	return 0, nil, stripeError(404, "invalid_request_error", "", "Unrecognized request URL ("+r.Method+": "+p+")."), false
}

func (f *fakeStripe) createPM(acct *fakeAccount, form url.Values) (int, any, *fakeErr, bool) {
	if form.Get("type") != "card" {
		return 0, nil, stripeError(400, "invalid_request_error", "parameter_missing", "Missing required param: type."), false
	}
	number := form.Get("card[number]")
	if number == fakeCardBadNumber || len(number) < 12 {
		return 0, nil, stripeError(402, "card_error", "incorrect_number", "Your card number is incorrect."), false
	}
	month, _ := strconv.Atoi(form.Get("card[exp_month]"))
	year, _ := strconv.Atoi(form.Get("card[exp_year]"))
	brand := "visa"
	if strings.HasPrefix(number, "5") {
		brand = "mastercard"
	}
	pm := map[string]any{
		"id": f.id("pm"), "object": "payment_method", "type": "card",
		"card":      map[string]any{"brand": brand, "last4": number[len(number)-4:], "exp_month": month, "exp_year": year},
		"_number":   number,
		"_postcode": form.Get("billing_details[address][postal_code]"),
		"_account":  acct.id,
	}
	f.pms[pm["id"].(string)] = pm
	return 200, publicPM(pm), nil, false
}

// publicPM is pm without the fake's own fields.
func publicPM(pm map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range pm {
		if !strings.HasPrefix(k, "_") {
			out[k] = v
		}
	}
	return out
}

func (f *fakeStripe) createCustomer(form url.Values) (int, any, *fakeErr, bool) {
	id := f.id("cus")
	f.customers[id] = true
	if pmID := form.Get("payment_method"); pmID != "" {
		pm := f.pms[pmID]
		if pm == nil {
			return 0, nil, stripeError(400, "invalid_request_error", "resource_missing", "No such PaymentMethod: "+pmID), false
		}
		pm["customer"] = id
	}
	return 200, map[string]any{"id": id, "object": "customer"}, nil, false
}

func (f *fakeStripe) createPI(acct *fakeAccount, form url.Values) (int, any, *fakeErr, bool) {
	amount, _ := strconv.ParseInt(form.Get("amount"), 10, 64)
	if form.Get("amount") == "" || form.Get("currency") == "" {
		return 0, nil, stripeError(400, "invalid_request_error", "parameter_missing", "Missing required param: amount."), false
	}
	pm := f.pms[form.Get("payment_method")]
	if pm == nil || pm["customer"] != form.Get("customer") {
		return 0, nil, stripeError(400, "invalid_request_error", "resource_missing", "No such PaymentMethod for this customer."), false
	}
	pi := &fakePI{
		id: f.id("pi"), account: acct.id, amount: amount, currency: form.Get("currency"),
		customer: form.Get("customer"), pm: pm["id"].(string), metadata: metadataOf(form),
		metaAt: map[string]time.Time{}, returnURL: form.Get("return_url"), created: f.now,
		cardNumber: pm["_number"].(string), billingPostcode: pm["_postcode"].(string),
	}
	for k := range pi.metadata {
		pi.metaAt[k] = f.now
	}
	f.pis[pi.id] = pi
	switch pi.cardNumber {
	case fakeCardDeclined:
		return f.decline(pi, "card_declined", "generic_decline", "Your card was declined.")
	case fakeCardInsufficient:
		return f.decline(pi, "card_declined", "insufficient_funds", "Your card has insufficient funds.")
	case fakeCardZipCheck:
		if pi.billingPostcode == "" {
			return f.decline(pi, "incorrect_zip", "incorrect_zip", "Your card's zip code is incorrect.")
		}
	case fakeCard3DS:
		pi.status = "requires_action"
		return 200, f.piJSON(pi), nil, false
	}
	f.succeed(pi)
	return 200, f.piJSON(pi), nil, f.dropCards[pi.cardNumber]
}

func (f *fakeStripe) succeed(pi *fakePI) {
	pi.status = "succeeded"
	pi.chargeID = f.id("ch")
	f.charges[pi.metadata["keelpay_attempt_id"]]++
}

func (f *fakeStripe) decline(pi *fakePI, code, declineCode, msg string) (int, any, *fakeErr, bool) {
	pi.status = "requires_payment_method"
	pi.lastError = map[string]any{"type": "card_error", "code": code, "decline_code": declineCode, "message": msg}
	e := stripeError(402, "card_error", code, msg)
	e.body["decline_code"] = declineCode
	e.body["payment_intent"] = f.piJSON(pi)
	return 0, nil, e, false
}

func (f *fakeStripe) piJSON(pi *fakePI) map[string]any {
	pm := f.pms[pi.pm]
	out := map[string]any{
		"id": pi.id, "object": "payment_intent", "amount": pi.amount, "currency": pi.currency,
		"status": pi.status, "customer": pi.customer, "metadata": pi.metadata,
		"payment_method": publicPM(pm), "created": pi.created.Unix(),
		"last_payment_error": pi.lastError,
	}
	if pi.status == "requires_action" {
		out["next_action"] = map[string]any{"type": "redirect_to_url", "redirect_to_url": map[string]any{
			"url": f.srv.URL + "/3ds/" + pi.id, "return_url": pi.returnURL}}
	}
	if pi.chargeID != "" {
		out["latest_charge"] = map[string]any{
			"id": pi.chargeID, "object": "charge", "amount": pi.amount, "amount_refunded": pi.amountRefunded,
			"refunded":               pi.amountRefunded >= pi.amount,
			"payment_method_details": map[string]any{"type": "card", "card": map[string]any{"authorization_code": "A" + pi.chargeID[len(pi.chargeID)-5:]}},
		}
	}
	return out
}

func (f *fakeStripe) search(acct *fakeAccount, form url.Values) (int, any, *fakeErr, bool) {
	if f.searchErr {
		return 0, nil, stripeError(500, "api_error", "", "Search is unavailable."), false
	}
	m := searchQuery.FindStringSubmatch(form.Get("query"))
	if m == nil {
		return 0, nil, stripeError(400, "invalid_request_error", "", "Invalid search query."), false
	}
	var data []any
	for _, id := range sortedKeys(f.pis) {
		pi := f.pis[id]
		if pi.account == acct.id && pi.metadata[m[1]] == m[2] && !f.now.Before(pi.metaAt[m[1]].Add(f.searchLag)) {
			data = append(data, f.piJSON(pi))
		}
	}
	return 200, map[string]any{"object": "search_result", "data": data, "has_more": false, "url": "/v1/payment_intents/search"}, nil, false
}

func (f *fakeStripe) createRefund(acct *fakeAccount, form url.Values) (int, any, *fakeErr, bool) {
	piID := form.Get("payment_intent")
	if piID == "" {
		return 0, nil, stripeError(400, "invalid_request_error", "parameter_missing", "One of charge or payment_intent is required."), false
	}
	pi := f.pis[piID]
	if pi == nil || pi.account != acct.id {
		return 0, nil, stripeError(404, "invalid_request_error", "resource_missing", "No such payment_intent: "+piID), false
	}
	amount := pi.amount - pi.amountRefunded
	if a := form.Get("amount"); a != "" {
		amount, _ = strconv.ParseInt(a, 10, 64)
	}
	if pi.status != "succeeded" || amount <= 0 || pi.amountRefunded+amount > pi.amount {
		return 0, nil, stripeError(400, "invalid_request_error", "charge_already_refunded", "Charge has already been refunded."), false
	}
	rf := &fakeRefund{id: f.id("re"), pi: piID, amount: amount, metadata: metadataOf(form)}
	f.refunds[rf.id] = rf
	pi.amountRefunded += amount
	return 200, refundJSON(rf), nil, false
}

func refundJSON(rf *fakeRefund) map[string]any {
	return map[string]any{"id": rf.id, "object": "refund", "amount": rf.amount, "status": "succeeded",
		"payment_intent": rf.pi, "metadata": rf.metadata}
}

// answer3DS answers the challenge of the PaymentIntent in actionURL as the
// buyer would, and sends the webhook Stripe sends.
func (f *fakeStripe) answer3DS(actionURL string, complete bool) error {
	f.mu.Lock()
	pi := f.pis[actionURL[strings.LastIndexByte(actionURL, '/')+1:]]
	if pi == nil || pi.status != "requires_action" {
		f.mu.Unlock()
		return fmt.Errorf("no open challenge at %s", actionURL)
	}
	if complete {
		f.succeed(pi)
		f.event("payment_intent.succeeded", pi)
	} else {
		pi.status = "requires_payment_method"
		pi.lastError = map[string]any{"type": "invalid_request_error", "code": "payment_intent_authentication_failure",
			"message": "The provided PaymentMethod has failed authentication."}
		f.event("payment_intent.payment_failed", pi)
	}
	events := f.pendingEvents
	f.pendingEvents = nil
	f.mu.Unlock()
	f.deliver(events)
	return nil
}

type fakeEvent struct {
	account string
	body    []byte
}

// event queues an event about pi for delivery once f.mu is released.
func (f *fakeStripe) event(typ string, pi *fakePI) {
	body, _ := json.Marshal(map[string]any{
		"id": f.id("evt"), "object": "event", "type": typ, "api_version": sg.APIVersion,
		"created": f.now.Unix(), "data": map[string]any{"object": f.piJSON(pi)},
	})
	f.pendingEvents = append(f.pendingEvents, fakeEvent{pi.account, body})
}

// deliver posts each event, signed as Stripe signs it, to every webhook
// endpoint; an answer other than 200 fails the test.
func (f *fakeStripe) deliver(events []fakeEvent) {
	for _, ev := range events {
		f.mu.Lock()
		var secret string
		for _, a := range f.accounts {
			if a.id == ev.account {
				secret = a.webhookSecret
			}
		}
		urls := append([]string(nil), f.webhooks...)
		f.mu.Unlock()
		if secret == "" {
			continue
		}
		signed := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: ev.body, Secret: secret, Timestamp: time.Now()})
		for _, u := range urls {
			req, _ := http.NewRequest(http.MethodPost, u, bytes.NewReader(ev.body))
			req.Header.Set("Stripe-Signature", signed.Header)
			req.Header.Set("Content-Type", "application/json")
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				f.t.Errorf("webhook to %s: %v", u, err)
				continue
			}
			_ = res.Body.Close()
			if res.StatusCode != http.StatusOK {
				f.t.Errorf("webhook to %s: %s", u, res.Status)
			}
		}
	}
}
