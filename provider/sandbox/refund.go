package sandbox

import (
	"context"
	"time"

	"github.com/keelpay/keelpay/provider"
)

// refund is one refund send.
type refund struct {
	key      attempt
	res      provider.RefundResult
	deadline time.Time // when a pending outcome resolves, or a paid one fails (failsLater)
	paid     int       // times this send paid out, and kept: 0 or 1
	// failsLater: the send succeeded and fails at deadline.
	failsLater bool
}

// Refund returns the whole amount of a succeeded charge once per merchant and
// refund attempt id; a repeated call returns the stored outcome. The charge
// is found by r.ChargeAttemptID and must have r.OrderID, r.Amount and
// r.Currency. What happens then depends on the charge's card. Only one
// refund per charge pays out: a later send for a charge already refunded, or
// whose refund is still pending, is refund_rejected, so look a pending send
// up before sending again.
func (s *Sandbox) Refund(ctx context.Context, r provider.RefundRequest) (*provider.RefundResult, error) {
	defer s.sendLater(ctx)
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
	rf, err := onceInTx(s, key, now, tx.refund,
		func(t tx) (*refund, error) { return s.newRefund(t, key, r, now) },
		s.settleRefund, tx.saveRefund)
	if err != nil {
		return nil, err
	}
	if rf.res.Status == provider.RefundPending {
		return nil, outcomeUnknown("the refund timed out")
	}
	return rf.result(), nil
}

// newRefund sends the refund key. It saves the charge it refunds (and the
// charge's earlier refund) when they changed; the caller saves the refund.
func (s *Sandbox) newRefund(t tx, key attempt, r provider.RefundRequest, now time.Time) (*refund, error) {
	rf := &refund{key: key}
	c, err := t.charge(attempt{r.MerchantID, r.ChargeAttemptID})
	if err != nil {
		return nil, err
	}
	var earlier *refund
	if c != nil {
		if s.settleCharge(c, now) {
			if err := t.saveCharge(c); err != nil {
				return nil, err
			}
		}
		if c.refundAttemptID != "" {
			if earlier, err = t.refund(attempt{r.MerchantID, c.refundAttemptID}); err != nil {
				return nil, err
			}
		}
	}
	if earlier != nil && s.settleRefund(earlier, now) {
		if err := t.saveRefund(earlier); err != nil {
			return nil, err
		}
	}
	switch {
	case c == nil || c.res.Status != provider.ChargeSucceeded || c.res.OrderID == "" || c.res.OrderID != r.OrderID:
		return rf.fail(provider.FailureOrderNotFound, "The order does not exist."), nil
	case c.card.behavior == refundOrderNotFound:
		return rf.fail(provider.FailureOrderNotFound, "The order does not exist."), nil
	case c.res.Voided:
		return rf.fail(provider.FailureRefundRejected, "The charge was voided."), nil
	case earlier != nil && earlier.res.Status == provider.RefundSucceeded:
		return rf.fail(provider.FailureRefundRejected, "The charge was already refunded."), nil
	case earlier != nil && earlier.res.Status == provider.RefundPending:
		return rf.fail(provider.FailureRefundRejected, "A refund of this charge is in progress."), nil
	case r.Amount != c.res.Amount || r.Currency != c.res.Currency:
		return rf.fail(provider.FailureRefundRejected, "A refund must be for the whole amount of the charge."), nil
	case c.card.behavior == refundRejected:
		return rf.fail(provider.FailureRefundRejected, "Refund declined by issuer."), nil
	case c.card.behavior == refundProviderError:
		return rf.fail(provider.FailureProviderError, "The provider could not process the refund."), nil
	}
	c.refundAttemptID = key.attemptID
	if err := t.saveCharge(c); err != nil {
		return nil, err
	}
	if c.card.behavior == refundUnknown {
		rf.res.Status = provider.RefundPending
		rf.deadline = now.Add(ResolveAfter)
		return rf, nil
	}
	s.payOut(rf)
	if c.card.behavior == refundFailsLater {
		rf.failsLater, rf.deadline = true, now.Add(ResolveAfter)
	}
	return rf, nil
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
	rf.paid++
}

// settleRefund resolves a pending refund once its deadline has passed, or
// fails a paid one that fails later (the money goes back to the merchant),
// and reports whether it did. A refund that failed later is queued for the
// refund notifier (sendLater).
func (s *Sandbox) settleRefund(rf *refund, now time.Time) bool {
	switch {
	case now.Before(rf.deadline):
		return false
	case rf.res.Status == provider.RefundPending:
		s.payOut(rf)
		return true
	case rf.failsLater && rf.res.Status == provider.RefundSucceeded:
		rf.fail(provider.FailureRefundRejected, "The refund failed: the customer's bank returned it.")
		rf.paid, rf.failsLater = 0, false
		s.later = append(s.later, rf.key)
		return true
	}
	return false
}

// SetRefundNotifier registers the function called when a refund the
// sandbox reported succeeded fails later ([CardRefundFailsLater]), with
// the refund send's attempt id. It is called outside the sandbox's lock,
// once the failure is found on the clock: by [Sandbox.Settle], or by any
// call that settles due outcomes (LookupRefund, Refund, the counts). The
// notifications waiting are kept in memory only.
func (s *Sandbox) SetRefundNotifier(f provider.NotifyFunc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refundNotify = f
}

// Settle brings every charge and refund that is due on the clock up to
// it (unknown outcomes resolve, challenges expire, refunds fail later) and
// then sends the notifications this causes. A real provider does this on
// its own time; the sandbox, whose time is the clock, does it when asked:
// keelpaytest's Kit.Advance and the reference server's clock do.
func (s *Sandbox) Settle(ctx context.Context) error {
	defer s.sendLater(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.inTx(s.settleAll)
}

// sendLater calls the refund notifier for the refunds that failed later,
// and the notifier for the charges whose void failed later, outside the
// sandbox's lock (the service looks them up in the sandbox).
func (s *Sandbox) sendLater(ctx context.Context) {
	s.mu.Lock()
	refunds, charges, fr, fc := s.later, s.laterCharges, s.refundNotify, s.notify
	s.later, s.laterCharges = nil, nil
	s.mu.Unlock()
	for _, k := range refunds {
		if fr != nil {
			fr(context.WithoutCancel(ctx), k.merchantID, k.attemptID)
		}
	}
	for _, k := range charges {
		if fc != nil {
			fc(context.WithoutCancel(ctx), k.merchantID, k.attemptID)
		}
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
func (s *Sandbox) LookupRefund(ctx context.Context, merchantID, attemptID string) (*provider.RefundResult, error) {
	defer s.sendLater(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.refuseLookup(); err != nil {
		return nil, err
	}
	var rf *refund
	err := s.inTx(func(t tx) (err error) {
		if rf, err = t.refund(attempt{merchantID, attemptID}); err != nil || rf == nil {
			return err
		}
		if !s.settleRefund(rf, s.clock.Now()) {
			return nil
		}
		return t.saveRefund(rf)
	})
	if err != nil {
		return nil, err
	}
	if rf == nil {
		return nil, provider.ErrUnknownAttempt
	}
	return rf.result(), nil
}
