package stripe_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/provider"
	"github.com/keelpay/keelpay/provider/stripe"
)

// recorder keeps every request the adapter sends and Stripe's answer.
// stripe-mock answers with fixed fixtures; the recorder gives its account
// our id, and when found is set makes them lead where the adapter's other
// requests are: search results
// carry the metadata searched for, and a PaymentIntent read is open
// (requires_action), so that a void cancels it.
type recorder struct {
	mu    sync.Mutex
	calls []call
	found bool
	// meta is the metadata of the last search, which a PaymentIntent read
	// by id then carries too, as the one found would.
	meta map[string]any
}

var objectID = regexp.MustCompile(`/(pi|pm|cus|re)_\w+|/keelpay_permission_check`)

var searchMeta = regexp.MustCompile(`^metadata\['(\w+)'\]:'(\w+)'$`)

func (rec *recorder) patch(r *http.Request, answer []byte) []byte {
	var v map[string]any
	if json.Unmarshal(answer, &v) != nil {
		return answer
	}
	switch {
	case r.URL.Path == "/v1/account":
		// stripe-mock's account has a new id each time, and cannot
		// take charges.
		v["id"], v["charges_enabled"] = "acct_stripemock", true
	case !rec.found:
		return answer
	case r.URL.Path == "/v1/payment_intents/search":
		m := searchMeta.FindStringSubmatch(r.URL.Query().Get("query"))
		data, _ := v["data"].([]any)
		if m == nil || len(data) == 0 {
			return answer
		}
		pi := data[0].(map[string]any)
		rec.meta = map[string]any{m[1]: m[2], stripe.MetaMerchant: "acct_stripemock"}
		pi["metadata"] = rec.meta
		v["data"] = data[:1]
	case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/v1/payment_intents/pi_"):
		v["status"] = "requires_action"
		if rec.meta != nil {
			v["metadata"] = rec.meta
		}
	default:
		return answer
	}
	out, _ := json.Marshal(v)
	return out
}

type call struct {
	method, path, body string
	status             int
	answer             string
}

func (rec *recorder) RoundTrip(r *http.Request) (*http.Response, error) {
	var body []byte
	if r.Body != nil {
		body, _ = io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	res, err := http.DefaultTransport.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	answer, _ := io.ReadAll(res.Body)
	rec.mu.Lock()
	if res.StatusCode == http.StatusOK {
		answer = rec.patch(r, answer)
		res.ContentLength = int64(len(answer))
		res.Header.Del("Content-Length")
	}
	res.Body = io.NopCloser(bytes.NewReader(answer))
	rec.calls = append(rec.calls, call{r.Method, r.URL.Path, string(body), res.StatusCode, string(answer)})
	rec.mu.Unlock()
	return res, nil
}

// TestRequestsAgainstStripeMock sends every kind of request the adapter
// makes to stripe-mock, which checks each against Stripe's own API
// description: a parameter Stripe does not know, or a missing one, is a
// 400. Only the adapter's idempotency-key probes are meant to be refused
// (a create with only an unknown parameter). Set KEELPAY_TEST_STRIPE_MOCK to
// stripe-mock's HTTP address (http://127.0.0.1:12111); with
// KEELPAY_REQUIRE_STRIPE_MOCK=1 the test fails instead of skipping
// without it.
func TestRequestsAgainstStripeMock(t *testing.T) {
	url := os.Getenv("KEELPAY_TEST_STRIPE_MOCK")
	if url == "" {
		if os.Getenv("KEELPAY_REQUIRE_STRIPE_MOCK") == "1" {
			t.Fatal("KEELPAY_REQUIRE_STRIPE_MOCK=1 but KEELPAY_TEST_STRIPE_MOCK is not set")
		}
		t.Skip("set KEELPAY_TEST_STRIPE_MOCK to stripe-mock's address to run")
	}
	rec := &recorder{}
	// stripe-mock answers with fixtures: its account is not ours, so the
	// key is configured rather than learnt through CheckApplication.
	const account = "acct_stripemock"
	p, err := stripe.New(stripe.Config{
		APIURL:      url,
		HTTPClient:  &http.Client{Transport: rec},
		ReturnURL:   "https://pay.example/stripe/return",
		Accounts:    []stripe.Account{{ID: account, Key: "sk_test_123"}},
		RawCardData: true,
	})
	require.NoError(t, err)
	ctx := t.Context()

	_, err = p.CheckApplication(ctx, provider.Credentials{ClientID: account, ClientSecret: "sk_test_123"})
	require.NoError(t, err)
	card := provider.SaveCardRequest{MerchantID: account, Number: "4242424242424242", ExpMonth: 12, ExpYear: 2031, CVC: "123", Name: "Jane Roe"}
	saved, err := p.SaveCard(ctx, card)
	require.NoError(t, err)
	_, _ = p.Charge(ctx, provider.ChargeRequest{MerchantID: account, AttemptID: keelpay.NewID("att_"), NewCard: &card,
		Amount: 2500, Currency: "EUR", Billing: &provider.Billing{Country: "US", State: "CA", PostalCode: "94103"}})
	_, _ = p.Charge(ctx, provider.ChargeRequest{MerchantID: account, AttemptID: keelpay.NewID("att_"), CardToken: saved.Token,
		Amount: 2500, Currency: "EUR", Billing: &provider.Billing{Country: "US", PostalCode: "94103"}})
	_, _ = p.LookupCharge(ctx, account, keelpay.NewID("att_"))
	_ = p.Void(ctx, account, keelpay.NewID("att_"))
	_, _ = p.Refund(ctx, provider.RefundRequest{MerchantID: account, AttemptID: keelpay.NewID("rfatt_"),
		ChargeAttemptID: "att_x", OrderID: "pi_123", Amount: 2500, Currency: "EUR"})
	_, _ = p.LookupRefund(ctx, account, keelpay.NewID("rfatt_"))

	// The requests of an attempt that is found: its PaymentIntent read,
	// canceled by a void, its refunds listed.
	rec.mu.Lock()
	rec.found = true
	rec.mu.Unlock()
	_, _ = p.LookupCharge(ctx, account, keelpay.NewID("att_"))
	_ = p.Void(ctx, account, keelpay.NewID("att_"))
	_, _ = p.LookupRefund(ctx, account, keelpay.NewID("rfatt_"))

	rec.mu.Lock()
	defer rec.mu.Unlock()
	seen := map[string]bool{}
	for _, c := range rec.calls {
		seen[c.method+" "+objectID.ReplaceAllString(c.path, "/{id}")] = true
		probe := c.method == http.MethodPost && c.body == "keelpay_probe=1"
		if probe {
			assert.Equal(t, http.StatusBadRequest, c.status, "the probe %s %s must be refused in validation: %s", c.method, c.path, c.answer)
			continue
		}
		assert.Less(t, c.status, 400, "%s %s %s\n-> %d %s", c.method, c.path, c.body, c.status, c.answer)
	}
	for _, want := range []string{
		"GET /v1/account", "POST /v1/payment_methods", "POST /v1/customers", "POST /v1/payment_intents",
		"GET /v1/payment_intents/search", "POST /v1/refunds", "GET /v1/refunds",
		"GET /v1/payment_intents/{id}", "POST /v1/payment_intents/{id}/cancel", "POST /v1/payment_intents/{id}",
		"GET /v1/payment_methods/{id}", "GET /v1/events/{id}",
		"POST /v1/customers/{id}", "POST /v1/payment_methods/{id}", "POST /v1/refunds/{id}",
	} {
		assert.True(t, seen[want], "no %s was checked", want)
	}
}
