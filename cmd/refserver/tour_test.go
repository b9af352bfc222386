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
)

// tourBlocks returns the ```bash blocks of the README's section "A short
// tour", in order: the tour a reader pastes.
func tourBlocks(t *testing.T, readme string) []string {
	t.Helper()
	start := strings.Index(readme, "\n## A short tour\n")
	require.GreaterOrEqual(t, start, 0, "README.md has no section \"## A short tour\"")
	section := readme[start+1:]
	if end := strings.Index(section[3:], "\n## "); end >= 0 {
		section = section[:end+3]
	}
	var blocks []string
	for _, m := range regexp.MustCompile("(?s)```bash\n(.*?)```").FindAllStringSubmatch(section, -1) {
		blocks = append(blocks, m[1])
	}
	require.NotEmpty(t, blocks, "the tour has no ```bash blocks")
	return blocks
}

// TestReadmeTourRuns pastes the README's tour into bash, as a reader does,
// against a built reference server on a free port and with the example
// receiver the tour starts itself, and checks what it prints; then pastes
// it again into the same server, which must print the same. The README
// cannot drift from the server without failing here.
func TestReadmeTourRuns(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("the tour needs curl")
	}
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	require.NoError(t, err)
	script := strings.Join(tourBlocks(t, string(readme)), "\n")

	s := start(t, t.TempDir(), nil, "-addr", "127.0.0.1:0", "-db", filepath.Join(t.TempDir(), "keelpay.db"))
	// A reader pastes the tour again into the same server (the sandbox
	// clock already ahead, the stores of the first paste there): it
	// prints the same.
	for paste := 1; paste <= 2; paste++ {
		t.Logf("paste %d", paste)
		pasteTour(t, root, script, s.URL)
	}
}

// pasteTour runs the tour's script once against the server at url and
// checks what it prints.
func pasteTour(t *testing.T, root, script, url string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-eu", "-c", script)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "KEELPAY_URL="+url, "RECEIVER_ADDR="+servertest.FreeAddr(t), "TMPDIR="+t.TempDir())
	// The tour starts the receiver in the background: put everything in a
	// process group of its own, and end the group whatever happens.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	err := cmd.Wait()
	out := stdout.String()
	t.Logf("the tour printed:\n%s", out)
	require.NoError(t, err, "the tour failed\nstdout:\n%s\nstderr:\n%s", out, stderr.String())

	// Each line the tour prints, in order, against what its comments show.
	for _, want := range []string{
		`^\{"id":"store_\w+","object":"store","currency":"EUR","publishable_key":"pk_\w+","secret_key":"sk_\w+"`,
		`^\{"id":"cs_\w+","object":"card_session","client_secret":"[^"]+"`,
		`^\{"id":"card_\w+","object":"card","customer":\{"id":"cus_1"\},"card_session":"cs_\w+","brand":"visa","last4":"4242"`,
		`^(?i:idempotent-replayed): true\r?$`,
		`^\{"id":"pi_\w+","object":"payment_intent","status":"succeeded","amount":2500,`,
		`^requires_action$`,
		`^200$`,
		`^succeeded$`,
		`^\{"id":"re_\w+","object":"refund","payment_intent":"pi_\w+","amount":2500,"currency":"EUR",.*"status":"succeeded"`,
		`^processing$`,
		`^the clock moved 300 seconds$`,
		`^succeeded$`,
		`^\{"id":"evt_\w+","object":"event","type":"webhook.test"`,
		`^msg="order fulfilled".*payment_intent=pi_\w+$`,
		`^msg="order fulfilled".*payment_intent=pi_\w+$`,
		`^msg="order fulfilled".*payment_intent=pi_\w+$`,
		`^\{"object":"list","data":\[\{"id":"evt_\w+","object":"event","type":"webhook.test".*"has_more":true\}$`,
		`^\{"error":\{"code":"invalid_request","message":"client_secret is required.","details":\{"code":"missing_client_secret","field":"client_secret"\}\}\}$`,
	} {
		re := regexp.MustCompile(`(?m)` + want)
		loc := re.FindStringIndex(out)
		require.NotNil(t, loc, "the tour printed no line matching %s; from here on it printed:\n%s", want, out)
		out = out[loc[1]:]
	}
}
