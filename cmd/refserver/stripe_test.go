package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStripeNeedsTheStripeCommand: this command is built without the
// Stripe adapter (keelpay's module does not require it), so -provider
// stripe, even with a complete Stripe configuration, is refused before
// anything is opened, with the command that has the adapter named.
func TestStripeNeedsTheStripeCommand(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		env  []string
	}{
		{[]string{"-provider", "stripe"}, nil},
		{nil, []string{"KEELPAY_PROVIDER=stripe"}},
	} {
		cmd := exec.Command(refserver, append(c.args, "-addr", "127.0.0.1:0")...)
		cmd.Dir = t.TempDir()
		cmd.Env = append([]string{"KEELPAY_STRIPE_ACCOUNT=acct_1", "KEELPAY_STRIPE_KEY=rk_test_1",
			"KEELPAY_STRIPE_WEBHOOK_SECRET=whsec_1", "KEELPAY_PUBLIC_URL=https://pay.example"}, c.env...)
		out, err := cmd.CombinedOutput()
		require.Error(t, err, "%s", out)
		assert.True(t, strings.HasPrefix(string(out), "refserver: -provider stripe: this refserver is built without the Stripe adapter"), "%s", out)
		assert.Contains(t, string(out), "github.com/keelpay/keelpay/cmd/refserver-stripe")
		assert.Contains(t, string(out), "cd cmd/refserver-stripe && go run . -provider stripe")
		assert.NoFileExists(t, filepath.Join(cmd.Dir, "keelpay.db"), "refused before opening anything")
	}
}
