package httpapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/events"
	"github.com/keelpay/keelpay/idempotency"
	"github.com/keelpay/keelpay/internal/statuswriter"
	"github.com/keelpay/keelpay/internal/tracing"
	"github.com/keelpay/keelpay/payments"
	"github.com/keelpay/keelpay/refunds"
	"github.com/keelpay/keelpay/storage"
	"github.com/keelpay/keelpay/stores"
)

// Config configures the handler. Fields are in alphabetical order.
type Config struct {
	// Admission bounds the requests worked on at once, per class; a
	// request past the bound is answered 429 rate_limited with
	// Retry-After before any of its work (see AdmissionConfig). The zero
	// value takes the defaults.
	Admission AdmissionConfig
	// ClientAddr returns the address a request came from, which limits
	// setups whose credentials are not yet proven per address. Default:
	// the host of r.RemoteAddr. Behind a reverse proxy every request
	// comes from the proxy: give a function that reads the address the
	// proxy sets (X-Forwarded-For, Forwarded), trusting only what your own
	// proxy wrote. See docs/security.md.
	ClientAddr func(r *http.Request) string
	// Clock defaults to keelpay.SystemClock.
	Clock keelpay.Clock
	// Events sends webhook tests and reads events. Required.
	Events *events.Service
	// Logger receives one line per request and the detail of internal
	// errors; it never receives bodies, keys or personal data. Default:
	// slog.Default(). Every line carries the request's request_id: build
	// the services' loggers on [keelpay.NewLogHandler] too, and their lines
	// written during a request carry it as well.
	Logger *slog.Logger
	// Metrics is where the request metrics are registered. The handler
	// does not serve them: mount promhttp (or service.MetricsHandler)
	// where the team's scraper reaches it. Default: not registered.
	Metrics prometheus.Registerer
	// Payments runs card sessions, cards and payment intents. Required.
	Payments *payments.Service
	// Refunds sends and reads refunds. Required.
	Refunds *refunds.Service
	// Storage keeps the responses of requests made with an
	// Idempotency-Key. Required.
	Storage storage.Storage
	// Stores sets stores up and authenticates keys. Required.
	Stores *stores.Service
	// TracerProvider, when set, gets a server span for each request, named
	// by its route ("POST /v1/payment_intents/{id}/confirm"), under the
	// caller's span when the global propagator (otel.SetTextMapPropagator)
	// finds one in the headers. Default nil: no spans, at no cost.
	TracerProvider trace.TracerProvider
}

type api struct {
	cfg       Config
	admission *admission
	log       *slog.Logger
	mux       *http.ServeMux
	metrics   *httpMetrics
	tracer    trace.Tracer // nil: no spans
	// unsettled are the keys this process holds and could not settle
	// because the database was unreachable (see unsettledKeys).
	unsettled *unsettledKeys
}

// New returns the keelpay API as an http.Handler, to serve as it is or to
// mount in another mux. A Config without one of its required parts is an
// error naming the part, before any request can find it missing.
func New(cfg Config) (http.Handler, error) {
	var missing []error
	for _, part := range []struct {
		name string
		nil  bool
	}{
		{"Events", cfg.Events == nil},
		{"Payments", cfg.Payments == nil},
		{"Refunds", cfg.Refunds == nil},
		{"Storage", cfg.Storage == nil},
		{"Stores", cfg.Stores == nil},
	} {
		if part.nil {
			missing = append(missing, fmt.Errorf("httpapi: Config.%s is required", part.name))
		}
	}
	cfg.Admission = cfg.Admission.withDefaults()
	missing = append(missing, cfg.Admission.validate())
	if err := errors.Join(missing...); err != nil {
		return nil, err
	}
	if cfg.ClientAddr == nil {
		cfg.ClientAddr = RemoteHost
	}
	if cfg.Clock == nil {
		cfg.Clock = keelpay.SystemClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	cfg.Logger = slog.New(keelpay.NewLogHandler(cfg.Logger.Handler()))
	if cfg.Metrics == nil {
		// Registered nowhere: the counters still count, unseen.
		cfg.Metrics = prometheus.NewRegistry()
	}
	a := &api{cfg: cfg, log: cfg.Logger, mux: http.NewServeMux(), metrics: newHTTPMetrics(cfg.Metrics)}
	a.unsettled = newUnsettledKeys(cfg.Storage, cfg.Logger)
	a.tracer = tracing.Tracer(cfg.TracerProvider)
	a.admission = newAdmission(cfg.Admission, cfg.Metrics)
	a.routes()
	return a.middleware(a.mux), nil
}

// auth says which key a route needs.
type auth int

const (
	authNone        auth = iota // no key
	authSecret                  // Authorization: Bearer sk_...
	authOptionalKey             // setup: a secret key when present
	authPublishable             // Authorization: Bearer pk_... (the browser)
	authAnyKey                  // a secret or a publishable key
)

// caller is who made an authenticated request.
type caller struct {
	// store is the authenticated store; nil on routes without a key.
	store *keelpay.Store
	// publishable is true when the key was the publishable key: the
	// browser, which may only act with an object's client_secret.
	publishable bool
	// key is the request's Idempotency-Key, held or to be taken (see
	// keyMode), or nil: the handler passes it to its service as it is.
	key *idempotency.Key
}

type handlerFunc func(w http.ResponseWriter, r *http.Request, c caller)

// keyMode says how a route takes the Idempotency-Key of a POST made with
// the secret key (see api.idempotent).
type keyMode int

const (
	// noKey: the route takes no key (GETs, and routes only the browser's
	// publishable key calls).
	noKey keyMode = iota
	// keyed: the key is locked in a commit of its own before the handler
	// runs; the handler passes c.key to its service, which records its
	// steps and its answer on it.
	keyed
	// keyInTx: as keyed, but the key is taken in the transaction of the
	// service's first change instead of a commit of its own (see
	// api.runKeyInTx). Only for handlers whose service changes nothing
	// before its first Step or Finish of the key, and does nothing a
	// second run would repeat before then.
	keyInTx
)

// route is one entry of the route table: method, path, the key it needs
// and how it takes an Idempotency-Key.
type route struct {
	method  string
	path    string
	auth    auth
	key     keyMode
	handler handlerFunc
}

// table collects every feature's route table: each feature's file has its
// own, so features are added without touching this one. The OpenAPI test
// compares docs/openapi.json with it.
func (a *api) table() []route {
	return slices.Concat(
		[]route{
			{"POST", "/v1/setup", authOptionalKey, keyed, a.setup},
		},
		a.eventRoutes(),
		a.paymentRoutes(),
		a.refundRoutes(),
		a.browserRoutes(),
	)
}

// routes registers the route table and the JSON 404 and 405
// answers of everything else.
func (a *api) routes() {
	methods := map[string][]string{}
	var paths []string
	for _, rt := range a.table() {
		if rt.method == http.MethodPost && rt.auth != authPublishable && rt.key == noKey {
			// Every POST the secret key makes takes an Idempotency-Key.
			panic("httpapi: route " + rt.method + " " + rt.path + " has no key mode")
		}
		if methods[rt.path] == nil {
			paths = append(paths, rt.path)
		}
		methods[rt.path] = append(methods[rt.path], rt.method)
		a.mux.Handle(rt.method+" "+rt.path, a.endpoint(rt))
	}
	// The same path with another method is a JSON 405; an unknown path a
	// JSON 404. A method pattern is more specific than a bare path, so
	// these only catch what the table does not have.
	for _, p := range paths {
		allow := strings.Join(methods[p], ", ")
		notAllowed := func(w http.ResponseWriter, r *http.Request) {
			setRoute(r, p)
			w.Header().Set("Allow", allow)
			a.writeError(w, r, keelpay.NewError(keelpay.CodeMethodNotAllowed,
				"The method is not allowed on this path; see the Allow header."))
		}
		if !shadows(p, paths) {
			a.mux.HandleFunc(p, notAllowed)
			continue
		}
		// A literal path that a wildcard path also matches (POST
		// /v1/events/redeliver beside GET /v1/events/{id}): a bare pattern
		// would conflict with the wildcard's method patterns, so the 405 is
		// registered per method.
		for _, m := range []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"} {
			if !slices.Contains(methods[p], m) && (m != "HEAD" || !slices.Contains(methods[p], "GET")) {
				a.mux.HandleFunc(m+" "+p, notAllowed)
			}
		}
	}
	a.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		setRoute(r, routeUnmatched)
		a.writeError(w, r, keelpay.NewError(keelpay.CodeNotFound, "No such path."))
	})
}

// WorkTimeout bounds the work of one POST. A POST's work does not depend
// on its client staying connected: once it has started, its storage and
// provider calls run to their end under the services' own time-outs, so a
// client that hangs up never leaves a change half made, and a retry with
// the same Idempotency-Key gets the real outcome.
const WorkTimeout = 2 * time.Minute

// shadows reports whether path p matches another path of paths whose
// segment is a wildcard where p has a literal.
func shadows(p string, paths []string) bool {
	ps := strings.Split(p, "/")
	for _, q := range paths {
		qs := strings.Split(q, "/")
		if q == p || len(qs) != len(ps) {
			continue
		}
		match := true
		for i := range ps {
			if ps[i] != qs[i] && !strings.HasPrefix(qs[i], "{") {
				match = false
				break
			}
		}
		if match {
			return true
		}
	}
	return false
}

// endpoint wraps a route's handler with its admission (see
// AdmissionConfig: first, so that a shed request does none of its work),
// its authentication and, for POSTs with a secret key, Idempotency-Key
// handling.
func (a *api) endpoint(rt route) http.Handler {
	cls := classOf(rt)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		setRoute(r, rt.path)
		leave := a.admit(w, r, rt, cls)
		if leave == nil {
			return
		}
		defer leave()
		if rt.method == http.MethodPost {
			ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), WorkTimeout)
			defer cancel()
			r = r.WithContext(ctx)
		}
		c, err := a.authenticate(r, rt.auth)
		if err != nil {
			a.writeError(w, r, err)
			return
		}
		if c.store != nil {
			setStore(r, c.store.ID)
		}
		if rt.key != noKey && c.store != nil && !c.publishable {
			a.idempotent(w, r, c, rt.handler, rt.key)
			return
		}
		rt.handler(w, r, c)
	})
}

func (a *api) authenticate(r *http.Request, kind auth) (caller, error) {
	if kind == authNone {
		return caller{}, nil
	}
	key, present := bearer(r)
	if !present && kind == authOptionalKey {
		return caller{}, nil
	}
	publishable := strings.HasPrefix(key, keelpay.PrefixPublishableKey)
	switch {
	case publishable && (kind == authPublishable || kind == authAnyKey):
		st, err := a.cfg.Stores.AuthenticatePublishable(r.Context(), key)
		return caller{store: st, publishable: true}, err
	case kind == authPublishable:
		return caller{}, stores.ErrInvalidAPIKey()
	case publishable && keelpay.ValidID(keelpay.PrefixPublishableKey, key):
		// The browser's key on a route of the store's server: say so,
		// rather than that the key is not valid (it may well be). The
		// answer is the same whether or not the key exists, and never
		// carries it.
		return caller{}, errPublishableOnSecretRoute()
	default:
		st, err := a.cfg.Stores.Authenticate(r.Context(), key)
		return caller{store: st}, err
	}
}

// errPublishableOnSecretRoute is the 401 invalid_api_key of a publishable
// key on a route that needs the secret key.
func errPublishableOnSecretRoute() error {
	return keelpay.NewError(keelpay.CodeInvalidAPIKey,
		"A publishable key (pk_...) cannot be used on this route: it needs the store's secret key (sk_...).")
}

// bearer returns the token of an "Authorization: Bearer" header, and
// whether the header was there at all.
func bearer(r *http.Request) (string, bool) {
	h, ok := r.Header["Authorization"]
	if !ok {
		return "", false
	}
	if len(h) != 1 {
		return "", true
	}
	scheme, token, found := strings.Cut(h[0], " ")
	if !found || !strings.EqualFold(scheme, "Bearer") {
		return "", true
	}
	return strings.TrimSpace(token), true
}

// RemoteHost is the default Config.ClientAddr: the host part of
// r.RemoteAddr.
func RemoteHost(r *http.Request) string {
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return host
	}
	return r.RemoteAddr
}

// requestState is what the middleware learns about a request while it is
// handled: the route it matched and the store it authenticated. It is
// the context the middleware gives the request (under the request id's),
// and holds the writer that remembers the status.
type requestState struct {
	context.Context
	id       string
	route    string
	storeID  string
	sw       statuswriter.Writer
	idHeader [1]string // the Request-Id header's value
}

type stateKey struct{}

// Value answers stateKey with the state itself, and any other key from
// the request's own context.
func (s *requestState) Value(key any) any {
	if key == (stateKey{}) {
		return s
	}
	return s.Context.Value(key)
}

func state(ctx context.Context) *requestState {
	s, _ := ctx.Value(stateKey{}).(*requestState)
	return s
}

func requestID(ctx context.Context) string {
	if s := state(ctx); s != nil {
		return s.id
	}
	return ""
}

func setRoute(r *http.Request, route string) {
	if s := state(r.Context()); s != nil {
		s.route = route
	}
}

func setStore(r *http.Request, storeID string) {
	if s := state(r.Context()); s != nil {
		s.storeID = storeID
	}
}
