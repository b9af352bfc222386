package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay/keyring"
	"github.com/keelpay/keelpay/keyring/keyringtest"
)

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestRefusesToStartWithoutTheStripeKeys(t *testing.T) {
	err := run(t.Context(), []string{"-addr", "127.0.0.1:0"}, env(nil), io.Discard, io.Discard)
	require.Error(t, err)
	assert.Equal(t, "cannot start with Stripe; missing: "+
		"KEELPAY_STRIPE_ACCOUNT (the Stripe account id, acct_...); "+
		"KEELPAY_STRIPE_KEY (a restricted key of the account, rk_live_... or rk_test_...); "+
		"KEELPAY_STRIPE_WEBHOOK_SECRET (the signing secret of the account's webhook endpoint, whsec_...); "+
		"KEELPAY_PUBLIC_URL (this server's public https URL, for Stripe's 3D Secure return and webhooks); "+
		"KEELPAY_ENCRYPTION_KEY or -key-file (the encryption keys of the database's secrets)", err.Error())

	// Only what is missing is named.
	err = run(t.Context(), nil, env(map[string]string{
		"KEELPAY_STRIPE_ACCOUNT": "acct_1", "KEELPAY_STRIPE_KEY": "rk_test_1", "KEELPAY_ENCRYPTION_KEY": "k1:x",
		"KEELPAY_PUBLIC_URL": "https://pay.example",
	}), io.Discard, io.Discard)
	require.Error(t, err)
	assert.Equal(t, "cannot start with Stripe; missing: KEELPAY_STRIPE_WEBHOOK_SECRET (the signing secret of the account's webhook endpoint, whsec_...)", err.Error())

	err = run(t.Context(), nil, env(map[string]string{
		"KEELPAY_STRIPE_ACCOUNT": "acct_1", "KEELPAY_STRIPE_KEY": "rk_test_1", "KEELPAY_ENCRYPTION_KEY": "k1:x",
		"KEELPAY_STRIPE_WEBHOOK_SECRET": "whsec_1", "KEELPAY_PUBLIC_URL": "http://pay.example",
	}), io.Discard, io.Discard)
	assert.ErrorContains(t, err, "KEELPAY_PUBLIC_URL must be an https URL")
}

func TestServesWithStripe(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	out, stdout := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-addr", "127.0.0.1:0", "-db", filepath.Join(t.TempDir(), "keelpay.db")}, env(map[string]string{
			"KEELPAY_STRIPE_ACCOUNT": "acct_1", "KEELPAY_STRIPE_KEY": "rk_test_1", "KEELPAY_STRIPE_WEBHOOK_SECRET": "whsec_1",
			"KEELPAY_PUBLIC_URL": "https://pay.example", "KEELPAY_ENCRYPTION_KEY": keyring.Format(keyringtest.Key()),
		}), stdout, io.Discard)
		_ = stdout.Close()
	}()
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	go func() { _, _ = io.Copy(io.Discard, out) }()
	base := regexp.MustCompile(`http://[0-9.:]+`).FindString(line)
	require.NotEmpty(t, base, line)

	res, err := http.Get(base + "/healthz")
	require.NoError(t, err)
	_ = res.Body.Close()
	assert.Equal(t, http.StatusOK, res.StatusCode)
	// An unsigned webhook is refused by the adapter's handler.
	res, err = http.Post(base+"/stripe/webhook", "application/json", nil)
	require.NoError(t, err)
	_ = res.Body.Close()
	assert.Equal(t, http.StatusBadRequest, res.StatusCode)

	cancel()
	select {
	case err := <-done:
		assert.NoError(t, err)
	case <-time.After(60 * time.Second):
		t.Fatal("the server did not shut down")
	}
}
