package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay/internal/servertest"
	"github.com/keelpay/keelpay/storage/postgres/postgrestest"
)

// indentedBlock returns the first code block indented by four spaces
// after the heading in the Markdown doc, without its indentation.
func indentedBlock(t *testing.T, doc, heading string) string {
	t.Helper()
	i := strings.Index(doc, "\n"+heading+"\n")
	require.GreaterOrEqual(t, i, 0, "no heading %q", heading)
	var lines []string
	for _, line := range strings.Split(doc[i+len(heading)+2:], "\n") {
		if code, ok := strings.CutPrefix(line, "    "); ok {
			lines = append(lines, code)
		} else if len(lines) > 0 {
			break
		} else if strings.HasPrefix(line, "#") {
			break
		}
	}
	require.NotEmpty(t, lines, "no indented block after %q", heading)
	return strings.Join(lines, "\n") + "\n"
}

// TestSeveralServersRecipesRun runs the "Several servers" recipes of
// docs/operating.md and the README as a reader pastes them into bash, in an
// empty folder, against the test's PostgreSQL database (in a schema of its
// own), on free ports, with the test's built binary standing in for the
// recipe's go build. Both servers must come up (the first is refused
// without a key, which is why the recipe makes one) and a store set up
// through the second must reach the first's sandbox. The recipe is pasted
// twice: the second paste keeps the key of the first.
func TestSeveralServersRecipesRun(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("the recipe needs curl")
	}
	for _, doc := range []struct{ file, heading string }{
		{"../../docs/operating.md", "## Several servers"},
		{"../../README.md", "### Several servers on one PostgreSQL database"},
	} {
		t.Run(filepath.Base(doc.file), func(t *testing.T) {
			// A schema of each recipe's own: each makes its own key.
			dsn := dsnIn(t, postgrestest.DSN(t), postgrestest.NewSchema(t))
			text, err := os.ReadFile(doc.file)
			require.NoError(t, err)
			block := indentedBlock(t, string(text), doc.heading)
			const build = "go build -o refserver ./cmd/refserver\n"
			require.True(t, strings.HasPrefix(block, build), "the recipe starts with the build:\n%s", block)
			script := strings.TrimPrefix(block, build)
			dbLine := regexp.MustCompile(`(?m)^DB='[^']*'`)
			require.Regexp(t, dbLine, script)
			script = dbLine.ReplaceAllLiteralString(script, `DB="$TEST_DB"`)
			a, b := servertest.FreeAddr(t), servertest.FreeAddr(t)
			script = strings.NewReplacer("127.0.0.1:8080", a, "127.0.0.1:8081", b).Replace(script)
			require.NotContains(t, script, "KEELPAY_ENCRYPTION_KEY=\"$(./refserver -new-key)\"", "a key made at each paste would lock the database")

			dir := t.TempDir()
			require.NoError(t, os.Symlink(refserver, filepath.Join(dir, "refserver")))
			check := `
until curl -s -o /dev/null http://` + b + `/healthz; do sleep 0.2; done
curl -s -o /dev/null -w 'setup %{http_code}\n' -X POST http://` + b + `/v1/setup -H 'Content-Type: application/json' \
  -d '{"client_id":"app_recipe` + strings.TrimSuffix(filepath.Base(doc.file), ".md") + `","client_secret":"secret_recipe` +
				strings.TrimSuffix(filepath.Base(doc.file), ".md") + `","webhook_url":"http://127.0.0.1:9/hooks"}'
kill %1 %2; wait
`
			for paste := 1; paste <= 2; paste++ {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				cmd := exec.CommandContext(ctx, "bash", "-eu", "-c", script+check)
				cmd.Dir = dir
				env := []string{"TEST_DB=" + dsn}
				for _, kv := range os.Environ() {
					if !strings.HasPrefix(kv, "KEELPAY_") {
						env = append(env, kv)
					}
				}
				cmd.Env = env
				cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
				cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
				var out bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &out
				require.NoError(t, cmd.Start())
				err := cmd.Wait()
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				cancel()
				require.NoError(t, err, "paste %d:\n%s", paste, out.String())
				want := "setup 201"
				if paste == 2 {
					want = "setup 409" // the store is there, and readable with the same key
				}
				require.Contains(t, out.String(), want, "paste %d:\n%s", paste, out.String())
			}
			fi, err := os.Stat(filepath.Join(dir, "keelpay.key"))
			require.NoError(t, err)
			require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
		})
	}
}
