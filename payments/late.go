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
// charge is voided and recorded on the intent. A void that holds is looked
// up again until c.Until, in case it fails later; a void that does not hold
// (pending at the provider, or failed after it held) is recorded on the
// intent as money still charged, and made again at every check, past
// c.Until too, until it holds.
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
		// Voided for good (by an earlier pass, which may not have got to
		// record it).
	case res.Status == provider.ChargeSucceeded || res.Status == provider.ChargeRequiresAction:
		callCtx, cancel := s.call(ctx)
		err := s.cfg.Provider.Void(callCtx, c.MerchantID, c.AttemptID)
		cancel()
		if err != nil && !errors.Is(err, provider.ErrUnknownAttempt) {
			s.log.WarnContext(ctx, "void of a charge does not hold; the money is still charged, and it is voided again", append(attrs, slog.Any("error", err))...)
			if res.Status == provider.ChargeRequiresAction {
				// No money taken yet; the next check voids again.
				return s.recheck(ctx, c, now)
			}
			return s.recordVoid(ctx, c, res, keelpay.VoidNotHeld, false, now)
		}
		// Voided now: a charge found, or one whose void had failed.
		return s.recordVoid(ctx, c, res, keelpay.VoidHeld, true, now)
	default:
		// Pending, or a status this service does not know: money may move.
		return s.recheck(ctx, c, now)
	}
	return s.recordVoid(ctx, c, res, keelpay.VoidHeld, false, now)
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

// recordVoid records on the intent that the charge of c's attempt is voided
// for good (status VoidHeld) or still charged (VoidNotHeld), and moves the
// check on in the same transaction: a held void is looked up again until
// c.Until, then no more; one that does not hold is looked up (and voided)
// again on the schedule, past c.Until too. fresh says the void was made
// just now: its voided_at is now even when the intent listed it voided
// already (its earlier void failed and this one held at once).
func (s *Service) recordVoid(ctx context.Context, c *storage.AttemptCheck, res *provider.ChargeResult, status keelpay.VoidStatus, fresh bool, now time.Time) error {
	held := status == keelpay.VoidHeld
	for range raceRetries {
		pi, err := s.cfg.Storage.PaymentIntentGet(ctx, c.StoreID, c.PaymentIntentID)
		if errors.Is(err, storage.ErrNotFound) {
			return s.cfg.Storage.AttemptCheckDelete(ctx, c.AttemptID)
		}
		if err != nil {
			return err
		}
		i := slices.IndexFunc(pi.VoidedCharges, func(v keelpay.VoidedCharge) bool { return v.AttemptID == c.AttemptID })
		// The intent changes when the charge is new to it, or its void
		// changed between holding and not.
		change := i < 0 || pi.VoidedCharges[i].Held() != held || (held && fresh)
		isNew := i < 0
		// moveCheck records the check's next step in b: rescheduled, or,
		// when missing (a check made at a notification, of an attempt
		// whose schedule had ended), inserted to start again.
		moveCheck := func(b *storage.Batch, missing bool) {
			if held && !now.Before(c.Until) {
				b.AttemptCheckDelete(c.AttemptID)
				return
			}
			next := schedule.Next(c.ClosedAt, now)
			if held && next.After(c.Until) {
				next = c.Until
			}
			if !missing {
				b.AttemptCheckReschedule(c.AttemptID, next, c.Checks+1)
				return
			}
			again := *c
			again.CheckAt, again.Checks = next, c.Checks+1
			if !held && !again.Until.After(now) {
				again.Until = now.Add(LateCheckFor)
			}
			b.AttemptCheckInsert(&again)
		}
		// commitMove commits first's writes with the check's move; a
		// reschedule that finds no check commits them again with the
		// check inserted instead (nothing of the first batch was kept).
		commitMove := func(first func(b *storage.Batch)) error {
			var err error
			for _, missing := range []bool{false, true} {
				var b storage.Batch
				if first != nil {
					first(&b)
				}
				i := b.Len()
				moveCheck(&b, missing)
				err = s.cfg.Storage.Commit(ctx, &b)
				var we *storage.WriteError
				if !errors.As(err, &we) || we.Index != i || we.Op != "AttemptCheckReschedule" || !errors.Is(err, storage.ErrNotFound) {
					break
				}
			}
			return err
		}
		if !change {
			return commitMove(nil)
		}
		if res.Amount == 0 || res.Currency == "" {
			res = &provider.ChargeResult{Status: res.Status, Amount: pi.Amount, Currency: pi.Currency, Voided: res.Voided}
		}
		next := *pi
		next.VoidedCharges = withVoid(pi.VoidedCharges, c.AttemptID, res, status, now)
		next.UpdatedAt = now
		err = commitMove(func(b *storage.Batch) { b.PaymentIntentUpdate(&next, pi.Version) })
		if errors.Is(err, storage.ErrConflict) {
			continue
		}
		if err != nil {
			return err
		}
		v := next.VoidedCharges[slices.IndexFunc(next.VoidedCharges, func(v keelpay.VoidedCharge) bool { return v.AttemptID == c.AttemptID })]
		logAttrs := []any{slog.String("store_id", c.StoreID), slog.String("payment_intent", c.PaymentIntentID), slog.String("attempt", c.AttemptID),
			slog.Int64("amount", v.Amount), slog.String("currency", v.Currency)}
		switch {
		case held && isNew:
			s.metrics.lateVoided.Inc()
			s.log.WarnContext(ctx, "a charge arrived for an attempt closed as never charged; it was voided", logAttrs...)
		case held:
			s.log.WarnContext(ctx, "a charge whose void had not held, or had failed, is voided now", logAttrs...)
		default:
			s.log.WarnContext(ctx, "a voided charge is charged again (its void is pending or failed); it is voided again", logAttrs...)
		}
		return nil
	}
	return fmt.Errorf("record void of %s: %w", c.PaymentIntentID, storage.ErrConflict)
}
