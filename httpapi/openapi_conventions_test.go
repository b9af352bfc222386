package httpapi

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strconv"
	"testing"

	"github.com/keelpay/keelpay/events"
	"github.com/keelpay/keelpay/payments"
	"github.com/keelpay/keelpay/refunds"
	"github.com/keelpay/keelpay/storage"
	"github.com/keelpay/keelpay/stores"
)

// TestOpenAPIEveryOperationAnswers404And405 keeps the JSON 404 and 405
// visible to generic tools: every operation lists them as ordinary
// responses, not only the document's x- key.
func TestOpenAPIEveryOperationAnswers404And405(t *testing.T) {
	t.Parallel()
	doc, _ := readOpenAPI(t)
	for name, raw := range documentedOperations(doc) {
		var op struct {
			Responses map[string]json.RawMessage `json:"responses"`
		}
		if err := json.Unmarshal(raw, &op); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, code := range []string{"404", "405"} {
			if _, ok := op.Responses[code]; !ok {
				t.Errorf("%s in %s has no %s response: add {\"$ref\": \"#/components/responses/%s\"}", name, openAPIName, code,
					map[string]string{"404": "NotFound", "405": "MethodNotAllowed"}[code])
			}
		}
	}
}

// TestOpenAPIDocumentsTheBrowserRoutesHeaders compares the headers the
// browser routes send with those their responses document.
func TestOpenAPIDocumentsTheBrowserRoutesHeaders(t *testing.T) {
	t.Parallel()
	_, raw := readOpenAPI(t)
	var doc struct {
		Paths map[string]map[string]struct {
			Responses map[string]struct {
				Headers map[string]json.RawMessage `json:"headers"`
			} `json:"responses"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	h, err := New(Config{Events: &events.Service{}, Logger: slog.New(slog.DiscardHandler), Payments: &payments.Service{},
		Refunds: &refunds.Service{}, Storage: struct{ storage.Storage }{}, Stores: &stores.Service{}})
	if err != nil {
		t.Fatal(err)
	}
	// The headers a browser route may set beyond the generic ones.
	watched := []string{"Cache-Control", "ETag", "Access-Control-Allow-Origin", "Cross-Origin-Resource-Policy",
		"X-Content-Type-Options", "Content-Security-Policy", "Referrer-Policy", "Request-Id"}
	for _, c := range []struct {
		path, target, code string
	}{
		{"/js/v1/keelpay.js", "/js/v1/keelpay.js", "200"},
		{"/js/v1/keelpay.js.integrity", "/js/v1/keelpay.js.integrity", "200"},
		{"/elements/v1/card", "/elements/v1/card", "400"},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, c.target, nil))
		if got := strconv.Itoa(rec.Code); got != c.code {
			t.Fatalf("GET %s: %s, want %s", c.target, got, c.code)
		}
		var sent, documented []string
		for _, name := range watched {
			if rec.Header().Get(name) != "" {
				sent = append(sent, name)
			}
		}
		for name := range doc.Paths[c.path]["get"].Responses[c.code].Headers {
			documented = append(documented, name)
		}
		sort.Strings(documented)
		sort.Strings(sent)
		if !slices.Equal(sent, documented) {
			t.Errorf("GET %s %s: sends headers %v, %s documents %v", c.path, c.code, sent, openAPIName, documented)
		}
	}
}
