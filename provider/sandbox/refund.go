package sandbox

import (
	"context"
	"time"

	"github.com/keelpay/keelpay/provider"
)

// refund is one refund send.
type refund struct {
	res      provider.RefundResult
	deadline time.Time // when a pending outcome resolves
}

// Refund returns the whole amount of a succeeded charge once per merchant and
// refund attempt id; a repeated call returns the stored outcome. The charge
// is found by r.ChargeAttemptID and must have r.OrderID, r.Amount and
// r.Currency. What happens then depends on the charge's card. Only one
// refund per charge pays out: a later send for a charge already refunded, or
// whose refund is still pending, is refund_rejected, so look a pending send
// up before sending again.
func (s *Sandbox) Refund(_ context.Context, r provider.RefundRequest) (*provider.RefundResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.refuseWork(); err != nil {
		return nil, err
	}
	if r.MerchantID == "" || r.AttemptID == "" {
		return nil, invalidRequest("a merchant id and an attempt id are required")
	}
	now := s.clock.Now()
	key := attempt{r.MerchantID, r.AttemptID}
	rf, ok := s.refunds[key]
	if !ok {
		rf = s.newRefund(r, now)
		s.refunds[key] = rf
	}
	s.settleRefund(rf, now)
	if rf.res.Status == provider.RefundPending {
		return nil, outcomeUnknown("the refund timed out")
	}
	return rf.result(), nil
}

func (s *Sandbox) newRefund(r provider.RefundRequest, now time.Time) *refund {
	rf := &refund{}
	c := s.charges[attempt{r.MerchantID, r.ChargeAttemptID}]
	if c != nil {
		s.settleCharge(c, now)
	}
	if c != nil && c.refund != nil {
		s.settleRefund(c.refund, now)
	}
	switch {
	case c == nil || c.res.Status != provider.ChargeSucceeded || c.res.OrderID == "" || c.res.OrderID != r.OrderID:
		return rf.fail(provider.FailureOrderNotFound, "The order does not exist.")
	case c.card.behavior == refundOrderNotFound:
		return rf.fail(provider.FailureOrderNotFound, "The order does not exist.")
	case c.res.Voided:
		return rf.fail(provider.FailureRefundRejected, "The charge was voided.")
	case c.refund != nil && c.refund.res.Status == provider.RefundSucceeded:
		return rf.fail(provider.FailureRefundRejected, "The charge was already refunded.")
	case c.refund != nil:
		return rf.fail(provider.FailureRefundRejected, "A refund of this charge is in progress.")
	case r.Amount != c.res.Amount || r.Currency != c.res.Currency:
		return rf.fail(provider.FailureRefundRejected, "A refund must be for the whole amount of the charge.")
	case c.card.behavior == refundRejected:
		return rf.fail(provider.FailureRefundRejected, "Refund declined by issuer.")
	case c.card.behavior == refundProviderError:
		return rf.fail(provider.FailureProviderError, "The provider could not process the refund.")
	}
	c.refund = rf
	if c.card.behavior == refundUnknown {
		rf.res.Status = provider.RefundPending
		rf.deadline = now.Add(ResolveAfter)
		return rf
	}
	s.payOut(rf)
	return rf
}

func (rf *refund) fail(code provider.FailureCode, msg string) *refund {
	rf.res = provider.RefundResult{
		Status:  provider.RefundFailed,
		Failure: &provider.Failure{Code: code, Message: msg},
	}
	return rf
}

func (s *Sandbox) payOut(rf *refund) {
	rf.res.Status = provider.RefundSucceeded
	s.refunded++
}

// settleRefund resolves a pending refund once its deadline has passed.
func (s *Sandbox) settleRefund(rf *refund, now time.Time) {
	if rf.res.Status == provider.RefundPending && !now.Before(rf.deadline) {
		s.payOut(rf)
	}
}

// result returns a copy of the outcome that the caller may keep.
func (rf *refund) result() *provider.RefundResult {
	res := rf.res
	if res.Failure != nil {
		f := *res.Failure
		res.Failure = &f
	}
	return &res
}

// LookupRefund returns the outcome of the refund send:
// [provider.RefundPending] until an unknown outcome resolves.
func (s *Sandbox) LookupRefund(_ context.Context, merchantID, attemptID string) (*provider.RefundResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.refuseLookup(); err != nil {
		return nil, err
	}
	rf, ok := s.refunds[attempt{merchantID, attemptID}]
	if !ok {
		return nil, provider.ErrUnknownAttempt
	}
	s.settleRefund(rf, s.clock.Now())
	return rf.result(), nil
}
