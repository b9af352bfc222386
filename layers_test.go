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
	services := []string{"payments", "refunds", "stores", "idempotency"}
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

// TestExamplesImportNoInternalPackage: examples are what stores copy, and
// a store's module cannot import keelpay's internal packages, so neither
// may an example, its tests included.
func TestExamplesImportNoInternalPackage(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	out, err := exec.Command(goTool, "list", "-f",
		`{{.ImportPath}} {{join .Imports " "}} {{join .TestImports " "}} {{join .XTestImports " "}}`,
		"./examples/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) < 4 {
		t.Fatalf("go list printed %d packages under examples/, want at least 4:\n%s", len(lines), out)
	}
	for _, line := range lines {
		fields := strings.Fields(line)
		for _, imp := range fields[1:] {
			if strings.HasPrefix(imp, "github.com/keelpay/keelpay/") && strings.Contains(imp+"/", "/internal/") {
				t.Errorf("%s imports %s", fields[0], imp)
			}
		}
	}
}
