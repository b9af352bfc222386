package refserver

import (
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay/service"
)

func TestRetentionFlags(t *testing.T) {
	t.Parallel()
	env := func(vars map[string]string) func(string) string { return func(k string) string { return vars[k] } }
	c, err := parseConfig(nil, env(nil), io.Discard)
	require.NoError(t, err)
	require.Equal(t, [2]time.Duration{service.RetentionEventsDefault, service.RetentionCardSessionsDefault},
		[2]time.Duration{c.retention, c.sessionRetention})

	c, err = parseConfig([]string{"-retention", "90d"}, env(map[string]string{
		"KEELPAY_RETENTION": "forever", "KEELPAY_CARD_SESSION_RETENTION": "36h"}), io.Discard)
	require.NoError(t, err)
	require.Equal(t, 90*24*time.Hour, c.retention, "the flag wins over its variable")
	require.Equal(t, 36*time.Hour, c.sessionRetention)
	c, err = parseConfig(nil, env(map[string]string{"KEELPAY_RETENTION": "forever"}), io.Discard)
	require.NoError(t, err)
	require.Equal(t, service.KeepForever, c.retention)

	for _, bad := range []string{"30", "10m", "-1d", "xd", "a month"} {
		_, err := parseConfig([]string{"-retention", bad}, env(nil), io.Discard)
		require.ErrorContains(t, err, "-retention: ", bad)
	}
	_, err = parseConfig(nil, env(map[string]string{"KEELPAY_CARD_SESSION_RETENTION": "0d"}), io.Discard)
	require.ErrorContains(t, err, "-card-session-retention: ")
}
