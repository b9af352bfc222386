package sandbox

import (
	"context"
	"crypto/subtle"
	"strings"
	"time"

	"github.com/keelpay/keelpay/provider"
)

// AppBehavior is what CheckApplication does for one client id, configured
// with [Sandbox.SetApplication].
type AppBehavior struct {
	// ClientSecret is the application's secret. Default "secret_" followed
	// by the client id without its "app_" prefix.
	ClientSecret string
	// Currency is the merchant's currency. Default "EUR".
	Currency string
	// MerchantID is the merchant's id. Default "merch_" followed by the
	// client id without its "app_" prefix.
	MerchantID string
	// MissingRoles are reported with [provider.KindMissingRoles]. Default
	// ["payments", "refunds"].
	MissingRoles []string
	// Outcome is the kind of error CheckApplication returns once the secret
	// matched; "" (the default) means success.
	Outcome provider.ErrorKind
	// RetryAfter is reported with the Outcome. Default 60 seconds for
	// [provider.KindAccessPending], 30 seconds for
	// [provider.KindUnavailable], otherwise none.
	RetryAfter time.Duration
}

func (b AppBehavior) withDefaults(clientID string) AppBehavior {
	name := strings.TrimPrefix(clientID, "app_")
	if b.ClientSecret == "" {
		b.ClientSecret = "secret_" + name
	}
	if b.MerchantID == "" {
		b.MerchantID = "merch_" + name
	}
	if b.Currency == "" {
		b.Currency = "EUR"
	}
	b.Currency = strings.ToUpper(b.Currency)
	if b.Outcome == provider.KindMissingRoles && len(b.MissingRoles) == 0 {
		b.MissingRoles = []string{"payments", "refunds"}
	}
	if b.RetryAfter == 0 {
		switch b.Outcome {
		case provider.KindAccessPending:
			b.RetryAfter = AccessPendingRetryAfter
		case provider.KindUnavailable:
			b.RetryAfter = UnavailableRetryAfter
		}
	}
	return b
}

// SetApplication makes CheckApplication answer b for clientID, whatever its
// name says. clientID need not start with "app_".
func (s *Sandbox) SetApplication(clientID string, b AppBehavior) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.apps[clientID] = b.withDefaults(clientID)
}

// appParts are the parts of a client id that choose a failing outcome, in
// order of precedence: the order in which a real provider would find the
// faults. An unreachable API answers nothing else; then the application must
// exist, the platform's certificate must match, the platform's access must
// be granted, and only then are the application's roles looked at.
var appParts = []struct {
	part string
	kind provider.ErrorKind
}{
	{"_unavailable", provider.KindUnavailable},
	{"_not_found", provider.KindAppNotFound},
	{"_cert_mismatch", provider.KindCertificateMismatch},
	{"_access_pending", provider.KindAccessPending},
	{"_missing_roles", provider.KindMissingRoles},
}

// application returns the behaviour for clientID: one set with
// SetApplication, or the one its name chooses when it is app_ followed by
// letters, digits and underscores.
func (s *Sandbox) application(clientID string) (AppBehavior, bool) {
	if b, ok := s.apps[clientID]; ok {
		return b, true
	}
	name, ok := strings.CutPrefix(clientID, "app_")
	if !ok || name == "" || strings.ContainsFunc(name, func(r rune) bool {
		return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '_')
	}) {
		return AppBehavior{}, false
	}
	var b AppBehavior
	switch {
	case hasPart(clientID, "_usd"):
		b.Currency = "USD"
	case hasPart(clientID, "_gbp"):
		b.Currency = "GBP"
	}
	for _, p := range appParts {
		if hasPart(clientID, p.part) {
			b.Outcome = p.kind
			break
		}
	}
	return b.withDefaults(clientID), true
}

// hasPart reports whether part (which starts with "_") occurs in clientID
// followed by its end or another "_": app_shop_usd and app_usd_shop have
// "_usd", app_shop_usda does not.
func hasPart(clientID, part string) bool {
	for i := 0; ; {
		j := strings.Index(clientID[i:], part)
		if j < 0 {
			return false
		}
		end := i + j + len(part)
		if end == len(clientID) || clientID[end] == '_' {
			return true
		}
		i = end
	}
}

// CheckApplication answers in this order: the unavailable switch
// (SetUnavailable); invalid credentials (an unknown client id or a wrong
// secret, compared in constant time); the application's outcome; the access
// pending switch (SetAccessPending).
func (s *Sandbox) CheckApplication(_ context.Context, c provider.Credentials) (*provider.Application, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.refuseLookup(); err != nil {
		return nil, err
	}
	b, ok := s.application(c.ClientID)
	if !ok || subtle.ConstantTimeCompare([]byte(c.ClientSecret), []byte(b.ClientSecret)) != 1 {
		return nil, &provider.Error{Kind: provider.KindInvalidCredentials, Message: "the client id or client secret is not valid"}
	}
	if b.Outcome != "" {
		return nil, &provider.Error{
			Kind:         b.Outcome,
			Message:      appMessages[b.Outcome],
			RetryAfter:   b.RetryAfter,
			MissingRoles: append([]string(nil), b.MissingRoles...),
		}
	}
	if err := s.refuseWork(); err != nil {
		return nil, err
	}
	return &provider.Application{MerchantID: b.MerchantID, Currency: b.Currency}, nil
}

var appMessages = map[provider.ErrorKind]string{
	provider.KindInvalidCredentials:  "the client id or client secret is not valid",
	provider.KindAppNotFound:         "the provider has no payments application for this client",
	provider.KindMissingRoles:        "the application lacks roles",
	provider.KindAccessPending:       "the platform's access to the merchant is pending",
	provider.KindCertificateMismatch: "the platform certificate does not match the provider's",
	provider.KindUnavailable:         "the provider is unavailable",
}
