package keelpay_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDocsStandAlone keeps the repository self-contained: no file may point
// at documents outside it (a shared spec or design folder, or numbered
// sections of one). Docs, comments and messages name the files of docs/.
func TestDocsStandAlone(t *testing.T) {
	outside := regexp.MustCompile(`(?i)` + strings.Join([]string{
		`\.\./` + `shared`,
		`shared/` + `(spec|design)`,
		`API-` + `DECISIONS`,
		`ARCHI` + `TECTURE`,
		`\bspec` + ` [0-9]`,
		`\bsection` + ` [0-9]`,
	}, "|"))
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", ".ci", "testdata", "node_modules":
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(path) {
		case ".go", ".md", ".json", ".js", ".html", ".css", ".sql", ".sh", ".txt":
		default:
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(b), "\n") {
			if m := outside.FindString(line); m != "" {
				t.Errorf("%s:%d points outside the repository (%q): name a file of docs/ instead", path, i+1, m)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestPerformanceDocStaysAReference keeps docs/performance.md a reference a
// reader takes in at once: the figures, how to measure them and where the
// time goes, not a log of every measurement ever made. New figures replace
// old ones.
func TestPerformanceDocStaysAReference(t *testing.T) {
	const limit = 15000 // 15 KB, counted in thousands
	b, err := os.ReadFile(filepath.Join("docs", "performance.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(b) >= limit {
		t.Fatalf("docs/performance.md is %d bytes, over %d: replace figures instead of adding them", len(b), limit)
	}
}
