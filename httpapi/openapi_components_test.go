package httpapi

import (
	"testing"

	"github.com/keelpay/keelpay/internal/openapicheck"
)

// TestOpenAPIRefsResolveAndComponentsAreUsed: every $ref of the document
// names a part of it, and every component is named by a $ref (or, for a
// security scheme, by an operation's security): an unused one is a
// leftover that linters warn about.
func TestOpenAPIRefsResolveAndComponentsAreUsed(t *testing.T) {
	t.Parallel()
	doc, err := openapicheck.Read(openAPIPath, openAPIName)
	if err != nil {
		t.Fatal(err)
	}
	for _, ref := range doc.BrokenRefs() {
		t.Errorf("%s: $ref %s does not resolve", openAPIName, ref)
	}
	for _, c := range doc.UnusedComponents() {
		t.Errorf("%s: %s is not used", openAPIName, c)
	}
}
