package refserver

import (
	"errors"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func envMap(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

// TestProviderChoice: the sandbox is the default; a provider a command
// linked in is chosen by its name and configured from the flags and the
// environment; stripe without the adapter linked names the command that
// has it; any other name is refused.
func TestProviderChoice(t *testing.T) {
	t.Parallel()
	_, err := parseConfig([]string{"-provider", "paypal"}, envMap(nil), io.Discard)
	assert.EqualError(t, err, `-provider must be sandbox or stripe, not "paypal"`)
	c, err := parseConfig(nil, envMap(nil), io.Discard)
	require.NoError(t, err)
	assert.Equal(t, "sandbox", c.provider)
	assert.Nil(t, c.linked)

	for _, env := range []map[string]string{nil, {"KEELPAY_PROVIDER": "stripe"}} {
		var args []string
		if env == nil {
			args = []string{"-provider", "stripe"}
		}
		_, err := parseConfig(args, envMap(env), io.Discard)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "-provider stripe: this refserver is built without the Stripe adapter")
		assert.Contains(t, err.Error(), "github.com/keelpay/keelpay/cmd/refserver-stripe")
	}

	var got Settings
	linked := Provider{Name: "stripe", Configure: func(s Settings, getenv func(string) string) (Configured, error) {
		got = s
		if getenv("FAKE_SECRET") == "" {
			return nil, errors.New("-provider stripe: cannot start; missing: FAKE_SECRET")
		}
		return nil, nil
	}}
	_, err = parseConfig([]string{"-provider", "stripe", "-db", "postgres://u@127.0.0.1/x", "-key-file", "k"},
		envMap(map[string]string{"KEELPAY_SANDBOX_URL": "http://127.0.0.1:8080"}), io.Discard, linked)
	assert.EqualError(t, err, "-provider stripe: cannot start; missing: FAKE_SECRET", "the provider's error, as it is")
	assert.Equal(t, Settings{DB: "postgres://u@127.0.0.1/x", KeyFile: "k", SandboxURL: "http://127.0.0.1:8080"}, got,
		"the flags as given: no sandbox file made up")
	c, err = parseConfig([]string{"-provider", "stripe"}, envMap(map[string]string{"FAKE_SECRET": "x"}), io.Discard, linked)
	require.NoError(t, err)
	assert.Empty(t, c.sandboxDB, "no sandbox with a linked provider")
}

func TestSandboxDatabaseDefault(t *testing.T) {
	t.Parallel()
	for db, want := range map[string]string{
		"keelpay.db":                        "keelpay.sandbox.db",
		"/var/lib/keelpay/shop.sqlite":      "/var/lib/keelpay/shop.sandbox.db",
		"data/keelpay":                      "data/keelpay.sandbox.db",
		"postgres://app@db.internal/x":      "postgres-x.sandbox.db",
		"postgresql://app@db.internal/x?a=": "postgres-x.sandbox.db",
		"postgres://app:pw@db.internal:5432/shop?search_path=pay":   "postgres-shop-pay.sandbox.db",
		"postgres://app@db.internal/../sh op?search_path=a/b%2F..c": "postgres-shop-abc.sandbox.db",
		"postgres://app@db.internal":                                "postgres.sandbox.db",
	} {
		c, err := parseConfig([]string{"-db", db}, func(string) string { return "" }, io.Discard)
		require.NoError(t, err)
		require.Equal(t, want, c.sandboxDB, db)
	}
	c, err := parseConfig([]string{"-db", "a.db"}, func(k string) string {
		return map[string]string{"KEELPAY_SANDBOX_DB": "/tmp/sb.db"}[k]
	}, io.Discard)
	require.NoError(t, err)
	require.Equal(t, "/tmp/sb.db", c.sandboxDB)
	c, err = parseConfig([]string{"-sandbox-db", "flag.db"}, func(k string) string {
		return map[string]string{"KEELPAY_SANDBOX_DB": "/tmp/sb.db"}[k]
	}, io.Discard)
	require.NoError(t, err)
	require.Equal(t, "flag.db", c.sandboxDB)
}

func TestDatabasePasswordIsNeverPrinted(t *testing.T) {
	t.Parallel()
	for dsn, want := range map[string]string{
		"postgres://app:s3cret@db.internal:5432/keelpay": "postgres://app:xxxxx@db.internal:5432/keelpay",
		"postgres://app@db.internal/keelpay":             "postgres://app@db.internal/keelpay",
		"keelpay.db":                                     "keelpay.db",
	} {
		require.Equal(t, want, redactDSN(dsn))
	}
}
