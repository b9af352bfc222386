package stripe_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/provider"
)

// DetachCard detaches the saved card's PaymentMethod from its Customer
// (POST /v1/payment_methods/{pm}/detach): Stripe then refuses to charge it.
// Detaching again, or a PaymentMethod Stripe does not know, is nil; Stripe
// down is unavailable, with the card still charged afterwards.
func TestDetachCard(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	var d provider.CardDetacher = e.p
	saved, err := e.p.SaveCard(ctx, provider.SaveCardRequest{MerchantID: testAccount, PaymentMethod: browserPaymentMethod(t, e.fake, fakeCardSucceeds)})
	require.NoError(t, err)
	chargeSaved := func() *provider.ChargeResult {
		t.Helper()
		res, err := e.p.Charge(ctx, provider.ChargeRequest{MerchantID: testAccount, AttemptID: keelpay.NewID("att_"),
			CardToken: saved.Token, Amount: 2500, Currency: "EUR"})
		require.NoError(t, err)
		return res
	}
	require.Equal(t, provider.ChargeSucceeded, chargeSaved().Status)

	e.fake.set(func(f *fakeStripe) { f.down = true })
	require.Equal(t, provider.KindUnavailable, provider.KindOf(d.DetachCard(ctx, testAccount, saved.Token)))
	e.fake.set(func(f *fakeStripe) { f.down = false })
	require.Equal(t, provider.ChargeSucceeded, chargeSaved().Status, "a refused detach changed nothing")

	require.NoError(t, d.DetachCard(ctx, testAccount, saved.Token))
	require.NotEqual(t, provider.ChargeSucceeded, chargeSaved().Status, "a detached card is not charged")
	require.NoError(t, d.DetachCard(ctx, testAccount, saved.Token), "detached already")
	require.NoError(t, d.DetachCard(ctx, testAccount, "cus_1/pm_unknown"), "unknown to Stripe")
	require.NoError(t, d.DetachCard(ctx, testAccount, "not-a-token"))
	require.Error(t, d.DetachCard(ctx, "acct_unknown", saved.Token), "a merchant without an account")
}
