// Package servertest runs a built server binary in keelpay's tests, as an
// operator does, and reads its banner and its answers.
//
// A test builds the binary itself (in its TestMain), starts it with
// [Start] and talks to it with [Send] and [Must]. The package is for
// _test.go files only: it imports testing, which no server binary links.
package servertest

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
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Server is a running server process.
type Server struct {
	Cmd    *exec.Cmd
	URL    string           // where it listens, from the banner
	Banner string           // its stdout up to the end of the printed curl
	Stderr *strings.Builder // what it logged; read only after Cmd.Wait
}

var listening = regexp.MustCompile(`listening on (http://\S+)`)

// Start runs the binary bin in dir with env added to the test's own and
// reads its banner from stdout until the printed curl is complete. The
// process is killed when the test ends.
func Start(t testing.TB, bin, dir string, env []string, args ...string) *Server {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	stderr := &strings.Builder{}
	cmd.Stderr = stderr // read only after Wait
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

	s := &Server{Cmd: cmd, Stderr: stderr}
	sc := bufio.NewScanner(stdout)
	var banner strings.Builder
	for sc.Scan() {
		line := sc.Text()
		banner.WriteString(line + "\n")
		if m := listening.FindStringSubmatch(line); m != nil {
			s.URL = m[1]
		}
		if strings.Contains(line, "-d '") {
			break
		}
	}
	require.NotEmpty(t, s.URL, "banner: %s", banner.String())
	s.Banner = banner.String()
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	return s
}

// Stop ends the server gracefully and returns what it logged.
func (s *Server) Stop(t testing.TB) string {
	t.Helper()
	require.NoError(t, s.Cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, s.Cmd.Wait())
	return s.Stderr.String()
}

// Reply is a server's answer.
type Reply struct {
	Status int
	Header http.Header
	Body   map[string]any // the JSON body, when it is JSON
}

// Str is the string at key of the body, or "".
func (r Reply) Str(key string) string {
	s, _ := r.Body[key].(string)
	return s
}

// Code is error.code of an error answer.
func (r Reply) Code() string {
	e, _ := r.Body["error"].(map[string]any)
	s, _ := e["code"].(string)
	return s
}

// Client is the HTTP client Send uses.
var Client = &http.Client{Timeout: 30 * time.Second}

// Send makes a request with body as JSON (or as a form, for url.Values),
// the key as bearer token and header as name/value pairs. It returns an
// error instead of failing the test, so goroutines can use it.
func Send(method, u, key string, body any, header ...string) (Reply, error) {
	var rd io.Reader
	contentType := "application/json"
	switch b := body.(type) {
	case nil:
	case url.Values:
		rd, contentType = strings.NewReader(b.Encode()), "application/x-www-form-urlencoded"
	default:
		data, err := json.Marshal(b)
		if err != nil {
			return Reply{}, err
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, u, rd)
	if err != nil {
		return Reply{}, err
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
	resp, err := Client.Do(req)
	if err != nil {
		return Reply{}, err
	}
	defer resp.Body.Close()
	r := Reply{Status: resp.StatusCode, Header: resp.Header}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		if err := json.NewDecoder(resp.Body).Decode(&r.Body); err != nil {
			return r, fmt.Errorf("%s %s: %d: %w", method, u, resp.StatusCode, err)
		}
	}
	return r, nil
}

// Must is Send for the test's own goroutine.
func Must(t testing.TB, method, u, key string, body any, header ...string) Reply {
	t.Helper()
	r, err := Send(method, u, key, body, header...)
	require.NoError(t, err)
	return r
}

// FreeAddr returns a loopback address nothing listens on right now.
func FreeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}
