package payments

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/idempotency"
	"github.com/keelpay/keelpay/internal/check"
	"github.com/keelpay/keelpay/internal/fields"
	"github.com/keelpay/keelpay/internal/providercall"
	"github.com/keelpay/keelpay/internal/sendid"
	"github.com/keelpay/keelpay/provider"
	"github.com/keelpay/keelpay/storage"
)

// attemptPrefix starts the ids of payment attempts, the provider's
// idempotency keys.
const attemptPrefix = "att_"

// createdVersion is the version of a payment intent as created.
const createdVersion = 1

// CreateIntent creates a payment intent of the store in
// requires_payment_method. A PaymentMethod that is not a card of the
// customer is 404 card_not_found.
func (s *Service) CreateIntent(ctx context.Context, st *keelpay.Store, p IntentParams) (*keelpay.PaymentIntent, error) {
	if err := p.Validate(st.Currency); err != nil {
		return nil, err
	}
	var pm *keelpay.PaymentMethod
	if p.PaymentMethod != "" {
		card, err := s.customerCard(ctx, st, p.PaymentMethod, p.Customer.ID)
		if err != nil {
			return nil, err
		}
		pm = savedMethod(card)
	}
	now := s.now()
	id := keelpay.NewID(keelpay.PrefixPaymentIntent)
	pi := &keelpay.PaymentIntent{
		ID:            id,
		StoreID:       st.ID,
		Status:        keelpay.IntentRequiresPaymentMethod,
		Amount:        p.Amount,
		Currency:      p.Currency,
		Customer:      p.Customer,
		Description:   p.Description,
		Reference:     p.Reference,
		Metadata:      p.Metadata,
		Billing:       p.Billing,
		PageOrigins:   p.PageOrigins,
		ClientSecret:  keelpay.NewID(id + "_secret_"),
		CardID:        p.PaymentMethod,
		PaymentMethod: pm,
		ExpiresAt:     now.Add(IntentLifetime),
		CreatedAt:     now,
		UpdatedAt:     now,
		Version:       createdVersion,
	}
	var b storage.Batch
	b.PaymentIntentInsert(pi)
	if err := finishIntent(&b, p.Idempotency, idempotency.OutcomeCreated, pi); err != nil {
		return nil, err
	}
	err := s.cfg.Storage.Commit(ctx, &b)
	if err != nil {
		return nil, fmt.Errorf("payments: insert intent: %w", err)
	}
	return pi, nil
}

// GetIntent returns a payment intent of the store, or 404
// payment_intent_not_found.
func (s *Service) GetIntent(ctx context.Context, st *keelpay.Store, id string) (*keelpay.PaymentIntent, error) {
	if !keelpay.ValidID(keelpay.PrefixPaymentIntent, id) {
		return nil, errIntentNotFound()
	}
	pi, err := s.cfg.Storage.PaymentIntentGet(ctx, st.ID, id)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, errIntentNotFound()
	}
	if err != nil {
		return nil, fmt.Errorf("payments: read intent: %w", err)
	}
	return pi, nil
}

// List limits (docs/api.md, "Lists").
const (
	ListLimitDefault = 10
	ListLimitMax     = 100
)

// ListParams selects a page of a list: Limit 1 to 100 (0 is the default,
// 10), and at most one of the cursors StartingAfter (older than that
// object) and EndingBefore (newer).
type ListParams struct {
	Limit         int
	StartingAfter string
	EndingBefore  string
}

// IntentListParams selects a page of a store's intents: the page, and the
// filters that are set, combined.
type IntentListParams struct {
	ListParams
	// CustomerID, Status and Reference keep only the intents with that
	// customer id, status (one of the intent statuses, else 400
	// invalid_status) or reference.
	CustomerID string
	Status     keelpay.PaymentIntentStatus
	Reference  string
	// CreatedGTE and CreatedLT, when not zero, keep only the intents
	// created at or after CreatedGTE and before CreatedLT.
	CreatedGTE, CreatedLT time.Time
}

// ValidIntentStatus reports whether s is one of the intent statuses.
func ValidIntentStatus(s keelpay.PaymentIntentStatus) bool {
	switch s {
	case keelpay.IntentRequiresPaymentMethod, keelpay.IntentRequiresAction, keelpay.IntentProcessing,
		keelpay.IntentSucceeded, keelpay.IntentCanceled:
		return true
	}
	return false
}

// ListIntents returns a page of the store's intents that match the
// filters, newest first (by creation), and whether there are more in the
// direction of travel. A cursor that is not an intent of the store is 400
// invalid_starting_after or invalid_ending_before.
func (s *Service) ListIntents(ctx context.Context, st *keelpay.Store, p IntentListParams) ([]*keelpay.PaymentIntent, bool, error) {
	if p.Status != "" && !ValidIntentStatus(p.Status) {
		return nil, false, keelpay.InvalidRequest("status", "invalid_status", "status must be one of the payment intent statuses.")
	}
	if p.Limit == 0 {
		p.Limit = ListLimitDefault
	}
	if p.Limit < 1 || p.Limit > ListLimitMax {
		return nil, false, keelpay.InvalidRequest("limit", "invalid_limit", "limit must be an integer from 1 to 100.")
	}
	if p.StartingAfter != "" && !keelpay.ValidID(keelpay.PrefixPaymentIntent, p.StartingAfter) {
		return nil, false, check.InvalidCursor("starting_after")
	}
	if p.EndingBefore != "" && p.StartingAfter != "" {
		return nil, false, keelpay.InvalidRequest("ending_before", "invalid_ending_before",
			"starting_after and ending_before cannot be given together.")
	}
	if p.EndingBefore != "" && !keelpay.ValidID(keelpay.PrefixPaymentIntent, p.EndingBefore) {
		return nil, false, check.InvalidCursor("ending_before")
	}
	intents, more, err := s.cfg.Storage.PaymentIntentList(ctx, storage.PaymentIntentListParams{
		StoreID: st.ID, Limit: p.Limit, StartingAfter: p.StartingAfter, EndingBefore: p.EndingBefore,
		CustomerID: p.CustomerID, Status: p.Status, Reference: p.Reference, CreatedGTE: p.CreatedGTE, CreatedLT: p.CreatedLT,
	})
	if errors.Is(err, storage.ErrNotFound) {
		if p.StartingAfter != "" {
			return nil, false, check.InvalidCursor("starting_after")
		}
		return nil, false, check.InvalidCursor("ending_before")
	}
	if err != nil {
		return nil, false, fmt.Errorf("payments: list intents: %w", err)
	}
	return intents, more, nil
}

// ConfirmIntent charges a card for an intent in requires_payment_method:
// a saved card of the intent's customer (p.PaymentMethod, or the card the
// intent was created with), or a new card from the browser (p.Card, with
// the intent's p.ClientSecret).
//
// The attempt is committed first (processing, a new attempt id), then the
// provider is charged with the attempt id as its idempotency key outside
// any transaction, then the outcome is committed with its event. So
// concurrent confirms reach the provider once (the others are 409
// payment_intent_unexpected_state), and a crash in between leaves an
// attempt the reconciler finishes. A run that gets to the call later than
// SendWindow after recording its attempt (it was paused) does not call the
// provider, and answers with a look-up instead. A failed attempt is not an
// error: the intent comes back in requires_payment_method with last_error.
// When the provider is unavailable the attempt is withdrawn and the answer
// is 503. The confirm waits for the provider at most Config.AnswerTimeout:
// past it, it records and answers processing with last_error
// outcome_unknown, and the call goes on, its run committing the outcome
// afterwards without the request's idempotency key, so the key keeps the
// answer the client got.
func (s *Service) ConfirmIntent(ctx context.Context, st *keelpay.Store, id string, p ConfirmParams) (*keelpay.PaymentIntent, error) {
	if err := p.Validate(s.now()); err != nil {
		return nil, err
	}
	pi, started, card, err := s.recordAttempt(ctx, st, id, p)
	if err != nil {
		return nil, err
	}
	attempt := *started
	req := chargeRequest(st, &attempt, card, p)

	// From here on the request's cancellation changes nothing: the
	// attempt is finished (or left to the reconciler) either way.
	ctx = context.WithoutCancel(ctx)
	if late := s.now().Sub(attempt.AttemptAt); late >= SendWindow {
		// This run stalled after recording the attempt (a paused process,
		// a stalled connection) for longer than the send window: a retry
		// or the reconciler may already have looked the attempt up and,
		// past ReachWindow, closed it as never charged. It does not call
		// the provider any more; it answers with what a look-up says.
		s.log.WarnContext(ctx, "confirm resumed past its send window; the provider is not called",
			attemptAttrs(&attempt, slog.Duration("late", late))...)
		return s.lookUp(ctx, &attempt, p.Idempotency)
	}
	req.AttemptID = attempt.AttemptID
	// The request waits for the provider at most AnswerTimeout: an answer
	// must be written before the HTTP server's WriteTimeout closes the
	// connection, however slow the provider is. The call and the commit
	// of its outcome run on their own and are not cut short.
	// marked is closed once a confirm that gave up on the provider has
	// recorded its answer (outcome_unknown) on the intent.
	marked := make(chan struct{})
	done, err, answered := providercall.Detach(&s.detached, s.cfg.AnswerTimeout, func(claim func() bool) (*keelpay.PaymentIntent, error) {
		callCtx, cancel := s.call(ctx)
		res, err := s.cfg.Provider.Charge(callCtx, req)
		cancel()
		if !claim() {
			// The client was answered processing with outcome_unknown,
			// and that answer is the one stored for its key: this run
			// commits the outcome without the key, with its event. A
			// provider that did nothing closes the attempt as a failure
			// (provider_error): the client was told to wait for the
			// webhook, so the attempt is not silently withdrawn.
			s.log.WarnContext(ctx, "the provider answered after the confirm was answered; its outcome is committed now",
				attemptAttrs(&attempt, slog.Any("error", err))...)
			<-marked
			return s.finishAfterAnswer(ctx, &attempt, answer{res: res, err: err})
		}
		if e := providercall.NotSent(err); e != nil {
			return nil, s.withdraw(ctx, pi, &attempt, e)
		}
		return s.finish(ctx, &attempt, answer{res: res, err: err}, p.Idempotency)
	}, func(panicked any) {
		s.log.ErrorContext(ctx, "the confirm's provider call panicked after the confirm was answered; the reconciler finishes the attempt",
			attemptAttrs(&attempt, slog.Any("panic", panicked))...)
	})
	if answered {
		return done, err
	}
	defer close(marked)
	s.log.WarnContext(ctx, "the provider did not answer before the confirm's answer deadline; the outcome is unknown for now",
		attemptAttrs(&attempt, slog.Duration("answer_timeout", s.cfg.AnswerTimeout))...)
	// The intent says what the client is told: processing, outcome
	// unknown. The run that made the call finishes the attempt after this.
	unknown := attempt
	unknown.LastError = lastError(ErrorOutcomeUnknown, "")
	unknown.UpdatedAt = s.now()
	if err := s.cfg.Storage.PaymentIntentUpdate(ctx, &unknown, attempt.Version); err != nil && !errors.Is(err, storage.ErrConflict) {
		s.log.ErrorContext(ctx, "record the unknown outcome of a confirm past its answer deadline", attemptAttrs(&attempt, slog.Any("error", err))...)
	}
	return &unknown, nil
}

// recordAttempt records the attempt of a confirm (see ConfirmIntent) and
// returns the intent before it, the attempt, and the saved card it
// charges (nil for a card from the browser). The
// first attempt of an intent with its own saved card is recorded without
// reading the intent first (firstAttempt); any other, or one that the
// intent turns out not to allow, reads the intent and its card, checks
// them, and records the attempt on the version read.
func (s *Service) recordAttempt(ctx context.Context, st *keelpay.Store, id string, p ConfirmParams) (before, attempt *keelpay.PaymentIntent, card *keelpay.Card, _ error) {
	attempt, card, ok, err := s.firstAttempt(ctx, st, id, p)
	if err != nil {
		return nil, nil, nil, err
	}
	if ok {
		before := unattempted(*attempt)
		return &before, attempt, card, nil
	}

	pi, card, err := s.intentWithCard(ctx, st, id, p)
	if err != nil {
		return nil, nil, nil, err
	}
	if p.ClientSecret != "" && subtle.ConstantTimeCompare([]byte(pi.ClientSecret), []byte(p.ClientSecret)) != 1 {
		return nil, nil, nil, errIntentNotFound()
	}
	if pi.Status == keelpay.IntentRequiresPaymentMethod && !s.now().Before(pi.ExpiresAt) {
		// Expired, though the expirer has not run yet: expire it now.
		// That is not this request's answer (it is a 409).
		if pi, err = s.expireIntent(ctx, pi); err != nil {
			return nil, nil, nil, err
		}
	}
	if !canConfirm(pi.Status) {
		return nil, nil, nil, errUnexpectedState(pi.Status)
	}

	var pm *keelpay.PaymentMethod
	var cardID string
	if p.Card != nil {
		pm = p.Card.method()
	} else {
		cardID = p.PaymentMethod
		if cardID == "" {
			cardID = pi.CardID
		}
		if cardID == "" {
			return nil, nil, nil, keelpay.InvalidRequest("payment_method", "missing_payment_method",
				"payment_method is required: the intent has no card.")
		}
		if card == nil || card.ID != cardID || card.CustomerID != pi.Customer.ID {
			return nil, nil, nil, errCardNotFound()
		}
		if card.Status != keelpay.CardActive {
			return nil, nil, nil, errCardUnavailable()
		}
		pm = savedMethod(card)
	}

	// Record the attempt, and with it the request's recovery point: a
	// retry after a crash carries this attempt to its end instead of
	// making another. Only one confirm moves this version on. The
	// attempt's id (the provider's idempotency key) comes from the intent
	// and this version: should the database lose this commit (a failover
	// to an asynchronous standby, a restored backup), the retry starts
	// from the same version again, sends the same key, and the provider
	// answers with the first charge instead of making a second.
	next := startAttempt(*pi, sendid.For(attemptPrefix, pi.ID, pi.Version), st.MerchantID, pm, cardID, p.Billing, s.now())
	var b storage.Batch
	b.PaymentIntentUpdate(&next, pi.Version)
	p.Idempotency.Step(&b, idempotency.Attempt, next.AttemptID)
	err = s.cfg.Storage.Commit(ctx, &b)
	if err != nil {
		if errors.Is(err, storage.ErrConflict) {
			if cur, err := s.GetIntent(ctx, st, id); err == nil {
				return nil, nil, nil, errUnexpectedState(cur.Status)
			}
		}
		return nil, nil, nil, fmt.Errorf("payments: record attempt: %w", err)
	}
	return pi, &next, card, nil
}

// firstAttempt records the attempt of a confirm that charges the intent's
// own saved card, with no new card, billing details or client secret, on
// an intent that was never attempted: at the version an intent is created
// with, in one write that checks what the confirm would have checked on
// a read (storage.AttemptStart), with the request's recovery point. ok is
// false, with nothing written, when the intent is not so (any other
// version, status, card...): the confirm then reads it and decides.
func (s *Service) firstAttempt(ctx context.Context, st *keelpay.Store, id string, p ConfirmParams) (attempt *keelpay.PaymentIntent, card *keelpay.Card, ok bool, _ error) {
	if p.Card != nil || p.ClientSecret != "" || p.Billing != nil || !keelpay.ValidID(keelpay.PrefixPaymentIntent, id) {
		return nil, nil, false, nil
	}
	now := s.now()
	a := &storage.AttemptStart{StoreID: st.ID, ID: id, ExpectedVersion: createdVersion, CardID: p.PaymentMethod,
		AttemptID: sendid.For(attemptPrefix, id, createdVersion), MerchantID: st.MerchantID,
		Now: now, ReconcileAt: nextCheck(keelpay.IntentProcessing, now, now)}
	var b storage.Batch
	b.PaymentIntentStartAttempt(a)
	p.Idempotency.Step(&b, idempotency.Attempt, a.AttemptID)
	err := s.cfg.Storage.Commit(ctx, &b)
	var we *storage.WriteError
	if errors.As(err, &we) && we.Op == "PaymentIntentStartAttempt" && errors.Is(err, storage.ErrConflict) {
		return nil, nil, false, nil
	}
	if err != nil {
		return nil, nil, false, fmt.Errorf("payments: record attempt: %w", err)
	}
	// What the write checked, checked again on what it read: an attempt
	// that does not hold up is not sent. It stays open, and the
	// reconciler closes it as never charged.
	if pi, c := a.Intent, a.Card; pi == nil || c == nil || pi.AttemptID != a.AttemptID || pi.Version != createdVersion+1 ||
		pi.Status != keelpay.IntentProcessing || c.ID != pi.CardID || c.CustomerID != pi.Customer.ID || c.Status != keelpay.CardActive {
		s.log.ErrorContext(ctx, "a first attempt was recorded but what it read back does not match it; it is not sent",
			slog.String("store_id", st.ID), slog.String("payment_intent", id), slog.String("attempt_id", a.AttemptID))
		return nil, nil, false, fmt.Errorf("payments: record attempt: the intent %s read back does not match its attempt %s", id, a.AttemptID)
	}
	return a.Intent, a.Card, true, nil
}

// chargeRequest is the provider's charge of attempt: the card p brings
// from the browser, or the saved card.
func chargeRequest(st *keelpay.Store, attempt *keelpay.PaymentIntent, card *keelpay.Card, p ConfirmParams) provider.ChargeRequest {
	req := provider.ChargeRequest{MerchantID: st.MerchantID, Amount: attempt.Amount, Currency: attempt.Currency}
	if p.Card != nil {
		req.NewCard = new(p.Card.request(st.MerchantID))
	} else {
		req.CardToken = card.ProviderToken
	}
	if b := attempt.Billing; b != nil {
		req.Billing = &provider.Billing{Country: b.Country, State: b.State, PostalCode: b.PostalCode}
	}
	return req
}

// finishAfterAnswer finishes attempt with the provider's answer a, which
// came after the confirm answered that the outcome was unknown (and
// recorded that on the intent): the intent is read again, and finished
// when its attempt is still open (without a key: the client's answer is
// the one stored for it).
func (s *Service) finishAfterAnswer(ctx context.Context, attempt *keelpay.PaymentIntent, a answer) (*keelpay.PaymentIntent, error) {
	cur, err := s.cfg.Storage.PaymentIntentGet(ctx, attempt.StoreID, attempt.ID)
	if err != nil {
		return nil, fmt.Errorf("payments: read intent after its answer: %w", err)
	}
	if cur.AttemptID != attempt.AttemptID || (cur.Status != keelpay.IntentProcessing && cur.Status != keelpay.IntentRequiresAction) {
		// Finished meanwhile (the reconciler, a retry): nothing to do.
		return cur, nil
	}
	open := *cur
	// The outcome_unknown of the early answer is not this answer's.
	open.LastError = nil
	return s.finish(ctx, &open, a, nil)
}

// intentWithCard returns the intent a confirm is for, or 404
// payment_intent_not_found, and, for a confirm with a saved card, that
// card (p.PaymentMethod, or else the intent's own) as stored, nil when
// there is none: both in one read.
func (s *Service) intentWithCard(ctx context.Context, st *keelpay.Store, id string, p ConfirmParams) (*keelpay.PaymentIntent, *keelpay.Card, error) {
	if p.Card != nil {
		pi, err := s.GetIntent(ctx, st, id)
		return pi, nil, err
	}
	if !keelpay.ValidID(keelpay.PrefixPaymentIntent, id) {
		return nil, nil, errIntentNotFound()
	}
	pi, card, err := s.cfg.Storage.PaymentIntentGetWithCard(ctx, st.ID, id, p.PaymentMethod)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, nil, errIntentNotFound()
	}
	if err != nil {
		return nil, nil, fmt.Errorf("payments: read intent: %w", err)
	}
	return pi, card, nil
}

// withdraw puts the intent back as it was before an attempt the provider
// did nothing with, and returns e (the 503 for the client).
func (s *Service) withdraw(ctx context.Context, before, attempt *keelpay.PaymentIntent, e *keelpay.Error) error {
	back := *before
	back.UpdatedAt = s.now()
	// The answer is the 503, not the intent: no key.
	if _, _, err := s.commit(ctx, attempt, step{next: back, outcome: outcomeNotSent, code: string(e.Code)}, nil); err != nil {
		return err
	}
	return e
}

// CancelIntent cancels an intent in requires_payment_method or
// requires_action for reason (requested_by_customer when empty); any other
// status is 409 payment_intent_not_cancelable. In requires_action the 3D
// Secure attempt is voided at the provider first, so that a buyer who
// answers the challenge afterwards is not charged. key is the request's
// idempotency key, or nil.
func (s *Service) CancelIntent(ctx context.Context, st *keelpay.Store, id, reason string, key *idempotency.Key) (*keelpay.PaymentIntent, error) {
	if reason == "" {
		reason = fields.CancellationRequestedByCustomer
	}
	if err := check.CancellationReason(reason); err != nil {
		return nil, err
	}
	for range raceRetries {
		pi, err := s.GetIntent(ctx, st, id)
		if err != nil {
			return nil, err
		}
		if !canCancel(pi.Status) {
			return nil, errNotCancelable(pi.Status)
		}
		if pi.Status == keelpay.IntentRequiresAction {
			next, retry, err := s.cancelChallenge(ctx, pi, reason, key)
			if !retry {
				return next, err
			}
		} else {
			next, won, err := s.commit(ctx, pi, step{next: cancel(*pi, reason, nil, s.now()), event: keelpay.EventPaymentIntentCanceled}, key)
			if err != nil || won {
				return next, err
			}
		}
		// The intent changed under us: read it again.
	}
	return nil, fmt.Errorf("payments: cancel %s: the intent kept changing", id)
}

// cancelChallenge cancels an intent waiting for 3D Secure. It marks the
// cancel first (CancellationReason while the attempt is open), so that a
// notifier or reconciler that finishes the attempt meanwhile ends it
// canceled too, then looks the attempt up and finishes it: a charge that
// happened is voided. retry is true when the intent changed before it was
// marked.
func (s *Service) cancelChallenge(ctx context.Context, pi *keelpay.PaymentIntent, reason string, key *idempotency.Key) (_ *keelpay.PaymentIntent, retry bool, _ error) {
	marked := *pi
	marked.CancellationReason, marked.UpdatedAt = reason, s.now()
	var b storage.Batch
	b.PaymentIntentUpdate(&marked, pi.Version)
	key.Step(&b, idempotency.CancelMarked, pi.ID)
	err := s.cfg.Storage.Commit(ctx, &b)
	if err != nil {
		if errors.Is(err, storage.ErrConflict) {
			return nil, true, nil
		}
		return nil, false, fmt.Errorf("payments: mark cancel: %w", err)
	}
	ctx = context.WithoutCancel(ctx)
	// What the look-up commits is not yet this request's answer (no key):
	// that is decided below, and stored after the handler.
	after, err := s.lookUp(ctx, &marked, nil)
	if err != nil {
		return nil, false, err
	}
	if after.Status == keelpay.IntentCanceled {
		return after, false, nil
	}
	if after.Status != keelpay.IntentRequiresAction {
		return nil, false, errNotCancelable(after.Status)
	}
	// The provider could not be asked or could not void: withdraw the
	// cancel, so that the buyer's answer counts again, and say so.
	unmarked := *after
	unmarked.CancellationReason, unmarked.UpdatedAt = "", s.now()
	if err := s.cfg.Storage.PaymentIntentUpdate(ctx, &unmarked, after.Version); err != nil && !errors.Is(err, storage.ErrConflict) {
		return nil, false, fmt.Errorf("payments: withdraw cancel: %w", err)
	}
	return nil, false, providercall.Unavailable(0)
}

// customerCard returns a card of the store that belongs to customerID, or
// 404 card_not_found.
func (s *Service) customerCard(ctx context.Context, st *keelpay.Store, cardID, customerID string) (*keelpay.Card, error) {
	card, err := s.GetCard(ctx, st, cardID)
	if err != nil {
		return nil, err
	}
	if card.CustomerID != customerID {
		return nil, errCardNotFound()
	}
	return card, nil
}

func savedMethod(c *keelpay.Card) *keelpay.PaymentMethod {
	return &keelpay.PaymentMethod{Brand: c.Brand, Last4: c.Last4, ExpMonth: c.ExpMonth, ExpYear: c.ExpYear, Saved: true}
}

// expireIntent cancels an unconfirmed intent past its expiry, with the
// reason expired, and returns it as stored afterwards.
func (s *Service) expireIntent(ctx context.Context, pi *keelpay.PaymentIntent) (*keelpay.PaymentIntent, error) {
	next, won, err := s.commit(ctx, pi, step{next: cancel(*pi, ReasonExpired, nil, s.now()), event: keelpay.EventPaymentIntentCanceled}, nil)
	if err != nil {
		return nil, err
	}
	if won {
		s.log.DebugContext(ctx, "payment intent expired", slog.String("store_id", pi.StoreID), slog.String("payment_intent", pi.ID))
	}
	return next, nil
}

// ResumeConfirm answers the confirm of a request that was cut off after
// it committed attempt attemptID (its process died, or it failed after
// recording the attempt), as a retry of that request with the same
// Idempotency-Key: it carries the attempt to its end with the provider's
// answer for that attempt id and returns the intent, instead of making a
// second attempt. found is false when the store has no intent with that
// attempt any more (the attempt was withdrawn because the provider did
// nothing): the confirm then runs again. Until the attempt's provider call
// could still be under way, the answer is 409 idempotency_key_in_use; after
// that, a provider that does not know the attempt yet gives processing with
// last_error outcome_unknown until ReachWindow has passed (the first run
// may still send it), and only then a failed attempt. key is the retry's
// idempotency key: the change that finishes the attempt stores the answer
// with it.
func (s *Service) ResumeConfirm(ctx context.Context, st *keelpay.Store, attemptID string, key *idempotency.Key) (_ *keelpay.PaymentIntent, found bool, _ error) {
	ctx = context.WithoutCancel(ctx)
	pi, err := s.cfg.Storage.PaymentIntentGetByAttempt(ctx, attemptID)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("payments: resume confirm: %w", err)
	}
	if pi.StoreID != st.ID || pi.AttemptID != attemptID {
		return nil, false, nil
	}
	if pi.Status != keelpay.IntentProcessing {
		// Finished, or waiting for the buyer's 3D Secure answer: that is
		// the attempt's answer.
		return pi, true, nil
	}
	if wait := pi.AttemptAt.Add(CallTimeoutMax).Sub(s.now()); wait > 0 {
		return nil, true, keelpay.ErrIdempotencyKeyInUse(wait)
	}
	pi, err = s.lookUp(ctx, pi, key)
	return pi, true, err
}
