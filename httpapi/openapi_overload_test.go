package httpapi

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestOpenAPIEveryAPIOperationAnswers429 checks that every operation of
// the API documents the shed answer (health and metrics are mounted
// beside the API and never shed).
func TestOpenAPIEveryAPIOperationAnswers429(t *testing.T) {
	t.Parallel()
	doc, _ := readOpenAPI(t)
	for name, raw := range documentedOperations(doc) {
		if name == "GET /healthz" || name == "GET /metrics" {
			continue
		}
		var op struct {
			Responses map[string]json.RawMessage `json:"responses"`
		}
		require.NoError(t, json.Unmarshal(raw, &op), name)
		if _, ok := op.Responses["429"]; !ok {
			t.Errorf("%s in %s has no 429 response: add {\"$ref\": \"#/components/responses/Overloaded\"}", name, openAPIName)
		}
	}
}
