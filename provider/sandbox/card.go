package sandbox

import (
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
)

// behavior is what a test card does; the zero value succeeds.
type behavior int

const (
	succeeds behavior = iota
	threeDSecure
	declined
	insufficientFunds
	rejected
	billingRequired
	providerError
	unknownSucceeds
	unknownDeclined
	unavailable
	currencyMismatch
	amountMismatch
	noOrderID
	refundRejected
	refundOrderNotFound
	refundUnknown
	refundProviderError
)

var testCards = map[string]behavior{
	CardThreeDSecure:           threeDSecure,
	CardDeclined:               declined,
	CardInsufficientFunds:      insufficientFunds,
	CardRejected:               rejected,
	CardBillingRequired:        billingRequired,
	CardProviderError:          providerError,
	CardOutcomeUnknown:         unknownSucceeds,
	CardOutcomeUnknownDeclined: unknownDeclined,
	CardUnavailable:            unavailable,
	CardCurrencyMismatch:       currencyMismatch,
	CardAmountMismatch:         amountMismatch,
	CardNoOrderID:              noOrderID,
	CardRefundRejected:         refundRejected,
	CardRefundOrderNotFound:    refundOrderNotFound,
	CardRefundOutcomeUnknown:   refundUnknown,
	CardRefundProviderError:    refundProviderError,
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
	c, msg := s.tokenise(r.MerchantID, r)
	if c == nil {
		return nil, &provider.Error{Kind: provider.KindCardRejected, Message: msg}
	}
	saved := c.saved
	return &saved, nil
}

// tokenise saves the card r for merchantID, or returns why it is refused.
func (s *Sandbox) tokenise(merchantID string, r provider.SaveCardRequest) (*card, string) {
	switch {
	case !luhn(r.Number):
		return nil, "The card number is not valid."
	case !s.unexpired(r.ExpMonth, r.ExpYear):
		return nil, "The card has expired."
	case testCards[r.Number] == rejected:
		return nil, "The card was not accepted."
	}
	c := &card{
		merchantID: merchantID,
		behavior:   testCards[r.Number],
		saved: provider.SavedCard{
			Token:    keelpay.NewID("tok_"),
			Brand:    brand(r.Number),
			Last4:    r.Number[len(r.Number)-4:],
			ExpMonth: r.ExpMonth,
			ExpYear:  r.ExpYear,
		},
	}
	s.cards[c.saved.Token] = c
	return c, ""
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
