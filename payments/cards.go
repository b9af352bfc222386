package payments

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/idempotency"
	"github.com/keelpay/keelpay/internal/outbox"
	"github.com/keelpay/keelpay/internal/providercall"
	"github.com/keelpay/keelpay/internal/render"
	"github.com/keelpay/keelpay/provider"
	"github.com/keelpay/keelpay/storage"
)

// CreateCardSession opens a card session of the store for a customer: the
// buyer's browser captures one card into it within CardSessionLifetime.
func (s *Service) CreateCardSession(ctx context.Context, st *keelpay.Store, p CardSessionParams) (*keelpay.CardSession, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	now := s.now()
	id := keelpay.NewID(keelpay.PrefixCardSession)
	cs := &keelpay.CardSession{
		ID:           id,
		StoreID:      st.ID,
		ClientSecret: keelpay.NewID(id + "_secret_"),
		Customer:     p.Customer,
		PageOrigins:  p.PageOrigins,
		Status:       keelpay.CardSessionOpen,
		ExpiresAt:    now.Add(CardSessionLifetime),
		CreatedAt:    now,
	}
	var b storage.Batch
	b.CardSessionInsert(cs)
	if err := p.Idempotency.Finish(&b, cs.ID, idempotency.OutcomeCreated, cs); err != nil {
		return nil, err
	}
	err := s.cfg.Storage.Commit(ctx, &b)
	if err != nil {
		return nil, fmt.Errorf("payments: insert card session: %w", err)
	}
	return cs, nil
}

// GetCardSession returns a card session of the store, or 404
// card_session_not_found. An open session past its expiry is shown
// expired, even before the expirer marked it.
func (s *Service) GetCardSession(ctx context.Context, st *keelpay.Store, id string) (*keelpay.CardSession, error) {
	if !keelpay.ValidID(keelpay.PrefixCardSession, id) {
		return nil, errCardSessionNotFound()
	}
	cs, err := s.cfg.Storage.CardSessionGet(ctx, st.ID, id)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, errCardSessionNotFound()
	}
	if err != nil {
		return nil, fmt.Errorf("payments: read card session: %w", err)
	}
	if cs.Status == keelpay.CardSessionOpen && !s.now().Before(cs.ExpiresAt) {
		cs.Status = keelpay.CardSessionExpired
	}
	return cs, nil
}

// CaptureCard saves the buyer's card through an open card session (the
// browser's call, with the session's client_secret): the provider
// tokenises it, then the card, the completed session and the card.created
// event are committed together. A wrong client_secret is 404
// card_session_not_found; a session that is not open is 409
// card_session_unexpected_state; a card the provider refuses is 422
// card_rejected.
func (s *Service) CaptureCard(ctx context.Context, st *keelpay.Store, sessionID string, p CaptureParams) (*keelpay.Card, error) {
	if err := p.Validate(s.now()); err != nil {
		return nil, err
	}
	cs, err := s.GetCardSession(ctx, st, sessionID)
	if err != nil {
		return nil, err
	}
	if subtle.ConstantTimeCompare([]byte(cs.ClientSecret), []byte(p.ClientSecret)) != 1 {
		return nil, errCardSessionNotFound()
	}
	if cs.Status != keelpay.CardSessionOpen {
		return nil, errSessionState(cs.Status)
	}

	callCtx, cancel := s.call(ctx)
	saved, err := s.cfg.Provider.SaveCard(callCtx, p.Card.request(st.MerchantID))
	cancel()
	if err != nil {
		if provider.KindOf(err) == provider.KindCardRejected {
			// The provider's reason goes to the log and the answer: it is
			// the provider's text, never the card (a refusal that is the
			// operator's to fix, such as a Stripe account without raw card
			// data access, says what to configure).
			reason := providerMessage(err)
			s.log.WarnContext(ctx, "the provider did not accept the card", slog.String("store_id", st.ID),
				slog.String("card_session", cs.ID), slog.String("reason", reason))
			return nil, errCardRejected(reason)
		}
		if e := providercall.NotSent(err); e != nil {
			return nil, e
		}
		// Saving a card moves no money: whatever the provider did, the
		// buyer may simply try again.
		s.log.WarnContext(ctx, "save card failed", slog.String("store_id", st.ID),
			slog.String("card_session", cs.ID), slog.Any("error", err))
		return nil, providercall.Unavailable(0)
	}

	now := s.now()
	card := &keelpay.Card{
		ID:            keelpay.NewID(keelpay.PrefixCard),
		StoreID:       st.ID,
		CustomerID:    cs.Customer.ID,
		CardSessionID: cs.ID,
		ProviderToken: saved.Token,
		Brand:         saved.Brand,
		Last4:         saved.Last4,
		ExpMonth:      saved.ExpMonth,
		ExpYear:       saved.ExpYear,
		Status:        keelpay.CardActive,
		CreatedAt:     now,
	}
	ev, err := outbox.Event(st.ID, keelpay.EventCardCreated, json.RawMessage(render.Card(card)), now)
	if err != nil {
		return nil, err
	}
	err = s.outbox.Commit(context.WithoutCancel(ctx), func(b *storage.Batch) error {
		b.CardSessionComplete(st.ID, cs.ID, card.ID, now)
		b.CardInsert(card)
		return nil
	}, ev)
	if errors.Is(err, storage.ErrConflict) {
		// Another capture completed the session first, or it expired.
		if cs, err := s.GetCardSession(ctx, st, cs.ID); err == nil && cs.Status != keelpay.CardSessionOpen {
			return nil, errSessionState(cs.Status)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("payments: commit capture: %w", err)
	}
	return card, nil
}

// BrowserElement returns the provider's browser element for the store's
// merchant, which the hosted card field mounts so that the card number
// goes to the provider and never to keelpay; nil, with no error, when the
// provider has none ([provider.BrowserCapture]): the card field then takes
// the card itself. An error is the provider's, as for a capture: 503 when
// it cannot be reached.
func (s *Service) BrowserElement(ctx context.Context, st *keelpay.Store) (*provider.Element, error) {
	bc, ok := s.cfg.Provider.(provider.BrowserCapture)
	if !ok {
		return nil, nil
	}
	callCtx, cancel := s.call(ctx)
	el, err := bc.BrowserElement(callCtx, st.MerchantID)
	cancel()
	if err != nil {
		if e := providercall.NotSent(err); e != nil {
			return nil, e
		}
		s.log.WarnContext(ctx, "browser element failed", slog.String("store_id", st.ID), slog.Any("error", err))
		return nil, providercall.Unavailable(0)
	}
	return el, nil
}

// GetCard returns a saved card of the store, or 404 card_not_found.
func (s *Service) GetCard(ctx context.Context, st *keelpay.Store, id string) (*keelpay.Card, error) {
	if !keelpay.ValidID(keelpay.PrefixCard, id) {
		return nil, errCardNotFound()
	}
	c, err := s.cfg.Storage.CardGet(ctx, st.ID, id)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, errCardNotFound()
	}
	if err != nil {
		return nil, fmt.Errorf("payments: read card: %w", err)
	}
	return c, nil
}

// expireSessions marks the open card sessions past their expiry expired.
func (s *Service) expireSessions(ctx context.Context, now time.Time) error {
	n, err := s.cfg.Storage.CardSessionExpireDue(ctx, now)
	if err != nil {
		return fmt.Errorf("payments: expire card sessions: %w", err)
	}
	if n > 0 {
		s.log.DebugContext(ctx, "card sessions expired", slog.Int("count", n))
	}
	return nil
}
