package openapicheck

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const small = `{
  "openapi": "3.1.0",
  "info": {"title": "t", "version": "1"},
  "paths": {"/a": {"get": {"security": [{"key": []}], "responses": {"200": {"$ref": "#/components/responses/A"}}}}},
  "components": {
    "securitySchemes": {"key": {"type": "http", "scheme": "bearer"}, "other": {"type": "http", "scheme": "bearer"}},
    "responses": {"A": {"description": "a", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/A"}}}}},
    "schemas": {
      "A": {"type": "object", "required": ["n", "s"], "additionalProperties": false, "properties": {
        "n": {"type": "integer", "minimum": 1, "maximum": 9},
        "s": {"type": ["string", "null"], "enum": ["x", "y", null]},
        "k": {"const": "k"},
        "l": {"type": "array", "items": {"type": "boolean"}}}},
      "Unused": {"type": "string"},
      "Broken": {"$ref": "#/components/schemas/Nowhere"}
    }
  }
}`

func read(t *testing.T, text string) *Doc {
	t.Helper()
	p := filepath.Join(t.TempDir(), "doc.json")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := Read(p, "doc.json")
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestRead(t *testing.T) {
	read(t, small)
	for _, bad := range []string{`{`, `{"openapi": "3.0.3", "info": {"title": "t", "version": "1"}, "paths": {"/": {}}}`,
		`{"openapi": "3.1.0", "info": {"title": "t", "version": "1"}}`, `{"openapi": "3.1.0", "paths": {"/": {}}}`} {
		p := filepath.Join(t.TempDir(), "bad.json")
		if err := os.WriteFile(p, []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := Read(p, "bad.json"); err == nil {
			t.Errorf("Read accepted %s", bad)
		}
	}
}

func TestRefsAndComponents(t *testing.T) {
	d := read(t, small)
	if got := strings.Join(d.BrokenRefs(), ","); got != "#/components/schemas/Nowhere" {
		t.Errorf("BrokenRefs = %s", got)
	}
	want := "#/components/schemas/Broken,#/components/schemas/Unused,#/components/securitySchemes/other"
	if got := strings.Join(d.UnusedComponents(), ","); got != want {
		t.Errorf("UnusedComponents = %s, want %s", got, want)
	}
	if len(d.Operations()) != 1 || d.Operations()["GET /a"] == nil {
		t.Errorf("Operations = %v", d.Operations())
	}
}

func TestCheck(t *testing.T) {
	d := read(t, small)
	schema := map[string]any{"$ref": "#/components/schemas/A"}
	for text, problems := range map[string]int{
		`{"n": 3, "s": "x"}`:                         0,
		`{"n": 3, "s": null, "k": "k", "l": [true]}`: 0,
		`{"n": 3}`:                                        1, // s required
		`{"n": 3.5, "s": "x"}`:                            1, // not an integer
		`{"n": 10, "s": "x"}`:                             1, // above the maximum
		`{"n": 3, "s": "z"}`:                              1, // not in the enum
		`{"n": 3, "s": "x", "extra": 1}`:                  1, // not described
		`{"n": 3, "s": "x", "k": "j", "l": [true, "no"]}`: 2, // const, item type
		`[1]`: 1,
	} {
		var v any
		if err := json.Unmarshal([]byte(text), &v); err != nil {
			t.Fatal(err)
		}
		if got := d.Check(schema, v); len(got) != problems {
			t.Errorf("Check(%s) = %v, want %d problems", text, got, problems)
		}
	}
}
