package stripe

import (
	"context"
	"net/http"
	"strings"

	sg "github.com/stripe/stripe-go/v84"

	"github.com/keelpay/keelpay/provider"
)

// DetachCard implements [provider.CardDetacher]: it detaches the saved
// card's PaymentMethod from its Customer
// (docs.stripe.com/api/payment_methods/detach), after which Stripe no
// longer charges it. A token of another form, a PaymentMethod Stripe does
// not know (404 resource_missing) and one no longer attached (400) are
// nil: there is nothing left to detach. Other errors moved nothing.
func (p *Provider) DetachCard(ctx context.Context, merchantID, token string) error {
	cl, err := p.client(merchantID)
	if err != nil {
		return err
	}
	_, pmID, ok := strings.Cut(token, "/")
	if !ok || !strings.HasPrefix(pmID, "pm_") {
		return nil
	}
	_, err = cl.V1PaymentMethods.Detach(ctx, pmID, &sg.PaymentMethodDetachParams{})
	if err == nil {
		return nil
	}
	if se, ok := asStripe(err); ok && se.Type == sg.ErrorTypeInvalidRequest &&
		(se.HTTPStatusCode == http.StatusNotFound || (se.HTTPStatusCode == http.StatusBadRequest && strings.Contains(se.Msg, "not attached"))) {
		return nil
	}
	return setupError(err)
}

var _ provider.CardDetacher = (*Provider)(nil)
