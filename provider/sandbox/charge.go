package sandbox

import (
	"context"
	"strings"
	"time"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/provider"
)

// charge is one charge attempt. res holds its outcome except the action URL,
// which follows the current base URL.
type charge struct {
	key  attempt
	res  provider.ChargeResult
	card *card // nil when refused before a card was found
	// challengeID is set for a 3D Secure charge.
	challengeID string
	// deadline is when a pending outcome resolves or an open challenge
	// expires.
	deadline time.Time
	made     int // charges made with this attempt: 0 or 1
	// refundAttemptID is the refund send that returned or is returning
	// the money.
	refundAttemptID string
	// voidPending: a void was asked for and holds at deadline.
	// voidFailsLater: the void holds until deadline, then fails.
	// voidFailed: a void of it failed once; the next one holds.
	voidPending, voidFailsLater, voidFailed bool
}

// Charge charges a saved or a new card once per merchant and attempt id; a
// repeated call returns the stored outcome, brought up to the clock. A
// missing merchant or attempt id is [provider.KindInvalidRequest]; every
// other refusal is a failed charge. NewCard.MerchantID is not used: the card
// is saved for r.MerchantID.
func (s *Sandbox) Charge(_ context.Context, r provider.ChargeRequest) (*provider.ChargeResult, error) {
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
	c, err := onceInTx(s, key, now, tx.charge,
		func(t tx) (*charge, error) { return s.newCharge(t, key, r, now) },
		s.settleCharge, tx.saveCharge)
	if err != nil {
		return nil, err
	}
	if c.res.Status == provider.ChargePending {
		return nil, outcomeUnknown("the charge timed out")
	}
	return s.chargeResult(c), nil
}

func (s *Sandbox) newCharge(t tx, key attempt, r provider.ChargeRequest, now time.Time) (*charge, error) {
	c := &charge{key: key, res: provider.ChargeResult{Amount: r.Amount, Currency: r.Currency}}
	switch {
	case r.Amount <= 0 || !isCurrency(r.Currency):
		return c.fail(provider.FailureInvalidRequest, "", "The amount or currency is not valid."), nil
	case (r.CardToken == "") == (r.NewCard == nil):
		return c.fail(provider.FailureInvalidRequest, "", "Give either a card token or a new card."), nil
	case r.NewCard != nil:
		card, msg, err := s.tokenise(t, key.merchantID, *r.NewCard)
		if err != nil {
			return nil, err
		}
		if card == nil {
			return c.fail(provider.FailureCardRejected, "", msg), nil
		}
		c.card = card
	default:
		card, err := s.savedCard(t, r.CardToken)
		if err != nil {
			return nil, err
		}
		if card == nil || card.merchantID != key.merchantID {
			return c.fail(provider.FailureInvalidRequest, "", "The card token is not known for this merchant."), nil
		}
		c.card = card
		if card.behavior == unavailable {
			saved := card.saved
			c.res.Card = &saved
			return c.fail(provider.FailureCardUnavailable, "", "The saved card can no longer be charged."), nil
		}
	}
	saved := c.card.saved
	c.res.Card = &saved
	switch c.card.behavior {
	case declined:
		c.fail(provider.FailureCardDeclined, provider.DeclineGeneric, "The card was declined.")
	case insufficientFunds:
		c.fail(provider.FailureCardDeclined, provider.DeclineInsufficientFunds, "The card has insufficient funds.")
	case billingRequired:
		if r.Billing == nil || r.Billing.Country == "" {
			c.fail(provider.FailureBillingRequired, "", "The card needs a billing address.")
		} else {
			s.succeed(c)
		}
	case providerError:
		c.fail(provider.FailureProviderError, "", "The provider could not process the charge.")
	case threeDSecure:
		c.res.Status = provider.ChargeRequiresAction
		c.challengeID = keelpay.NewID("3ds_")
		c.deadline = now.Add(ChallengeTimeout)
	case unknownSucceeds, unknownDeclined:
		c.res.Status = provider.ChargePending
		c.deadline = now.Add(ResolveAfter)
	default:
		s.succeed(c)
	}
	return c, nil
}

// cardsKept is the most saved cards savedCard keeps in memory.
const cardsKept = 4096

// savedCard returns the saved card of token, or nil. A card never changes
// once saved, so the cards read are kept in memory (up to cardsKept, then
// forgotten together): charging a saved card read it from the database at
// every charge, under the sandbox's mutex.
func (s *Sandbox) savedCard(t tx, token string) (*card, error) {
	if c := s.cards[token]; c != nil {
		return c, nil
	}
	c, err := t.card(token)
	if err != nil || c == nil {
		return c, err
	}
	if len(s.cards) >= cardsKept {
		clear(s.cards)
	}
	s.cards[token] = c
	return c, nil
}

// isCurrency reports whether code looks like an upper-case ISO 4217 code.
func isCurrency(code string) bool {
	return len(code) == 3 && strings.Trim(code, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") == ""
}

func (c *charge) fail(code provider.FailureCode, declineCode, msg string) *charge {
	c.res.Status = provider.ChargeFailed
	c.res.Failure = &provider.Failure{Code: code, DeclineCode: declineCode, Message: msg}
	return c
}

// succeed makes the charge: it takes the money, as the card says.
func (s *Sandbox) succeed(c *charge) {
	c.res.Status = provider.ChargeSucceeded
	c.res.AuthorizationCode = strings.ToUpper(keelpay.NewID("")[:6])
	c.res.OrderID = keelpay.NewID("ord_")
	switch c.card.behavior {
	case noOrderID:
		c.res.OrderID = ""
	case currencyMismatch:
		if c.res.Currency == "EUR" {
			c.res.Currency = "USD"
		} else {
			c.res.Currency = "EUR"
		}
	case amountMismatch, voidPending, voidFailsLater:
		c.res.Amount++
	}
	c.made++
}

// settleCharge resolves an unknown outcome or expires a challenge once its
// deadline has passed, and reports whether it did.
func (s *Sandbox) settleCharge(c *charge, now time.Time) bool {
	if now.Before(c.deadline) {
		return false
	}
	switch {
	case c.voidPending:
		c.res.Voided, c.voidPending = true, false
	case c.voidFailsLater:
		// The void failed: the money is charged again. The service is
		// told (sendLater).
		c.res.Voided, c.voidFailsLater, c.voidFailed = false, false, true
		s.laterCharges = append(s.laterCharges, c.key)
	case c.res.Status == provider.ChargeRequiresAction:
		c.fail(provider.FailureAuthenticationExpired, "", "3D Secure was not answered in time.")
	case c.res.Status == provider.ChargePending && c.card.behavior == unknownSucceeds:
		s.succeed(c)
	case c.res.Status == provider.ChargePending:
		c.fail(provider.FailureCardDeclined, provider.DeclineGeneric, "The card was declined.")
	default:
		return false
	}
	return true
}

// chargeResult returns a copy of c's outcome that the caller may keep.
func (s *Sandbox) chargeResult(c *charge) *provider.ChargeResult {
	res := c.res
	if res.Status == provider.ChargeRequiresAction {
		res.ActionURL = s.baseURL + challengePath + c.challengeID
	}
	if res.Failure != nil {
		f := *res.Failure
		res.Failure = &f
	}
	if res.Card != nil {
		card := *res.Card
		res.Card = &card
	}
	return &res
}

// LookupCharge returns the outcome of the attempt: [provider.ChargePending]
// until an unknown outcome resolves, [provider.ChargeRequiresAction] while a
// challenge is open.
func (s *Sandbox) LookupCharge(ctx context.Context, merchantID, attemptID string) (*provider.ChargeResult, error) {
	defer s.sendLater(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.refuseLookup(); err != nil {
		return nil, err
	}
	c, err := s.settledCharge(attempt{merchantID, attemptID})
	if err != nil {
		return nil, err
	}
	if c == nil {
		return nil, provider.ErrUnknownAttempt
	}
	return s.chargeResult(c), nil
}

// settledCharge returns the charge of key brought up to the clock, or nil.
func (s *Sandbox) settledCharge(key attempt) (*charge, error) {
	var c *charge
	err := s.inTx(func(t tx) (err error) {
		if c, err = t.charge(key); err != nil || c == nil {
			return err
		}
		if !s.settleCharge(c, s.clock.Now()) {
			return nil
		}
		return t.saveCharge(c)
	})
	return c, err
}

// Void makes sure no money stays charged for the attempt: a charge made is
// voided; an open challenge is closed and the charge fails with
// authentication_failed; a pending outcome is voided as soon as it resolves
// as succeeded. A failed charge is left as it is. Voiding again does
// nothing.
//
// It returns nil only once the void holds: the void of
// [CardAmountMismatchVoidPending] is [provider.KindOutcomeUnknown] until
// it holds, [ResolveAfter] after it was first asked for.
func (s *Sandbox) Void(ctx context.Context, merchantID, attemptID string) error {
	defer s.sendLater(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.refuseWork(); err != nil {
		return err
	}
	var pending bool
	err := s.inTx(func(t tx) error {
		c, err := t.charge(attempt{merchantID, attemptID})
		if err != nil {
			return err
		}
		if c == nil {
			return provider.ErrUnknownAttempt
		}
		now := s.clock.Now()
		settled := s.settleCharge(c, now)
		switch {
		case c.voidPending:
			pending = true
		case !c.res.Voided && c.res.Status != provider.ChargeFailed:
			if c.res.Status == provider.ChargeRequiresAction {
				c.fail(provider.FailureAuthenticationFailed, "", "The charge was canceled before 3D Secure was answered.")
			}
			switch {
			case c.card != nil && c.card.behavior == voidPending && c.made > 0:
				c.voidPending, c.deadline, pending = true, now.Add(ResolveAfter), true
			case c.card != nil && c.card.behavior == voidFailsLater && c.made > 0 && !c.voidFailed:
				c.res.Voided, c.voidFailsLater, c.deadline = true, true, now.Add(ResolveAfter)
			default:
				c.res.Voided = true
			}
		case !settled:
			return nil
		}
		return t.saveCharge(c)
	})
	if err == nil && pending {
		return outcomeUnknown("the void is pending")
	}
	return err
}
