package payments

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/internal/schedule"
	"github.com/keelpay/keelpay/provider"
	"github.com/keelpay/keelpay/storage"
)

// This file keeps the money rule where no fence reaches: inside the
// provider. An attempt is closed as never charged only when the provider
// does not know it and no run may send it any more (ReachWindow), but a
// request that left just before its process paused, or that sat in a
// stalled network, can still arrive later. So the attempt is looked up
// again for LateCheckFor, and a charge found is voided and recorded on the
// intent.

// newAttemptCheck is the look-up schedule of pi's attempt, closed as never
// charged at now.
func newAttemptCheck(pi *keelpay.PaymentIntent, now time.Time) *storage.AttemptCheck {
	return &storage.AttemptCheck{
		AttemptID:       pi.AttemptID,
		StoreID:         pi.StoreID,
		PaymentIntentID: pi.ID,
		MerchantID:      pi.MerchantID,
		ClosedAt:        now,
		CheckAt:         schedule.Next(now, now),
		Until:           now.Add(LateCheckFor),
	}
}

// checkLateCharges looks up every attempt closed as never charged whose
// check is due. Each check ends or moves past now, so the pass ends.
func (s *Service) checkLateCharges(ctx context.Context) error {
	for {
		due, err := s.cfg.Storage.AttemptCheckListDue(ctx, s.now(), workerBatch)
		if err != nil {
			return fmt.Errorf("payments: late charges: %w", err)
		}
		for _, c := range due {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := s.checkLate(ctx, c); err != nil {
				return fmt.Errorf("payments: late charges: %w", err)
			}
		}
		if len(due) < workerBatch {
			return nil
		}
	}
}

// checkLate looks one closed attempt up: nothing there (yet) keeps the
// checks going until c.Until; a failure the provider recorded ends them; a
// charge is voided and recorded on the intent.
func (s *Service) checkLate(ctx context.Context, c *storage.AttemptCheck) error {
	ctx = context.WithoutCancel(ctx)
	now := s.now()
	callCtx, cancel := s.call(ctx)
	res, err := s.cfg.Provider.LookupCharge(callCtx, c.MerchantID, c.AttemptID)
	cancel()
	attrs := []any{slog.String("store_id", c.StoreID), slog.String("payment_intent", c.PaymentIntentID), slog.String("attempt", c.AttemptID)}
	switch {
	case errors.Is(err, provider.ErrUnknownAttempt):
		// Still never seen.
		if !now.Before(c.Until) {
			return s.cfg.Storage.AttemptCheckDelete(ctx, c.AttemptID)
		}
		return s.recheck(ctx, c, now)
	case err != nil || res == nil:
		// Not known: keep asking, past Until too.
		s.log.WarnContext(ctx, "look-up of a closed attempt failed; it is asked again", append(attrs, slog.Any("error", err))...)
		return s.recheck(ctx, c, now)
	case res.Status == provider.ChargeFailed:
		// The provider recorded a failure for the attempt id: a repeat of
		// the charge answers with it, so no charge can follow.
		return s.cfg.Storage.AttemptCheckDelete(ctx, c.AttemptID)
	case res.Status == provider.ChargeSucceeded && res.Voided:
		// Voided already (a pass that did not get to record it).
	case res.Status == provider.ChargeSucceeded || res.Status == provider.ChargeRequiresAction:
		callCtx, cancel := s.call(ctx)
		err := s.cfg.Provider.Void(callCtx, c.MerchantID, c.AttemptID)
		cancel()
		if err != nil && !errors.Is(err, provider.ErrUnknownAttempt) {
			s.log.WarnContext(ctx, "void of a late charge failed; it is tried again", append(attrs, slog.Any("error", err))...)
			return s.recheck(ctx, c, now)
		}
	default:
		// Pending, or a status this service does not know: money may move.
		return s.recheck(ctx, c, now)
	}
	return s.recordVoided(ctx, c, res, now)
}

// recheck moves c to its next look-up: the reconcile schedule counted from
// when the attempt was closed, and one last look-up at c.Until.
func (s *Service) recheck(ctx context.Context, c *storage.AttemptCheck, now time.Time) error {
	next := schedule.Next(c.ClosedAt, now)
	if next.After(c.Until) && now.Before(c.Until) {
		next = c.Until
	}
	return s.cfg.Storage.AttemptCheckReschedule(ctx, c.AttemptID, next, c.Checks+1)
}

// recordVoided adds the voided charge to the intent's VoidedCharges and ends
// the checks, in one transaction, and says so in the log.
func (s *Service) recordVoided(ctx context.Context, c *storage.AttemptCheck, res *provider.ChargeResult, now time.Time) error {
	for range 5 {
		pi, err := s.cfg.Storage.PaymentIntentGet(ctx, c.StoreID, c.PaymentIntentID)
		if errors.Is(err, storage.ErrNotFound) {
			return s.cfg.Storage.AttemptCheckDelete(ctx, c.AttemptID)
		}
		if err != nil {
			return err
		}
		if slices.ContainsFunc(pi.VoidedCharges, func(v keelpay.VoidedCharge) bool { return v.AttemptID == c.AttemptID }) {
			return s.cfg.Storage.AttemptCheckDelete(ctx, c.AttemptID)
		}
		v := keelpay.VoidedCharge{AttemptID: c.AttemptID, Amount: res.Amount, Currency: res.Currency, VoidedAt: now}
		if v.Amount == 0 || v.Currency == "" {
			v.Amount, v.Currency = pi.Amount, pi.Currency
		}
		next := *pi
		next.VoidedCharges = append(slices.Clip(pi.VoidedCharges), v)
		next.UpdatedAt = now
		err = s.cfg.Storage.WithTx(ctx, func(ctx context.Context, tx storage.Executor) error {
			if err := tx.PaymentIntentUpdate(ctx, &next, pi.Version); err != nil {
				return err
			}
			return tx.AttemptCheckDelete(ctx, c.AttemptID)
		})
		if errors.Is(err, storage.ErrConflict) {
			continue
		}
		if err != nil {
			return err
		}
		s.metrics.lateVoided.Inc()
		s.log.WarnContext(ctx, "a charge arrived for an attempt closed as never charged; it was voided",
			slog.String("store_id", c.StoreID), slog.String("payment_intent", c.PaymentIntentID), slog.String("attempt", c.AttemptID),
			slog.Int64("amount", v.Amount), slog.String("currency", v.Currency))
		return nil
	}
	return fmt.Errorf("record voided charge of %s: %w", c.PaymentIntentID, storage.ErrConflict)
}
