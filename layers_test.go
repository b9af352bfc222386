package keelpay_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestServicesDoNotSpeakHTTP: the services return objects and errors, and
// package httpapi alone chooses statuses and writes answers. A service
// that imports net/http is choosing an HTTP status again.
func TestServicesDoNotSpeakHTTP(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	services := []string{"payments", "refunds", "stores"}
	args := []string{"list", "-f", `{{.ImportPath}} {{join .Imports " "}}`}
	for _, s := range services {
		args = append(args, "github.com/keelpay/keelpay/"+s)
	}
	out, err := exec.Command(goTool, args...).Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != len(services) {
		t.Fatalf("go list printed %d packages, want %d:\n%s", len(lines), len(services), out)
	}
	for _, line := range lines {
		fields := strings.Fields(line)
		if slices.Contains(fields[1:], "net/http") {
			t.Errorf("%s imports net/http", fields[0])
		}
	}
}
