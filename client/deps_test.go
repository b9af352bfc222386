package client_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestDependencies: a program that only calls a remote keelpay pulls in
// the standard library and the root package, nothing else (no database
// driver, metrics or tracing, no service).
func TestDependencies(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	out, err := exec.Command(goTool, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		first, _, _ := strings.Cut(pkg, "/")
		if !strings.Contains(first, ".") || strings.HasPrefix(pkg, "vendor/") {
			continue // the standard library
		}
		if pkg != "github.com/keelpay/keelpay" && pkg != "github.com/keelpay/keelpay/client" {
			t.Errorf("client depends on %s", pkg)
		}
	}
}
