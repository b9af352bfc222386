package main

// The Stripe-enabled build's tests run the built binary, as an operator
// does, with the helpers of internal/servertest that the reference
// server's own tests (cmd/refserver of keelpay's module) use too.

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/keelpay/keelpay/internal/servertest"
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

// must is servertest.Must under the name the tests use.
var must = servertest.Must

// start runs the built server in dir with env; see servertest.Start.
func start(t *testing.T, dir string, env []string, args ...string) *servertest.Server {
	t.Helper()
	return servertest.Start(t, built, dir, env, args...)
}
