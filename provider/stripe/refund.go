package stripe

import (
	"context"
	"net/http"

	sg "github.com/stripe/stripe-go/v84"

	"github.com/keelpay/keelpay/provider"
)

// Refund refunds r.Amount of the PaymentIntent r.OrderID with r.AttemptID
// as the Idempotency-Key and in the refund's metadata. It first marks the
// PaymentIntent with the refund's attempt id (so that LookupRefund can find
// it) and answers from a refund Stripe already lists for the attempt id, so
// that a repeat never refunds twice, even after 24 hours.
func (p *Provider) Refund(ctx context.Context, r provider.RefundRequest) (*provider.RefundResult, error) {
	if r.MerchantID == "" || r.AttemptID == "" {
		return nil, &provider.Error{Kind: provider.KindInvalidRequest, Message: "a merchant id and an attempt id are required"}
	}
	cl, err := p.client(r.MerchantID)
	if err != nil {
		return nil, err
	}
	failed := func(code provider.FailureCode, msg string) *provider.RefundResult {
		return &provider.RefundResult{Status: provider.RefundFailed, Failure: &provider.Failure{Code: code, Message: msg}}
	}
	if r.OrderID == "" {
		return failed(provider.FailureOrderNotFound, "The charge has no Stripe PaymentIntent."), nil
	}
	mark, err := metadata(RefundMarkKey(r.AttemptID), "1")
	if err != nil {
		return nil, err
	}
	meta, err := metadata(MetaAttempt, r.AttemptID, MetaMerchant, r.MerchantID)
	if err != nil {
		return nil, err
	}
	up := &sg.PaymentIntentUpdateParams{Metadata: mark}
	up.IdempotencyKey = sg.String(r.AttemptID + ":mark")
	if _, err := cl.V1PaymentIntents.Update(ctx, r.OrderID, up); err != nil {
		if se, ok := asStripe(err); ok && se.HTTPStatusCode == http.StatusNotFound {
			return failed(provider.FailureOrderNotFound, se.Msg), nil
		}
		return nil, setupError(err)
	}
	p.hintRefund(r.MerchantID, r.AttemptID, r.OrderID)
	if rf, err := refundOf(ctx, cl, r.OrderID, r.AttemptID); err != nil {
		return nil, setupError(err)
	} else if rf != nil {
		return refundOutcome(rf)
	}
	rp := &sg.RefundCreateParams{
		PaymentIntent: sg.String(r.OrderID),
		Amount:        sg.Int64(r.Amount),
		Metadata:      meta,
	}
	rp.IdempotencyKey = sg.String(r.AttemptID)
	rf, err := cl.V1Refunds.Create(ctx, rp)
	if err != nil {
		se, ok := asStripe(err)
		switch {
		case ok && se.Type == sg.ErrorTypeIdempotency && se.HTTPStatusCode != http.StatusConflict:
			res, err := p.lookupRefund(ctx, cl, r.MerchantID, r.AttemptID)
			if err != nil || res.Status == provider.RefundPending {
				return nil, &provider.Error{Kind: provider.KindOutcomeUnknown, Message: "the refund's attempt id was used with another request"}
			}
			return res, nil
		case ok && se.HTTPStatusCode == http.StatusNotFound:
			return failed(provider.FailureOrderNotFound, se.Msg), nil
		case ok && se.HTTPStatusCode == http.StatusBadRequest && se.Type == sg.ErrorTypeInvalidRequest:
			return failed(provider.FailureRefundRejected, se.Msg), nil
		}
		return nil, moneyError(err)
	}
	return refundOutcome(rf)
}

func refundOutcome(rf *sg.Refund) (*provider.RefundResult, error) {
	res := refundResult(rf)
	if res.Status == provider.RefundPending {
		return nil, &provider.Error{Kind: provider.KindOutcomeUnknown, Message: "the refund is pending at Stripe"}
	}
	return res, nil
}

func refundResult(rf *sg.Refund) *provider.RefundResult {
	switch rf.Status {
	case sg.RefundStatusSucceeded:
		return &provider.RefundResult{Status: provider.RefundSucceeded}
	case sg.RefundStatusFailed, sg.RefundStatusCanceled:
		msg := "Stripe could not refund the charge (refund " + string(rf.Status) + ")"
		if rf.FailureReason != "" {
			msg += ": " + string(rf.FailureReason)
		}
		return &provider.RefundResult{Status: provider.RefundFailed, Failure: &provider.Failure{Code: provider.FailureRefundRejected, Message: msg}}
	}
	return &provider.RefundResult{Status: provider.RefundPending}
}

// refundOf returns the refund of piID sent with attemptID, or nil. Lists
// are consistent.
func refundOf(ctx context.Context, cl *sg.Client, piID, attemptID string) (*sg.Refund, error) {
	lp := &sg.RefundListParams{PaymentIntent: sg.String(piID)}
	lp.Context = ctx
	for rf, err := range cl.V1Refunds.List(ctx, lp) {
		if err != nil {
			return nil, err
		}
		if rf.Metadata[MetaAttempt] == attemptID {
			return rf, nil
		}
	}
	return nil, nil
}

// LookupRefund finds the refund send attemptID: its PaymentIntent is the
// hinted one (Refund and refund webhooks fill the hint) or, without a
// hint, the one Stripe's search finds marked with [RefundMarkKey]; that
// PaymentIntent's refunds are then listed (consistent). When neither shows
// it, the refund's idempotency key decides, as for LookupCharge. A refund
// that failed, even after it succeeded, is [provider.RefundFailed] with
// Stripe's failure_reason in the message.
func (p *Provider) LookupRefund(ctx context.Context, merchantID, attemptID string) (*provider.RefundResult, error) {
	cl, err := p.client(merchantID)
	if err != nil {
		return nil, err
	}
	return p.lookupRefund(ctx, cl, merchantID, attemptID)
}

func (p *Provider) lookupRefund(ctx context.Context, cl *sg.Client, merchantID, attemptID string) (*provider.RefundResult, error) {
	if piID := p.hints.get(hintKey(hintRefund, merchantID, attemptID)); piID != "" {
		rf, err := refundOf(ctx, cl, piID, attemptID)
		if err != nil {
			if se, ok := asStripe(err); !ok || se.HTTPStatusCode != http.StatusNotFound {
				return nil, setupError(err)
			}
		}
		if rf != nil {
			return refundResult(rf), nil
		}
	}
	mark := RefundMarkKey(attemptID)
	sp := &sg.PaymentIntentSearchParams{}
	sp.Context = ctx
	sp.Query = "metadata['" + mark + "']:'1'"
	sp.Limit = sg.Int64(10)
	for pi, err := range cl.V1PaymentIntents.Search(ctx, sp) {
		if err != nil {
			return nil, setupError(err)
		}
		if pi.Metadata[mark] != "1" {
			continue
		}
		rf, err := refundOf(ctx, cl, pi.ID, attemptID)
		if err != nil {
			return nil, setupError(err)
		}
		if rf != nil {
			p.hintRefund(merchantID, attemptID, pi.ID)
			return refundResult(rf), nil
		}
	}
	used, err := keyUsed(ctx, cl, attemptID, true)
	if err != nil {
		return nil, setupError(err)
	}
	if used {
		return &provider.RefundResult{Status: provider.RefundPending}, nil
	}
	return nil, provider.ErrUnknownAttempt
}
