package main

import (
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestProviderStripeRefusesAndSaysWhereToGo(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		env  map[string]string
	}{
		{[]string{"-provider", "stripe"}, nil},
		{nil, map[string]string{"KEELPAY_PROVIDER": "stripe"}},
	} {
		_, err := parseConfig(c.args, func(k string) string { return c.env[k] }, io.Discard)
		require.Error(t, err)
		assert.Equal(t, "-provider stripe: this refserver has no Stripe adapter, which lives in a module of its own "+
			"so that the keelpay module does not depend on stripe-go; run refserver-stripe instead "+
			"(cd provider/stripe && go run ./cmd/refserver-stripe), with KEELPAY_STRIPE_ACCOUNT, KEELPAY_STRIPE_KEY, "+
			"KEELPAY_STRIPE_WEBHOOK_SECRET, KEELPAY_PUBLIC_URL and KEELPAY_ENCRYPTION_KEY set (docs/providers.md)", err.Error())
	}
	_, err := parseConfig([]string{"-provider", "paypal"}, func(string) string { return "" }, io.Discard)
	assert.EqualError(t, err, `-provider must be sandbox or stripe, not "paypal"`)
	c, err := parseConfig(nil, func(string) string { return "" }, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, "sandbox", c.provider)
}
