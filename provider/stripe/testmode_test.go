package stripe_test

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/provider"
	"github.com/keelpay/keelpay/provider/providertest"
	"github.com/keelpay/keelpay/provider/stripe"
)

// TestConformanceInStripeTestMode runs the conformance suite against
// Stripe's test mode when KEELPAY_TEST_STRIPE_KEY (a test-mode restricted
// key, rk_test_...) and KEELPAY_TEST_STRIPE_ACCOUNT (its account id) are
// set; it is skipped otherwise. The account must have raw card data APIs
// enabled in test mode. Stripe's search lags its writes, so the suite's
// Settle waits for it; 3D Secure answers, unknown outcomes and outages
// cannot be driven in test mode and are skipped.
func TestConformanceInStripeTestMode(t *testing.T) {
	key, account := os.Getenv("KEELPAY_TEST_STRIPE_KEY"), os.Getenv("KEELPAY_TEST_STRIPE_ACCOUNT")
	if key == "" || account == "" {
		t.Skip("set KEELPAY_TEST_STRIPE_KEY and KEELPAY_TEST_STRIPE_ACCOUNT to run against Stripe's test mode")
	}
	t.Run("the idempotency key probe sees a charge at once", func(t *testing.T) {
		// The lookup rule rests on two things Stripe's documentation
		// leaves open, checked here against Stripe itself:
		//   - Stripe checks an idempotency key before it validates the
		//     parameters: a key in use answers the probe (a create with
		//     only keelpay_probe) with an idempotency error, not with the
		//     refusal of the unknown parameter;
		//   - a new key's probe is refused exactly as an unknown
		//     parameter (400 invalid_request_error, code
		//     parameter_unknown, param keelpay_probe): KeyUsed answers
		//     "unused" for that answer only and fails closed otherwise, so
		//     a change of Stripe's answer shows here as an error.
		p, err := stripe.New(stripe.Config{ReturnURL: "https://example.com/stripe/return", RawCardData: true})
		require.NoError(t, err)
		_, err = p.CheckApplication(t.Context(), provider.Credentials{ClientID: account, ClientSecret: key})
		require.NoError(t, err)
		r := charge("4242424242424242")
		r.MerchantID = account
		_, err = p.Charge(t.Context(), r)
		require.NoError(t, err)
		used, err := p.KeyUsed(t.Context(), key, r.AttemptID, false)
		require.NoError(t, err)
		require.True(t, used, "a charged attempt's key must show as used")
		used, err = p.KeyUsed(t.Context(), key, keelpay.NewID("att_"), false)
		require.NoError(t, err, "a new key's probe must be refused exactly as an unknown parameter")
		require.False(t, used, "a new key must show as unused")
		used, err = p.KeyUsed(t.Context(), key, keelpay.NewID("rfatt_"), true)
		require.NoError(t, err, "a new refund key's probe must be refused exactly as an unknown parameter")
		require.False(t, used, "a new refund key must show as unused")
	})
	providertest.Run(t, func(t *testing.T) *providertest.Harness {
		p, err := stripe.New(stripe.Config{ReturnURL: "https://example.com/stripe/return", RawCardData: true})
		require.NoError(t, err)
		return &providertest.Harness{
			Provider:         p,
			Credentials:      provider.Credentials{ClientID: account, ClientSecret: key},
			WrongCredentials: provider.Credentials{ClientID: account, ClientSecret: "rk_test_keelpay_wrong"},
			Cards: providertest.Cards{
				Succeeds:          "4242424242424242",
				Declined:          "4000000000000002",
				InsufficientFunds: "4000000000009995",
				Rejected:          "4242424242424241",
			},
			// Stripe's search has no signal to wait on; it typically
			// catches up within a minute.
			Settle: func(*testing.T) { time.Sleep(15 * time.Second) },
		}
	})
}
