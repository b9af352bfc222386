// Package openapicheck holds the checks that keelpay's tests run on its
// OpenAPI documents (docs/openapi.json, docs/sandbox.openapi.json): that a
// document is JSON and OpenAPI 3.1, that every $ref resolves, that every
// component is used, and that a JSON answer has the shape a schema of the
// document describes.
package openapicheck

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"sort"
	"strings"
)

// Doc is an OpenAPI document: its raw bytes and its JSON tree.
type Doc struct {
	Name string
	Raw  []byte
	Tree map[string]any
}

// Methods are the keys of a path item that are operations.
var Methods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// Read reads the document at path (name is how messages call it) and
// checks that it is one JSON object with "openapi" 3.1.x and "paths".
func Read(path, name string) (*Doc, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	var tree map[string]any
	if err := json.Unmarshal(raw, &tree); err != nil {
		return nil, fmt.Errorf("%s is not valid JSON: %w", name, err)
	}
	v, _ := tree["openapi"].(string)
	if !strings.HasPrefix(v, "3.1.") {
		return nil, fmt.Errorf(`%s: "openapi" is %q, want 3.1.x`, name, v)
	}
	if paths, _ := tree["paths"].(map[string]any); len(paths) == 0 {
		return nil, fmt.Errorf(`%s has no "paths"`, name)
	}
	if info, _ := tree["info"].(map[string]any); info["title"] == nil || info["version"] == nil {
		return nil, fmt.Errorf(`%s: "info" needs "title" and "version"`, name)
	}
	return &Doc{Name: name, Raw: raw, Tree: tree}, nil
}

// Operations returns every operation of the document by "METHOD /path".
func (d *Doc) Operations() map[string]map[string]any {
	ops := map[string]map[string]any{}
	paths, _ := d.Tree["paths"].(map[string]any)
	for p, item := range paths {
		item, _ := item.(map[string]any)
		for key, op := range item {
			if slices.Contains(Methods, key) {
				op, _ := op.(map[string]any)
				ops[strings.ToUpper(key)+" "+p] = op
			}
		}
	}
	return ops
}

// refs returns every "$ref" value of the document.
func (d *Doc) refs() []string {
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, child := range v {
				if s, ok := child.(string); ok && k == "$ref" {
					out = append(out, s)
					continue
				}
				walk(child)
			}
		case []any:
			for _, child := range v {
				walk(child)
			}
		}
	}
	walk(d.Tree)
	return out
}

// Resolve returns the part of the document a local $ref names.
func (d *Doc) Resolve(ref string) (any, error) {
	p, ok := strings.CutPrefix(ref, "#/")
	if !ok {
		return nil, fmt.Errorf("%s: $ref %q is not local", d.Name, ref)
	}
	var at any = d.Tree
	for _, part := range strings.Split(p, "/") {
		part = strings.NewReplacer("~1", "/", "~0", "~").Replace(part)
		m, ok := at.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s: $ref %q does not resolve", d.Name, ref)
		}
		if at, ok = m[part]; !ok {
			return nil, fmt.Errorf("%s: $ref %q does not resolve", d.Name, ref)
		}
	}
	return at, nil
}

// BrokenRefs lists the $refs that do not resolve.
func (d *Doc) BrokenRefs() []string {
	var out []string
	for _, ref := range d.refs() {
		if _, err := d.Resolve(ref); err != nil {
			out = append(out, ref)
		}
	}
	sort.Strings(out)
	return out
}

// UnusedComponents lists the components that no $ref names, as
// "#/components/<kind>/<name>". Security schemes are named by the
// operations' "security" instead, and count as used when one names them.
func (d *Doc) UnusedComponents() []string {
	used := map[string]bool{}
	for _, ref := range d.refs() {
		used[ref] = true
	}
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, child := range v {
				if k == "security" {
					if list, ok := child.([]any); ok {
						for _, req := range list {
							req, _ := req.(map[string]any)
							for name := range req {
								used["#/components/securitySchemes/"+name] = true
							}
						}
					}
				}
				walk(child)
			}
		case []any:
			for _, child := range v {
				walk(child)
			}
		}
	}
	walk(d.Tree)
	var out []string
	components, _ := d.Tree["components"].(map[string]any)
	for kind, group := range components {
		group, _ := group.(map[string]any)
		for name := range group {
			ref := "#/components/" + kind + "/" + name
			if !used[ref] {
				out = append(out, ref)
			}
		}
	}
	sort.Strings(out)
	return out
}

// Check reports how v (a decoded JSON value) differs from schema, a schema
// of the document: $ref, type (one or a list), enum, const, required,
// properties, additionalProperties false, items, minimum and maximum, and
// oneOf of such schemas. It is a check for tests, not a full validator.
func (d *Doc) Check(schema any, v any) []string {
	return d.check("$", schema, v)
}

func (d *Doc) check(at string, schema any, v any) []string {
	s, ok := schema.(map[string]any)
	if !ok {
		return []string{at + ": the schema is not an object"}
	}
	if ref, ok := s["$ref"].(string); ok {
		target, err := d.Resolve(ref)
		if err != nil {
			return []string{at + ": " + err.Error()}
		}
		return d.check(at, target, v)
	}
	if alts, ok := s["oneOf"].([]any); ok {
		matched := 0
		for _, alt := range alts {
			if len(d.check(at, alt, v)) == 0 {
				matched++
			}
		}
		if matched != 1 {
			return []string{fmt.Sprintf("%s: %v matches %d of the oneOf schemas, want 1", at, v, matched)}
		}
		return nil
	}
	var problems []string
	if t, ok := s["type"]; ok {
		var types []string
		switch t := t.(type) {
		case string:
			types = []string{t}
		case []any:
			for _, x := range t {
				if x, ok := x.(string); ok {
					types = append(types, x)
				}
			}
		}
		if !slices.ContainsFunc(types, func(t string) bool { return isType(t, v) }) {
			return []string{fmt.Sprintf("%s: %v is not of type %v", at, v, types)}
		}
	}
	if c, ok := s["const"]; ok && fmt.Sprint(c) != fmt.Sprint(v) {
		problems = append(problems, fmt.Sprintf("%s: %v is not %v", at, v, c))
	}
	if enum, ok := s["enum"].([]any); ok && !slices.ContainsFunc(enum, func(e any) bool { return fmt.Sprint(e) == fmt.Sprint(v) }) {
		problems = append(problems, fmt.Sprintf("%s: %v is not one of %v", at, v, enum))
	}
	if n, ok := v.(float64); ok {
		if lo, ok := s["minimum"].(float64); ok && n < lo {
			problems = append(problems, fmt.Sprintf("%s: %v is below %v", at, n, lo))
		}
		if hi, ok := s["maximum"].(float64); ok && n > hi {
			problems = append(problems, fmt.Sprintf("%s: %v is above %v", at, n, hi))
		}
	}
	if obj, ok := v.(map[string]any); ok {
		props, _ := s["properties"].(map[string]any)
		if req, ok := s["required"].([]any); ok {
			for _, name := range req {
				if _, ok := obj[fmt.Sprint(name)]; !ok {
					problems = append(problems, fmt.Sprintf("%s: %q is required", at, name))
				}
			}
		}
		for k, child := range obj {
			if p, ok := props[k]; ok {
				problems = append(problems, d.check(at+"."+k, p, child)...)
			} else if s["additionalProperties"] == false {
				problems = append(problems, fmt.Sprintf("%s: %q is not described", at, k))
			}
		}
	}
	if list, ok := v.([]any); ok {
		if items, ok := s["items"]; ok {
			for i, child := range list {
				problems = append(problems, d.check(fmt.Sprintf("%s[%d]", at, i), items, child)...)
			}
		}
	}
	return problems
}

func isType(t string, v any) bool {
	switch t {
	case "null":
		return v == nil
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "number":
		_, ok := v.(float64)
		return ok
	case "integer":
		n, ok := v.(float64)
		return ok && n == math.Trunc(n)
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	}
	return false
}
