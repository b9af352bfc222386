package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay/internal/servertest"
	"github.com/keelpay/keelpay/keyring"
	"github.com/keelpay/keelpay/keyring/keyringtest"
	"github.com/keelpay/keelpay/storage/postgres/postgrestest"
)

// refserver is a built reference server binary, shared by the tests.
var refserver string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "refserver")
	if err != nil {
		panic(err)
	}
	refserver = filepath.Join(dir, "refserver")
	out, err := exec.Command("go", "build", "-o", refserver, ".").CombinedOutput()
	if err != nil {
		panic("build refserver: " + err.Error() + "\n" + string(out))
	}
	// postgrestest.Run reports the tests skipped for want of PostgreSQL.
	code := postgrestest.Run(m)
	os.RemoveAll(dir)
	os.Exit(code)
}

// The servertest helpers under the names the tests use.
type (
	started = servertest.Server
	reply   = servertest.Reply
)

var (
	send   = servertest.Send
	must   = servertest.Must
	client = servertest.Client
)

// start runs the built reference server in dir with env; see
// servertest.Start.
func start(t *testing.T, dir string, env []string, args ...string) *started {
	t.Helper()
	return servertest.Start(t, refserver, dir, env, args...)
}

func TestRunsBareAndThePrintedCurlSetsUpAStore(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := start(t, dir, []string{"KEELPAY_ADDR=127.0.0.1:0"})
	require.Contains(t, s.Banner, s.URL+"/v1/setup")

	resp, err := http.Get(s.URL + "/healthz")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)

	// Run the printed command's request: the body between -d '...'.
	body := regexp.MustCompile(`-d '([^']*)'`).FindStringSubmatch(s.Banner)[1]
	resp, err = http.Post(s.URL+"/v1/setup", "application/json", strings.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	var store map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&store))
	require.Regexp(t, `^sk_`, store["secret_key"])
	require.Regexp(t, `^pk_`, store["publishable_key"])
	require.Regexp(t, `^whsec_`, store["webhook_secret"])

	// The default database is ./keelpay.db, the sandbox's ./keelpay.sandbox.db.
	_, err = os.Stat(filepath.Join(dir, "keelpay.db"))
	require.NoError(t, err)
	_, err = os.Stat(filepath.Join(dir, "keelpay.sandbox.db"))
	require.NoError(t, err)

	// SIGTERM: graceful shutdown, exit status 0.
	require.NoError(t, s.Cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, s.Cmd.Wait())
}

func TestFlagsWinOverEnvironmentAndJSONLogs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := start(t, dir, []string{"KEELPAY_ADDR=127.0.0.1:1", "KEELPAY_DB=ignored.db", "KEELPAY_LOG_FORMAT=json"},
		"-addr", "127.0.0.1:0", "-db", "custom.db")
	resp, err := http.Get(s.URL + "/v1/nope") // an API request: health checks are not logged
	require.NoError(t, err)
	resp.Body.Close()
	require.NoError(t, s.Cmd.Process.Signal(syscall.SIGINT))
	require.NoError(t, s.Cmd.Wait())
	_, err = os.Stat(filepath.Join(dir, "custom.db"))
	require.NoError(t, err)
	_, err = os.Stat(filepath.Join(dir, "ignored.db"))
	require.True(t, os.IsNotExist(err))
	// Every log line is JSON with a request id on request lines.
	sawRequest := false
	for _, line := range strings.Split(strings.TrimSpace(s.Stderr.String()), "\n") {
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &rec), line)
		if rec["msg"] == "request" {
			sawRequest = true
			require.Regexp(t, `^req_`, rec["request_id"])
		}
	}
	require.True(t, sawRequest)
}

func TestBadConfiguration(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"-log-format", "xml"}, {"stray"}, {"-db", "postgres://nobody@127.0.0.1:1/x?connect_timeout=1", "-addr", "127.0.0.1:0"},
		{"-sandbox-url", "127.0.0.1:8080", "-addr", "127.0.0.1:0"}} {
		cmd := exec.Command(refserver, args...)
		cmd.Dir = t.TempDir()
		out, err := cmd.CombinedOutput()
		require.Error(t, err, "%v: %s", args, out)
		require.Contains(t, string(out), "refserver:")
	}
}

// -pprof serves the runtime's profiles on a listener of its own; the API's
// address never serves them, with or without the flag.
func TestProfilesOnlyWhereAsked(t *testing.T) {
	t.Parallel()
	get := func(u string) (int, string) {
		t.Helper()
		resp, err := http.Get(u)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}
	on := start(t, t.TempDir(), nil, "-addr", "127.0.0.1:0", "-pprof", "127.0.0.1:0")
	m := regexp.MustCompile(`profiles \(net/http/pprof\) at (http://\S+)`).FindStringSubmatch(on.Banner)
	require.NotNil(t, m, on.Banner)
	require.NotContains(t, m[1], on.URL)
	code, body := get(m[1] + "heap?debug=1")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "heap profile")
	code, _ = get(on.URL + "/debug/pprof/heap?debug=1")
	require.Equal(t, http.StatusNotFound, code)

	off := start(t, t.TempDir(), nil, "-addr", "127.0.0.1:0")
	require.NotContains(t, off.Banner, "pprof")
	code, _ = get(off.URL + "/debug/pprof/")
	require.Equal(t, http.StatusNotFound, code)
}

// TestSandboxDatabaseDefaultPostgres starts a server on PostgreSQL in a
// folder where a SQLite server keeps its sandbox: the PostgreSQL server's
// sandbox is a file of its own, named after the database and schema, and
// the banner says which.
func TestSandboxDatabaseDefaultPostgres(t *testing.T) {
	t.Parallel()
	schema := postgrestest.NewSchema(t)
	dsn := dsnIn(t, postgrestest.DSN(t), schema)
	u, err := url.Parse(dsn)
	require.NoError(t, err)
	want := "postgres-" + strings.TrimPrefix(u.Path, "/") + "-" + schema + ".sandbox.db"

	dir := t.TempDir()
	sqliteServer := start(t, dir, []string{"KEELPAY_ADDR=127.0.0.1:0", "KEELPAY_ENCRYPTION_KEY=", "KEELPAY_KEY_FILE="})
	require.FileExists(t, filepath.Join(dir, "keelpay.sandbox.db"))
	pg := start(t, dir, []string{"KEELPAY_ADDR=127.0.0.1:0", "KEELPAY_ENCRYPTION_KEY=" + keyring.Format(keyringtest.Key())}, "-db", dsn)
	require.Contains(t, pg.Banner, "its own sandbox in "+want+",")
	require.FileExists(t, filepath.Join(dir, want))
	// Both serve their own sandbox side by side.
	for _, s := range []*started{sqliteServer, pg} {
		setupShop(t, s, "app_twosandboxes", "http://127.0.0.1:9/webhooks")
	}
}
