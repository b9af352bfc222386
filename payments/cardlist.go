package payments

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/idempotency"
	"github.com/keelpay/keelpay/internal/check"
	"github.com/keelpay/keelpay/internal/providercall"
	"github.com/keelpay/keelpay/provider"
	"github.com/keelpay/keelpay/storage"
)

// CardListParams selects a page of a customer's saved cards.
type CardListParams struct {
	// Customer is the customer's id (customer.id of its card sessions).
	Customer string
	ListParams
}

// ListCards returns a page of the saved cards of a customer of the store,
// newest first, and whether there are more in the direction of travel. A
// missing customer is 400 missing_customer, one that no customer id can be
// invalid_customer; a cursor that is not a card of that customer is 400
// invalid_starting_after or invalid_ending_before.
func (s *Service) ListCards(ctx context.Context, st *keelpay.Store, p CardListParams) ([]*keelpay.Card, bool, error) {
	if p.Customer == "" {
		return nil, false, keelpay.InvalidRequest("customer", "missing_customer", "customer (the customer's id) is required.")
	}
	if check.CustomerID(p.Customer) != nil {
		return nil, false, errInvalidCustomer("customer")
	}
	if p.Limit == 0 {
		p.Limit = ListLimitDefault
	}
	if p.Limit < 1 || p.Limit > ListLimitMax {
		return nil, false, keelpay.InvalidRequest("limit", "invalid_limit", "limit must be an integer from 1 to 100.")
	}
	if p.StartingAfter != "" && !keelpay.ValidID(keelpay.PrefixCard, p.StartingAfter) {
		return nil, false, check.InvalidCursor("starting_after")
	}
	if p.EndingBefore != "" && p.StartingAfter != "" {
		return nil, false, keelpay.InvalidRequest("ending_before", "invalid_ending_before",
			"starting_after and ending_before cannot be given together.")
	}
	if p.EndingBefore != "" && !keelpay.ValidID(keelpay.PrefixCard, p.EndingBefore) {
		return nil, false, check.InvalidCursor("ending_before")
	}
	cards, more, err := s.cfg.Storage.CardList(ctx, storage.CardListParams{
		StoreID: st.ID, CustomerID: p.Customer, Limit: p.Limit, StartingAfter: p.StartingAfter, EndingBefore: p.EndingBefore,
	})
	if errors.Is(err, storage.ErrNotFound) {
		if p.StartingAfter != "" {
			return nil, false, check.InvalidCursor("starting_after")
		}
		return nil, false, check.InvalidCursor("ending_before")
	}
	if err != nil {
		return nil, false, fmt.Errorf("payments: list cards: %w", err)
	}
	return cards, more, nil
}

func errInvalidCustomer(field string) error {
	return keelpay.InvalidRequest(field, "invalid_customer", "A customer id is 1 to 64 printable characters.")
}

// DeleteCard deletes a saved card of the store and returns it as it was:
// the provider forgets it first ([provider.CardDetacher], when the provider
// has it), then keelpay deletes it for good, its provider token with it. A
// card that does not exist, or was deleted, is 404 card_not_found. When
// the provider is unavailable the answer is 503 and nothing changed: the
// deletion may be repeated. Once deleted, the card is neither read nor
// listed, and a confirm with it (or with an intent created with it) is 404
// card_not_found. A charge of it already under way when it is deleted
// finishes as it would have.
func (s *Service) DeleteCard(ctx context.Context, st *keelpay.Store, id string) (*keelpay.Card, error) {
	card, err := s.GetCard(ctx, st, id)
	if err != nil {
		return nil, err
	}
	if err := s.detach(ctx, st, card); err != nil {
		return nil, err
	}
	err = s.cfg.Storage.CardDelete(context.WithoutCancel(ctx), st.ID, card.ID)
	if errors.Is(err, storage.ErrNotFound) {
		// A concurrent deletion won.
		return nil, errCardNotFound()
	}
	if err != nil {
		return nil, fmt.Errorf("payments: delete card: %w", err)
	}
	s.log.InfoContext(ctx, "card deleted", slog.String("store_id", st.ID), slog.String("card", card.ID))
	return card, nil
}

// detach has the provider forget a card, when it can.
func (s *Service) detach(ctx context.Context, st *keelpay.Store, card *keelpay.Card) error {
	cd, ok := s.cfg.Provider.(provider.CardDetacher)
	if !ok {
		return nil
	}
	callCtx, cancel := s.call(ctx)
	err := cd.DetachCard(callCtx, st.MerchantID, card.ProviderToken)
	cancel()
	if err == nil {
		return nil
	}
	if e := providercall.NotSent(err); e != nil {
		return e
	}
	s.log.WarnContext(ctx, "detach card failed", slog.String("store_id", st.ID),
		slog.String("card", card.ID), slog.Any("error", err))
	return providercall.Unavailable(0)
}

// Erasure is what EraseCustomer did.
type Erasure struct {
	Customer string
	// CardsDeleted, PaymentIntents and CardSessions count the cards
	// deleted and the intents and card sessions whose personal data was
	// removed.
	CardsDeleted   int
	PaymentIntents int
	CardSessions   int
}

// EraseCustomer erases the personal data of a customer of the store (a
// data subject's request to be forgotten): its saved cards are deleted as
// DeleteCard deletes them, and its name, email, phone and billing details
// are removed from the store's payment intents and card sessions, which
// keep the customer id (the store's own reference) and what the books
// need (docs/security.md). A card session still open is expired, so that
// no card is saved for the customer afterwards. Erasing a customer that
// has nothing left is not an error: every count is then 0. When the
// provider is unavailable the answer is 503 with the cards deleted so far
// gone and the rest, and the personal data, kept: the erasure may be
// repeated.
func (s *Service) EraseCustomer(ctx context.Context, st *keelpay.Store, customerID string, key *idempotency.Key) (*Erasure, error) {
	if check.CustomerID(customerID) != nil {
		return nil, errInvalidCustomer("id")
	}
	ctx = context.WithoutCancel(ctx) // an erasure half done is still an erasure to finish
	e := &Erasure{Customer: customerID}
	for {
		cards, _, err := s.cfg.Storage.CardList(ctx, storage.CardListParams{StoreID: st.ID, CustomerID: customerID, Limit: ListLimitMax})
		if err != nil {
			return nil, fmt.Errorf("payments: erase customer: list cards: %w", err)
		}
		if len(cards) == 0 {
			break
		}
		for _, c := range cards {
			if err := s.detach(ctx, st, c); err != nil {
				return nil, err
			}
			err := s.cfg.Storage.CardDelete(ctx, st.ID, c.ID)
			if err != nil && !errors.Is(err, storage.ErrNotFound) {
				return nil, fmt.Errorf("payments: erase customer: delete card: %w", err)
			}
			if err == nil {
				e.CardsDeleted++
			}
		}
	}
	// Outside a transaction, so that an adapter can wipe the old values
	// from its files once the erasure committed (storage/sqlite does).
	n, err := s.cfg.Storage.CustomerErase(ctx, st.ID, customerID)
	if err != nil {
		return nil, fmt.Errorf("payments: erase customer: %w", err)
	}
	e.PaymentIntents, e.CardSessions = n.PaymentIntents, n.CardSessions
	if key != nil {
		var b storage.Batch
		if err := key.Finish(&b, customerID, idempotency.OutcomeChanged, e); err != nil {
			return nil, err
		}
		err := s.cfg.Storage.Commit(ctx, &b)
		if err != nil {
			return nil, fmt.Errorf("payments: erase customer: %w", err)
		}
	}
	s.log.InfoContext(ctx, "customer erased", slog.String("store_id", st.ID), slog.Int("cards_deleted", e.CardsDeleted),
		slog.Int("payment_intents", e.PaymentIntents), slog.Int("card_sessions", e.CardSessions))
	return e, nil
}
