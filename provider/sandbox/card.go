package sandbox

import (
	"cmp"
	"context"
	"strconv"
	"time"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/provider"
)

// Test card numbers (docs/sandbox-cards.md).
// All pass Luhn; any future expiry and any CVC work. Any other Luhn-valid
// number behaves as [CardVisa], with its brand from its prefix.
const (
	// CardVisa succeeds.
	CardVisa = "4242424242424242"
	// CardMastercard succeeds.
	CardMastercard = "5555555555554444"
	// CardThreeDSecure asks for a 3D Secure challenge.
	CardThreeDSecure = "4000000000003220"
	// CardDeclined is declined with generic_decline.
	CardDeclined = "4000000000000002"
	// CardInsufficientFunds is declined with insufficient_funds.
	CardInsufficientFunds = "4000000000009995"
	// CardRejected is refused when tokenised: card_rejected.
	CardRejected = "4000000000000127"
	// CardBillingRequired fails with billing_required unless the charge
	// has a billing country.
	CardBillingRequired = "4000000000000010"
	// CardProviderError fails with provider_error.
	CardProviderError = "4000000000000119"
	// CardOutcomeUnknown times out; the charge resolves as succeeded after
	// [ResolveAfter].
	CardOutcomeUnknown = "4000000000000259"
	// CardOutcomeUnknownDeclined times out; the charge resolves as declined
	// (generic_decline) after [ResolveAfter].
	CardOutcomeUnknownDeclined = "4000000000000267"
	// CardUnavailable saves fine; charges of the saved card fail with
	// card_unavailable.
	CardUnavailable = "4000000000000341"
	// CardCurrencyMismatch succeeds in another currency (USD for EUR,
	// otherwise EUR).
	CardCurrencyMismatch = "4000000000000325"
	// CardAmountMismatch succeeds with one minor unit more.
	CardAmountMismatch = "4000000000000333"
	// CardAmountMismatchVoidPending succeeds with one minor unit more, and
	// its void stays pending at the provider for [ResolveAfter] after it
	// was first asked for: until then Void is [provider.KindOutcomeUnknown]
	// and the charge is not Voided.
	CardAmountMismatchVoidPending = "4000000000000358"
	// CardAmountMismatchVoidFailsLater succeeds with one minor unit more;
	// its first void holds and fails [ResolveAfter] later (the money is
	// charged again, the charge no longer Voided), and the sandbox then
	// calls the function set with [Sandbox.SetNotifier] with the charge's
	// attempt id. A void made again holds for good.
	CardAmountMismatchVoidFailsLater = "4000000000000366"
	// CardNoOrderID succeeds without an order id.
	CardNoOrderID = "4000000000000408"
	// CardRefundRejected succeeds; refunds fail with refund_rejected.
	CardRefundRejected = "4000000000005126"
	// CardRefundOrderNotFound succeeds; refunds fail with order_not_found.
	CardRefundOrderNotFound = "4000000000005134"
	// CardRefundOutcomeUnknown succeeds; refunds time out and resolve as
	// succeeded after [ResolveAfter].
	CardRefundOutcomeUnknown = "4000000000005142"
	// CardRefundProviderError succeeds; refunds fail with provider_error.
	CardRefundProviderError = "4000000000005159"
	// CardRefundFailsLater succeeds; a refund succeeds, then fails
	// (refund_rejected) [ResolveAfter] later, as Stripe's refund.failed:
	// the sandbox then calls the function set with
	// [Sandbox.SetRefundNotifier]. A refund sent again succeeds and fails
	// later the same way.
	CardRefundFailsLater = "4000000000005167"
)

// behavior is what a test card does, by name: the sandbox stores it instead
// of the card number.
type behavior string

const (
	succeeds            behavior = "succeeds"
	threeDSecure        behavior = "three_d_secure"
	declined            behavior = "declined"
	insufficientFunds   behavior = "insufficient_funds"
	rejected            behavior = "rejected"
	billingRequired     behavior = "billing_required"
	providerError       behavior = "provider_error"
	unknownSucceeds     behavior = "unknown_succeeds"
	unknownDeclined     behavior = "unknown_declined"
	unavailable         behavior = "unavailable"
	currencyMismatch    behavior = "currency_mismatch"
	amountMismatch      behavior = "amount_mismatch"
	voidPending         behavior = "amount_mismatch_void_pending"
	voidFailsLater      behavior = "amount_mismatch_void_fails_later"
	noOrderID           behavior = "no_order_id"
	refundRejected      behavior = "refund_rejected"
	refundOrderNotFound behavior = "refund_order_not_found"
	refundUnknown       behavior = "refund_unknown"
	refundProviderError behavior = "refund_provider_error"
	refundFailsLater    behavior = "refund_fails_later"
)

// behaviorOf returns what the card number does: any number that is not a
// test card succeeds.
func behaviorOf(number string) behavior {
	return cmp.Or(testCards[number], succeeds)
}

var testCards = map[string]behavior{
	CardThreeDSecure:                 threeDSecure,
	CardDeclined:                     declined,
	CardInsufficientFunds:            insufficientFunds,
	CardRejected:                     rejected,
	CardBillingRequired:              billingRequired,
	CardProviderError:                providerError,
	CardOutcomeUnknown:               unknownSucceeds,
	CardOutcomeUnknownDeclined:       unknownDeclined,
	CardUnavailable:                  unavailable,
	CardCurrencyMismatch:             currencyMismatch,
	CardAmountMismatch:               amountMismatch,
	CardAmountMismatchVoidPending:    voidPending,
	CardAmountMismatchVoidFailsLater: voidFailsLater,
	CardNoOrderID:                    noOrderID,
	CardRefundRejected:               refundRejected,
	CardRefundOrderNotFound:          refundOrderNotFound,
	CardRefundOutcomeUnknown:         refundUnknown,
	CardRefundProviderError:          refundProviderError,
	CardRefundFailsLater:             refundFailsLater,
}

// card is a tokenised card. The sandbox keeps what the card does, not its
// number, CVC or name.
type card struct {
	merchantID string
	saved      provider.SavedCard
	behavior   behavior
}

// SaveCard tokenises a card. A number that fails Luhn (or is not 12 to 19
// digits), a past expiry and [CardRejected] are [provider.KindCardRejected].
func (s *Sandbox) SaveCard(_ context.Context, r provider.SaveCardRequest) (*provider.SavedCard, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.refuseWork(); err != nil {
		return nil, err
	}
	if r.MerchantID == "" {
		return nil, invalidRequest("a merchant id is required")
	}
	var c *card
	var msg string
	err := s.inTx(func(t tx) (err error) {
		c, msg, err = s.tokenise(t, r.MerchantID, r)
		return err
	})
	if err != nil {
		return nil, err
	}
	if c == nil {
		return nil, &provider.Error{Kind: provider.KindCardRejected, Message: msg}
	}
	saved := c.saved
	return &saved, nil
}

// DetachCard forgets a saved card of the merchant
// ([provider.CardDetacher]): later charges of its token fail with
// card_unavailable, as a card the bank stopped does. The card's row stays,
// so that its earlier charges can still be looked up and refunded. A token
// the sandbox does not know for the merchant, or detached already, is
// nil.
func (s *Sandbox) DetachCard(_ context.Context, merchantID, token string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.refuseWork(); err != nil {
		return err
	}
	if merchantID == "" {
		return invalidRequest("a merchant id is required")
	}
	err := s.inTx(func(t tx) error {
		_, err := t.ExecContext(t.ctx, qDetachCard, string(unavailable), token, merchantID)
		return dbErr(err)
	})
	delete(s.cards, token)
	return err
}

// tokenise saves the card r for merchantID, or returns why it is refused:
// the typed card, or the payment method that the sandbox's element made
// for the merchant (r.PaymentMethod), with the same test-card behaviours.
func (s *Sandbox) tokenise(t tx, merchantID string, r provider.SaveCardRequest) (*card, string, error) {
	if r.PaymentMethod != "" {
		return s.tokeniseMethod(t, merchantID, r.PaymentMethod)
	}
	switch {
	case !luhn(r.Number):
		return nil, "The card number is not valid.", nil
	case !s.unexpired(r.ExpMonth, r.ExpYear):
		return nil, "The card has expired.", nil
	case behaviorOf(r.Number) == rejected:
		return nil, "The card was not accepted.", nil
	}
	c := &card{
		merchantID: merchantID,
		behavior:   behaviorOf(r.Number),
		saved: provider.SavedCard{
			Token:    keelpay.NewID("tok_"),
			Brand:    brand(r.Number),
			Last4:    r.Number[len(r.Number)-4:],
			ExpMonth: r.ExpMonth,
			ExpYear:  r.ExpYear,
		},
	}
	if err := t.saveCard(c); err != nil {
		return nil, "", err
	}
	return c, "", nil
}

// tokeniseMethod saves the card of payment method id for merchantID. A
// payment method that is unknown, or another merchant's, is refused as a
// card that is not accepted.
func (s *Sandbox) tokeniseMethod(t tx, merchantID, id string) (*card, string, error) {
	pm, err := t.paymentMethod(id)
	switch {
	case err != nil:
		return nil, "", err
	case pm == nil || pm.merchantID != merchantID:
		return nil, "The payment method is not known for this merchant.", nil
	case !s.unexpired(pm.saved.ExpMonth, pm.saved.ExpYear):
		return nil, "The card has expired.", nil
	case pm.behavior == rejected:
		return nil, "The card was not accepted.", nil
	}
	c := &card{merchantID: merchantID, behavior: pm.behavior, saved: pm.saved}
	c.saved.Token = keelpay.NewID("tok_")
	if err := t.saveCard(c); err != nil {
		return nil, "", err
	}
	return c, "", nil
}

// unexpired reports whether the card is valid through the end of its expiry
// month on the sandbox's clock.
func (s *Sandbox) unexpired(month, year int) bool {
	if month < 1 || month > 12 {
		return false
	}
	endOfMonth := time.Date(year, time.Month(month)+1, 1, 0, 0, 0, 0, time.UTC)
	return s.clock.Now().Before(endOfMonth)
}

// luhn reports whether number is 12 to 19 digits with a valid Luhn check
// digit.
func luhn(number string) bool {
	if len(number) < 12 || len(number) > 19 {
		return false
	}
	sum := 0
	for i := range len(number) {
		d := int(number[len(number)-1-i] - '0')
		if d < 0 || d > 9 {
			return false
		}
		if i%2 == 1 {
			d *= 2
			if d > 9 {
				d -= 9
			}
		}
		sum += d
	}
	return sum%10 == 0
}

// brand tells the brand from the number's prefix (the number is all
// digits).
func brand(number string) string {
	prefix := func(n int) int {
		v, _ := strconv.Atoi(number[:n])
		return v
	}
	switch p2, p3, p4 := prefix(2), prefix(3), prefix(4); {
	case number[0] == '4':
		return provider.BrandVisa
	case 51 <= p2 && p2 <= 55, 2221 <= p4 && p4 <= 2720:
		return provider.BrandMastercard
	case p2 == 34, p2 == 37:
		return provider.BrandAmex
	case p4 == 6011, p2 == 65, 644 <= p3 && p3 <= 649:
		return provider.BrandDiscover
	}
	return provider.BrandUnknown
}
