package refserver

import (
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay/httpapi"
)

// TestAdmissionFlags: each limit comes from its flag, else its
// environment variable, else httpapi's default; a variable that does not
// parse is an error naming it.
func TestAdmissionFlags(t *testing.T) {
	t.Parallel()
	c, err := parseConfig(nil, envMap(nil), io.Discard)
	require.NoError(t, err)
	require.Equal(t, httpapi.AdmissionConfig{Payments: httpapi.AdmissionPaymentsDefault, Confirms: httpapi.AdmissionConfirmsDefault,
		Writes: httpapi.AdmissionWritesDefault, Reads: httpapi.AdmissionReadsDefault, Browser: httpapi.AdmissionBrowserDefault,
		Wait: httpapi.AdmissionWaitDefault, RetryAfter: httpapi.AdmissionRetryAfterDefault}, c.admission)

	env := envMap(map[string]string{"KEELPAY_LIMIT_PAYMENTS": "3", "KEELPAY_LIMIT_READS": "-1", "KEELPAY_LIMIT_WAIT": "2s", "KEELPAY_LIMIT_HOLD": "-1"})
	c, err = parseConfig([]string{"-limit-payments", "5", "-retry-after", "3s", "-limit-queue", "40"}, env, io.Discard)
	require.NoError(t, err)
	require.Equal(t, 5, c.admission.Payments, "the flag wins")
	require.Equal(t, httpapi.AdmissionOff, c.admission.Reads)
	require.Equal(t, -1, c.admission.Hold)
	require.Equal(t, 40, c.admission.Queue)
	require.Equal(t, 2*time.Second, c.admission.Wait)
	require.Equal(t, 3*time.Second, c.admission.RetryAfter)

	_, err = parseConfig(nil, envMap(map[string]string{"KEELPAY_LIMIT_CONFIRMS": "many", "KEELPAY_LIMIT_WAIT": "-1s"}), io.Discard)
	require.ErrorContains(t, err, "KEELPAY_LIMIT_CONFIRMS")
	require.ErrorContains(t, err, "KEELPAY_LIMIT_WAIT")
	_, err = parseConfig([]string{"-limit-writes", "x"}, envMap(nil), io.Discard)
	require.ErrorContains(t, err, "-limit-writes")
}
