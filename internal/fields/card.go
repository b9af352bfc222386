package fields

import "time"

// Card brands that [Brand] returns.
const (
	BrandVisa       = "visa"
	BrandMastercard = "mastercard"
	BrandAmex       = "amex"
	BrandDiscover   = "discover"
	BrandUnknown    = "unknown"
)

// CardNumber checks a card number as the buyer typed it and returns its
// digits. Rule (docs/api.md, card capture; failure is details.code
// invalid_number): 12 to 19 ASCII digits passing the Luhn check. Single
// spaces or hyphens between digits are allowed and removed, anywhere (brands
// group digits differently); nothing else is: no leading or trailing
// separator, no two in a row, no other character.
func CardNumber(s string) (digits string, ok bool) {
	if len(s) > 2*19 {
		return "", false
	}
	b := make([]byte, 0, 19)
	afterDigit := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case isDigit(c):
			b = append(b, c)
			afterDigit = true
		case (c == ' ' || c == '-') && afterDigit:
			afterDigit = false
		default:
			return "", false
		}
	}
	if !afterDigit || len(b) < 12 || len(b) > 19 || !luhn(b) {
		return "", false
	}
	return string(b), true
}

// luhn reports whether the digits pass the Luhn (mod 10) check.
func luhn(digits []byte) bool {
	sum := 0
	double := false
	for i := len(digits) - 1; i >= 0; i-- {
		d := int(digits[i] - '0')
		if double {
			d *= 2
			if d > 9 {
				d -= 9
			}
		}
		sum += d
		double = !double
	}
	return sum%10 == 0
}

// Brand returns the brand of a card number given as digits (as returned by
// [CardNumber]), from its leading digits: visa 4; mastercard 51 to 55 and
// 2221 to 2720; amex 34 and 37; discover 6011, 644 to 649 and 65; anything
// else, including input that is not digits, is [BrandUnknown].
func Brand(digits string) string {
	if !allDigits(digits) {
		return BrandUnknown
	}
	p2, p3, p4 := prefix(digits, 2), prefix(digits, 3), prefix(digits, 4)
	switch {
	case digits[0] == '4':
		return BrandVisa
	case 51 <= p2 && p2 <= 55, 2221 <= p4 && p4 <= 2720:
		return BrandMastercard
	case p2 == 34, p2 == 37:
		return BrandAmex
	case p4 == 6011, 644 <= p3 && p3 <= 649, p2 == 65:
		return BrandDiscover
	}
	return BrandUnknown
}

// prefix returns the number formed by the first n digits of digits, or -1
// when there are fewer.
func prefix(digits string, n int) int {
	if len(digits) < n {
		return -1
	}
	v := 0
	for i := range n {
		v = v*10 + int(digits[i]-'0')
	}
	return v
}

// CardMaxYearsAhead is how many years after the current one an expiry year
// may be.
const CardMaxYearsAhead = 20

// Expiry reports whether a card's expiry is acceptable at now (docs/api.md,
// card capture; failure is details.code invalid_expiry): month 1 to 12, year
// with four digits (two-digit years such as 27 are rejected, not guessed),
// not past the end of that month in UTC, and at most 20 years after now's
// year. A card is valid through the last instant of its expiry month.
func Expiry(month, year int, now time.Time) bool {
	if month < 1 || month > 12 || year < 1000 || year > 9999 {
		return false
	}
	now = now.UTC()
	endOfMonth := time.Date(year, time.Month(month)+1, 1, 0, 0, 0, 0, time.UTC)
	return now.Before(endOfMonth) && year <= now.Year()+CardMaxYearsAhead
}

// CVC reports whether s is a well-formed card security code for the brand
// (docs/api.md, card capture; failure is details.code invalid_cvc): ASCII
// digits, 4 of them for amex, 3 for the other known brands, and 3 or 4 for
// an unknown brand.
func CVC(s, brand string) bool {
	if !allDigits(s) {
		return false
	}
	switch brand {
	case BrandAmex:
		return len(s) == 4
	case BrandVisa, BrandMastercard, BrandDiscover:
		return len(s) == 3
	}
	return len(s) == 3 || len(s) == 4
}
