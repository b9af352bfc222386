// Package sandboxtest is the sandbox's harness for the provider conformance
// suite (package providertest): a fresh sandbox on a manual clock, driven
// with its own test cards. The sandbox in-process and a client of it over
// HTTP run the suite through it.
package sandboxtest

import (
	"context"
	"testing"
	"time"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/provider"
	"github.com/keelpay/keelpay/provider/providertest"
	"github.com/keelpay/keelpay/provider/sandbox"
)

// Harness returns the harness of a new sandbox, closed when the test ends.
// under returns the provider the suite checks: the sandbox itself, or a
// client that reaches it.
func Harness(t *testing.T, under func(t *testing.T, sb *sandbox.Sandbox) provider.Provider) *providertest.Harness {
	clock := keelpay.NewManualClock(time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC))
	sb := sandbox.New(sandbox.Config{Clock: clock})
	t.Cleanup(func() { _ = sb.Close() })
	return &providertest.Harness{
		Provider:         under(t, sb),
		Credentials:      provider.Credentials{ClientID: "app_shop1", ClientSecret: "secret_shop1"},
		WrongCredentials: provider.Credentials{ClientID: "app_shop1", ClientSecret: "secret_other"},
		Cards: providertest.Cards{
			Succeeds:          sandbox.CardVisa,
			Declined:          sandbox.CardDeclined,
			InsufficientFunds: sandbox.CardInsufficientFunds,
			ThreeDSecure:      sandbox.CardThreeDSecure,
			OutcomeUnknown:    sandbox.CardOutcomeUnknown,
			BillingRequired:   sandbox.CardBillingRequired,
			Rejected:          sandbox.CardRejected,
		},
		AnswerChallenge: func(ctx context.Context, _ string, res *provider.ChargeResult, complete bool) error {
			return sb.AnswerChallenge(ctx, res.ActionURL, complete)
		},
		ResolveOutcomes:       func(*testing.T) { clock.Advance(sandbox.ResolveAfter) },
		SetUnavailable:        sb.SetUnavailable,
		UnavailableRetryAfter: sandbox.UnavailableRetryAfter,
		ChargeCount:           sb.ChargeCount,
	}
}
