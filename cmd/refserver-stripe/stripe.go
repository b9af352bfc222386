package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"

	"github.com/keelpay/keelpay/provider"
	"github.com/keelpay/keelpay/provider/stripe"
	"github.com/keelpay/keelpay/refserver"
)

// The reference server with -provider stripe: the Stripe adapter of
// provider/stripe is the payment provider, its return and webhook routes
// are mounted, and nothing of sandbox mode is: no /sandbox/ routes, no
// sandbox clock, https webhook URLs to public hosts only.

// Routes of the Stripe adapter.
const (
	stripeReturnPath  = "/stripe/return"
	stripeWebhookPath = "/stripe/webhook"
)

// stripeConfig is what the environment gives -provider stripe. The account
// and its secrets come from the environment only, never from flags, which
// other users of the machine can read.
type stripeConfig struct {
	account, key, webhookSecret string
	// publicURL is the server's public https URL, without a trailing slash.
	publicURL string
	// apiURL is Stripe's API: KEELPAY_STRIPE_API_URL, for a fake of Stripe
	// or stripe-mock; empty for Stripe itself.
	apiURL string
	// publishableKey (KEELPAY_STRIPE_PUBLISHABLE_KEY) lets the card field
	// capture cards with Stripe.js; jsURL (KEELPAY_STRIPE_JS_URL) replaces
	// Stripe.js, for a test's stand-in; rawCardData
	// (KEELPAY_STRIPE_RAW_CARD_DATA=1) lets card numbers typed into
	// keelpay's own card field go to Stripe, for accounts enabled for raw
	// card data APIs (PCI DSS SAQ D).
	publishableKey, jsURL string
	rawCardData           bool
}

// stripeRequired are the environment variables without which -provider
// stripe does not start, and what each is.
var stripeRequired = []struct{ name, what string }{
	{"KEELPAY_STRIPE_ACCOUNT", "the Stripe account id, acct_..."},
	{"KEELPAY_STRIPE_KEY", "a restricted key of the account, rk_live_... or rk_test_..."},
	{"KEELPAY_STRIPE_WEBHOOK_SECRET", "the signing secret of the account's webhook endpoint, whsec_..."},
	{"KEELPAY_PUBLIC_URL", "this server's public https URL, for Stripe's 3D Secure return and webhooks"},
}

// stripeProvider is -provider stripe.
var stripeProvider = refserver.Provider{
	Name: "stripe",
	Configure: func(c refserver.Settings, getenv func(string) string) (refserver.Configured, error) {
		s, err := parseStripe(c, getenv)
		if err != nil {
			return nil, err
		}
		return &stripeServed{config: s}, nil
	},
}

// parseStripe reads the Stripe settings from the environment. It names
// every missing variable at once, and with them a missing encryption key
// for PostgreSQL (which the server would refuse next).
func parseStripe(c refserver.Settings, getenv func(string) string) (stripeConfig, error) {
	if c.SandboxURL != "" || c.SandboxDB != "" {
		return stripeConfig{}, errors.New("-provider stripe: -sandbox-url and -sandbox-db (KEELPAY_SANDBOX_URL, KEELPAY_SANDBOX_DB) belong to -provider sandbox; unset them")
	}
	var missing []string
	for _, r := range stripeRequired {
		if getenv(r.name) == "" {
			missing = append(missing, r.name+" ("+r.what+")")
		}
	}
	if refserver.IsPostgres(c.DB) && getenv("KEELPAY_ENCRYPTION_KEY") == "" && c.KeyFile == "" {
		missing = append(missing, "KEELPAY_ENCRYPTION_KEY or -key-file (the encryption keys a PostgreSQL database needs)")
	}
	if len(missing) > 0 {
		return stripeConfig{}, errors.New("-provider stripe: cannot start; missing: " + strings.Join(missing, "; "))
	}
	s := stripeConfig{
		account:       getenv("KEELPAY_STRIPE_ACCOUNT"),
		key:           getenv("KEELPAY_STRIPE_KEY"),
		webhookSecret: getenv("KEELPAY_STRIPE_WEBHOOK_SECRET"),
		publicURL:     strings.TrimRight(getenv("KEELPAY_PUBLIC_URL"), "/"),
		apiURL:        getenv("KEELPAY_STRIPE_API_URL"),

		publishableKey: getenv("KEELPAY_STRIPE_PUBLISHABLE_KEY"),
		jsURL:          getenv("KEELPAY_STRIPE_JS_URL"),
		rawCardData:    getenv("KEELPAY_STRIPE_RAW_CARD_DATA") == "1",
	}
	if !strings.HasPrefix(s.publicURL, "https://") {
		return s, errors.New("-provider stripe: KEELPAY_PUBLIC_URL must be an https URL: Stripe sends buyers and webhooks there")
	}
	return s, nil
}

// newStripe is the adapter for the configured account. It makes no call
// to Stripe: a wrong key shows at a store's setup.
func newStripe(s stripeConfig) (*stripe.Provider, error) {
	p, err := stripe.New(stripe.Config{
		Accounts: []stripe.Account{{ID: s.account, Key: s.key, WebhookSecret: s.webhookSecret,
			PublishableKey: s.publishableKey}},
		ReturnURL:   s.publicURL + stripeReturnPath,
		APIURL:      s.apiURL,
		JSURL:       s.jsURL,
		RawCardData: s.rawCardData,
	})
	if err != nil {
		return nil, fmt.Errorf("-provider stripe: %w", err)
	}
	return p, nil
}

// stripeServed is the configured adapter, as the reference server serves
// it.
type stripeServed struct {
	config  stripeConfig
	adapter *stripe.Provider
}

// New makes the adapter, with the calls Stripe does not answer logged with
// their cause.
func (s *stripeServed) New(log *slog.Logger) (provider.Provider, error) {
	p, err := newStripe(s.config)
	if err != nil {
		return nil, err
	}
	s.adapter = p
	return &loggedStripe{Provider: p, log: log, secrets: []string{s.config.key, s.config.webhookSecret}}, nil
}

// Routes are the adapter's routes: the buyer's return from 3D Secure, and
// Stripe's webhooks.
func (s *stripeServed) Routes() map[string]http.Handler {
	return map[string]http.Handler{
		"GET " + stripeReturnPath:   s.adapter.ReturnHandler(),
		"POST " + stripeWebhookPath: s.adapter.WebhookHandler(),
	}
}

func (s *stripeServed) Banner(w io.Writer, baseURL, db string) {
	printStripeBanner(w, baseURL, db, s.config)
}

func (s *stripeServed) Listening() []slog.Attr {
	return []slog.Attr{slog.String("stripe_account", s.config.account), slog.String("public_url", s.config.publicURL),
		slog.String("stripe_api_url", stripeAPIShown(s.config))}
}

// printStripeBanner tells where the server listens and how to set up the
// account's store. The key is never printed.
func printStripeBanner(w io.Writer, baseURL, db string, s stripeConfig) {
	fmt.Fprintf(w, "keelpay reference server listening on %s (Stripe account %s; public URL %s; database %s)\n\n",
		baseURL, s.account, s.publicURL, refserver.RedactDSN(db))
	if s.apiURL != "" {
		fmt.Fprintf(w, "Stripe's API is %s here (KEELPAY_STRIPE_API_URL), not https://api.stripe.com.\n\n", stripeAPIShown(s))
	}
	fmt.Fprintf(w, "Point the account's webhook endpoint at %s%s.\n\n", s.publicURL, stripeWebhookPath)
	fmt.Fprintf(w, "Set up the account's store (client_secret: the key of KEELPAY_STRIPE_KEY; webhook_url: the store's https endpoint):\n\n"+
		"  curl -s -X POST %s/v1/setup -H 'Content-Type: application/json' \\\n"+
		"    -d '{\"client_id\":\"%s\",\"client_secret\":\"rk_...\",\"webhook_url\":\"https://store.example/webhooks\"}'\n\n", s.publicURL, s.account)
}

// stripeAPIShown is the Stripe API the adapter calls, for the banner and
// the log: KEELPAY_STRIPE_API_URL without any password in it, or Stripe's
// own.
func stripeAPIShown(s stripeConfig) string {
	if s.apiURL == "" {
		return "https://api.stripe.com"
	}
	return refserver.RedactDSN(s.apiURL)
}
