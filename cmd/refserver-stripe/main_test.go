package main

// The helpers of the reference server's own tests (cmd/refserver of
// keelpay's module), for the Stripe-enabled build: the tests run the
// built binary, as an operator does.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// built is the built Stripe-enabled reference server, shared by the
// tests.
var built string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "refserver")
	if err != nil {
		panic(err)
	}
	built = filepath.Join(dir, "refserver")
	out, err := exec.Command("go", "build", "-o", built, ".").CombinedOutput()
	if err != nil {
		panic("build refserver: " + err.Error() + "\n" + string(out))
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// started is a running reference server process.
type started struct {
	cmd    *exec.Cmd
	url    string
	curl   string
	stderr *strings.Builder
}

// start runs the binary in dir with env and reads its banner from stdout
// until the printed curl is complete.
func start(t *testing.T, dir string, env []string, args ...string) *started {
	t.Helper()
	cmd := exec.Command(built, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	stderr := &strings.Builder{}
	cmd.Stderr = stderr // read only after Wait
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

	s := &started{cmd: cmd, stderr: stderr}
	sc := bufio.NewScanner(stdout)
	var banner strings.Builder
	for sc.Scan() {
		line := sc.Text()
		banner.WriteString(line + "\n")
		if m := regexp.MustCompile(`listening on (http://\S+)`).FindStringSubmatch(line); m != nil {
			s.url = m[1]
		}
		if strings.Contains(line, "-d '") {
			break
		}
	}
	require.NotEmpty(t, s.url, "banner: %s", banner.String())
	s.curl = banner.String()
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	return s
}

// reply is a reference server's answer.
type reply struct {
	status int
	header http.Header
	body   map[string]any // the JSON body, when it is JSON
}

func (r reply) str(key string) string {
	s, _ := r.body[key].(string)
	return s
}

// code is error.code of an error answer.
func (r reply) code() string {
	e, _ := r.body["error"].(map[string]any)
	s, _ := e["code"].(string)
	return s
}

var client = &http.Client{Timeout: 30 * time.Second}

// send makes a request with body as JSON (or as a form, for url.Values),
// the key as bearer token and header as name/value pairs. It returns an
// error instead of failing the test, so goroutines can use it.
func send(method, u, key string, body any, header ...string) (reply, error) {
	var rd io.Reader
	contentType := "application/json"
	switch b := body.(type) {
	case nil:
	case url.Values:
		rd, contentType = strings.NewReader(b.Encode()), "application/x-www-form-urlencoded"
	default:
		data, err := json.Marshal(b)
		if err != nil {
			return reply{}, err
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, u, rd)
	if err != nil {
		return reply{}, err
	}
	if body != nil {
		req.Header.Set("Content-Type", contentType)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := client.Do(req)
	if err != nil {
		return reply{}, err
	}
	defer resp.Body.Close()
	r := reply{status: resp.StatusCode, header: resp.Header}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		if err := json.NewDecoder(resp.Body).Decode(&r.body); err != nil {
			return r, fmt.Errorf("%s %s: %d: %w", method, u, resp.StatusCode, err)
		}
	}
	return r, nil
}

// must is send for the test's own goroutine.
func must(t *testing.T, method, u, key string, body any, header ...string) reply {
	t.Helper()
	r, err := send(method, u, key, body, header...)
	require.NoError(t, err)
	return r
}

// stop ends a started server gracefully and returns what it logged.
func stop(t *testing.T, s *started) string {
	t.Helper()
	require.NoError(t, s.cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, s.cmd.Wait())
	return s.stderr.String()
}

// freeAddr returns a loopback address nothing listens on right now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}
