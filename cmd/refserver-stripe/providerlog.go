package main

import (
	"context"
	"log/slog"
	"regexp"
	"strings"

	"github.com/keelpay/keelpay/provider"
	"github.com/keelpay/keelpay/provider/stripe"
)

// loggedStripe is the Stripe adapter, every method of it, with the calls
// that Stripe did not answer logged with their cause. The API answers
// such a call 503 provider_api_unavailable (or leaves a payment
// processing) and, rightly, tells the client nothing of why; without this
// line the operator could not tell a wrong KEELPAY_STRIPE_API_URL, a
// refused connection or a time-out from an outage at Stripe. The line
// carries the call, the kind of error and the adapter's message, with the
// account's key, its webhook secret, the store's client secret and
// anything that looks like a Stripe key or secret replaced; it is written
// in the request's context, so it carries the request_id.
type loggedStripe struct {
	*stripe.Provider
	log *slog.Logger
	// secrets are never logged: the account's key and webhook secret.
	secrets []string
}

// stripeSecretLike matches Stripe keys and signing secrets, which an
// error's text must never carry into a log.
var stripeSecretLike = regexp.MustCompile(`\b(sk|rk|pk)_(live|test)_[0-9A-Za-z_]+|\bwhsec_[0-9A-Za-z+/=_]+`)

// note logs err when it says that Stripe could not be reached or did not
// finish the call, and returns it unchanged.
func (p *loggedStripe) note(ctx context.Context, call string, err error, more ...string) error {
	if err == nil {
		return nil
	}
	kind := provider.KindOf(err)
	if kind != provider.KindUnavailable && !provider.IsOutcomeUnknown(err) {
		return err
	}
	cause := err.Error()
	for _, s := range append(more, p.secrets...) {
		if s != "" {
			cause = strings.ReplaceAll(cause, s, "[redacted]")
		}
	}
	cause = stripeSecretLike.ReplaceAllString(cause, "[redacted]")
	if kind == "" {
		kind = provider.KindOutcomeUnknown
	}
	p.log.WarnContext(ctx, "provider unavailable: Stripe did not answer the call",
		slog.String("call", call), slog.String("kind", string(kind)), slog.String("cause", cause))
	return err
}

func (p *loggedStripe) CheckApplication(ctx context.Context, c provider.Credentials) (*provider.Application, error) {
	app, err := p.Provider.CheckApplication(ctx, c)
	return app, p.note(ctx, "CheckApplication", err, c.ClientSecret)
}

func (p *loggedStripe) SaveCard(ctx context.Context, r provider.SaveCardRequest) (*provider.SavedCard, error) {
	card, err := p.Provider.SaveCard(ctx, r)
	return card, p.note(ctx, "SaveCard", err)
}

func (p *loggedStripe) Charge(ctx context.Context, r provider.ChargeRequest) (*provider.ChargeResult, error) {
	res, err := p.Provider.Charge(ctx, r)
	return res, p.note(ctx, "Charge", err)
}

func (p *loggedStripe) LookupCharge(ctx context.Context, merchantID, attemptID string) (*provider.ChargeResult, error) {
	res, err := p.Provider.LookupCharge(ctx, merchantID, attemptID)
	return res, p.note(ctx, "LookupCharge", err)
}

func (p *loggedStripe) Void(ctx context.Context, merchantID, attemptID string) error {
	return p.note(ctx, "Void", p.Provider.Void(ctx, merchantID, attemptID))
}

func (p *loggedStripe) Refund(ctx context.Context, r provider.RefundRequest) (*provider.RefundResult, error) {
	res, err := p.Provider.Refund(ctx, r)
	return res, p.note(ctx, "Refund", err)
}

func (p *loggedStripe) LookupRefund(ctx context.Context, merchantID, attemptID string) (*provider.RefundResult, error) {
	res, err := p.Provider.LookupRefund(ctx, merchantID, attemptID)
	return res, p.note(ctx, "LookupRefund", err)
}
