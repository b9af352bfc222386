package sandbox

import (
	"context"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/provider"
)

// The sandbox's browser element: the sandbox's stand-in for Stripe.js, so
// that the hosted card field captures a card without its number reaching
// keelpay in the sandbox too. [Sandbox.ElementHandler] serves the script
// and the route it posts the card to; [Sandbox.BrowserElement] tells the
// card field where they are.

// Paths of the element, under the base URL.
const (
	elementPrefix      = "/sandbox/elements/"
	elementScriptPath  = elementPrefix + "v1/element.js"
	paymentMethodsPath = elementPrefix + "v1/payment_methods"
	// publishablePrefix starts the sandbox's publishable keys: the
	// merchant id follows, base64url-encoded. A sandbox key is public and
	// grants nothing but making payment methods for the merchant.
	publishablePrefix = "pk_sandbox_"
)

//go:embed element/element.js
var elementScript []byte

var _ provider.BrowserCapture = (*Sandbox)(nil)

// BrowserElement describes the sandbox's element for the merchant: its
// script at the base URL (see [Config.BaseURL] and [Sandbox.SetBaseURL]),
// where [Sandbox.ElementHandler] must be mounted, and a publishable key of
// the merchant.
func (s *Sandbox) BrowserElement(_ context.Context, merchantID string) (*provider.Element, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.refuseLookup(); err != nil {
		return nil, err
	}
	if merchantID == "" {
		return nil, invalidRequest("a merchant id is required")
	}
	el := &provider.Element{
		Kind:           provider.ElementSandbox,
		ScriptURL:      s.baseURL + elementScriptPath,
		PublishableKey: publishablePrefix + base64.RawURLEncoding.EncodeToString([]byte(merchantID)),
	}
	if u, err := url.Parse(s.baseURL); err == nil && u.Scheme != "" && u.Host != "" {
		origin := u.Scheme + "://" + u.Host
		el.ScriptSources = []string{origin}
		el.ConnectSources = []string{origin}
	}
	return el, nil
}

// merchantOfKey returns the merchant of a sandbox publishable key, or "".
func merchantOfKey(key string) string {
	enc, ok := strings.CutPrefix(key, publishablePrefix)
	if !ok {
		return ""
	}
	b, err := base64.RawURLEncoding.DecodeString(enc)
	if err != nil {
		return ""
	}
	return string(b)
}

// ElementHandler serves the sandbox's element under /sandbox/elements/:
//
//	GET  /sandbox/elements/v1/element.js        the script (window.KeelpaySandbox)
//	POST /sandbox/elements/v1/payment_methods   {key, number, exp_month, exp_year, cvc, name}
//
// The second is the sandbox's own route, as Stripe's API is Stripe's: it
// judges the card as the sandbox does, keeps a payment method for the key's
// merchant, and answers {id: "pm_...", card: {brand, last4, exp_month,
// exp_year}}, or {error: {message, code}}. It allows any origin (no
// credentials are involved), as the card field may be served from another
// origin than the sandbox. Mount it where [Sandbox.ChallengeHandler] is.
func (s *Sandbox) ElementHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+elementScriptPath, func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Type", "text/javascript; charset=utf-8")
		h.Set("Cache-Control", "no-cache")
		h.Set("Access-Control-Allow-Origin", "*")
		h.Set("Cross-Origin-Resource-Policy", "cross-origin")
		h.Set("X-Content-Type-Options", "nosniff")
		_, _ = w.Write(elementScript)
	})
	mux.HandleFunc("OPTIONS "+paymentMethodsPath, func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Access-Control-Allow-Origin", "*")
		h.Set("Access-Control-Allow-Methods", "POST")
		h.Set("Access-Control-Allow-Headers", "Content-Type")
		h.Set("Access-Control-Max-Age", "600")
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("POST "+paymentMethodsPath, s.servePaymentMethod)
	return mux
}

// paymentMethodRequest is the element's post.
type paymentMethodRequest struct {
	Key      string `json:"key"`
	Number   string `json:"number"`
	ExpMonth int    `json:"exp_month"`
	ExpYear  int    `json:"exp_year"`
	CVC      string `json:"cvc"`
	Name     string `json:"name"`
}

// paymentMethodCard is the card of a payment method, as the element
// answers it.
type paymentMethodCard struct {
	Brand    string `json:"brand"`
	Last4    string `json:"last4"`
	ExpMonth int    `json:"exp_month"`
	ExpYear  int    `json:"exp_year"`
}

type elementError struct {
	Message string `json:"message"`
	Code    string `json:"code"`
}

func (s *Sandbox) servePaymentMethod(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Access-Control-Allow-Origin", "*")
	var req paymentMethodRequest
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 4096))
	if err == nil {
		err = json.Unmarshal(body, &req)
	}
	if err != nil {
		writeElementJSON(w, http.StatusBadRequest, map[string]any{"error": elementError{"The request is not valid.", "invalid_request"}})
		return
	}
	id, card, status, e := s.createPaymentMethod(req.Key, req.Number, req.ExpMonth, req.ExpYear, req.CVC)
	if e != nil {
		writeElementJSON(w, status, map[string]any{"error": e})
		return
	}
	writeElementJSON(w, http.StatusOK, map[string]any{"id": id, "card": card})
}

func writeElementJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// createPaymentMethod is the element's route in Go: it keeps the typed
// card as a payment method of the merchant of key (a publishable key of
// [Sandbox.BrowserElement]) and returns its id, pm_..., and its card. A
// card is judged as [Sandbox.SaveCard] judges it, except that
// [CardRejected] makes a payment method that saving or charging refuses,
// as a provider refuses a card only once it is used. The error's code is
// invalid_key, invalid_number, invalid_expiry, expired_card or invalid_cvc,
// with its HTTP status; or unavailable (503).
func (s *Sandbox) createPaymentMethod(key, number string, expMonth, expYear int, cvc string) (string, *paymentMethodCard, int, *elementError) {
	merchantID := merchantOfKey(key)
	if merchantID == "" {
		return "", nil, http.StatusUnauthorized, &elementError{"The publishable key is not valid.", "invalid_key"}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.refuseWork() != nil {
		return "", nil, http.StatusServiceUnavailable, &elementError{"The provider is unavailable.", "unavailable"}
	}
	switch {
	case !luhn(number):
		return "", nil, http.StatusPaymentRequired, &elementError{"The card number is not valid.", "invalid_number"}
	case expMonth < 1 || expMonth > 12 || expYear < 2000 || expYear > 2200:
		return "", nil, http.StatusPaymentRequired, &elementError{"The expiry date is not valid.", "invalid_expiry"}
	case !s.unexpired(expMonth, expYear):
		return "", nil, http.StatusPaymentRequired, &elementError{"The card has expired.", "expired_card"}
	case !validCVC(cvc, number):
		return "", nil, http.StatusPaymentRequired, &elementError{"The security code is not valid.", "invalid_cvc"}
	}
	c := &card{
		merchantID: merchantID,
		behavior:   behaviorOf(number),
		saved: provider.SavedCard{
			Brand:    brand(number),
			Last4:    number[len(number)-4:],
			ExpMonth: expMonth,
			ExpYear:  expYear,
		},
	}
	id := keelpay.NewID("pm_")
	if err := s.inTx(func(t tx) error { return t.savePaymentMethod(id, c) }); err != nil {
		return "", nil, http.StatusServiceUnavailable, &elementError{"The provider is unavailable.", "unavailable"}
	}
	return id, &paymentMethodCard{Brand: c.saved.Brand, Last4: c.saved.Last4, ExpMonth: expMonth, ExpYear: expYear}, 0, nil
}

// validCVC: 3 digits, or 4 for American Express.
func validCVC(cvc, number string) bool {
	want := 3
	if brand(number) == provider.BrandAmex {
		want = 4
	}
	if len(cvc) != want {
		return false
	}
	return strings.Trim(cvc, "0123456789") == ""
}
