package payments

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/idempotency"
	"github.com/keelpay/keelpay/internal/outbox"
	"github.com/keelpay/keelpay/internal/render"
	"github.com/keelpay/keelpay/provider"
	"github.com/keelpay/keelpay/storage"
)

// finish commits what a provider answer does to an intent with an open
// attempt, with its event: the one path by which confirm, the notifier,
// the reconciler and cancel close attempts. A charge that must not stand
// is voided first, outside any transaction; if the void fails the attempt
// stays open and the next look-up voids again. It returns the intent as
// stored afterwards, which is another process's version when that one
// finished the attempt first. key, when the change is a request's last,
// stores the request's answer with it.
func (s *Service) finish(ctx context.Context, pi *keelpay.PaymentIntent, a answer, key *idempotency.Key) (*keelpay.PaymentIntent, error) {
	// The provider has answered: record it even if the caller is going
	// away (a request cut off, a worker shutting down).
	ctx = context.WithoutCancel(ctx)
	now := s.now()
	st := advance(*pi, a, now)
	if a.err != nil && st.event == "" {
		s.log.WarnContext(ctx, "payment attempt stays open after a provider error", attemptAttrs(pi, slog.Any("error", a.err))...)
	}
	if st.void {
		callCtx, cancel := s.call(ctx)
		err := s.cfg.Provider.Void(callCtx, pi.MerchantID, pi.AttemptID)
		cancel()
		if err != nil && !errors.Is(err, provider.ErrUnknownAttempt) {
			// The void does not hold (yet): it is pending at the provider,
			// or failed and is being made again. The money is still
			// charged, so the attempt stays open, saying so, and the
			// next look-up voids again.
			s.log.WarnContext(ctx, "void does not hold; the attempt stays open", attemptAttrs(pi, slog.Any("error", err))...)
			open := *pi
			if a.lookup {
				open.ReconcileCount++
			}
			if le := voidPending(st.next.LastError); le != nil {
				open.LastError = le
			}
			st = step{next: wait(open, now)}
		} else if st.charged != nil {
			// The void holds: the intent lists the charge, and the void
			// is looked up again for LateCheckFor, in case it fails later.
			st.next.VoidedCharges = withVoid(st.next.VoidedCharges, pi.AttemptID, st.charged, keelpay.VoidHeld, now)
		}
	}
	next, _, err := s.commit(ctx, pi, st, key)
	return next, err
}

// commit writes st.next over prev, with st's event and card change, in one
// transaction, when prev's version is still the stored one. won is false
// when another process changed the intent first; next is then its version.
// key, when set, is the idempotency key of the request whose answer is
// next: the answer is stored with the change (200 and the intent).
func (s *Service) commit(ctx context.Context, prev *keelpay.PaymentIntent, st step, key *idempotency.Key) (next *keelpay.PaymentIntent, won bool, err error) {
	var ev *keelpay.Event
	if st.event != "" {
		if ev, err = outbox.Event(prev.StoreID, st.event, json.RawMessage(render.AppendIntent(nil, &st.next, false)), st.next.UpdatedAt); err != nil {
			return nil, false, err
		}
	}
	after := st.next
	after.Version = prev.Version + 1
	for range serialisationRetries {
		// The event is written with the change, and the dispatcher woken
		// once it is committed.
		err := s.outbox.Commit(ctx, func(b *storage.Batch) error {
			n := st.next
			b.PaymentIntentUpdate(&n, prev.Version)
			if st.cardUnavailable {
				b.CardUpdateStatus(n.StoreID, n.CardID, keelpay.CardUnavailable)
			}
			if st.lateCheck || (st.charged != nil && n.Status == keelpay.IntentCanceled) {
				// A closed attempt that may still charge, or a charge
				// voided: looked up again for LateCheckFor.
				b.AttemptCheckInsert(newAttemptCheck(prev, n.UpdatedAt))
			}
			// When a request with an idempotency key makes this change,
			// its answer is stored with it: a retry after a crash gets
			// this answer, not a second run.
			return finishIntent(b, key, idempotency.OutcomeChanged, &after)
		}, ev)
		if err == nil {
			if st.outcome != "" {
				s.metrics.attempts.WithLabelValues(st.outcome, st.code).Inc()
			}
			// The object Finish stored, so that the key knows its answer
			// (idempotency.Key.Answer).
			return &after, true, nil
		}
		if !errors.Is(err, storage.ErrConflict) {
			return nil, false, fmt.Errorf("payments: commit %s: %w", prev.ID, err)
		}
		cur, err := s.cfg.Storage.PaymentIntentGet(ctx, prev.StoreID, prev.ID)
		if err != nil {
			return nil, false, fmt.Errorf("payments: read %s after a conflict: %w", prev.ID, err)
		}
		if cur.Version != prev.Version {
			return cur, false, nil
		}
		// The database could not serialise the transaction and the
		// intent is as it was: try again.
	}
	return nil, false, fmt.Errorf("payments: commit %s: %w", prev.ID, storage.ErrConflict)
}

// lookUp asks the provider about pi's open attempt and finishes it (see
// finish for key).
func (s *Service) lookUp(ctx context.Context, pi *keelpay.PaymentIntent, key *idempotency.Key) (*keelpay.PaymentIntent, error) {
	callCtx, cancel := s.call(ctx)
	res, err := s.cfg.Provider.LookupCharge(callCtx, pi.MerchantID, pi.AttemptID)
	cancel()
	return s.finish(ctx, pi, answer{res: res, err: err, lookup: true}, key)
}

// Notify is the provider's notification that something happened to an
// attempt (a 3D Secure challenge was answered, an unknown outcome
// resolved). It is a [provider.NotifyFunc]: register it with a provider that
// implements [provider.Notifier] (service.New does), or call it from an
// adapter that receives the provider's webhooks. A notification is only a
// hint: the service looks the attempt up and trusts that answer alone. One
// that names no open attempt of that merchant is ignored, unless the
// attempt is a closed one still looked up (its charge voided, or closed as
// never charged): that check runs at once, so that a void that failed
// after it held is made again and the intent says the money is charged.
func (s *Service) Notify(ctx context.Context, merchantID, attemptID string) {
	ctx = context.WithoutCancel(ctx)
	pi, err := s.cfg.Storage.PaymentIntentGetByAttempt(ctx, attemptID)
	if err != nil && !errors.Is(err, storage.ErrNotFound) {
		s.log.ErrorContext(ctx, "notification: read intent", slog.String("attempt", attemptID), slog.Any("error", err))
		return
	}
	if err != nil || (pi.Status != keelpay.IntentProcessing && pi.Status != keelpay.IntentRequiresAction) {
		if err != nil {
			pi = nil
		}
		s.notifyClosed(ctx, pi, merchantID, attemptID)
		return
	}
	if pi.MerchantID != merchantID {
		return
	}
	if _, err := s.lookUp(ctx, pi, nil); err != nil {
		s.log.ErrorContext(ctx, "notification: finish attempt", attemptAttrs(pi, slog.Any("error", err))...)
	}
}

// notifyClosed runs the check of a closed attempt at once, when it has one
// for that merchant (see Notify). pi, when set, is the intent whose last
// attempt it is: a charge of it voided longer ago than LateCheckFor, whose
// checks ended, gets a check again.
func (s *Service) notifyClosed(ctx context.Context, pi *keelpay.PaymentIntent, merchantID, attemptID string) {
	c, err := s.cfg.Storage.AttemptCheckGet(ctx, attemptID)
	if errors.Is(err, storage.ErrNotFound) && pi != nil && slices.ContainsFunc(pi.VoidedCharges, func(v keelpay.VoidedCharge) bool { return v.AttemptID == attemptID }) {
		now := s.now()
		c, err = &storage.AttemptCheck{AttemptID: attemptID, StoreID: pi.StoreID, PaymentIntentID: pi.ID, MerchantID: pi.MerchantID,
			ClosedAt: now, CheckAt: now, Until: now.Add(LateCheckFor)}, nil
	}
	if err != nil {
		if !errors.Is(err, storage.ErrNotFound) {
			s.log.ErrorContext(ctx, "notification: read attempt check", slog.String("attempt", attemptID), slog.Any("error", err))
		}
		return
	}
	if c.MerchantID != merchantID {
		return
	}
	if err := s.checkLate(ctx, c); err != nil {
		s.log.ErrorContext(ctx, "notification: check closed attempt", slog.String("attempt", attemptID), slog.Any("error", err))
	}
}

// Reconcile makes one pass of the reconciler: it looks up every open
// attempt whose check is due (unknown outcomes, attempts a crashed process
// left, 3D Secure challenges past their wait) and finishes those the
// provider knows the outcome of. Attempts still pending are scheduled
// again: 1, 5, 15 and 60 minutes after the attempt, then every 6 hours.
// Then it looks up again the attempts closed as never charged whose check
// is due, and voids a charge that arrived for one late. Safe to run in
// several processes at once.
func (s *Service) Reconcile(ctx context.Context) error {
	for {
		due, err := s.cfg.Storage.PaymentIntentListReconcileDue(ctx, s.now(), workerBatch)
		if err != nil {
			return fmt.Errorf("payments: reconcile: %w", err)
		}
		for _, pi := range due {
			if err := ctx.Err(); err != nil {
				return err
			}
			// Every look-up finishes the attempt or moves its next check
			// past now, so the pass ends.
			if _, err := s.lookUp(ctx, pi, nil); err != nil {
				return fmt.Errorf("payments: reconcile: %w", err)
			}
		}
		if len(due) < workerBatch {
			return s.checkLateCharges(ctx)
		}
	}
}

// Expire makes one pass of the expirer: open card sessions past their
// expiry become expired, and intents unconfirmed for IntentLifetime are
// canceled with the reason expired (event payment_intent.canceled). Safe
// to run in several processes at once.
func (s *Service) Expire(ctx context.Context) error {
	now := s.now()
	if err := s.expireSessions(ctx, now); err != nil {
		return err
	}
	for {
		due, err := s.cfg.Storage.PaymentIntentListExpireDue(ctx, now, workerBatch)
		if err != nil {
			return fmt.Errorf("payments: expire: %w", err)
		}
		progress := false
		for _, pi := range due {
			if err := ctx.Err(); err != nil {
				return err
			}
			next, err := s.expireIntent(ctx, pi)
			if err != nil {
				return fmt.Errorf("payments: expire: %w", err)
			}
			progress = progress || next.Status != keelpay.IntentRequiresPaymentMethod
		}
		if len(due) < workerBatch || !progress {
			return nil
		}
	}
}

// attemptAttrs are the log attributes of an attempt: ids only.
func attemptAttrs(pi *keelpay.PaymentIntent, more ...any) []any {
	return append([]any{
		slog.String("store_id", pi.StoreID),
		slog.String("payment_intent", pi.ID),
		slog.String("attempt", pi.AttemptID),
	}, more...)
}

// finishIntent records in b, with the change, the answer about intent pi
// of the request that holds key; nothing without a key.
func finishIntent(b *storage.Batch, key *idempotency.Key, o idempotency.Outcome, pi *keelpay.PaymentIntent) error {
	if key == nil {
		return nil
	}
	return key.Finish(b, pi.ID, o, pi)
}
