package stripe

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	sg "github.com/stripe/stripe-go/v84"

	"github.com/keelpay/keelpay/provider"
)

// DefaultAPIURL is Stripe's API.
const DefaultAPIURL = "https://api.stripe.com"

// DefaultJSURL is Stripe.js.
const DefaultJSURL = "https://js.stripe.com/v3/"

// Metadata keys the adapter writes on Stripe's objects. They are how an
// attempt is found again: nothing is kept by the adapter itself.
const (
	// MetaAttempt is the service's attempt id, on a PaymentIntent (the
	// charge attempt) and on a Refund (the refund send).
	MetaAttempt = "keelpay_attempt_id"
	// MetaMerchant is the Stripe account id the attempt belongs to.
	MetaMerchant = "keelpay_merchant_id"
	// MetaVoidOf is on the Refund that voids a charge: the charge's attempt
	// id.
	MetaVoidOf = "keelpay_void_of"
	// MetaRefundPrefix followed by a hash of a refund send's attempt id
	// ([RefundMarkKey]) is set to "1" on the PaymentIntent before the
	// refund is created, so that LookupRefund can find the PaymentIntent
	// with Stripe's search after a restart.
	MetaRefundPrefix = "keelpay_rf_"
)

// Stripe's limits on metadata (docs.stripe.com/metadata): at most 50 keys
// on an object, keys of at most 40 characters without square brackets,
// values of at most 500 characters. Stripe refuses a request over them; the
// adapter checks every key and value it writes before it sends anything.
const (
	maxMetaKeys     = 50
	maxMetaKeyLen   = 40
	maxMetaValueLen = 500
)

// RefundMarkKey is the metadata key that marks a PaymentIntent with the
// refund send attemptID: [MetaRefundPrefix] and the first 24 hex digits of
// the attempt id's SHA-256, 35 characters whatever the attempt id's length.
func RefundMarkKey(attemptID string) string {
	sum := sha256.Sum256([]byte(attemptID))
	return MetaRefundPrefix + hex.EncodeToString(sum[:12])
}

// metadata builds the metadata of a write from key-value pairs, refusing
// one over Stripe's limits before any call: nothing is done then.
func metadata(kv ...string) (map[string]string, error) {
	m := make(map[string]string, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		k, v := kv[i], kv[i+1]
		if len(k) == 0 || len(k) > maxMetaKeyLen || strings.ContainsAny(k, "[]") {
			return nil, &provider.Error{Kind: provider.KindInvalidRequest, Message: "stripe: metadata key " + strconv.Quote(k) + " is over Stripe's limit of 40 characters"}
		}
		if len(v) > maxMetaValueLen {
			return nil, &provider.Error{Kind: provider.KindInvalidRequest, Message: "stripe: the metadata value of " + k + " is over Stripe's limit of 500 characters"}
		}
		m[k] = v
	}
	if len(m) > maxMetaKeys {
		return nil, &provider.Error{Kind: provider.KindInvalidRequest, Message: "stripe: more metadata keys than Stripe's limit of 50"}
	}
	return m, nil
}

// Account is one Stripe account the adapter charges for: a store's
// application. Its ID is the store's client_id and the merchant id of every
// later call; its Key is the store's client secret.
type Account struct {
	// ID is the Stripe account id, acct_...
	ID string
	// Key is a restricted key (rk_live_... or rk_test_...) with the
	// permissions of [RequiredPermissions].
	Key string
	// WebhookSecret is the signing secret (whsec_...) of the account's
	// webhook endpoint that points at [Provider.WebhookHandler]. Optional:
	// without it (an account added by CheckApplication at run time has
	// none) an event is verified by reading it back from Stripe with the
	// account's key (GET /v1/events/{id}, permission events:read), and only
	// what was read is trusted.
	WebhookSecret string
	// PublishableKey (pk_live_... or pk_test_...) is the account's key for
	// Stripe.js, which captures cards in the buyer's browser
	// ([Provider.BrowserElement]). Public by design.
	PublishableKey string
}

// Config configures a [Provider].
type Config struct {
	// Accounts are the accounts the adapter can charge for after a restart.
	// An account whose key passes CheckApplication is added for the life
	// of the process, so a store set up now can charge at once; list it
	// here too so that it still can after a restart.
	Accounts []Account
	// ReturnURL is the public URL of [Provider.ReturnHandler]: Stripe sends
	// the buyer back there after 3D Secure. Required for charges.
	ReturnURL string
	// AfterReturnURL, when set, is where the return route sends the buyer
	// once it notified the service. Default: a short page saying the
	// payment is being completed.
	AfterReturnURL string
	// APIURL is Stripe's API. Default [DefaultAPIURL]; tests point it at
	// a fake or at stripe-mock.
	APIURL string
	// JSURL is Stripe.js, loaded by the hosted card field. Default
	// [DefaultJSURL]; tests point it at the fake's stand-in.
	JSURL string
	// RawCardData lets the adapter send card numbers typed into keelpay's
	// own card field to Stripe's API. Only for accounts Stripe enabled for
	// raw card data APIs, whose operator is PCI DSS validated for it (SAQ
	// D). Off by default: a card number is then refused before any call,
	// and cards are captured by Stripe.js (SAQ A). The reference server
	// sets it with KEELPAY_STRIPE_RAW_CARD_DATA=1.
	RawCardData bool
	// HintSize bounds the in-memory hints from an attempt id to its
	// PaymentIntent (see the package documentation). Default 10,000.
	HintSize int
	// HTTPClient makes the calls to Stripe. Default a client with a
	// 30-second time-out. The adapter never lets stripe-go repeat a request
	// on its own: the service decides what to repeat.
	HTTPClient *http.Client
}

// RequiredPermissions are the restricted key's permissions the adapter
// needs, as CheckApplication names them in [provider.Error.MissingRoles].
var RequiredPermissions = []string{
	"account:read",
	"customers:write",
	"payment_methods:write",
	"payment_intents:write",
	"refunds:write",
	"events:read",
}

// Provider is the Stripe adapter. It implements [provider.Provider] and
// [provider.Notifier] and is safe for concurrent use.
type Provider struct {
	cfg      Config
	backends *sg.Backends

	mu           sync.Mutex
	accounts     map[string]Account
	notify       provider.NotifyFunc
	refundNotify provider.NotifyFunc

	hints *hints
	// notifying bounds the webhook notifications running at once.
	notifying chan struct{}
}

var (
	_ provider.Provider       = (*Provider)(nil)
	_ provider.Notifier       = (*Provider)(nil)
	_ provider.RefundNotifier = (*Provider)(nil)
	_ provider.BrowserCapture = (*Provider)(nil)
)

// New returns an adapter. It makes no call to Stripe.
func New(cfg Config) (*Provider, error) {
	cfg.APIURL = strings.TrimRight(cmp.Or(cfg.APIURL, DefaultAPIURL), "/")
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: defaultTimeout}
	}
	cfg.JSURL = cmp.Or(cfg.JSURL, DefaultJSURL)
	if cfg.HintSize <= 0 {
		cfg.HintSize = defaultHintSize
	}
	p := &Provider{cfg: cfg, accounts: map[string]Account{}, hints: newHints(cfg.HintSize),
		notifying: make(chan struct{}, maxNotifying)}
	for _, a := range cfg.Accounts {
		if a.ID == "" || a.Key == "" {
			return nil, errors.New("stripe: an account needs an ID and a key")
		}
		p.accounts[a.ID] = a
	}
	p.backends = sg.NewBackendsWithConfig(&sg.BackendConfig{
		URL:               sg.String(cfg.APIURL),
		HTTPClient:        cfg.HTTPClient,
		MaxNetworkRetries: sg.Int64(0),
		LeveledLogger:     &sg.LeveledLogger{Level: sg.LevelNull},
	})
	return p, nil
}

// SetNotifier registers the service's NotifyFunc, called after Stripe's
// webhooks and the 3D Secure return route.
func (p *Provider) SetNotifier(f provider.NotifyFunc) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.notify = f
}

func (p *Provider) notifier() provider.NotifyFunc {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.notify
}

// SetRefundNotifier registers the service's function for refunds, called
// after Stripe's refund webhooks with the refund send's attempt id.
func (p *Provider) SetRefundNotifier(f provider.NotifyFunc) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refundNotify = f
}

func (p *Provider) refundNotifier() provider.NotifyFunc {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.refundNotify
}

func (p *Provider) account(merchantID string) (Account, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	a, ok := p.accounts[merchantID]
	return a, ok && merchantID != ""
}

func (p *Provider) clientFor(key string) *sg.Client {
	return sg.NewClient(key, sg.WithBackends(p.backends))
}

// client returns the Stripe client of merchantID's key.
func (p *Provider) client(merchantID string) (*sg.Client, error) {
	p.mu.Lock()
	a, ok := p.accounts[merchantID]
	p.mu.Unlock()
	if merchantID == "" || !ok {
		return nil, &provider.Error{Kind: provider.KindInvalidRequest, Message: "no Stripe key is configured for merchant " + merchantID}
	}
	return p.clientFor(a.Key), nil
}

func (p *Provider) accountList() []Account {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]Account, 0, len(p.accounts))
	for _, a := range p.accounts {
		out = append(out, a)
	}
	slices.SortFunc(out, func(a, b Account) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// CheckApplication reads the account of c.ClientSecret: its id must be
// c.ClientID, it must be able to take charges, and the key must have every
// permission of [RequiredPermissions]. The merchant is the account and its
// currency the account's default currency.
func (p *Provider) CheckApplication(ctx context.Context, c provider.Credentials) (*provider.Application, error) {
	if c.ClientID == "" || c.ClientSecret == "" {
		return nil, &provider.Error{Kind: provider.KindInvalidCredentials, Message: "the Stripe account id and key are required"}
	}
	cl := p.clientFor(c.ClientSecret)
	acct, err := cl.V1Accounts.Retrieve(ctx, &sg.AccountRetrieveParams{})
	if err != nil {
		if isPermissionError(err) {
			return nil, &provider.Error{Kind: provider.KindMissingRoles, Message: "the key cannot read its account", MissingRoles: []string{"account:read"}}
		}
		return nil, setupError(err)
	}
	if acct.ID != c.ClientID {
		return nil, &provider.Error{Kind: provider.KindAppNotFound, Message: "the key belongs to another Stripe account than " + c.ClientID}
	}
	if acct.DefaultCurrency == "" {
		return nil, &provider.Error{Kind: provider.KindAccessPending, Message: "the Stripe account has no default currency yet"}
	}
	if cur := strings.ToUpper(string(acct.DefaultCurrency)); !twoDecimal(cur) {
		return nil, &provider.Error{Kind: provider.KindInvalidRequest, Message: "the Stripe account's default currency " + cur +
			" does not have two decimal places (a zero-decimal currency has no minor unit at Stripe, docs.stripe.com/currencies#zero-decimal); keelpay charges only two-decimal currencies"}
	}
	if !acct.ChargesEnabled {
		return nil, &provider.Error{Kind: provider.KindAccessPending, Message: "the Stripe account cannot take charges yet"}
	}
	missing, err := p.missingPermissions(ctx, cl)
	if err != nil {
		return nil, setupError(err)
	}
	if len(missing) > 0 {
		return nil, &provider.Error{Kind: provider.KindMissingRoles, Message: "the key lacks permissions", MissingRoles: missing}
	}
	p.mu.Lock()
	a := p.accounts[acct.ID]
	a.ID, a.Key = acct.ID, c.ClientSecret
	p.accounts[acct.ID] = a
	p.mu.Unlock()
	return &provider.Application{MerchantID: acct.ID, Currency: strings.ToUpper(string(acct.DefaultCurrency))}, nil
}

// missingPermissions tries each write permission with a request Stripe
// refuses before doing anything: an update of an object that does not
// exist, or a create without its required parameters. A key without the
// permission gets 403 instead of 404 or 400.
func (p *Provider) missingPermissions(ctx context.Context, cl *sg.Client) ([]string, error) {
	const none = "keelpay_permission_check"
	probes := []struct {
		perm string
		call func() error
	}{
		{"customers:write", func() error {
			_, err := cl.V1Customers.Update(ctx, none, &sg.CustomerUpdateParams{})
			return err
		}},
		{"payment_methods:write", func() error {
			_, err := cl.V1PaymentMethods.Update(ctx, none, &sg.PaymentMethodUpdateParams{})
			return err
		}},
		{"payment_intents:write", func() error {
			_, err := cl.V1PaymentIntents.Update(ctx, none, &sg.PaymentIntentUpdateParams{})
			return err
		}},
		{"refunds:write", func() error {
			_, err := cl.V1Refunds.Update(ctx, none, &sg.RefundUpdateParams{})
			return err
		}},
		{"events:read", func() error {
			_, err := cl.V1Events.Retrieve(ctx, none, &sg.EventRetrieveParams{})
			return err
		}},
	}
	var missing []string
	for _, pr := range probes {
		err := pr.call()
		var se *sg.Error
		switch {
		case isPermissionError(err):
			missing = append(missing, pr.perm)
		case errors.As(err, &se) && (se.HTTPStatusCode == http.StatusNotFound || se.HTTPStatusCode == http.StatusBadRequest):
			// Permitted: Stripe looked for the object.
		case err == nil:
		default:
			return nil, err
		}
	}
	return missing, nil
}

// zeroDecimal and threeDecimal are the currencies whose amounts Stripe
// takes in other units than hundredths (docs.stripe.com/currencies#zero-decimal
// and #three-decimal). keelpay's amounts are in hundredths.
var (
	zeroDecimal  = "BIF CLP DJF GNF JPY KMF KRW MGA PYG RWF UGX VND VUV XAF XOF XPF"
	threeDecimal = "BHD JOD KWD OMR TND"
)

func twoDecimal(cur string) bool {
	return len(cur) == 3 && !strings.Contains(zeroDecimal, cur) && !strings.Contains(threeDecimal, cur)
}
