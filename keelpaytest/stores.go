package keelpaytest

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/provider/sandbox"
)

// Store is a store set up through the API, its webhooks going to the
// kit's receiver.
type Store struct {
	ID             string
	PublishableKey string
	SecretKey      string
	WebhookSecret  string
	// ClientID is the sandbox application the store was set up with.
	ClientID string
	// Currency is the store's currency (upper case): EUR unless
	// [WithCurrency] or a client-id part chose another.
	Currency string
	// Customer is the customer of the store's test payments and cards.
	Customer keelpay.Customer

	kit *Kit
}

// StoreOption changes how [Kit.Store] and [Kit.Setup] set a store up.
type StoreOption func(*storeOptions)

type storeOptions struct {
	currency string
	parts    []string
}

// WithCurrency sets the store's currency (an ISO 4217 code, in either
// case). USD and GBP are chosen as a sandbox application named with _usd
// or _gbp would choose them; any other code is set on the kit's sandbox
// for the store's application (Sandbox.SetApplication), and then cannot
// be combined with [WithClientIDPart].
func WithCurrency(code string) StoreOption {
	return func(o *storeOptions) { o.currency = strings.ToUpper(code) }
}

// WithClientIDPart adds a part to the client id of the store's sandbox
// application, such as "_usd" or "_missing_roles": the parts choose what
// setup answers, as docs/sandbox-cards.md lists ("_missing_roles" is 422
// missing_roles, "_unavailable" 503 provider_api_unavailable...). A part
// starts with "_" and has letters, digits and underscores. Use
// [Kit.Setup] for the parts whose setup fails.
func WithClientIDPart(part string) StoreOption {
	return func(o *storeOptions) { o.parts = append(o.parts, part) }
}

// SetupError is a setup that did not answer 201: its status and the API's
// error.
type SetupError struct {
	ClientID string
	Status   int
	Code     string
	Message  string
	Details  map[string]any
}

func (e *SetupError) Error() string {
	return fmt.Sprintf("setup of %s: status %d, %s: %s", e.ClientID, e.Status, e.Code, e.Message)
}

// Store sets up a new store with a sandbox application of its own and the
// kit's receiver (at [WithWebhookPath]) as its webhook URL. It fails the
// test when setup does not succeed; see [Kit.Setup] for a setup that is
// meant to fail.
func (k *Kit) Store(t T, opts ...StoreOption) *Store {
	t.Helper()
	s, err := k.Setup(t, opts...)
	if err != nil {
		t.Fatalf("keelpaytest: %v", err)
	}
	return s
}

// Setup sets a new store up as [Kit.Store] does and returns the store, or
// the error setup answered (with [WithClientIDPart]("_missing_roles") for
// example). It fails the test only when the request cannot be made.
func (k *Kit) Setup(t T, opts ...StoreOption) (*Store, *SetupError) {
	t.Helper()
	var o storeOptions
	for _, opt := range opts {
		opt(&o)
	}
	k.mu.Lock()
	k.setups++
	n := k.setups
	k.mu.Unlock()
	name := fmt.Sprintf("kit%d", n)
	for _, p := range o.parts {
		if len(p) < 2 || p[0] != '_' || strings.ContainsFunc(p[1:], func(r rune) bool {
			return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '_')
		}) {
			t.Fatalf("keelpaytest: WithClientIDPart(%q): a part is _ followed by letters, digits and underscores", p)
		}
		name += p
	}
	switch o.currency {
	case "", "EUR":
	case "USD", "GBP":
		name += "_" + strings.ToLower(o.currency)
	default:
		if len(o.parts) > 0 {
			t.Fatalf("keelpaytest: WithCurrency(%q) cannot be combined with WithClientIDPart: the sandbox's names choose only USD and GBP", o.currency)
		}
		k.Sandbox.SetApplication("app_"+name, sandbox.AppBehavior{Currency: o.currency})
	}
	clientID := "app_" + name

	var out struct {
		ID             string `json:"id"`
		Currency       string `json:"currency"`
		PublishableKey string `json:"publishable_key"`
		SecretKey      string `json:"secret_key"`
		WebhookSecret  string `json:"webhook_secret"`
		Error          struct {
			Code    string         `json:"code"`
			Message string         `json:"message"`
			Details map[string]any `json:"details"`
		} `json:"error"`
	}
	status, _ := k.do(t, http.MethodPost, "/v1/setup", "", map[string]any{
		"client_id":     clientID,
		"client_secret": "secret_" + name,
		"webhook_url":   k.Webhooks.URL() + k.webhookPath,
	}, &out)
	if status != http.StatusCreated {
		return nil, &SetupError{ClientID: clientID, Status: status, Code: out.Error.Code, Message: out.Error.Message, Details: out.Error.Details}
	}
	k.mu.Lock()
	k.stores[out.ID] = true
	k.secrets = append(k.secrets, out.WebhookSecret)
	err := k.Webhooks.SetSecrets(k.secrets...)
	k.mu.Unlock()
	if err != nil {
		t.Fatalf("keelpaytest: %v", err)
	}
	return &Store{
		ID: out.ID, PublishableKey: out.PublishableKey, SecretKey: out.SecretKey, WebhookSecret: out.WebhookSecret,
		ClientID: clientID, Currency: out.Currency,
		Customer: keelpay.Customer{ID: "cus_test", Name: "Test Buyer", Email: "buyer@example.com", Phone: "+4915112345678"},
		kit:      k,
	}, nil
}
