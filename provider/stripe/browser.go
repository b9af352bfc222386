package stripe

import (
	"context"
	"net/url"

	"github.com/keelpay/keelpay/provider"
)

// BrowserElement describes Stripe.js for the merchant's buyers: the hosted
// card field loads Config.JSURL, calls Stripe(PublishableKey), mounts a
// Card Element and sends keelpay only the PaymentMethod id that
// stripe.createPaymentMethod returns, so that the card number goes from the
// buyer's browser to Stripe and never reaches keelpay (PCI DSS SAQ A). The
// origins are those Stripe.js loads, calls and frames
// (docs.stripe.com/security/guide, Content Security Policy).
func (p *Provider) BrowserElement(_ context.Context, merchantID string) (*provider.Element, error) {
	a, ok := p.account(merchantID)
	if !ok {
		return nil, &provider.Error{Kind: provider.KindInvalidRequest, Message: "no Stripe key is configured for merchant " + merchantID}
	}
	if a.PublishableKey == "" {
		return nil, &provider.Error{Kind: provider.KindInvalidRequest, Message: "the Stripe account " + merchantID +
			" has no publishable key: configure Account.PublishableKey (KEELPAY_STRIPE_PUBLISHABLE_KEY in the reference server) to capture cards with Stripe.js"}
	}
	return &provider.Element{
		Kind:           provider.ElementStripe,
		ScriptURL:      p.cfg.JSURL,
		PublishableKey: a.PublishableKey,
		ConnectSources: []string{origin(p.cfg.APIURL)},
		FrameSources:   []string{"https://js.stripe.com", "https://hooks.stripe.com"},
		ScriptSources:  []string{origin(p.cfg.JSURL)},
	}, nil
}

// origin is u's scheme and host.
func origin(u string) string {
	pu, err := url.Parse(u)
	if err != nil || pu.Host == "" {
		return u
	}
	return pu.Scheme + "://" + pu.Host
}
