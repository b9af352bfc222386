package service_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay/provider/sandbox"
)

// TestMetricsAreDocumented scrapes MetricsHandler over HTTP after a
// payment and a request and checks that every keelpay_ metric it serves
// has a row in the metrics table of docs/operating.md.
func TestMetricsAreDocumented(t *testing.T) {
	t.Parallel()
	b := start(t)
	b.pay(t, sandbox.CardVisa)
	api := httptest.NewServer(b.svc.Handler())
	t.Cleanup(api.Close)
	res, err := http.Get(api.URL + "/v1/events")
	require.NoError(t, err)
	res.Body.Close()

	srv := httptest.NewServer(b.svc.MetricsHandler())
	t.Cleanup(srv.Close)
	res, err = http.Get(srv.URL)
	require.NoError(t, err)
	defer res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)

	md, err := os.ReadFile("../docs/operating.md")
	require.NoError(t, err)
	documented := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `(keelpay_[a-z_]+)` \\|").FindAllStringSubmatch(string(md), -1) {
		documented[m[1]] = true
	}
	served := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^# TYPE (keelpay_[a-z_]+) `).FindAllStringSubmatch(string(body), -1) {
		served[m[1]] = true
	}
	require.Contains(t, served, "keelpay_storage_commits_total", "the SQLite adapter's counters are served")
	require.Contains(t, served, "keelpay_storage_transactions_total")
	for name := range served {
		require.True(t, documented[name], "%s is served but has no row in the metrics table of docs/operating.md", name)
	}
}
