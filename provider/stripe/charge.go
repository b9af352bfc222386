package stripe

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	sg "github.com/stripe/stripe-go/v84"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/provider"
)

// SaveCard saves a card as a Customer with a PaymentMethod attached. The
// token is the customer id and the PaymentMethod id. With r.PaymentMethod
// (a pm_... Stripe.js made in the buyer's browser) that PaymentMethod is
// attached to a new Customer; with a card number, the number is sent to
// Stripe only when Config.RawCardData is on, and refused before any call
// otherwise. A card Stripe refuses is [provider.KindCardRejected].
func (p *Provider) SaveCard(ctx context.Context, r provider.SaveCardRequest) (*provider.SavedCard, error) {
	cl, err := p.client(r.MerchantID)
	if err != nil {
		return nil, err
	}
	if r.PaymentMethod == "" && !p.cfg.RawCardData {
		return nil, &provider.Error{Kind: provider.KindCardRejected, Message: rawCardOffMessage}
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

// tokenise makes (or takes, for r.PaymentMethod) the PaymentMethod and
// attaches it to a new Customer. keyBase makes the idempotency keys, so
// that a repeated charge reuses them. A card Stripe refuses is a failure;
// err is an error that moved no money.
func (p *Provider) tokenise(ctx context.Context, cl *sg.Client, merchantID string, r provider.SaveCardRequest, billing *provider.Billing, keyBase string) (*provider.SavedCard, *provider.Failure, error) {
	meta, err := metadata(MetaMerchant, merchantID)
	if err != nil {
		return nil, nil, err
	}
	pmID := r.PaymentMethod
	if pmID == "" {
		if !p.cfg.RawCardData {
			return nil, &provider.Failure{Code: provider.FailureCardRejected, Message: rawCardOffMessage}, nil
		}
		pmp := &sg.PaymentMethodCreateParams{
			Type: sg.String(string(sg.PaymentMethodTypeCard)),
			Card: &sg.PaymentMethodCreateCardParams{
				Number:   sg.String(r.Number),
				ExpMonth: sg.Int64(int64(r.ExpMonth)),
				ExpYear:  sg.Int64(int64(r.ExpYear)),
				CVC:      sg.String(r.CVC),
			},
			Metadata: meta,
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
		pmID = pm.ID
	} else if !strings.HasPrefix(pmID, "pm_") {
		return nil, &provider.Failure{Code: provider.FailureCardRejected, Message: "The payment method is not a Stripe PaymentMethod (pm_...)."}, nil
	}
	cp := &sg.CustomerCreateParams{
		PaymentMethod: sg.String(pmID),
		Metadata:      meta,
	}
	cp.IdempotencyKey = sg.String(keyBase + ":customer")
	cus, err := cl.V1Customers.Create(ctx, cp)
	if err != nil {
		if se, ok := asStripe(err); ok && (se.Type == sg.ErrorTypeCard ||
			(r.PaymentMethod != "" && se.HTTPStatusCode == http.StatusBadRequest && se.Type == sg.ErrorTypeInvalidRequest)) {
			// A card Stripe declines to attach, or a browser's
			// PaymentMethod Stripe does not have (or already used).
			return nil, &provider.Failure{Code: provider.FailureCardRejected, Message: se.Msg}, nil
		}
		return nil, nil, setupError(err)
	}
	if r.PaymentMethod != "" && billing != nil {
		bd := billingDetails("", billing)
		up := &sg.PaymentMethodUpdateParams{BillingDetails: &sg.PaymentMethodUpdateBillingDetailsParams{Address: bd.Address}}
		up.IdempotencyKey = sg.String(keyBase + ":billing")
		if _, err := cl.V1PaymentMethods.Update(ctx, pmID, up); err != nil {
			return nil, nil, setupError(err)
		}
	}
	// The card's brand, last4 and expiry are the PaymentMethod's, read
	// back (Stripe.js's answer went to the browser, not to keelpay).
	pm, err := cl.V1PaymentMethods.Retrieve(ctx, pmID, nil)
	if err != nil {
		return nil, nil, setupError(err)
	}
	if pm.Card == nil {
		return nil, &provider.Failure{Code: provider.FailureCardRejected, Message: "The payment method is not a card."}, nil
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
// Idempotency-Key and in its metadata. It makes no search: a repeat within
// 24 hours replays Stripe's first answer under the same key, and the
// service never repeats an attempt later than that.
func (p *Provider) Charge(ctx context.Context, r provider.ChargeRequest) (*provider.ChargeResult, error) {
	if r.MerchantID == "" || r.AttemptID == "" {
		return nil, &provider.Error{Kind: provider.KindInvalidRequest, Message: "a merchant id and an attempt id are required"}
	}
	cl, err := p.client(r.MerchantID)
	if err != nil {
		return nil, err
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
	if r.NewCard != nil && r.NewCard.PaymentMethod == "" && !p.cfg.RawCardData {
		return failed(provider.FailureCardRejected, rawCardOffMessage), nil
	}
	meta, err := metadata(MetaAttempt, r.AttemptID, MetaMerchant, r.MerchantID)
	if err != nil {
		return nil, err
	}
	if p.cfg.ReturnURL == "" {
		return nil, &provider.Error{Kind: provider.KindInvalidRequest, Message: "the Stripe adapter has no ReturnURL for 3D Secure"}
	}
	var card *provider.SavedCard
	var customerID, pmID string
	if r.NewCard != nil {
		saved, failure, err := p.tokenise(ctx, cl, r.MerchantID, *r.NewCard, r.Billing, r.AttemptID)
		if err != nil {
			return nil, err
		}
		if failure != nil {
			return failed(failure.Code, failure.Message), nil
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
	params := &sg.PaymentIntentCreateParams{
		Amount:             sg.Int64(r.Amount),
		Currency:           sg.String(strings.ToLower(r.Currency)),
		Customer:           sg.String(customerID),
		PaymentMethod:      sg.String(pmID),
		PaymentMethodTypes: []*string{sg.String(string(sg.PaymentMethodTypeCard))},
		Confirm:            sg.Bool(true),
		ReturnURL:          sg.String(p.returnURL(r.MerchantID)),
		Metadata:           meta,
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
			p.hintCharge(r.MerchantID, r.AttemptID, se.PaymentIntent.ID)
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
	p.hintCharge(r.MerchantID, r.AttemptID, pi.ID)
	if pi.LastResponse != nil && pi.LastResponse.Header.Get("Idempotent-Replayed") == "true" {
		// A repeat: Stripe replayed its first answer, which may be stale
		// (the charge may have been voided since). Read the PaymentIntent
		// by id, consistently, and answer from it.
		if fresh, err := p.findPI(ctx, cl, r.MerchantID, r.AttemptID); err == nil && fresh != nil {
			pi = fresh
			res, err := p.fullResult(ctx, cl, pi, r.AttemptID, r.Billing != nil)
			if err != nil {
				return nil, err
			}
			if res.Status == provider.ChargePending {
				return nil, &provider.Error{Kind: provider.KindOutcomeUnknown, Message: "the PaymentIntent is processing"}
			}
			return res, nil
		}
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
	res, err := p.lookupCharge(ctx, cl, r.MerchantID, r.AttemptID)
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

// fullResult is the result of pi, read by id (consistent), with whether a
// void refunded it for good.
func (p *Provider) fullResult(ctx context.Context, cl *sg.Client, pi *sg.PaymentIntent, attemptID string, billing bool) (*provider.ChargeResult, error) {
	res := p.result(pi, billing)
	if res.Status == provider.ChargeSucceeded && pi.LatestCharge != nil && pi.LatestCharge.AmountRefunded > 0 {
		v, err := p.voidState(ctx, cl, pi.ID, attemptID)
		if err != nil {
			return nil, setupError(err)
		}
		res.Voided = v.succeeded
	}
	return res, nil
}

// result maps a PaymentIntent onto a charge result. The amount of a
// succeeded charge is what Stripe received (amount_received,
// docs.stripe.com/api/payment_intents/object), not what was asked.
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
		if pi.Status == sg.PaymentIntentStatusSucceeded {
			res.Amount = pi.AmountReceived
		} else {
			res.Amount = pi.AmountCapturable
		}
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

// findPI reads the PaymentIntent of attemptID by id, expanded for a
// result: by the hint's id when there is one (a consistent read), else
// through Stripe's search, which may not show one written in the last
// minutes. nil when neither finds it. An object that does not carry the
// attempt id and merchant in its metadata is never taken for it.
func (p *Provider) findPI(ctx context.Context, cl *sg.Client, merchantID, attemptID string) (*sg.PaymentIntent, error) {
	read := func(id string) (*sg.PaymentIntent, error) {
		rp := &sg.PaymentIntentRetrieveParams{}
		rp.AddExpand("payment_method")
		rp.AddExpand("latest_charge")
		pi, err := cl.V1PaymentIntents.Retrieve(ctx, id, rp)
		if err != nil {
			if se, ok := asStripe(err); ok && se.HTTPStatusCode == http.StatusNotFound {
				return nil, nil
			}
			return nil, err
		}
		if pi.Metadata[MetaAttempt] != attemptID || pi.Metadata[MetaMerchant] != merchantID {
			return nil, nil
		}
		return pi, nil
	}
	if id := p.hints.get(hintKey(hintCharge, merchantID, attemptID)); id != "" {
		pi, err := read(id)
		if err != nil || pi != nil {
			return pi, err
		}
	}
	found, err := p.search(ctx, cl, attemptID)
	if err != nil || found == nil {
		return nil, err
	}
	pi, err := read(found.ID)
	if pi != nil {
		p.hintCharge(merchantID, attemptID, pi.ID)
	}
	return pi, err
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
// first request's with an idempotency_error, or 409 while the first request
// still runs (docs.stripe.com/api/idempotent_requests); a key it does not
// hold gets the request validated, refused, and nothing saved for it.
//
// It fails closed: only Stripe's exact refusal of the probe parameter (400,
// invalid_request_error, code parameter_unknown, param keelpay_probe:
// docs.stripe.com/api/errors and docs.stripe.com/error-codes) means the key
// is unused. Any other answer is an error, never "unused". That Stripe
// checks the key before it validates the parameters is not documented;
// the test-mode run (TestConformanceInStripeTestMode) checks it.
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
	case se.HTTPStatusCode == http.StatusBadRequest && se.Type == sg.ErrorTypeInvalidRequest &&
		se.Code == sg.ErrorCodeParameterUnknown && se.Param == probeParam:
		return false, nil
	}
	return false, errProbeUnclear(se)
}

// errProbeUnclear is the answer to a probe that is neither an idempotency
// error nor the refusal of the probe parameter: the key's state is unknown.
func errProbeUnclear(se *sg.Error) error {
	switch se.HTTPStatusCode {
	case http.StatusUnauthorized, http.StatusForbidden:
		return setupError(se)
	}
	if se.HTTPStatusCode == http.StatusTooManyRequests || se.HTTPStatusCode >= 500 {
		return &provider.Error{Kind: provider.KindUnavailable, Message: "the idempotency-key probe was not answered: " + se.Msg, RetryAfter: retryAfter(se)}
	}
	return &provider.Error{Kind: provider.KindOutcomeUnknown, Message: "Stripe answered the idempotency-key probe unexpectedly (" +
		string(se.Type) + " " + string(se.Code) + " " + se.Param + "): whether it holds the attempt is unknown"}
}

// LookupCharge reports the PaymentIntent of attemptID; see the package
// documentation for when it answers [provider.ErrUnknownAttempt].
func (p *Provider) LookupCharge(ctx context.Context, merchantID, attemptID string) (*provider.ChargeResult, error) {
	cl, err := p.client(merchantID)
	if err != nil {
		return nil, err
	}
	return p.lookupCharge(ctx, cl, merchantID, attemptID)
}

func (p *Provider) lookupCharge(ctx context.Context, cl *sg.Client, merchantID, attemptID string) (*provider.ChargeResult, error) {
	pi, err := p.findPI(ctx, cl, merchantID, attemptID)
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
// attempt id in the refund's metadata (keelpay_void_of). It returns nil
// only once that refund succeeded: a pending one is an unknown outcome, and
// after a failed one (a refund can fail after it succeeded) a new refund is
// made under a new idempotency key, attemptID + ":void:" + the number of
// void refunds that failed. A failed charge is left as it is.
func (p *Provider) Void(ctx context.Context, merchantID, attemptID string) error {
	cl, err := p.client(merchantID)
	if err != nil {
		return err
	}
	pi, err := p.findPI(ctx, cl, merchantID, attemptID)
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
	switch pi.Status {
	case sg.PaymentIntentStatusCanceled, sg.PaymentIntentStatusRequiresPaymentMethod:
		return nil
	case sg.PaymentIntentStatusSucceeded:
		v, err := p.voidState(ctx, cl, pi.ID, attemptID)
		if err != nil {
			return setupError(err)
		}
		switch {
		case v.succeeded:
			return nil
		case v.pending:
			return &provider.Error{Kind: provider.KindOutcomeUnknown, Message: "the void's refund is pending at Stripe; void again later"}
		}
		meta, err := metadata(MetaVoidOf, attemptID, MetaMerchant, merchantID)
		if err != nil {
			return err
		}
		rp := &sg.RefundCreateParams{PaymentIntent: sg.String(pi.ID), Metadata: meta}
		rp.IdempotencyKey = sg.String(attemptID + ":void:" + strconv.Itoa(v.failed))
		rf, err := cl.V1Refunds.Create(ctx, rp)
		if err != nil {
			if se, ok := asStripe(err); ok && se.Code == sg.ErrorCodeChargeAlreadyRefunded {
				// Other refunds (a store's) returned the money: the
				// charge is voided once they all succeeded.
				if v.refunded >= pi.AmountReceived && !v.otherPending {
					return nil
				}
				return &provider.Error{Kind: provider.KindOutcomeUnknown, Message: "the charge is refunded by refunds that have not all succeeded; void again later"}
			}
			return moneyError(err)
		}
		if rf.Status != sg.RefundStatusSucceeded {
			return &provider.Error{Kind: provider.KindOutcomeUnknown, Message: "the void's refund is " + string(rf.Status) + " at Stripe; void again later"}
		}
		return nil
	case sg.PaymentIntentStatusProcessing:
		return &provider.Error{Kind: provider.KindOutcomeUnknown, Message: "the PaymentIntent is processing; void again later"}
	default:
		cp := &sg.PaymentIntentCancelParams{}
		cp.IdempotencyKey = sg.String(attemptID + ":void")
		if _, err := cl.V1PaymentIntents.Cancel(ctx, pi.ID, cp); err != nil {
			return moneyError(err)
		}
		return nil
	}
}

// voidState is what the void refunds of a PaymentIntent say: whether one
// succeeded (and has not failed since: a refund that fails after it
// succeeded has the status failed, docs.stripe.com/api/refunds/object),
// whether one is pending, and how many failed or were canceled.
type voidState struct {
	succeeded, pending bool
	failed             int
	// refunded is the amount of every succeeded refund of the
	// PaymentIntent, and otherPending whether another is pending.
	refunded     int64
	otherPending bool
}

// voidState lists piID's refunds (lists are consistent) and reads those
// that voided attemptID.
func (p *Provider) voidState(ctx context.Context, cl *sg.Client, piID, attemptID string) (voidState, error) {
	var v voidState
	lp := &sg.RefundListParams{PaymentIntent: sg.String(piID)}
	lp.Context = ctx
	for rf, err := range cl.V1Refunds.List(ctx, lp) {
		if err != nil {
			return v, err
		}
		switch rf.Status {
		case sg.RefundStatusSucceeded:
			v.refunded += rf.Amount
		case sg.RefundStatusFailed, sg.RefundStatusCanceled:
		default:
			v.otherPending = true
		}
		if rf.Metadata[MetaVoidOf] != attemptID {
			continue
		}
		switch rf.Status {
		case sg.RefundStatusSucceeded:
			v.succeeded = true
		case sg.RefundStatusFailed, sg.RefundStatusCanceled:
			v.failed++
		default: // pending, requires_action, or a status Stripe adds later
			v.pending = true
		}
	}
	return v, nil
}
