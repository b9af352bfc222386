package httpprovider_test

import (
	"net/http/httptest"
	"testing"

	"github.com/keelpay/keelpay/provider"
	"github.com/keelpay/keelpay/provider/providertest"
	"github.com/keelpay/keelpay/provider/sandbox"
	"github.com/keelpay/keelpay/provider/sandbox/sandboxtest"
)

// TestConformance runs the provider conformance suite on a Client of a
// sandbox served over HTTP: the protocol keeps every property the service
// relies on. A Client is not a Notifier, so the notification checks do not
// apply.
func TestConformance(t *testing.T) {
	providertest.Run(t, func(t *testing.T) *providertest.Harness {
		return sandboxtest.Harness(t, func(t *testing.T, sb *sandbox.Sandbox) provider.Provider {
			srv := httptest.NewServer(sb.APIHandler())
			t.Cleanup(srv.Close)
			sb.SetBaseURL(srv.URL)
			return newClient(t, srv.URL, 0)
		})
	})
}
