package refunds

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/idempotency"
	"github.com/keelpay/keelpay/internal/check"
	"github.com/keelpay/keelpay/internal/outbox"
	"github.com/keelpay/keelpay/internal/providercall"
	"github.com/keelpay/keelpay/internal/render"
	"github.com/keelpay/keelpay/internal/schedule"
	"github.com/keelpay/keelpay/internal/sendid"
	"github.com/keelpay/keelpay/internal/wire"
	"github.com/keelpay/keelpay/provider"
	"github.com/keelpay/keelpay/storage"
)

// Limits of refunds (docs/api.md).
const (
	// MaxSends is the most sends of one refund.
	MaxSends = 3
	// ResendAfter is how long after a send with an unknown outcome the
	// refund may be sent again.
	ResendAfter    = 3 * time.Minute
	reconcileBatch = 100
	// refundAttemptPrefix starts the ids of refund sends, the provider's
	// idempotency keys.
	refundAttemptPrefix = "rfatt_"
	// AnswerTimeoutDefault is the default of Config.AnswerTimeout.
	AnswerTimeoutDefault = providercall.AnswerTimeoutDefault
)

// Config configures a Service. Fields are in alphabetical order.
type Config struct {
	// AnswerTimeout bounds how long a send waits for the provider's
	// answer. Past it the send answers pending with last_error
	// outcome_unknown, while the provider call goes on and its run commits
	// the outcome (the reconciler as a fallback). Keep it below the
	// WriteTimeout of the http.Server that serves the API, with a margin
	// (5 s). Default AnswerTimeoutDefault (20 s).
	AnswerTimeout time.Duration
	// CallTimeout bounds each call to the provider; past it the outcome
	// is unknown. Default provider.CallTimeoutDefault.
	CallTimeout time.Duration
	// Clock defaults to keelpay.SystemClock.
	Clock keelpay.Clock
	// Committed, when set, is called with each event after the
	// transaction that wrote it has committed: wire it to the
	// dispatcher's Notify so that the webhook leaves at once rather than
	// at the dispatcher's next poll. Default: nothing is called.
	Committed func(ctx context.Context, e *keelpay.Event)
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Metrics, when set, receives the refund metrics.
	Metrics prometheus.Registerer
	// Provider is required.
	Provider provider.Provider
	// Storage is required.
	Storage storage.Storage
}

// Service sends, reads and reconciles refunds.
type Service struct {
	cfg    Config
	outbox *outbox.Outbox
	sends  *prometheus.CounterVec
	// detached counts the sends' provider calls, which may outlive their
	// answers (Config.AnswerTimeout).
	detached providercall.Runs
}

// Drain waits until every provider call of a refund send has ended and its
// outcome is committed, including calls that went on after their send was
// answered pending (past Config.AnswerTimeout), or until ctx ends. Call it
// at shutdown, after the HTTP server stopped taking requests and before the
// storage closes; an outcome not committed by then is found by the
// reconciler at the next start.
func (s *Service) Drain(ctx context.Context) error { return s.detached.Wait(ctx) }

// WithDefaults returns a copy of c with defaults filled in.
func (c Config) WithDefaults() Config {
	c.AnswerTimeout = cmp.Or(c.AnswerTimeout, AnswerTimeoutDefault)
	c.CallTimeout = cmp.Or(c.CallTimeout, provider.CallTimeoutDefault)
	c.Clock = cmp.Or[keelpay.Clock](c.Clock, keelpay.SystemClock{})
	c.Logger = cmp.Or(c.Logger, slog.Default())
	return c
}

// Validate reports every missing or out-of-range field of c (after
// defaults), each naming its field.
func (c Config) Validate() error {
	c = c.WithDefaults()
	var errs []error
	if c.Provider == nil {
		errs = append(errs, errors.New("refunds: Config.Provider is required"))
	}
	if c.Storage == nil {
		errs = append(errs, errors.New("refunds: Config.Storage is required"))
	}
	if c.CallTimeout < 0 {
		errs = append(errs, fmt.Errorf("refunds: Config.CallTimeout is %v; it must be positive", c.CallTimeout))
	}
	if c.AnswerTimeout < 0 {
		errs = append(errs, fmt.Errorf("refunds: Config.AnswerTimeout is %v; it must be positive", c.AnswerTimeout))
	}
	return errors.Join(errs...)
}

// New validates cfg, fills in its defaults and returns a Service. The
// error names every missing or out-of-range field, and says so when
// Metrics already has the refund metrics.
func New(cfg Config) (*Service, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	s := &Service{cfg: cfg, outbox: outbox.New(cfg.Storage, cfg.Committed), sends: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "keelpay_refund_sends_total",
		Help: "Refund sends by outcome (succeeded, failed, outcome_unknown, unavailable, failed_later: succeeded, then failed at the provider).",
	}, []string{"outcome"})}
	if cfg.Metrics != nil {
		if err := cfg.Metrics.Register(s.sends); err != nil {
			return nil, fmt.Errorf("refunds: Config.Metrics: %w", err)
		}
	}
	return s, nil
}

// Params is the request of a refund send.
type Params struct {
	PaymentIntent string
	Reason        string
	Metadata      map[string]string
	// Idempotency, when set, is the request's idempotency key: the send
	// records its progress on the key and stores its answer with its
	// outcome (see package idempotency). nil: no key.
	Idempotency *idempotency.Key

	// Form is what keelpay's HTTP API learnt from the request's JSON body
	// (the keys it had, a value of the wrong JSON type), for Validate to
	// judge the fields in the documented order. Its type is internal:
	// code outside keelpay cannot obtain one and leaves it nil, and the
	// fields are then judged as Go values, an empty one being absent.
	Form *wire.Form
}

// Validate checks the fields in the documented order (docs/api.md) and
// reports the first failure as 400 invalid_request. reason has no
// "missing" code: absent, it is 0 characters, invalid_reason.
func (p *Params) Validate() error {
	v := check.In(p.Form)
	v.Required("payment_intent", func() error { return check.RefundIntent(p.PaymentIntent) })
	v.Required("reason", func() error { return check.RefundReason(p.Reason) })
	v.Optional("metadata", len(p.Metadata) == 0, func() error { return check.Metadata(p.Metadata) })
	return v.Err()
}

// Result is the outcome of Send.
type Result struct {
	Refund *keelpay.Refund
	// Created is true for the refund's first send.
	Created bool
}

// Send sends the refund of a succeeded payment intent, or sends it again.
// See the package documentation.
func (s *Service) Send(ctx context.Context, st *keelpay.Store, p Params) (*Result, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	// From here on the work runs to its end under the service's own
	// time-outs: a caller that goes away must not turn a send into an
	// unknown outcome, or leave it half recorded.
	ctx = context.WithoutCancel(ctx)
	now := s.now()
	pi, err := s.cfg.Storage.PaymentIntentGet(ctx, st.ID, p.PaymentIntent)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, keelpay.NewError(keelpay.CodePaymentIntentNotFound, "No such payment intent.")
	}
	if err != nil {
		return nil, fmt.Errorf("refund: read intent: %w", err)
	}
	before, err := s.cfg.Storage.RefundGetByIntent(ctx, st.ID, pi.ID)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return s.first(ctx, st, pi, p, now)
	case err != nil:
		return nil, fmt.Errorf("refund: read refund: %w", err)
	}
	return s.again(ctx, st, pi, before, now, p.Idempotency)
}

// first records and makes the first send of an intent's refund.
func (s *Service) first(ctx context.Context, st *keelpay.Store, pi *keelpay.PaymentIntent, p Params, now time.Time) (*Result, error) {
	if err := refundable(pi); err != nil {
		return nil, err
	}
	metadata := p.Metadata
	if metadata == nil {
		metadata = map[string]string{}
	}
	r := &keelpay.Refund{
		ID:              keelpay.NewID(keelpay.PrefixRefund),
		StoreID:         st.ID,
		PaymentIntentID: pi.ID,
		Amount:          pi.Amount,
		Currency:        pi.Currency,
		Reason:          p.Reason,
		Metadata:        metadata,
		Status:          keelpay.RefundPending,
		Attempts:        1,
		AttemptID:       refundSendID(pi, 1),
		LastSentAt:      now,
		ReconcileAt:     schedule.Next(now, now),
		CreatedAt:       now,
		UpdatedAt:       now,
		Version:         1,
	}
	linked := *pi
	linked.RefundID = r.ID
	linked.UpdatedAt = now
	var b storage.Batch
	b.RefundInsert(r)
	b.PaymentIntentUpdate(&linked, pi.Version)
	p.Idempotency.Step(&b, idempotency.RefundSent, r.ID)
	err := s.cfg.Storage.Commit(ctx, &b)
	if errors.Is(err, storage.ErrDuplicate) || errors.Is(err, storage.ErrConflict) {
		// Another first send of this intent won the race.
		return nil, inProgress(ResendAfter)
	}
	if err != nil {
		return nil, fmt.Errorf("refund: record first send: %w", err)
	}
	r.Version = 1
	out, err := s.send(ctx, st, pi, r, p.Idempotency, func(b *storage.Batch) {
		// Nothing is kept: no refund, and the intent's link is undone.
		b.RefundDelete(r.StoreID, r.ID, r.Version)
		unlinked := linked
		unlinked.RefundID = ""
		b.PaymentIntentUpdate(&unlinked, linked.Version)
	})
	if err != nil {
		return nil, err
	}
	return &Result{Refund: out, Created: true}, nil
}

// refundSendID is the id of send n (from 1) of the refund of pi, the
// provider's idempotency key: derived from the charge it refunds (pi's
// attempt) and the send's number, so that a send made again after the
// database lost the commits that recorded it (a failover to an
// asynchronous standby, a restored backup) carries the same key, and the
// provider answers with the first payout instead of making a second, or
// refusing it as "already refunded" while the money went back. Neither
// depends on the intent's version, which the reconciler may move on
// differently after such a loss. A charge has one refund, which makes at
// most MaxSends sends.
func refundSendID(pi *keelpay.PaymentIntent, n int) string {
	return sendid.For(refundAttemptPrefix, pi.AttemptID, int64(n))
}

// again sends an existing refund again, where the rules allow it.
func (s *Service) again(ctx context.Context, st *keelpay.Store, pi *keelpay.PaymentIntent, before *keelpay.Refund, now time.Time, key *idempotency.Key) (*Result, error) {
	next, err := resend(*before, refundSendID(pi, before.Attempts+1), now)
	if err != nil {
		return nil, err
	}
	var b storage.Batch
	b.RefundUpdate(&next, before.Version)
	key.Step(&b, idempotency.RefundSent, next.ID)
	err = s.cfg.Storage.Commit(ctx, &b)
	if errors.Is(err, storage.ErrConflict) {
		return nil, inProgress(ResendAfter)
	}
	if err != nil {
		return nil, fmt.Errorf("refund: record send: %w", err)
	}
	out, err := s.send(ctx, st, pi, &next, key, func(b *storage.Batch) {
		restored := *before
		restored.UpdatedAt = s.now()
		b.RefundUpdate(&restored, next.Version)
	})
	if err != nil {
		return nil, err
	}
	return &Result{Refund: out}, nil
}

// send calls the provider for a recorded send and commits the outcome.
// When the provider did nothing (unavailable), revert undoes the record and
// the error is 503. key, when set, stores the request's answer with the
// outcome.
func (s *Service) send(ctx context.Context, st *keelpay.Store, pi *keelpay.PaymentIntent, r *keelpay.Refund, key *idempotency.Key,
	revert func(b *storage.Batch)) (*keelpay.Refund, error) {
	// The request waits for the provider at most AnswerTimeout, so that
	// it is answered before the HTTP server's WriteTimeout; the call and
	// the commit of its outcome go on on their own.
	// marked is closed once a send that gave up on the provider has
	// recorded its answer (outcome_unknown) on the refund.
	marked := make(chan struct{})
	out, err, answered := providercall.Detach(&s.detached, s.cfg.AnswerTimeout, func(claim func() bool) (*keelpay.Refund, error) {
		return s.call(ctx, st, pi, r, key, revert, func() bool {
			if claim() {
				return true
			}
			<-marked
			return false
		})
	}, func(panicked any) {
		s.cfg.Logger.ErrorContext(ctx, "the refund's provider call panicked after the send was answered; the reconciler finishes it",
			slog.String("refund_id", r.ID), slog.Any("panic", panicked))
	})
	if answered {
		return out, err
	}
	defer close(marked)
	s.cfg.Logger.WarnContext(ctx, "the provider did not answer before the refund's answer deadline; the outcome is unknown for now",
		slog.String("refund_id", r.ID), slog.Duration("answer_timeout", s.cfg.AnswerTimeout))
	// The refund says what the client is told: pending, outcome unknown.
	u, err := s.markUnknown(ctx, r, nil)
	if err != nil {
		s.cfg.Logger.ErrorContext(ctx, "refund: record the unknown outcome of a send past its answer deadline",
			slog.String("refund_id", r.ID), slog.Any("error", err))
		v := unknown(*r, s.now())
		u = &v
	}
	return u, nil
}

// call makes the provider call of send and commits its outcome. claim
// (see providercall.Detach) says whether the request still waits for it:
// when it does not, the outcome is committed without its key, and a send
// the provider did not take stays recorded (pending, outcome_unknown, as
// the request was answered) for the reconciler to make.
func (s *Service) call(ctx context.Context, st *keelpay.Store, pi *keelpay.PaymentIntent, r *keelpay.Refund, key *idempotency.Key,
	revert func(b *storage.Batch), claim func() bool) (*keelpay.Refund, error) {
	pctx, cancel := providercall.Context(ctx, s.cfg.CallTimeout)
	res, err := s.cfg.Provider.Refund(pctx, provider.RefundRequest{
		MerchantID:      st.MerchantID,
		AttemptID:       r.AttemptID,
		ChargeAttemptID: pi.AttemptID,
		OrderID:         pi.OrderID,
		Amount:          r.Amount,
		Currency:        r.Currency,
	})
	cancel()
	// The outcome is committed even if the caller went away: the provider
	// may have paid out.
	ctx = context.WithoutCancel(ctx)
	if !claim() {
		// The client was answered pending with outcome_unknown, which
		// is recorded on the refund now: read it again, and commit the
		// outcome over it, without the key.
		key = nil
		cur, rerr := s.cfg.Storage.RefundGet(ctx, r.StoreID, r.ID)
		if rerr != nil {
			return nil, fmt.Errorf("refund: read after its answer: %w", rerr)
		}
		if cur.AttemptID != r.AttemptID || cur.Status != keelpay.RefundPending {
			return cur, nil // settled meanwhile
		}
		r = cur
		if providercall.NotSent(err) != nil {
			// Nothing was sent, but the client was told pending: the
			// record stays, and the reconciler sends it.
			s.sends.WithLabelValues("unavailable").Inc()
			return s.markUnknown(ctx, r, nil)
		}
	}
	if unavailable := providercall.NotSent(err); unavailable != nil {
		s.sends.WithLabelValues("unavailable").Inc()
		var b storage.Batch
		revert(&b)
		if rerr := s.cfg.Storage.Commit(ctx, &b); rerr != nil {
			// The record stays pending; the reconciler will find the
			// provider never saw the attempt and send it then.
			s.cfg.Logger.ErrorContext(ctx, "refund: undo a send the provider did not take",
				slog.String("refund_id", r.ID), slog.Any("error", rerr))
		}
		return nil, unavailable
	}
	if err != nil {
		// It is unknown whether the refund was paid out.
		s.sends.WithLabelValues("outcome_unknown").Inc()
		s.cfg.Logger.WarnContext(ctx, "refund: outcome unknown", slog.String("refund_id", r.ID), slog.Any("error", err))
		return s.markUnknown(ctx, r, key)
	}
	return s.settle(ctx, r, res, key)
}

// markUnknown records that a send's outcome is unknown (with the answer of
// the request that holds key, when set).
func (s *Service) markUnknown(ctx context.Context, r *keelpay.Refund, key *idempotency.Key) (*keelpay.Refund, error) {
	next := unknown(*r, s.now())
	var b storage.Batch
	b.RefundUpdate(&next, r.Version)
	next.Version = r.Version + 1
	if err := finish(&b, key, &next); err != nil {
		return nil, err
	}
	err := s.cfg.Storage.Commit(ctx, &b)
	if errors.Is(err, storage.ErrConflict) {
		return s.cfg.Storage.RefundGet(ctx, r.StoreID, r.ID)
	}
	if err != nil {
		return nil, fmt.Errorf("refund: record unknown outcome: %w", err)
	}
	return &next, nil
}

// settle commits a final outcome with its event, once: a refund that
// another process settled first is returned as it is. key, when set,
// stores the answer of the request that holds it with the outcome.
func (s *Service) settle(ctx context.Context, r *keelpay.Refund, res *provider.RefundResult, key *idempotency.Key) (*keelpay.Refund, error) {
	now := s.now()
	next, typ := settled(*r, res, now)
	if typ == "" {
		// Still pending at the provider: look again on the schedule.
		s.sends.WithLabelValues("outcome_unknown").Inc()
		return s.markUnknown(ctx, r, key)
	}
	s.sends.WithLabelValues(string(next.Status)).Inc()
	return s.commitOutcome(ctx, r, next, typ, key)
}

// commitOutcome commits next over r with its event typ, once: a refund
// that another process changed first is returned as it is now. key, when
// set, stores the answer of the request that holds it with the outcome.
func (s *Service) commitOutcome(ctx context.Context, r *keelpay.Refund, next keelpay.Refund, typ keelpay.EventType, key *idempotency.Key) (*keelpay.Refund, error) {
	e, err := outbox.Event(r.StoreID, typ, json.RawMessage(render.Refund(&next)), next.UpdatedAt)
	if err != nil {
		return nil, err
	}
	err = s.outbox.Commit(ctx, func(b *storage.Batch) error {
		b.RefundUpdate(&next, r.Version)
		// A request with an idempotency key stores its answer with the
		// outcome: a retry after a crash gets it, not another send.
		next.Version = r.Version + 1
		return finish(b, key, &next)
	}, e)
	if errors.Is(err, storage.ErrConflict) {
		return s.cfg.Storage.RefundGet(ctx, r.StoreID, r.ID)
	}
	if err != nil {
		return nil, fmt.Errorf("refund: record outcome: %w", err)
	}
	return &next, nil
}

// Get returns a refund of the store, or 404 refund_not_found.
func (s *Service) Get(ctx context.Context, st *keelpay.Store, id string) (*keelpay.Refund, error) {
	if !keelpay.ValidID(keelpay.PrefixRefund, id) {
		return nil, errRefundNotFound()
	}
	r, err := s.cfg.Storage.RefundGet(ctx, st.ID, id)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, errRefundNotFound()
	}
	return r, err
}

// Reconcile makes one pass over the pending refunds that are due to be
// looked up, and settles those the provider knows. Safe to run in several
// processes: each settlement is conditional on the refund's version.
func (s *Service) Reconcile(ctx context.Context) error {
	due, err := s.cfg.Storage.RefundListReconcileDue(ctx, s.now(), reconcileBatch)
	if err != nil {
		return fmt.Errorf("refund reconcile: %w", err)
	}
	var errs []error
	for _, r := range due {
		if err := s.reconcile(ctx, r, nil); err != nil {
			errs = append(errs, fmt.Errorf("refund %s: %w", r.ID, err))
		}
	}
	return errors.Join(errs...)
}

// reconcile looks a pending refund up and settles it (with the answer of
// the request that holds key, when set).
func (s *Service) reconcile(ctx context.Context, r *keelpay.Refund, key *idempotency.Key) error {
	st, err := s.cfg.Storage.StoreGetByID(ctx, r.StoreID)
	if err != nil {
		return err
	}
	lctx, cancel := providercall.Context(ctx, s.cfg.CallTimeout)
	res, err := s.cfg.Provider.LookupRefund(lctx, st.MerchantID, r.AttemptID)
	cancel()
	if errors.Is(err, provider.ErrUnknownAttempt) {
		// The send was recorded but never reached the provider (the
		// process died before the call): make it now, same attempt id.
		pi, perr := s.cfg.Storage.PaymentIntentGet(ctx, r.StoreID, r.PaymentIntentID)
		if perr != nil {
			return perr
		}
		pctx, cancel := providercall.Context(ctx, s.cfg.CallTimeout)
		res, err = s.cfg.Provider.Refund(pctx, provider.RefundRequest{
			MerchantID: st.MerchantID, AttemptID: r.AttemptID, ChargeAttemptID: pi.AttemptID,
			OrderID: pi.OrderID, Amount: r.Amount, Currency: r.Currency,
		})
		cancel()
	}
	if err == nil && res.Status != provider.RefundPending {
		_, err = s.settle(ctx, r, res, key)
		return err
	}
	if err != nil && !provider.IsOutcomeUnknown(err) && provider.KindOf(err) != provider.KindUnavailable &&
		provider.KindOf(err) != provider.KindAccessPending {
		return err
	}
	// Not known yet: look again on the schedule.
	next := lookAgain(*r, s.now())
	if err := s.cfg.Storage.RefundUpdate(ctx, &next, r.Version); err != nil && !errors.Is(err, storage.ErrConflict) {
		return err
	}
	return nil
}

// NotifyRefund is the provider's notification that a refund send changed
// after it was answered: a pending send ended, or a send the provider
// reported succeeded failed later (Stripe's refund.failed). It is a
// [provider.NotifyFunc]: register it with a provider that implements
// [provider.RefundNotifier] (service.New does), or call it from an adapter
// that receives the provider's webhooks. A notification is only a hint:
// the service looks the send up and trusts that answer alone. A pending
// refund is settled as the reconciler would; a succeeded one whose send
// the provider now reports failed becomes failed (refund_rejected, the
// provider's message, event refund.failed) and may be sent again. One that
// names no refund's last send of that merchant is ignored.
func (s *Service) NotifyRefund(ctx context.Context, merchantID, attemptID string) {
	ctx = context.WithoutCancel(ctx)
	attrs := []any{slog.String("attempt", attemptID)}
	r, err := s.cfg.Storage.RefundGetByAttempt(ctx, attemptID)
	if err != nil {
		if !errors.Is(err, storage.ErrNotFound) {
			s.cfg.Logger.ErrorContext(ctx, "refund notification: read refund", append(attrs, slog.Any("error", err))...)
		}
		return
	}
	attrs = append(attrs, slog.String("store_id", r.StoreID), slog.String("refund_id", r.ID))
	st, err := s.cfg.Storage.StoreGetByID(ctx, r.StoreID)
	if err != nil {
		s.cfg.Logger.ErrorContext(ctx, "refund notification: read store", append(attrs, slog.Any("error", err))...)
		return
	}
	if st.MerchantID != merchantID || r.AttemptID != attemptID {
		return
	}
	switch r.Status {
	case keelpay.RefundPending:
		err = s.reconcile(ctx, r, nil)
	case keelpay.RefundSucceeded:
		err = s.recheck(ctx, st, r)
	}
	if err != nil {
		s.cfg.Logger.ErrorContext(ctx, "refund notification: settle", append(attrs, slog.Any("error", err))...)
	}
}

// recheck looks a succeeded refund's send up again and, when the provider
// now reports it failed, makes the refund failed (failedLater).
func (s *Service) recheck(ctx context.Context, st *keelpay.Store, r *keelpay.Refund) error {
	lctx, cancel := providercall.Context(ctx, s.cfg.CallTimeout)
	res, err := s.cfg.Provider.LookupRefund(lctx, st.MerchantID, r.AttemptID)
	cancel()
	if err != nil {
		return err
	}
	next, typ := failedLater(*r, res, s.now())
	if typ == "" {
		return nil
	}
	s.sends.WithLabelValues("failed_later").Inc()
	s.cfg.Logger.WarnContext(ctx, "a refund that had succeeded failed at the provider",
		slog.String("store_id", r.StoreID), slog.String("refund_id", r.ID), slog.String("attempt", r.AttemptID))
	_, err = s.commitOutcome(ctx, r, next, typ, nil)
	return err
}

func (s *Service) now() time.Time { return s.cfg.Clock.Now().Truncate(time.Microsecond) }

func errRefundNotFound() error {
	return keelpay.NewError(keelpay.CodeRefundNotFound, "No such refund.")
}

// Resume answers the send of a request that was cut off after it recorded
// the send of refund id (its process died, or it failed after recording),
// as a retry of that request with the same Idempotency-Key: a send whose
// outcome is not committed yet is looked up at the provider by its attempt
// id (and made, with the same attempt id, if it never arrived) instead of
// being sent again. found is false when the store has no such refund (the
// first send was undone because the provider did nothing): the send then
// runs again. Until the send's provider call could still be under way,
// the answer is 409 idempotency_key_in_use. key is the retry's idempotency
// key: the change that settles the send stores the answer with it.
func (s *Service) Resume(ctx context.Context, st *keelpay.Store, id string, key *idempotency.Key) (_ *Result, found bool, _ error) {
	ctx = context.WithoutCancel(ctx)
	r, err := s.cfg.Storage.RefundGet(ctx, st.ID, id)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("refund: resume: %w", err)
	}
	if r.Status == keelpay.RefundPending {
		if wait := r.LastSentAt.Add(s.cfg.CallTimeout).Sub(s.now()); wait > 0 {
			return nil, true, keelpay.ErrIdempotencyKeyInUse(wait)
		}
		if err := s.reconcile(ctx, r, key); err != nil {
			return nil, true, fmt.Errorf("refund: resume: %w", err)
		}
		if r, err = s.cfg.Storage.RefundGet(ctx, st.ID, id); err != nil {
			return nil, true, fmt.Errorf("refund: resume: %w", err)
		}
	}
	return &Result{Refund: r, Created: r.Attempts == 1}, true, nil
}

// finish records in b, with the change, the answer of the request that
// holds key: refund r, 201 for its first send and 200 for a send again.
// Nothing without a key.
func finish(b *storage.Batch, key *idempotency.Key, r *keelpay.Refund) error {
	if key == nil {
		return nil
	}
	return key.Finish(b, r.ID, SendOutcome(r), r)
}

// SendOutcome is what a send that returned r did: created the refund (its
// first send) or changed it (a send again).
func SendOutcome(r *keelpay.Refund) idempotency.Outcome {
	if r.Attempts == 1 {
		return idempotency.OutcomeCreated
	}
	return idempotency.OutcomeChanged
}

// ListParams selects a page of a store's refunds: Limit 1 to 100 (0 is
// the default, 10), at most one of the cursors StartingAfter (older than
// that refund) and EndingBefore (newer), and the filters that are set,
// combined.
type ListParams struct {
	Limit         int
	StartingAfter string
	EndingBefore  string
	// PaymentIntent and Status keep only the refunds of that intent or
	// with that status (pending, failed or succeeded, else 400
	// invalid_status).
	PaymentIntent string
	Status        keelpay.RefundStatus
	// CreatedGTE and CreatedLT, when not zero, keep only the refunds
	// created at or after CreatedGTE and before CreatedLT.
	CreatedGTE, CreatedLT time.Time
}

// List returns a page of the store's refunds that match the filters,
// newest first (by creation), and whether there are more in the direction
// of travel. A cursor that is not a refund of the store is 400
// invalid_starting_after or invalid_ending_before.
func (s *Service) List(ctx context.Context, st *keelpay.Store, p ListParams) ([]*keelpay.Refund, bool, error) {
	switch p.Status {
	case "", keelpay.RefundPending, keelpay.RefundFailed, keelpay.RefundSucceeded:
	default:
		return nil, false, keelpay.InvalidRequest("status", "invalid_status", "status must be one of the refund statuses.")
	}
	if p.PaymentIntent != "" && !keelpay.ValidID(keelpay.PrefixPaymentIntent, p.PaymentIntent) {
		return nil, false, keelpay.InvalidRequest("payment_intent", "invalid_payment_intent", "payment_intent must be a payment intent id.")
	}
	if p.Limit == 0 {
		p.Limit = 10
	}
	if p.Limit < 1 || p.Limit > 100 {
		return nil, false, keelpay.InvalidRequest("limit", "invalid_limit", "limit must be an integer from 1 to 100.")
	}
	if p.StartingAfter != "" && p.EndingBefore != "" {
		return nil, false, keelpay.InvalidRequest("ending_before", "invalid_ending_before",
			"starting_after and ending_before cannot be given together.")
	}
	for field, id := range map[string]string{"starting_after": p.StartingAfter, "ending_before": p.EndingBefore} {
		if id != "" && !keelpay.ValidID(keelpay.PrefixRefund, id) {
			return nil, false, InvalidCursor(field)
		}
	}
	list, more, err := s.cfg.Storage.RefundList(ctx, storage.RefundListParams{
		StoreID: st.ID, PaymentIntentID: p.PaymentIntent, Status: p.Status,
		CreatedGTE: p.CreatedGTE, CreatedLT: p.CreatedLT,
		Limit: p.Limit, StartingAfter: p.StartingAfter, EndingBefore: p.EndingBefore,
	})
	if errors.Is(err, storage.ErrNotFound) {
		if p.StartingAfter != "" {
			return nil, false, InvalidCursor("starting_after")
		}
		return nil, false, InvalidCursor("ending_before")
	}
	if err != nil {
		return nil, false, fmt.Errorf("refund: list: %w", err)
	}
	return list, more, nil
}

// InvalidCursor is the 400 of a list cursor (starting_after or
// ending_before) that is not the id of a refund of the store.
func InvalidCursor(field string) error {
	return keelpay.InvalidRequest(field, "invalid_"+field, field+" must be the id of a refund of the store.")
}
