package keelpay_test

import (
	"os"
	"regexp"
	"testing"

	"github.com/keelpay/keelpay"
)

// TestChangelogNamesTheVersion: the first section of CHANGELOG.md is the
// version that version.go names, the one being prepared (docs/releasing.md).
func TestChangelogNamesTheVersion(t *testing.T) {
	b, err := os.ReadFile("CHANGELOG.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^## (\S+)`).FindSubmatch(b)
	if m == nil {
		t.Fatal("CHANGELOG.md has no section")
	}
	if got := string(m[1]); got != keelpay.Version {
		t.Errorf("CHANGELOG.md's first section is %q; version.go names %q", got, keelpay.Version)
	}
}
