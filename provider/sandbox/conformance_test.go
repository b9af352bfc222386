package sandbox_test

import (
	"testing"

	"github.com/keelpay/keelpay/provider"
	"github.com/keelpay/keelpay/provider/providertest"
	"github.com/keelpay/keelpay/provider/sandbox"
	"github.com/keelpay/keelpay/provider/sandbox/sandboxtest"
)

// TestConformance runs the provider conformance suite on the in-process
// sandbox.
func TestConformance(t *testing.T) {
	providertest.Run(t, func(t *testing.T) *providertest.Harness {
		return sandboxtest.Harness(t, func(_ *testing.T, sb *sandbox.Sandbox) provider.Provider { return sb })
	})
}
