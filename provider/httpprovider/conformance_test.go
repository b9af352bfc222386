package httpprovider_test

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/keelpay/keelpay/keelpaytest"
	"github.com/keelpay/keelpay/provider"
	"github.com/keelpay/keelpay/provider/providertest"
	"github.com/keelpay/keelpay/provider/sandbox"
)

// TestConformance runs the provider conformance suite on a Client of a
// sandbox served over HTTP: the protocol keeps every property the service
// relies on. A Client is not a Notifier, so the notification checks do not
// apply.
func TestConformance(t *testing.T) {
	providertest.Run(t, func(t *testing.T) *providertest.Harness {
		clock := keelpaytest.NewClock(time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC))
		sb := sandbox.New(sandbox.Config{Clock: clock})
		t.Cleanup(func() { _ = sb.Close() })
		srv := httptest.NewServer(sb.APIHandler())
		t.Cleanup(srv.Close)
		sb.SetBaseURL(srv.URL)
		return &providertest.Harness{
			Provider:         newClient(t, srv.URL, 0),
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
	})
}
