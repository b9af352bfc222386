package stripe

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"

	sg "github.com/stripe/stripe-go/v84"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/provider"
)

// SaveCard creates a PaymentMethod from the card and a Customer it is
// attached to. The token is the customer id and the PaymentMethod id. A card
// Stripe refuses (a wrong number, an expired card, or an account that may
// not send raw card numbers) is [provider.KindCardRejected].
func (p *Provider) SaveCard(ctx context.Context, r provider.SaveCardRequest) (*provider.SavedCard, error) {
	cl, err := p.client(r.MerchantID)
	if err != nil {
		return nil, err
	}
	saved, failure, err := p.tokenise(ctx, cl, r.MerchantID, r, nil, keelpay.NewID("save_"))
	if err != nil {
		return nil, err
	}
	if failure != nil {
		return nil, &provider.Error{Kind: provider.KindCardRejected, Message: failure.Message}
	}
	return saved, nil
}

// tokenise makes the PaymentMethod and its Customer. keyBase makes their
// idempotency keys, so that a repeated charge reuses them. A card Stripe
// refuses is a failure; err is an error that moved no money.
func (p *Provider) tokenise(ctx context.Context, cl *sg.Client, merchantID string, r provider.SaveCardRequest, billing *provider.Billing, keyBase string) (*provider.SavedCard, *provider.Failure, error) {
	pmp := &sg.PaymentMethodCreateParams{
		Type: sg.String(string(sg.PaymentMethodTypeCard)),
		Card: &sg.PaymentMethodCreateCardParams{
			Number:   sg.String(r.Number),
			ExpMonth: sg.Int64(int64(r.ExpMonth)),
			ExpYear:  sg.Int64(int64(r.ExpYear)),
			CVC:      sg.String(r.CVC),
		},
		Metadata: map[string]string{MetaMerchant: merchantID},
	}
	pmp.BillingDetails = billingDetails(r.Name, billing)
	pmp.IdempotencyKey = sg.String(keyBase + ":payment_method")
	pm, err := cl.V1PaymentMethods.Create(ctx, pmp)
	if err != nil {
		if isRawCardRefusal(err) {
			return nil, &provider.Failure{Code: provider.FailureCardRejected, Message: rawCardMessage}, nil
		}
		if se, ok := asStripe(err); ok && (se.Type == sg.ErrorTypeCard || se.HTTPStatusCode == http.StatusPaymentRequired) {
			return nil, &provider.Failure{Code: provider.FailureCardRejected, Message: se.Msg}, nil
		}
		return nil, nil, setupError(err)
	}
	cp := &sg.CustomerCreateParams{
		PaymentMethod: sg.String(pm.ID),
		Metadata:      map[string]string{MetaMerchant: merchantID},
	}
	cp.IdempotencyKey = sg.String(keyBase + ":customer")
	cus, err := cl.V1Customers.Create(ctx, cp)
	if err != nil {
		if se, ok := asStripe(err); ok && se.Type == sg.ErrorTypeCard {
			return nil, &provider.Failure{Code: provider.FailureCardRejected, Message: se.Msg}, nil
		}
		return nil, nil, setupError(err)
	}
	saved := savedCard(pm)
	saved.Token = cus.ID + "/" + pm.ID
	return saved, nil, nil
}

func billingDetails(name string, b *provider.Billing) *sg.PaymentMethodCreateBillingDetailsParams {
	d := &sg.PaymentMethodCreateBillingDetailsParams{}
	if name != "" {
		d.Name = sg.String(name)
	}
	if b != nil {
		d.Address = &sg.AddressParams{Country: sg.String(b.Country), PostalCode: sg.String(b.PostalCode)}
		if b.State != "" {
			d.Address.State = sg.String(b.State)
		}
	}
	return d
}

func savedCard(pm *sg.PaymentMethod) *provider.SavedCard {
	if pm == nil || pm.Card == nil {
		return nil
	}
	return &provider.SavedCard{
		Brand:    brand(string(pm.Card.Brand)),
		Last4:    pm.Card.Last4,
		ExpMonth: int(pm.Card.ExpMonth),
		ExpYear:  int(pm.Card.ExpYear),
	}
}

func brand(b string) string {
	switch b {
	case "visa":
		return provider.BrandVisa
	case "mastercard":
		return provider.BrandMastercard
	case "amex":
		return provider.BrandAmex
	case "discover":
		return provider.BrandDiscover
	}
	return provider.BrandUnknown
}

// Charge creates and confirms a PaymentIntent with the attempt id as its
// Idempotency-Key and in its metadata. See the package documentation for
// why it looks the attempt up first.
func (p *Provider) Charge(ctx context.Context, r provider.ChargeRequest) (*provider.ChargeResult, error) {
	if r.MerchantID == "" || r.AttemptID == "" {
		return nil, &provider.Error{Kind: provider.KindInvalidRequest, Message: "a merchant id and an attempt id are required"}
	}
	cl, err := p.client(r.MerchantID)
	if err != nil {
		return nil, err
	}
	// An attempt Stripe already has is answered from Stripe, never created
	// again: past 24 hours its idempotency key no longer protects it.
	if pi, err := p.search(ctx, cl, r.AttemptID); err != nil {
		return nil, setupError(err)
	} else if pi != nil {
		return p.chargeOutcome(ctx, cl, pi, r.AttemptID, r.Billing != nil)
	}

	failed := func(code provider.FailureCode, msg string) *provider.ChargeResult {
		return &provider.ChargeResult{Status: provider.ChargeFailed, Amount: r.Amount, Currency: r.Currency,
			Failure: &provider.Failure{Code: code, Message: msg}}
	}
	if r.Amount <= 0 || len(r.Currency) != 3 {
		return failed(provider.FailureInvalidRequest, "The amount or currency is not valid."), nil
	}
	if (r.CardToken == "") == (r.NewCard == nil) {
		return failed(provider.FailureInvalidRequest, "Give either a card token or a new card."), nil
	}
	var card *provider.SavedCard
	var customerID, pmID string
	if r.NewCard != nil {
		saved, failure, err := p.tokenise(ctx, cl, r.MerchantID, *r.NewCard, r.Billing, r.AttemptID)
		if err != nil {
			return nil, err
		}
		if failure != nil {
			res := failed(failure.Code, failure.Message)
			return res, nil
		}
		card = saved
		customerID, pmID, _ = strings.Cut(saved.Token, "/")
	} else {
		var ok bool
		if customerID, pmID, ok = strings.Cut(r.CardToken, "/"); !ok {
			return failed(provider.FailureInvalidRequest, "The card token is not a Stripe card token."), nil
		}
		if r.Billing != nil {
			bd := billingDetails("", r.Billing)
			up := &sg.PaymentMethodUpdateParams{BillingDetails: &sg.PaymentMethodUpdateBillingDetailsParams{Address: bd.Address}}
			up.IdempotencyKey = sg.String(r.AttemptID + ":billing")
			if _, err := cl.V1PaymentMethods.Update(ctx, pmID, up); err != nil {
				if se, ok := asStripe(err); ok && se.HTTPStatusCode == http.StatusNotFound {
					return failed(provider.FailureCardUnavailable, se.Msg), nil
				}
				return nil, setupError(err)
			}
		}
	}
	if p.cfg.ReturnURL == "" {
		return nil, &provider.Error{Kind: provider.KindInvalidRequest, Message: "the Stripe adapter has no ReturnURL for 3D Secure"}
	}
	params := &sg.PaymentIntentCreateParams{
		Amount:             sg.Int64(r.Amount),
		Currency:           sg.String(strings.ToLower(r.Currency)),
		Customer:           sg.String(customerID),
		PaymentMethod:      sg.String(pmID),
		PaymentMethodTypes: []*string{sg.String(string(sg.PaymentMethodTypeCard))},
		Confirm:            sg.Bool(true),
		ReturnURL:          sg.String(p.returnURL(r.MerchantID)),
		Metadata:           map[string]string{MetaAttempt: r.AttemptID, MetaMerchant: r.MerchantID},
	}
	params.IdempotencyKey = sg.String(r.AttemptID)
	params.AddExpand("payment_method")
	params.AddExpand("latest_charge")
	pi, err := cl.V1PaymentIntents.Create(ctx, params)
	if err != nil {
		se, ok := asStripe(err)
		switch {
		case ok && se.PaymentIntent != nil && se.PaymentIntent.ID != "":
			// A decline: Stripe made the PaymentIntent and says why it
			// failed.
			res := p.result(se.PaymentIntent, r.Billing != nil)
			if res.Card == nil {
				res.Card = card
			}
			return res, nil
		case ok && se.Type == sg.ErrorTypeCard:
			f := chargeFailure(se, r.Billing != nil)
			res := failed(f.Code, f.Message)
			res.Failure, res.Card = f, card
			return res, nil
		case ok && se.Type == sg.ErrorTypeIdempotency && se.HTTPStatusCode != http.StatusConflict:
			// The attempt id was used with another request: its outcome
			// is the first request's.
			return p.lookupAfterCharge(ctx, cl, r)
		case ok && se.HTTPStatusCode == http.StatusBadRequest && se.Type == sg.ErrorTypeInvalidRequest:
			if se.Code == sg.ErrorCodeResourceMissing {
				return failed(provider.FailureCardUnavailable, se.Msg), nil
			}
			return failed(provider.FailureInvalidRequest, se.Msg), nil
		}
		return nil, moneyError(err)
	}
	res := p.result(pi, r.Billing != nil)
	if res.Card == nil {
		res.Card = card
	}
	if res.Status == provider.ChargePending {
		return nil, &provider.Error{Kind: provider.KindOutcomeUnknown, Message: "the PaymentIntent is processing"}
	}
	return res, nil
}

func (p *Provider) lookupAfterCharge(ctx context.Context, cl *sg.Client, r provider.ChargeRequest) (*provider.ChargeResult, error) {
	res, err := p.lookupCharge(ctx, cl, r.AttemptID)
	if err != nil {
		if errors.Is(err, provider.ErrUnknownAttempt) {
			return nil, &provider.Error{Kind: provider.KindOutcomeUnknown, Message: "Stripe holds the attempt id but the PaymentIntent is not found yet"}
		}
		return nil, err
	}
	if res.Status == provider.ChargePending {
		return nil, &provider.Error{Kind: provider.KindOutcomeUnknown, Message: "the PaymentIntent is not visible yet"}
	}
	return res, nil
}

// returnURL is where Stripe sends the buyer after 3D Secure; the account
// tells the return route which key reads the PaymentIntent.
func (p *Provider) returnURL(merchantID string) string {
	u := p.cfg.ReturnURL
	sep := "?"
	if strings.Contains(u, "?") {
		sep = "&"
	}
	return u + sep + "account=" + url.QueryEscape(merchantID)
}

// chargeOutcome is the result of pi as Charge returns it: a pending outcome
// is an error there.
func (p *Provider) chargeOutcome(ctx context.Context, cl *sg.Client, pi *sg.PaymentIntent, attemptID string, billing bool) (*provider.ChargeResult, error) {
	res, err := p.fullResult(ctx, cl, pi, attemptID, billing)
	if err != nil {
		return nil, err
	}
	if res.Status == provider.ChargePending {
		return nil, &provider.Error{Kind: provider.KindOutcomeUnknown, Message: "the PaymentIntent is processing"}
	}
	return res, nil
}

// fullResult reads pi again (search results may be stale) with what the
// result needs, and whether a void refunded it.
func (p *Provider) fullResult(ctx context.Context, cl *sg.Client, pi *sg.PaymentIntent, attemptID string, billing bool) (*provider.ChargeResult, error) {
	rp := &sg.PaymentIntentRetrieveParams{}
	rp.AddExpand("payment_method")
	rp.AddExpand("latest_charge")
	fresh, err := cl.V1PaymentIntents.Retrieve(ctx, pi.ID, rp)
	if err != nil {
		return nil, setupError(err)
	}
	res := p.result(fresh, billing)
	if res.Status == provider.ChargeSucceeded && fresh.LatestCharge != nil && fresh.LatestCharge.AmountRefunded > 0 {
		voided, err := p.voidRefund(ctx, cl, fresh.ID, attemptID)
		if err != nil {
			return nil, setupError(err)
		}
		res.Voided = voided != nil
	}
	return res, nil
}

// result maps a PaymentIntent onto a charge result.
func (p *Provider) result(pi *sg.PaymentIntent, billing bool) *provider.ChargeResult {
	res := &provider.ChargeResult{Amount: pi.Amount, Currency: strings.ToUpper(string(pi.Currency))}
	if pi.PaymentMethod != nil && pi.PaymentMethod.Card != nil {
		res.Card = savedCard(pi.PaymentMethod)
		if pi.Customer != nil && pi.Customer.ID != "" {
			res.Card.Token = pi.Customer.ID + "/" + pi.PaymentMethod.ID
		}
	}
	failure := func() *provider.Failure {
		if pi.LastPaymentError != nil {
			return chargeFailure(pi.LastPaymentError, billing)
		}
		return nil
	}
	switch pi.Status {
	case sg.PaymentIntentStatusSucceeded, sg.PaymentIntentStatusRequiresCapture:
		res.Status = provider.ChargeSucceeded
		res.OrderID = pi.ID
		if c := pi.LatestCharge; c != nil && c.PaymentMethodDetails != nil && c.PaymentMethodDetails.Card != nil {
			res.AuthorizationCode = c.PaymentMethodDetails.Card.AuthorizationCode
		}
	case sg.PaymentIntentStatusRequiresAction:
		res.Status = provider.ChargeRequiresAction
		if na := pi.NextAction; na != nil && na.RedirectToURL != nil {
			res.ActionURL = na.RedirectToURL.URL
		}
	case sg.PaymentIntentStatusRequiresPaymentMethod:
		res.Status = provider.ChargeFailed
		res.Failure = failure()
		if res.Failure == nil {
			res.Failure = &provider.Failure{Code: provider.FailureProviderError, Message: "the PaymentIntent has no payment method"}
		}
	case sg.PaymentIntentStatusCanceled:
		res.Status = provider.ChargeFailed
		res.Voided = true
		res.Failure = failure()
		if res.Failure == nil {
			res.Failure = &provider.Failure{Code: provider.FailureAuthenticationFailed, Message: "The charge was canceled before 3D Secure was answered."}
		}
	default: // processing, requires_confirmation
		res.Status = provider.ChargePending
	}
	return res
}

// search finds the PaymentIntent of attemptID with Stripe's search, which
// may not show one created in the last minutes; nil when it shows none.
func (p *Provider) search(ctx context.Context, cl *sg.Client, attemptID string) (*sg.PaymentIntent, error) {
	sp := &sg.PaymentIntentSearchParams{}
	sp.Context = ctx
	sp.Query = "metadata['" + MetaAttempt + "']:'" + quote(attemptID) + "'"
	sp.Limit = sg.Int64(10)
	for pi, err := range cl.V1PaymentIntents.Search(ctx, sp) {
		if err != nil {
			return nil, err
		}
		if pi.Metadata[MetaAttempt] == attemptID {
			return pi, nil
		}
	}
	return nil, nil
}

// quote escapes a value for Stripe's search query language.
func quote(s string) string {
	return strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s)
}

// probeParam is a parameter Stripe does not know. A create sent with only
// it is refused in validation, before anything is done or saved.
const probeParam = "keelpay_probe"

// keyUsed asks Stripe, consistently, whether it holds a request with the
// idempotency key on the create endpoint of PaymentIntents (or Refunds): it
// sends a create with only an unknown parameter under that key. Stripe
// answers a key it holds (kept 24 hours) and parameters other than the
// first request's with an idempotency error, or 409 while the first request
// still runs; a key it does not hold gets the request validated, refused
// as an unknown parameter, and nothing saved for it.
func keyUsed(ctx context.Context, cl *sg.Client, key string, refund bool) (bool, error) {
	var err error
	if refund {
		rp := &sg.RefundCreateParams{}
		rp.IdempotencyKey = sg.String(key)
		rp.AddExtra(probeParam, "1")
		_, err = cl.V1Refunds.Create(ctx, rp)
	} else {
		pp := &sg.PaymentIntentCreateParams{}
		pp.IdempotencyKey = sg.String(key)
		pp.AddExtra(probeParam, "1")
		_, err = cl.V1PaymentIntents.Create(ctx, pp)
	}
	se, ok := asStripe(err)
	switch {
	case err == nil:
		// Stripe replayed something: the key is in use.
		return true, nil
	case !ok:
		return false, err
	case se.Type == sg.ErrorTypeIdempotency || se.HTTPStatusCode == http.StatusConflict:
		return true, nil
	case se.HTTPStatusCode == http.StatusBadRequest && se.Type == sg.ErrorTypeInvalidRequest:
		return false, nil
	}
	return false, err
}

// LookupCharge reports the PaymentIntent of attemptID; see the package
// documentation for when it answers [provider.ErrUnknownAttempt].
func (p *Provider) LookupCharge(ctx context.Context, merchantID, attemptID string) (*provider.ChargeResult, error) {
	cl, err := p.client(merchantID)
	if err != nil {
		return nil, err
	}
	return p.lookupCharge(ctx, cl, attemptID)
}

func (p *Provider) lookupCharge(ctx context.Context, cl *sg.Client, attemptID string) (*provider.ChargeResult, error) {
	pi, err := p.search(ctx, cl, attemptID)
	if err != nil {
		return nil, setupError(err)
	}
	if pi != nil {
		return p.fullResult(ctx, cl, pi, attemptID, false)
	}
	used, err := keyUsed(ctx, cl, attemptID, false)
	if err != nil {
		return nil, setupError(err)
	}
	if used {
		// Stripe has the attempt; its search does not show it yet.
		return &provider.ChargeResult{Status: provider.ChargePending}, nil
	}
	return nil, provider.ErrUnknownAttempt
}

// Void makes sure no money stays charged for the attempt: an open
// PaymentIntent is canceled, a succeeded one refunded in full with the
// attempt id in the refund's metadata (keelpay_void_of). A failed charge is
// left as it is; voiding again does nothing.
func (p *Provider) Void(ctx context.Context, merchantID, attemptID string) error {
	cl, err := p.client(merchantID)
	if err != nil {
		return err
	}
	pi, err := p.search(ctx, cl, attemptID)
	if err != nil {
		return setupError(err)
	}
	if pi == nil {
		used, err := keyUsed(ctx, cl, attemptID, false)
		if err != nil {
			return setupError(err)
		}
		if !used {
			return provider.ErrUnknownAttempt
		}
		return &provider.Error{Kind: provider.KindOutcomeUnknown, Message: "Stripe has the attempt but its search does not show it yet; void again later"}
	}
	fresh, err := cl.V1PaymentIntents.Retrieve(ctx, pi.ID, nil)
	if err != nil {
		return setupError(err)
	}
	switch fresh.Status {
	case sg.PaymentIntentStatusCanceled, sg.PaymentIntentStatusRequiresPaymentMethod:
		return nil
	case sg.PaymentIntentStatusSucceeded:
		if rf, err := p.voidRefund(ctx, cl, fresh.ID, attemptID); err != nil {
			return setupError(err)
		} else if rf != nil {
			return nil
		}
		rp := &sg.RefundCreateParams{
			PaymentIntent: sg.String(fresh.ID),
			Metadata:      map[string]string{MetaVoidOf: attemptID, MetaMerchant: merchantID},
		}
		rp.IdempotencyKey = sg.String(attemptID + ":void")
		if _, err := cl.V1Refunds.Create(ctx, rp); err != nil {
			if se, ok := asStripe(err); ok && se.Code == sg.ErrorCodeChargeAlreadyRefunded {
				return nil
			}
			return moneyError(err)
		}
		return nil
	case sg.PaymentIntentStatusProcessing:
		return &provider.Error{Kind: provider.KindOutcomeUnknown, Message: "the PaymentIntent is processing; void again later"}
	default:
		cp := &sg.PaymentIntentCancelParams{}
		cp.IdempotencyKey = sg.String(attemptID + ":void")
		if _, err := cl.V1PaymentIntents.Cancel(ctx, fresh.ID, cp); err != nil {
			return moneyError(err)
		}
		return nil
	}
}

// voidRefund returns the refund of piID that voided attemptID, or nil.
// Lists are consistent: a refund made is listed.
func (p *Provider) voidRefund(ctx context.Context, cl *sg.Client, piID, attemptID string) (*sg.Refund, error) {
	lp := &sg.RefundListParams{PaymentIntent: sg.String(piID)}
	lp.Context = ctx
	for rf, err := range cl.V1Refunds.List(ctx, lp) {
		if err != nil {
			return nil, err
		}
		if rf.Metadata[MetaVoidOf] == attemptID {
			return rf, nil
		}
	}
	return nil, nil
}
