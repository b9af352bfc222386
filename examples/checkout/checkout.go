package main

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/keelpay/keelpay/webhooks"
)

//go:embed assets
var assets embed.FS

var pageTemplate = template.Must(template.ParseFS(assets, "assets/index.html"))

// config configures a checkout server.
type config struct {
	// keelpay is the base URL of the keelpay server.
	keelpay string
	// clientID and clientSecret are the sandbox application's credentials.
	clientID, clientSecret string
	// origin is this server's own origin, as the buyer's browser sees it:
	// the store's page_origins and the base of its webhook_url.
	origin string
	// integrity pins keelpay.js; empty, it is fetched from keelpay at start.
	integrity string
	log       *slog.Logger
	// observe, when set, sees every request the server gets, its body
	// included, before it is handled (the tests check that no card number
	// ever arrives).
	observe func(method, uri string, body []byte)
	// onEvent, when set, is called with each webhook event once it is
	// recorded.
	onEvent func(webhooks.Event)
}

// server is the demo store: one page, a small JSON API for it, and the
// webhook endpoint. It handles only ids and client secrets of keelpay's
// objects; card details go from the hosted card field to keelpay.
type server struct {
	cfg        config
	api        *apiClient
	keys       *storeKeys
	integrity  string
	keelpayOrg string
	handler    http.Handler

	mu     sync.Mutex
	events []eventRow          // newest first, at most maxEvents
	cards  map[string][]*card  // saved cards by customer id
	known  map[string]struct{} // ids of the cards in cards
}

const maxEvents = 100

// eventRow is a webhook as the page lists it.
type eventRow struct {
	ID         string `json:"id"`
	Type       string `json:"type"`
	Object     string `json:"object"`
	Status     string `json:"status,omitempty"`
	ReceivedAt string `json:"received_at"`
}

// newServer sets the store up at keelpay and returns the server.
func newServer(ctx context.Context, cfg config) (*server, error) {
	base := strings.TrimRight(cfg.keelpay, "/")
	keelpayOrigin, err := originOf(base)
	if err != nil {
		return nil, fmt.Errorf("-keelpay: %w", err)
	}
	s := &server{
		cfg:        cfg,
		api:        &apiClient{base: base, http: httpClient},
		keelpayOrg: keelpayOrigin,
		cards:      map[string][]*card{},
		known:      map[string]struct{}{},
	}
	s.keys, err = setupStore(ctx, s.api, cfg.clientID, cfg.clientSecret, cfg.origin+"/webhooks")
	if err != nil {
		return nil, err
	}
	s.api.secretKey = s.keys.SecretKey
	s.integrity = cfg.integrity
	if s.integrity == "" {
		if s.integrity, err = scriptIntegrity(ctx, s.api); err != nil {
			return nil, err
		}
	}
	verifier, err := webhooks.NewVerifier([]string{s.keys.WebhookSecret})
	if err != nil {
		return nil, err
	}

	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.page)
	mux.HandleFunc("GET /static/{name}", s.static)
	mux.HandleFunc("POST /api/card_sessions", s.createCardSession)
	mux.HandleFunc("POST /api/payments", s.createPayment)
	mux.HandleFunc("POST /api/cards", s.addCard)
	mux.HandleFunc("GET /api/cards", s.listCards)
	mux.HandleFunc("GET /api/events", s.listEvents)
	mux.Handle("/webhooks", webhooks.NewHandler(verifier, s.webhook))
	s.handler = s.observed(mux)
	return s, nil
}

func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// observed hands every request to cfg.observe before handling it.
func (s *server) observed(next http.Handler) http.Handler {
	if s.cfg.observe == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		s.cfg.observe(r.Method, r.RequestURI, body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		next.ServeHTTP(w, r)
	})
}

// static serves the page's script and style sheet.
func (s *server) static(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if name != "app.js" && name != "app.css" {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	http.ServeFileFS(w, r, assets, "assets/"+name)
}

// page serves the checkout. Its Content-Security-Policy allows scripts
// only from this origin and keelpay's (keelpay.js, pinned with its
// integrity value), and frames only from keelpay: the card field and, in
// the sandbox, the 3D Secure page. With a real provider, frame-src also
// needs the origin of the provider's 3D Secure pages.
func (s *server) page(w http.ResponseWriter, r *http.Request) {
	var buf bytes.Buffer
	err := pageTemplate.Execute(&buf, map[string]string{
		"Keelpay":        s.keelpayOrg,
		"ScriptURL":      s.api.base + "/js/v1/keelpay.js",
		"Integrity":      s.integrity,
		"PublishableKey": s.keys.PublishableKey,
		"Currency":       s.keys.Currency,
	})
	if err != nil {
		s.cfg.log.Error("render page", "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", fmt.Sprintf("default-src 'none'; script-src 'self' %[1]s; style-src 'self'; "+
		"connect-src 'self'; frame-src %[1]s; img-src 'self'; form-action 'none'; base-uri 'none'; frame-ancestors 'none'", s.keelpayOrg))
	h.Set("Cache-Control", "no-store")
	h.Set("Referrer-Policy", "strict-origin-when-cross-origin")
	h.Set("X-Content-Type-Options", "nosniff")
	_, _ = w.Write(buf.Bytes())
}

// readJSON decodes a small JSON body strictly.
func readJSON(w http.ResponseWriter, r *http.Request, dst any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request", "The request body is not valid.")
		return false
	}
	return true
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, code, message string) {
	writeJSON(w, status, map[string]any{"error": map[string]string{"code": code, "message": message}})
}

// writeAPIError passes keelpay's error code on to the page.
func (s *server) writeAPIError(w http.ResponseWriter, err error) {
	var e *apiError
	if errors.As(err, &e) {
		writeError(w, http.StatusBadGateway, e.Code, e.Message)
		return
	}
	s.cfg.log.Error("keelpay call", "err", err)
	writeError(w, http.StatusBadGateway, "keelpay_unreachable", "keelpay could not be reached.")
}

// createCardSession opens a card session for the page's card field.
func (s *server) createCardSession(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Customer string `json:"customer"`
	}
	if !readJSON(w, r, &req) {
		return
	}
	cs, err := s.api.createCardSession(r.Context(), req.Customer, s.cfg.origin)
	if err != nil {
		s.writeAPIError(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, cs)
}

// createPayment creates the payment intent of an order. The amount comes
// from the page because this is a demo; a real store computes it from
// the order on its server.
func (s *server) createPayment(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Amount   int64  `json:"amount"`
		Customer string `json:"customer"`
	}
	if !readJSON(w, r, &req) {
		return
	}
	pi, err := s.api.createIntent(r.Context(), req.Amount, s.keys.Currency, req.Customer, s.cfg.origin)
	if err != nil {
		s.writeAPIError(w, err)
		return
	}
	s.cfg.log.Info("payment intent created", "payment_intent", pi.ID, "amount", req.Amount)
	writeJSON(w, http.StatusCreated, pi)
}

// addCard records a card the page saved, after reading it from keelpay:
// the page only names it. The card.created webhook records it too.
func (s *server) addCard(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Card string `json:"card"`
	}
	if !readJSON(w, r, &req) {
		return
	}
	c, err := s.api.getCard(r.Context(), req.Card)
	if err != nil {
		s.writeAPIError(w, err)
		return
	}
	s.recordCard(c)
	writeJSON(w, http.StatusOK, map[string]any{"cards": s.customerCards(c.Customer.ID)})
}

func (s *server) listCards(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"cards": s.customerCards(r.URL.Query().Get("customer"))})
}

// recordCard adds a saved card to its customer's list. A buyer who saves
// the same card again (same brand, last 4 digits and expiry) gets a new
// card id from keelpay; the list keeps one entry for it, the newest, so
// the card is shown once. Events arrive in any order, so an older card
// reported late never replaces a newer one.
func (s *server) recordCard(c *card) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.known[c.ID]; ok {
		return
	}
	s.known[c.ID] = struct{}{}
	list := s.cards[c.Customer.ID]
	for i, old := range list {
		if old.sameCard(c) {
			if c.newerThan(old) {
				list[i] = c
			}
			return
		}
	}
	s.cards[c.Customer.ID] = append(list, c)
}

func (s *server) customerCards(customerID string) []*card {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*card{}, s.cards[customerID]...)
}

func (s *server) listEvents(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	events := slices.Clone(s.events)
	s.mu.Unlock()
	if events == nil {
		events = []eventRow{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"events": events})
}

// webhook processes a verified delivery: it lists the event, and a
// card.created event also records the saved card.
func (s *server) webhook(_ context.Context, e webhooks.Event, _ []byte) {
	var obj struct {
		ID     string `json:"id"`
		Status string `json:"status"`
	}
	_ = json.Unmarshal(e.Data.Object, &obj)
	if e.Type == "card.created" {
		var c card
		if json.Unmarshal(e.Data.Object, &c) == nil && c.ID != "" {
			s.recordCard(&c)
		}
	}
	s.mu.Lock()
	s.events = append([]eventRow{{ID: e.ID, Type: e.Type, Object: obj.ID, Status: obj.Status,
		ReceivedAt: time.Now().UTC().Format(time.RFC3339)}}, s.events...)
	if len(s.events) > maxEvents {
		s.events = s.events[:maxEvents]
	}
	s.mu.Unlock()
	s.cfg.log.Info("webhook", "event_id", e.ID, "type", e.Type, "object", obj.ID, "status", obj.Status)
	if s.cfg.onEvent != nil {
		s.cfg.onEvent(e)
	}
}
