package stripe_test

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay/provider"
	"github.com/keelpay/keelpay/provider/providertest"
	"github.com/keelpay/keelpay/provider/stripe"
)

const (
	testAccount = "acct_1KeelpayTest"
	testKey     = "rk_test_keelpay"
	testSecret  = "whsec_keelpaytest"

	testPublishableKey = "pk_test_keelpay"
	searchLag          = time.Minute
)

// env is the adapter on a fake Stripe, with its webhook endpoint served.
type env struct {
	fake *fakeStripe
	p    *stripe.Provider
	hook *httptest.Server
}

// restart is a new adapter on the same fake, as after a restart of the
// process: its hints are empty.
func (e *env) restart(t *testing.T) *stripe.Provider {
	t.Helper()
	p, err := stripe.New(stripe.Config{
		Accounts:    []stripe.Account{{ID: testAccount, Key: testKey, WebhookSecret: testSecret, PublishableKey: testPublishableKey}},
		ReturnURL:   "https://pay.example/stripe/return",
		APIURL:      e.fake.srv.URL,
		RawCardData: true,
	})
	require.NoError(t, err)
	return p
}

func newEnv(t *testing.T) *env {
	t.Helper()
	f := newFakeStripe(t)
	f.searchLag = searchLag
	f.dropCards[fakeCardLostAnswer] = true
	f.addAccount(testKey, &fakeAccount{id: testAccount, currency: "eur", chargesEnabled: true, webhookSecret: testSecret,
		rawCards: true, publishableKey: testPublishableKey})
	p, err := stripe.New(stripe.Config{
		Accounts:    []stripe.Account{{ID: testAccount, Key: testKey, WebhookSecret: testSecret, PublishableKey: testPublishableKey}},
		ReturnURL:   "https://pay.example/stripe/return",
		APIURL:      f.srv.URL,
		RawCardData: true,
	})
	require.NoError(t, err)
	hook := httptest.NewServer(p.WebhookHandler())
	t.Cleanup(hook.Close)
	f.set(func(f *fakeStripe) { f.webhooks = append(f.webhooks, hook.URL) })
	return &env{fake: f, p: p, hook: hook}
}

// TestConformance runs the provider conformance suite on the adapter
// against the fake Stripe, whose search lags a minute behind its writes.
func TestConformance(t *testing.T) {
	providertest.Run(t, func(t *testing.T) *providertest.Harness {
		e := newEnv(t)
		return &providertest.Harness{
			Provider:         e.p,
			Credentials:      provider.Credentials{ClientID: testAccount, ClientSecret: testKey},
			WrongCredentials: provider.Credentials{ClientID: testAccount, ClientSecret: "rk_test_wrong"},
			Cards: providertest.Cards{
				Succeeds:          fakeCardSucceeds,
				Declined:          fakeCardDeclined,
				InsufficientFunds: fakeCardInsufficient,
				ThreeDSecure:      fakeCard3DS,
				OutcomeUnknown:    fakeCardLostAnswer,
				BillingRequired:   fakeCardZipCheck,
				Rejected:          fakeCardBadNumber,
			},
			AnswerChallenge: func(_ context.Context, _ string, res *provider.ChargeResult, complete bool) error {
				return e.fake.answer3DS(res.ActionURL, complete)
			},
			ResolveOutcomes: func(*testing.T) {
				e.fake.set(func(f *fakeStripe) { f.dropCards = map[string]bool{} })
				e.fake.advance(searchLag)
			},
			SetUnavailable:        func(on bool) { e.fake.set(func(f *fakeStripe) { f.down = on }) },
			UnavailableRetryAfter: 30 * time.Second,
			Settle:                func(*testing.T) { e.fake.advance(searchLag) },
			ChargeCount:           e.fake.chargeCount,
		}
	})
}
