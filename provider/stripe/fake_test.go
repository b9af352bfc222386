package stripe_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
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
// uses. Each rule it enforces follows Stripe's documentation, cited where
// the rule is; what the documentation leaves open is not faked as a
// certainty but left to the adapter to guard.
//
// How to use it from a test of this package (an end-to-end browser test
// included):
//
//	f := newFakeStripe(t)                  // started; closed when t ends
//	f.srv.URL                              // the API's base URL (Config.APIURL)
//	f.jsURL()                              // the Stripe.js stand-in (Config.JSURL), GET /v3/
//	f.addAccount("rk_test_x", &fakeAccount{id: "acct_x", currency: "eur",
//		chargesEnabled: true,
//		rawCards:       true,            // may send card numbers with a secret key
//		publishableKey: "pk_test_x",     // Stripe.js's key for this account
//		webhookSecret:  "whsec_x"})      // signs the events it sends
//	f.set(func(f *fakeStripe) { f.webhooks = append(f.webhooks, url) }) // where events go
//	f.advance(time.Minute)                 // moves its clock: search catches up, refunds of
//	                                       // fakeCardRefundFails fail, pending refunds succeed
//	f.failRefundsNow()                     // fails at once the refunds due to fail later
//	f.chargeList(), f.refundList()         // the charges and refunds it holds
//	f.searchCount()                        // searches made so far
//
// Test cards (docs.stripe.com/testing) are the fakeCard constants below.
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

	searches       int             // search requests answered or refused
	searchOff      bool            // search refused as for accounts where it is unavailable
	searchWindow   time.Time       // the real second searches are counted in
	searchInSecond int             // searches in searchWindow
	probeAnswer    *fakeErr        // when set, the answer to an idempotency-key probe
	received       int64           // when set, what a succeeding charge receives
	lockTimeout    map[string]bool // POST paths answered 429 lock_timeout
	publishable    map[string]*fakeAccount
	events         map[string]*fakeStoredEvent

	pendingEvents []fakeEvent
}

type fakeStoredEvent struct {
	account string
	body    []byte
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
	rawCards       bool   // enabled for raw card data APIs
	publishableKey string // pk_test_... for Stripe.js
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
	amountReceived  int64
	created         time.Time
	cardNumber      string
	billingPostcode string
}

type fakeRefund struct {
	id, pi        string
	amount        int64
	metadata      map[string]string
	status        string // pending, succeeded, failed, canceled (docs.stripe.com/api/refunds/object)
	failureReason string
	created       time.Time
	// changeAt is when the fake's clock moves the refund on: a
	// fakeCardRefundFails refund fails, a fakeCardRefundPending one
	// succeeds.
	changeAt time.Time
}

// Test cards and their outcomes are Stripe's (docs.stripe.com/testing):
// 4242... succeeds, 4000...0002 is a generic decline, ...9995 declines
// with insufficient_funds, ...0036 fails the postal-code check,
// 4000002760003184 always needs 3D Secure, and a wrong Luhn digit is
// incorrect_number. 4000000000000077 is the fake's own: its answer is lost
// on the way back, as a time-out does.
const (
	fakeCardSucceeds     = "4242424242424242"
	fakeCardDeclined     = "4000000000000002"
	fakeCardInsufficient = "4000000000009995"
	fakeCard3DS          = "4000002760003184"
	fakeCardZipCheck     = "4000000000000036"
	fakeCardBadNumber    = "4242424242424241"
	fakeCardLostAnswer   = "4000000000000077"
	// docs.stripe.com/testing#refunds: a refund of a charge of this card
	// succeeds, then fails later (charge.refund.updated, refund.failed).
	fakeCardRefundFails = "4000000000005126"
	// docs.stripe.com/testing#refunds: a refund of a charge of this card
	// is pending, then succeeds later.
	fakeCardRefundPending = "4000000000007726"
	// refundChange is how long the fake's clock moves before such a
	// refund changes.
	refundChange = 10 * time.Minute
	// fakeUnknownSecret signs the events of an account whose endpoint
	// secret the adapter was not given.
	fakeUnknownSecret = "whsec_not_given_to_keelpay"
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

		lockTimeout: map[string]bool{},
		publishable: map[string]*fakeAccount{},
		events:      map[string]*fakeStoredEvent{},
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
	if a.publishableKey != "" {
		f.publishable[a.publishableKey] = a
	}
}

// jsURL is the Stripe.js stand-in's URL.
func (f *fakeStripe) jsURL() string { return f.srv.URL + "/v3/" }

// advance moves the fake's clock by d, moving on the refunds due by then
// and sending their events.
func (f *fakeStripe) advance(d time.Duration) {
	f.mu.Lock()
	f.now = f.now.Add(d)
	f.moveRefunds(false)
	events := f.pendingEvents
	f.pendingEvents = nil
	f.mu.Unlock()
	f.deliver(events)
}

// failRefundsNow fails at once every refund due to fail later.
func (f *fakeStripe) failRefundsNow() {
	f.mu.Lock()
	f.moveRefunds(true)
	events := f.pendingEvents
	f.pendingEvents = nil
	f.mu.Unlock()
	f.deliver(events)
}

// moveRefunds moves on the refunds whose change is due (all of them when
// now): as docs.stripe.com/testing#refunds describes, a refund of
// fakeCardRefundFails goes from succeeded to failed, and Stripe sends
// refund.failed and charge.refund.updated (docs.stripe.com/refunds, failed
// refunds: the amount returns to the balance); a pending one succeeds and
// Stripe sends charge.refund.updated and refund.updated.
func (f *fakeStripe) moveRefunds(now bool) {
	for _, id := range sortedKeys(f.refunds) {
		rf := f.refunds[id]
		if rf.changeAt.IsZero() || (!now && f.now.Before(rf.changeAt)) {
			continue
		}
		rf.changeAt = time.Time{}
		pi := f.pis[rf.pi]
		switch {
		case rf.status == "succeeded" && pi.cardNumber == fakeCardRefundFails:
			rf.status, rf.failureReason = "failed", "expired_or_canceled_card"
			pi.amountRefunded -= rf.amount
			f.refundEvent("refund.failed", rf)
			f.refundEvent("charge.refund.updated", rf)
		case rf.status == "pending":
			rf.status = "succeeded"
			f.refundEvent("refund.updated", rf)
			f.refundEvent("charge.refund.updated", rf)
		}
	}
}

// chargeList returns the PaymentIntents the fake holds, as Stripe shows them.
func (f *fakeStripe) chargeList() []map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []map[string]any
	for _, id := range sortedKeys(f.pis) {
		out = append(out, f.piJSON(f.pis[id]))
	}
	return out
}

// refundList returns the refunds the fake holds, as Stripe shows them.
func (f *fakeStripe) refundList() []map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []map[string]any
	for _, id := range sortedKeys(f.refunds) {
		out = append(out, refundJSON(f.refunds[id]))
	}
	return out
}

// requestList returns the method and path of every API request so far.
func (f *fakeStripe) requestList() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.requests...)
}

func (f *fakeStripe) searchCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.searches
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

// stripeError is an error as Stripe answers one (docs.stripe.com/api/errors):
// an error object with type, message and, when there is one, code.
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
	pathPM       = regexp.MustCompile(`^/v1/payment_methods/(pm_\w+)$`)
	pathPMDetach = regexp.MustCompile(`^/v1/payment_methods/(pm_\w+)/detach$`)
	pathEvent    = regexp.MustCompile(`^/v1/events/(\w+)$`)
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
	case strings.HasPrefix(path, "/v1/events"):
		return "events:read"
	}
	return ""
}

func (f *fakeStripe) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet && r.URL.Path == "/v3/" {
		w.Header().Set("Content-Type", "text/javascript; charset=utf-8")
		w.Header().Set("Access-Control-Allow-Origin", "*")
		_, _ = io.WriteString(w, stripeJSStandIn)
		return
	}
	if strings.HasPrefix(r.URL.Path, "/3ds/") {
		f.serve3DS(w, r)
		return
	}
	// Stripe.js calls the API from the buyer's browser, on another origin.
	w.Header().Set("Access-Control-Allow-Origin", "*")
	if r.Method == http.MethodOptions {
		w.Header().Set("Access-Control-Allow-Headers", "Authorization, Content-Type")
		w.Header().Set("Access-Control-Allow-Methods", "GET, POST")
		w.WriteHeader(http.StatusNoContent)
		return
	}
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
	if key == "" {
		// Stripe.js sends its publishable key as the key parameter.
		key = r.PostForm.Get("key")
	}
	acct := f.accounts[key]
	if pa := f.publishable[key]; pa != nil {
		// A publishable key may only create PaymentMethods, as Stripe.js
		// does (docs.stripe.com/keys: publishable keys are for the
		// client side and can only create tokens and such objects).
		if !(r.Method == http.MethodPost && r.URL.Path == "/v1/payment_methods") {
			f.mu.Unlock()
			writeJSON(w, http.StatusUnauthorized, map[string]any{"error": map[string]any{"type": "invalid_request_error",
				"message": "This API call cannot be made with a publishable API key. Please use a secret API key."}})
			return
		}
		st, body, ferr, _ := f.createPM(pa, r.PostForm, true)
		f.mu.Unlock()
		if ferr != nil {
			writeJSON(w, ferr.status, map[string]any{"error": ferr.body})
			return
		}
		writeJSON(w, st, body)
		return
	}
	if acct == nil {
		f.mu.Unlock()
		// docs.stripe.com/api/authentication: a wrong key is a 401.
		writeJSON(w, http.StatusUnauthorized, map[string]any{"error": map[string]any{"type": "invalid_request_error", "message": "Invalid API Key provided."}})
		return
	}
	if perm := permissionOf(r.Method, r.URL.Path); acct.forbidden[perm] {
		// docs.stripe.com/keys#limit-access: a restricted key without the
		// permission of an endpoint is refused with 403.
		f.mu.Unlock()
		writeJSON(w, http.StatusForbidden, map[string]any{"error": map[string]any{"type": "invalid_request_error",
			"message": "The provided key does not have the required permissions for this endpoint: " + perm}})
		return
	}
	// docs.stripe.com/rate-limits and /error-low-level: a request that
	// meets another on the same object may be answered 429 with the code
	// lock_timeout. Nothing documents that the work was not done, so the
	// fake does the work (and saves its idempotent result) and answers
	// lock_timeout.
	lockAfter := r.Method == http.MethodPost && f.lockTimeout[r.URL.Path]
	if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/search") {
		// docs.stripe.com/rate-limits: the Search API allows 20 read
		// requests per second; docs.stripe.com/search: search is not
		// available to merchants in India.
		f.searches++
		if now := time.Now().Truncate(time.Second); !now.Equal(f.searchWindow) {
			f.searchWindow, f.searchInSecond = now, 0
		}
		f.searchInSecond++
		if f.searchInSecond > 20 {
			f.mu.Unlock()
			writeJSON(w, http.StatusTooManyRequests, map[string]any{"error": map[string]any{"type": "invalid_request_error", "code": "rate_limit",
				"message": "Too many requests hit the API too quickly."}})
			return
		}
	}
	if mErr := checkMetadata(r.PostForm); mErr != nil {
		// docs.stripe.com/metadata: 50 keys, keys of 40 characters,
		// values of 500; a request over them is refused in validation.
		f.mu.Unlock()
		writeJSON(w, mErr.status, map[string]any{"error": mErr.body})
		return
	}
	ikey := r.Header.Get("Idempotency-Key")
	var entry *idemEntry
	if r.Method == http.MethodPost && ikey != "" {
		// docs.stripe.com/api/idempotent_requests: a key is kept at
		// least 24 hours; a request with a key seen before replays the
		// first answer, and with other parameters is an idempotency_error.
		// Results are saved only once an endpoint began to run: a request
		// that fails validation is not saved.
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
		// docs.stripe.com/error-codes#parameter-unknown and
		// docs.stripe.com/api/errors: an unknown parameter is refused with
		// an invalid_request_error whose code is parameter_unknown and
		// whose param names it.
		ferr = stripeError(400, "invalid_request_error", "parameter_unknown", "Received unknown parameter: keelpay_probe")
		ferr.body["param"] = "keelpay_probe"
		if f.probeAnswer != nil {
			ferr = f.probeAnswer
		}
	} else {
		status, body, ferr, drop = f.route(acct, r)
	}
	if ferr != nil {
		status = ferr.status
		body = map[string]any{"error": ferr.body}
	}
	raw, _ := json.Marshal(body)
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
	if lockAfter {
		writeJSON(w, http.StatusTooManyRequests, map[string]any{"error": map[string]any{"type": "invalid_request_error", "code": "lock_timeout",
			"message": "This object cannot be accessed right now because another API request or Stripe process is currently accessing it."}})
		return
	}
	writeRaw(w, status, raw)
}

// checkMetadata refuses metadata over Stripe's limits
// (docs.stripe.com/metadata; docs.stripe.com/api/metadata): at most 50
// keys, keys of at most 40 characters without square brackets, values of
// at most 500 characters. The error is a 400 invalid_request_error whose
// param is metadata.
func checkMetadata(form url.Values) *fakeErr {
	m := metadataOf(form)
	bad := func(msg string) *fakeErr {
		e := stripeError(400, "invalid_request_error", "parameter_invalid_string_too_long", msg)
		e.body["param"] = "metadata"
		return e
	}
	if len(m) > 50 {
		return bad("Invalid metadata: metadata can have up to 50 keys.")
	}
	for k, v := range m {
		if len(k) > 40 || strings.ContainsAny(k, "[]") {
			return bad("Invalid metadata: key " + strconv.Quote(k) + " must be at most 40 characters.")
		}
		if len(v) > 500 {
			return bad("Invalid metadata: the value of " + strconv.Quote(k) + " must be at most 500 characters.")
		}
	}
	return nil
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
		return f.createPM(acct, form, false)
	case r.Method == http.MethodGet && pathPM.MatchString(p):
		pm := f.pms[pathPM.FindStringSubmatch(p)[1]]
		if pm == nil || pm["_account"] != acct.id {
			return 0, nil, stripeError(404, "invalid_request_error", "resource_missing", "No such PaymentMethod: '"+pathPM.FindStringSubmatch(p)[1]+"'"), false
		}
		return 200, publicPM(pm), nil, false
	case r.Method == http.MethodPost && pathPMDetach.MatchString(p):
		// docs.stripe.com/api/payment_methods/detach: another account's or
		// an unknown PaymentMethod is not found; one attached to no
		// Customer cannot be detached; a detached one is no longer charged
		// for its Customer.
		id := pathPMDetach.FindStringSubmatch(p)[1]
		pm := f.pms[id]
		if pm == nil || pm["_account"] != acct.id {
			return 0, nil, stripeError(404, "invalid_request_error", "resource_missing", "No such PaymentMethod: '"+id+"'"), false
		}
		if pm["customer"] == nil {
			return 0, nil, stripeError(400, "invalid_request_error", "", "The payment method you provided is not attached to a customer so detachment is impossible."), false
		}
		delete(pm, "customer")
		return 200, publicPM(pm), nil, false
	case r.Method == http.MethodGet && pathEvent.MatchString(p):
		// docs.stripe.com/api/events/retrieve: an event is read back by
		// its id with the account's key; another account's is not found.
		ev := f.events[pathEvent.FindStringSubmatch(p)[1]]
		if ev == nil || ev.account != acct.id {
			return 0, nil, stripeError(404, "invalid_request_error", "resource_missing", "No such event: '"+pathEvent.FindStringSubmatch(p)[1]+"'"), false
		}
		var v any
		_ = json.Unmarshal(ev.body, &v)
		return 200, v, nil, false
	case r.Method == http.MethodPost && p == "/v1/customers":
		return f.createCustomer(acct, form)
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
		// docs.stripe.com/api/payment_intents/cancel: a PaymentIntent can
		// be canceled only while it is not succeeded (or canceled).
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
				add := metadataOf(form)
				n := len(pi.metadata)
				for k := range add {
					if _, ok := pi.metadata[k]; !ok {
						n++
					}
				}
				if n > 50 {
					// docs.stripe.com/metadata: 50 keys on an object.
					e := stripeError(400, "invalid_request_error", "", "Invalid metadata: metadata can have up to 50 keys.")
					e.body["param"] = "metadata"
					return 0, nil, e, false
				}
				for k, v := range add {
					pi.metadata[k] = v
					pi.metaAt[k] = f.now
				}
				return 200, f.piJSON(pi), nil, false
			}
		case "payment_methods":
			if pm := f.pms[m[2]]; pm != nil && pm["_account"] == acct.id {
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

// createPM makes a card PaymentMethod. A card number sent with a secret or
// restricted key is refused unless the account is enabled for raw card data
// APIs (docs.stripe.com/security/guide: integrations that send card numbers
// to Stripe's API need to be PCI DSS validated with SAQ D and enabled by
// Stripe), with Stripe's error; sent with a publishable key, as Stripe.js
// does from the buyer's browser, it is accepted.
func (f *fakeStripe) createPM(acct *fakeAccount, form url.Values, publishable bool) (int, any, *fakeErr, bool) {
	if form.Get("type") != "card" {
		e := stripeError(400, "invalid_request_error", "parameter_missing", "Missing required param: type.")
		e.body["param"] = "type"
		return 0, nil, e, false
	}
	if !publishable && !acct.rawCards {
		return 0, nil, stripeError(402, "invalid_request_error", "",
			"Sending credit card numbers directly to the Stripe API is generally unsafe. We suggest you use test tokens that map to the test card you are using, see https://stripe.com/docs/testing. To enable raw card data APIs in test mode, see https://support.stripe.com/questions/enabling-access-to-raw-card-data-apis."), false
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
		"card":            map[string]any{"brand": brand, "last4": number[len(number)-4:], "exp_month": month, "exp_year": year},
		"billing_details": map[string]any{"name": form.Get("billing_details[name]")},
		"_number":         number,
		"_postcode":       form.Get("billing_details[address][postal_code]"),
		"_account":        acct.id,
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

func (f *fakeStripe) createCustomer(acct *fakeAccount, form url.Values) (int, any, *fakeErr, bool) {
	if pmID := form.Get("payment_method"); pmID != "" {
		pm := f.pms[pmID]
		if pm == nil || pm["_account"] != acct.id {
			e := stripeError(400, "invalid_request_error", "resource_missing", "No such PaymentMethod: '"+pmID+"'")
			e.body["param"] = "payment_method"
			return 0, nil, e, false
		}
		if pm["customer"] != nil {
			// docs.stripe.com/api/payment_methods/attach: a PaymentMethod
			// attached to a Customer cannot be attached to another.
			e := stripeError(400, "invalid_request_error", "", "The payment method you provided has already been attached to a customer.")
			e.body["param"] = "payment_method"
			return 0, nil, e, false
		}
	}
	id := f.id("cus")
	f.customers[id] = true
	if pmID := form.Get("payment_method"); pmID != "" {
		f.pms[pmID]["customer"] = id
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
	// docs.stripe.com/api/payment_intents/object: amount_received is the
	// amount that was collected; a test sets received to make it differ
	// from amount.
	pi.amountReceived = pi.amount
	if f.received != 0 {
		pi.amountReceived = f.received
	}
	pi.chargeID = f.id("ch")
	f.charges[pi.metadata["keelpay_attempt_id"]]++
}

// decline fails pi as Stripe does a declined card
// (docs.stripe.com/declines/codes): a 402 card_error with the decline_code
// and the PaymentIntent, now requires_payment_method with last_payment_error.
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
		"payment_method": publicPM(pm), "created": pi.created.Unix(), "amount_received": pi.amountReceived,
		"last_payment_error": pi.lastError,
	}
	if pi.status == "requires_action" {
		out["next_action"] = map[string]any{"type": "redirect_to_url", "redirect_to_url": map[string]any{
			"url": f.srv.URL + "/3ds/" + pi.id, "return_url": pi.returnURL}}
	}
	if pi.chargeID != "" {
		out["latest_charge"] = map[string]any{
			"id": pi.chargeID, "object": "charge", "amount": pi.amount, "amount_refunded": pi.amountRefunded,
			"amount_captured": pi.amountReceived, "refunded": pi.amountRefunded >= pi.amountReceived,
			"payment_method_details": map[string]any{"type": "card", "card": map[string]any{"authorization_code": "A" + pi.chargeID[len(pi.chargeID)-5:]}},
		}
	}
	return out
}

// search answers a search of PaymentIntents by a metadata value. As
// docs.stripe.com/search says, data is searchable typically within a
// minute of a write and later during outages: the fake shows an object,
// and each metadata key set on it, only searchLag after it was written.
// Reads by id and lists are current.
func (f *fakeStripe) search(acct *fakeAccount, form url.Values) (int, any, *fakeErr, bool) {
	if f.searchErr {
		return 0, nil, stripeError(500, "api_error", "", "Search is unavailable."), false
	}
	if f.searchOff {
		return 0, nil, stripeError(400, "invalid_request_error", "", "Search is not available for this account."), false
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
	amount := pi.amountReceived - pi.amountRefunded
	if a := form.Get("amount"); a != "" {
		amount, _ = strconv.ParseInt(a, 10, 64)
	}
	if pi.status != "succeeded" || amount <= 0 || pi.amountRefunded+amount > pi.amountReceived {
		// docs.stripe.com/error-codes#charge-already-refunded.
		return 0, nil, stripeError(400, "invalid_request_error", "charge_already_refunded", "Charge has already been refunded."), false
	}
	rf := &fakeRefund{id: f.id("re"), pi: piID, amount: amount, metadata: metadataOf(form), status: "succeeded", created: f.now}
	switch pi.cardNumber {
	case fakeCardRefundFails:
		rf.changeAt = f.now.Add(refundChange)
	case fakeCardRefundPending:
		rf.status, rf.changeAt = "pending", f.now.Add(refundChange)
	}
	f.refunds[rf.id] = rf
	pi.amountRefunded += amount
	f.refundEvent("refund.created", rf)
	return 200, refundJSON(rf), nil, false
}

func refundJSON(rf *fakeRefund) map[string]any {
	out := map[string]any{"id": rf.id, "object": "refund", "amount": rf.amount, "status": rf.status,
		"payment_intent": rf.pi, "metadata": rf.metadata, "created": rf.created.Unix()}
	if rf.failureReason != "" {
		out["failure_reason"] = rf.failureReason
	}
	return out
}

// answer3DS answers the challenge of the PaymentIntent in actionURL as the
// buyer would, and sends the webhook Stripe sends. As
// docs.stripe.com/payments/3d-secure describes, the PaymentIntent is
// requires_action with a redirect_to_url next action, then succeeds, or
// goes back to requires_payment_method with
// payment_intent_authentication_failure.
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

// serve3DS is the bank's 3D Secure page at a PaymentIntent's
// next_action.redirect_to_url.url: GET shows Complete and Fail buttons, and
// POST answers the challenge (answer3DS) and sends the buyer back to the
// PaymentIntent's return_url with the payment_intent,
// payment_intent_client_secret and redirect_status query parameters, as
// docs.stripe.com/payments/3d-secure and
// docs.stripe.com/api/payment_intents/object#payment_intent_object-next_action-redirect_to_url
// describe.
func (f *fakeStripe) serve3DS(w http.ResponseWriter, r *http.Request) {
	id := strings.TrimPrefix(r.URL.Path, "/3ds/")
	switch r.Method {
	case http.MethodGet:
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = fmt.Fprintf(w, `<!doctype html><html><head><title>3D Secure</title></head><body>
<form method="post"><input type="hidden" name="result" value="complete"><button id="complete">Complete</button></form>
<form method="post"><input type="hidden" name="result" value="fail"><button id="fail">Fail</button></form>
<p>%s</p></body></html>`, id)
	case http.MethodPost:
		complete := r.PostFormValue("result") == "complete"
		if err := f.answer3DS(r.URL.Path, complete); err != nil {
			http.Error(w, err.Error(), http.StatusConflict)
			return
		}
		f.mu.Lock()
		pi := f.pis[id]
		back := pi.returnURL
		f.mu.Unlock()
		status := "succeeded"
		if !complete {
			status = "failed"
		}
		sep := "?"
		if strings.Contains(back, "?") {
			sep = "&"
		}
		http.Redirect(w, r, back+sep+url.Values{"payment_intent": {id}, "payment_intent_client_secret": {id + "_secret_fake"},
			"redirect_status": {status}}.Encode(), http.StatusSeeOther)
	default:
		http.Error(w, "GET or POST", http.StatusMethodNotAllowed)
	}
}

type fakeEvent struct {
	account string
	body    []byte
}

// event queues an event about pi for delivery once f.mu is released.
func (f *fakeStripe) event(typ string, pi *fakePI) {
	f.queueEvent(typ, pi.account, f.piJSON(pi))
}

// refundEvent queues an event about rf.
func (f *fakeStripe) refundEvent(typ string, rf *fakeRefund) {
	f.queueEvent(typ, f.pis[rf.pi].account, refundJSON(rf))
}

// queueEvent keeps an event, so that it can be read back
// (docs.stripe.com/api/events/retrieve), and queues it for delivery.
func (f *fakeStripe) queueEvent(typ, account string, obj map[string]any) {
	id := f.id("evt")
	body, _ := json.Marshal(map[string]any{
		"id": id, "object": "event", "type": typ, "api_version": sg.APIVersion,
		"created": f.now.Unix(), "data": map[string]any{"object": obj},
	})
	f.events[id] = &fakeStoredEvent{account: account, body: body}
	f.pendingEvents = append(f.pendingEvents, fakeEvent{account, body})
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
			// Stripe signs every event with its endpoint's secret
			// (docs.stripe.com/webhooks); this one was not given to
			// keelpay.
			secret = fakeUnknownSecret
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

func decodeJSON(res *http.Response, v any) error {
	return json.NewDecoder(res.Body).Decode(v)
}
