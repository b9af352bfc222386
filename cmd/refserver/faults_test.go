package main

import (
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay/internal/faultproxy"
	"github.com/keelpay/keelpay/keyring"
	"github.com/keelpay/keelpay/keyring/keyringtest"
	"github.com/keelpay/keelpay/storage/postgres/postgrestest"
)

// throughProxy returns dsn with its host and port replaced by a fault
// proxy's, and the proxy, which forwards to the DSN's server.
func throughProxy(t *testing.T, dsn string) (string, *faultproxy.Proxy) {
	t.Helper()
	u, err := url.Parse(dsn)
	require.NoError(t, err)
	target := u.Host
	if u.Port() == "" {
		target += ":5432"
	}
	p := faultproxy.New(t, target)
	u.Host = p.Addr()
	return u.String(), p
}

// healthz probes /healthz with GET and returns its answer.
func healthz(t *testing.T, s *started) reply {
	t.Helper()
	return must(t, http.MethodGet, s.URL+"/healthz", "", nil)
}

// headHealthz probes /healthz with HEAD and returns the status.
func headHealthz(t *testing.T, s *started) int {
	t.Helper()
	resp, err := client.Head(s.URL + "/healthz")
	require.NoError(t, err)
	resp.Body.Close()
	return resp.StatusCode
}

// waitHealth probes /healthz until it answers status.
func waitHealth(t *testing.T, s *started, status int) reply {
	t.Helper()
	var last reply
	eventually(t, 20*time.Second, func() string {
		last = healthz(t, s)
		if last.Status != status {
			return "/healthz answers " + http.StatusText(last.Status) + ", waiting for " + http.StatusText(status)
		}
		return ""
	})
	return last
}

// TestHealthzFollowsTheDatabase runs a reference server whose PostgreSQL
// connections go through a fault proxy: /healthz answers 503
// database_unavailable while the database refuses connections and while
// they are stalled, and 200 again once it answers; the log says when it
// stopped and started answering.
func TestHealthzFollowsTheDatabase(t *testing.T) {
	t.Parallel()
	schema := postgrestest.NewSchema(t)
	dsn, proxy := throughProxy(t, dsnIn(t, postgrestest.DSN(t), schema))
	key := []string{"KEELPAY_ENCRYPTION_KEY=" + keyring.Format(keyringtest.Key())}
	s := start(t, t.TempDir(), key, "-addr", "127.0.0.1:0", "-db", dsn)
	sh := setupShop(t, s, "app_health", "http://127.0.0.1:9/hooks")

	r := healthz(t, s)
	require.Equal(t, http.StatusOK, r.Status)
	require.Equal(t, "ok", r.Str("status"))
	require.Regexp(t, `^req_\w{24}$`, r.Header.Get("Request-Id"))

	requireDown := func(what string) {
		t.Helper()
		r := waitHealth(t, s, http.StatusServiceUnavailable)
		require.Equal(t, "database_unavailable", r.Code(), "%s: %v", what, r.Body)
		require.Regexp(t, `^req_\w{24}$`, r.Header.Get("Request-Id"))
		require.Equal(t, http.StatusServiceUnavailable, headHealthz(t, s))
	}

	// The database stops: connections are reset and refused.
	proxy.Down()
	requireDown("down")
	read := must(t, "GET", s.URL+"/v1/payment_intents", sh.sk, nil)
	require.Equal(t, http.StatusInternalServerError, read.Status, "%v", read.Body)
	require.NoError(t, proxy.Up())
	waitHealth(t, s, http.StatusOK)
	require.Equal(t, http.StatusOK, must(t, "GET", s.URL+"/v1/payment_intents", sh.sk, nil).Status)

	// The network stalls: connections stay open, nothing answers.
	proxy.Stall()
	requireDown("stalled")
	proxy.Resume()
	waitHealth(t, s, http.StatusOK)
	require.Equal(t, http.StatusOK, must(t, "GET", s.URL+"/v1/payment_intents", sh.sk, nil).Status)

	require.NoError(t, s.Cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, s.Cmd.Wait())
	logs := s.Stderr.String()
	require.Equal(t, 2, strings.Count(logs, "readiness: the database does not answer"), logs)
	require.Equal(t, 2, strings.Count(logs, "readiness: the database answers again"), logs)
}
