package httpapi

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/events"
	"github.com/keelpay/keelpay/payments"
	"github.com/keelpay/keelpay/refunds"
	"github.com/keelpay/keelpay/stores"
)

// docs/openapi.json describes the API as the code serves it. These tests
// compare it with the route table, the error codes of error.go and the
// event types, so that a route, a code or an event type added without
// documentation fails here.

// openAPIPath is the document, from this package's directory; messages
// name it openAPIName, from the module root.
const (
	openAPIPath = "../docs/openapi.json"
	openAPIName = "docs/openapi.json"
)

// openAPIDoc is the part of the document the tests read.
type openAPIDoc struct {
	OpenAPI    string                                `json:"openapi"`
	Paths      map[string]map[string]json.RawMessage `json:"paths"`
	Webhooks   map[string]json.RawMessage            `json:"webhooks"`
	Components struct {
		Schemas struct {
			ErrorCode struct {
				OneOf []struct {
					Const string `json:"const"`
				} `json:"oneOf"`
			} `json:"ErrorCode"`
		} `json:"schemas"`
		Parameters map[string]openAPIParameter `json:"parameters"`
	} `json:"components"`
}

type openAPIOperation struct {
	// Security is nil when the operation does not state it.
	Security   *[]map[string][]string `json:"security"`
	Parameters []openAPIParameter     `json:"parameters"`
}

type openAPIParameter struct {
	Ref  string `json:"$ref"`
	Name string `json:"name"`
	In   string `json:"in"`
}

// openAPIMethods are the keys of a path item that are operations.
var openAPIMethods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// wildcard matches a path wildcard such as {id}.
var wildcard = regexp.MustCompile(`\{[^}]*\}`)

// outsideTable are the documented routes beside the API handler: the
// liveness and metrics handlers that the embedding program mounts (the
// reference server at these paths).
var outsideTable = []string{"GET /healthz", "GET /metrics"}

func readOpenAPI(t *testing.T) (*openAPIDoc, []byte) {
	t.Helper()
	raw, err := os.ReadFile(openAPIPath)
	if err != nil {
		t.Fatalf("read %s: %v", openAPIName, err)
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("%s is not valid JSON: %v", openAPIName, err)
	}
	var doc openAPIDoc
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("%s does not have the shape of an OpenAPI document: %v", openAPIName, err)
	}
	return &doc, raw
}

// testAPI is an api whose every feature table is full: each table exists
// when its service is configured, and the handlers are not called.
func testAPI() *api {
	return &api{
		cfg: Config{
			Events:   &events.Service{},
			Metrics:  prometheus.NewRegistry(),
			Payments: &payments.Service{},
			Refunds:  &refunds.Service{},
			Stores:   &stores.Service{},
		},
		mux: http.NewServeMux(),
	}
}

// documentedOperations returns "METHOD /path" for every operation of the
// document.
func documentedOperations(doc *openAPIDoc) map[string]json.RawMessage {
	ops := map[string]json.RawMessage{}
	for path, item := range doc.Paths {
		for key, op := range item {
			if slices.Contains(openAPIMethods, key) {
				ops[strings.ToUpper(key)+" "+path] = op
			}
		}
	}
	return ops
}

func TestOpenAPIIsOpenAPI31(t *testing.T) {
	t.Parallel()
	doc, _ := readOpenAPI(t)
	if !strings.HasPrefix(doc.OpenAPI, "3.1.") {
		t.Errorf(`%s: "openapi" is %q, want 3.1.x`, openAPIName, doc.OpenAPI)
	}
	if len(doc.Paths) == 0 {
		t.Errorf(`%s has no "paths"`, openAPIName)
	}
}

// TestOpenAPIPathsAreTheRouteTable checks that the document has exactly
// the operations the server serves, and that each documented operation
// reaches its route in the server's mux.
func TestOpenAPIPathsAreTheRouteTable(t *testing.T) {
	t.Parallel()
	doc, _ := readOpenAPI(t)
	a := testAPI()
	served := map[string]bool{}
	for _, rt := range a.table() {
		served[rt.method+" "+rt.path] = true
	}
	for _, op := range outsideTable {
		served[op] = true
	}
	documented := documentedOperations(doc)

	var missing, extra []string
	for op := range served {
		if _, ok := documented[op]; !ok {
			missing = append(missing, op)
		}
	}
	for op := range documented {
		if !served[op] {
			extra = append(extra, op)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	for _, op := range missing {
		t.Errorf("%s is served but not in %s: add its operation under paths", op, openAPIName)
	}
	for _, op := range extra {
		t.Errorf("%s is in %s but the server has no such route: remove it, or add the route", op, openAPIName)
	}

	a.routes()
	for op := range documented {
		if !served[op] || slices.Contains(outsideTable, op) {
			continue
		}
		method, path, _ := strings.Cut(op, " ")
		r := httptest.NewRequest(method, wildcard.ReplaceAllString(path, "x_1"), nil)
		if _, pattern := a.mux.Handler(r); pattern != op {
			t.Errorf("%s: the server's mux answers it with pattern %q", op, pattern)
		}
	}
}

// TestOpenAPISecurityMatchesRoutes checks each operation's security and
// its Idempotency-Key parameter against the route's authentication: the
// header is honoured on every POST made with a secret key.
func TestOpenAPISecurityMatchesRoutes(t *testing.T) {
	t.Parallel()
	doc, _ := readOpenAPI(t)
	documented := documentedOperations(doc)
	want := map[auth][]string{
		authNone:        {},
		authSecret:      {"secretKey"},
		authOptionalKey: {"(none)", "secretKey"},
		authPublishable: {"publishableKey"},
		authAnyKey:      {"publishableKey", "secretKey"},
	}
	for _, rt := range testAPI().table() {
		name := rt.method + " " + rt.path
		raw, ok := documented[name]
		if !ok {
			continue // reported by TestOpenAPIPathsAreTheRouteTable
		}
		var op openAPIOperation
		if err := json.Unmarshal(raw, &op); err != nil {
			t.Errorf("%s: operation is not an object: %v", name, err)
			continue
		}
		if op.Security == nil {
			t.Errorf("%s: has no security: state it on the operation (an empty list when it needs no key)", name)
			continue
		}
		got := []string{}
		for _, req := range *op.Security {
			if len(req) == 0 {
				got = append(got, "(none)")
			}
			for scheme := range req {
				got = append(got, scheme)
			}
		}
		sort.Strings(got)
		if !slices.Equal(got, want[rt.auth]) {
			t.Errorf("%s: security lists %v, want %v", name, got, want[rt.auth])
		}

		hasKey := false
		for _, p := range op.Parameters {
			if p.Ref != "" {
				p = doc.Components.Parameters[strings.TrimPrefix(p.Ref, "#/components/parameters/")]
			}
			hasKey = hasKey || (p.In == "header" && p.Name == "Idempotency-Key")
		}
		wantKey := rt.method == http.MethodPost && (rt.auth == authSecret || rt.auth == authOptionalKey || rt.auth == authAnyKey)
		switch {
		case wantKey && !hasKey:
			t.Errorf("%s: the Idempotency-Key header parameter is missing (a POST with a secret key honours it)", name)
		case !wantKey && hasKey:
			t.Errorf("%s: has an Idempotency-Key parameter, but the route takes no secret key or is not a POST", name)
		}
	}
}

// errorCodes returns the value of every keelpay.Code constant in error.go,
// by constant name.
func errorCodes(t *testing.T) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "../error.go", nil, 0)
	if err != nil {
		t.Fatalf("parse error.go: %v", err)
	}
	codes := map[string]string{}
	for _, decl := range f.Decls {
		gen, ok := decl.(*ast.GenDecl)
		if !ok || gen.Tok != token.CONST {
			continue
		}
		for _, spec := range gen.Specs {
			vs := spec.(*ast.ValueSpec)
			if typ, ok := vs.Type.(*ast.Ident); !ok || typ.Name != "Code" {
				continue
			}
			for i, name := range vs.Names {
				if i >= len(vs.Values) {
					t.Fatalf("error.go: %s has no value of its own", name.Name)
				}
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					t.Fatalf("error.go: %s is not a string literal", name.Name)
				}
				v, err := strconv.Unquote(lit.Value)
				if err != nil {
					t.Fatalf("error.go: %s: %v", name.Name, err)
				}
				codes[name.Name] = v
			}
		}
	}
	if len(codes) == 0 {
		t.Fatal("error.go: no constants of type Code found")
	}
	return codes
}

// listedErrorCodes returns where each code appears in an "x-error-codes"
// list of the document (JSON pointers of the lists).
func listedErrorCodes(t *testing.T, raw []byte) map[string][]string {
	t.Helper()
	var tree any
	if err := json.Unmarshal(raw, &tree); err != nil {
		t.Fatalf("%s: %v", openAPIName, err)
	}
	out := map[string][]string{}
	var walk func(v any, at string)
	walk = func(v any, at string) {
		switch v := v.(type) {
		case map[string]any:
			for k, child := range v {
				here := at + "/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(k)
				if k == "x-error-codes" {
					list, ok := child.([]any)
					if !ok {
						t.Errorf("%s: %s is not an array", openAPIName, here)
						continue
					}
					for _, c := range list {
						s, ok := c.(string)
						if !ok {
							t.Errorf("%s: %s has an entry that is not a string", openAPIName, here)
							continue
						}
						out[s] = append(out[s], here)
					}
					continue
				}
				walk(child, here)
			}
		case []any:
			for i, child := range v {
				walk(child, at+"/"+strconv.Itoa(i))
			}
		}
	}
	walk(tree, "#")
	return out
}

// TestOpenAPIDocumentsEveryErrorCode checks that every keelpay.Code is in
// the ErrorCode schema and in the errors of at least one response, and
// that the document names no code that error.go does not have.
func TestOpenAPIDocumentsEveryErrorCode(t *testing.T) {
	t.Parallel()
	doc, raw := readOpenAPI(t)
	codes := errorCodes(t)
	known := map[string]bool{}
	for _, v := range codes {
		known[v] = true
	}
	inSchema := map[string]bool{}
	for _, c := range doc.Components.Schemas.ErrorCode.OneOf {
		inSchema[c.Const] = true
	}
	listed := listedErrorCodes(t, raw)

	names := make([]string, 0, len(codes))
	for name := range codes {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		code := codes[name]
		if !inSchema[code] {
			t.Errorf("error code %q (keelpay.%s in error.go) is missing from components.schemas.ErrorCode.oneOf in %s", code, name, openAPIName)
		}
		if len(listed[code]) == 0 {
			t.Errorf("error code %q (keelpay.%s in error.go) is in no response's x-error-codes in %s: list it under the operations that return it", code, name, openAPIName)
		}
	}
	for code := range inSchema {
		if !known[code] {
			t.Errorf("components.schemas.ErrorCode in %s has %q, which is no keelpay.Code in error.go", openAPIName, code)
		}
	}
	for code, where := range listed {
		if !known[code] {
			t.Errorf("%s lists error code %q, which is no keelpay.Code in error.go, at %s", openAPIName, code, strings.Join(where, ", "))
		}
	}
}

// TestOpenAPIWebhooksAreTheEventTypes checks that there is one webhook per
// event type.
func TestOpenAPIWebhooksAreTheEventTypes(t *testing.T) {
	t.Parallel()
	doc, _ := readOpenAPI(t)
	for _, typ := range keelpay.EventTypes {
		if _, ok := doc.Webhooks[string(typ)]; !ok {
			t.Errorf("event type %q has no entry under webhooks in %s", typ, openAPIName)
		}
	}
	for name := range doc.Webhooks {
		if !keelpay.ValidEventType(name) {
			t.Errorf("webhooks in %s has %q, which is no event type in keelpay.EventTypes", openAPIName, name)
		}
	}
}

// TestErrorTableIsDocumented checks the one table from error code to HTTP
// status (statuses) against error.go, docs/errors.md and the status of
// every response of docs/openapi.json that lists the code.
func TestErrorTableIsDocumented(t *testing.T) {
	t.Parallel()
	for name, code := range errorCodes(t) {
		if _, ok := statuses[keelpay.Code(code)]; !ok {
			t.Errorf("error code %q (keelpay.%s in error.go) has no HTTP status in the table of httpapi/status.go", code, name)
		}
	}

	md, err := os.ReadFile("../docs/errors.md")
	require.NoError(t, err)
	row := regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\| ([0-9]{3}) \\|")
	inDocs := map[keelpay.Code]bool{}
	for _, m := range row.FindAllStringSubmatch(string(md), -1) {
		code, status := keelpay.Code(m[1]), m[2]
		inDocs[code] = true
		want, ok := statuses[code]
		if !ok {
			t.Errorf("docs/errors.md has %s with %s; the table of httpapi/status.go does not have it", code, status)
			continue
		}
		if status != strconv.Itoa(want) {
			t.Errorf("docs/errors.md gives %s status %s; the table says %d", code, status, want)
		}
	}
	for code, status := range statuses {
		if !inDocs[code] {
			t.Errorf("docs/errors.md has no row for %s (%d)", code, status)
		}
	}

	_, raw := readOpenAPI(t)
	var tree any
	require.NoError(t, json.Unmarshal(raw, &tree))
	// The statuses under which each shared response is used.
	refStatuses := map[string][]string{}
	var walk func(v any, key string)
	walk = func(v any, key string) {
		switch v := v.(type) {
		case map[string]any:
			if ref, ok := v["$ref"].(string); ok && strings.HasPrefix(ref, "#/components/responses/") {
				refStatuses[strings.TrimPrefix(ref, "#/components/responses/")] = append(refStatuses[strings.TrimPrefix(ref, "#/components/responses/")], key)
			}
			for k, child := range v {
				walk(child, k)
			}
		case []any:
			for _, child := range v {
				walk(child, key)
			}
		}
	}
	walk(tree, "")
	status3 := regexp.MustCompile(`/([0-9]{3})/x-error-codes$`)
	shared := regexp.MustCompile(`^#/components/responses/([A-Za-z]+)/x-error-codes$`)
	for code, places := range listedErrorCodes(t, raw) {
		want, ok := statuses[keelpay.Code(code)]
		if !ok {
			continue // TestOpenAPIDocumentsEveryErrorCode reports it
		}
		for _, at := range places {
			var got []string
			if m := status3.FindStringSubmatch(at); m != nil {
				got = []string{m[1]}
			} else if m := shared.FindStringSubmatch(at); m != nil {
				got = refStatuses[m[1]]
			}
			if len(got) == 0 {
				t.Errorf("%s: cannot tell the status of %s", openAPIName, at)
			}
			for _, s := range got {
				if s != strconv.Itoa(want) {
					t.Errorf("%s lists %s under status %s at %s; the table says %d", openAPIName, code, s, at, want)
				}
			}
		}
	}
}
