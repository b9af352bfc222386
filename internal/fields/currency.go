package fields

import "golang.org/x/text/currency"

// Amount limits of a payment intent, in minor units (docs/api.md).
const (
	AmountMin = 1
	AmountMax = 1_000_000_000
)

// Amount reports whether n is an acceptable payment intent amount in minor
// units: 1 to 1000000000 (docs/api.md).
func Amount(n int64) bool {
	return AmountMin <= n && n <= AmountMax
}

// Details codes that [Currency] returns (docs/errors.md).
const (
	DetailInvalidCurrency      = "invalid_currency"
	DetailCurrencyNotSupported = "currency_not_supported"
)

// Currency checks a currency code (docs/api.md, "Amounts and currencies";
// failures in docs/errors.md). The code is an ISO 4217 alphabetic code of three ASCII letters,
// accepted in either case; code is returned in upper case.
//
// detail is "" when the code is usable, [DetailCurrencyNotSupported] when it
// is a currency whose ISO 4217 minor unit is not exactly two decimal places
// (JPY, KWD, CLF, ...), and [DetailInvalidCurrency] (with code "") when it
// is not a currency in use: unknown ("ABC"), malformed ("EU", "eur "),
// withdrawn ("DEM", "HRK"), not an ISO code (CNH), or a metal, fund or test
// code without minor units (XAU, XAG, XPT, XPD, XDR, XTS, XXX, XBA to XBD,
// XSU, XUA).
//
// The table is golang.org/x/text/currency's list of currencies in use,
// tender or not (CLF, CHE, USN and the other fund codes are ISO 4217 codes
// with minor units). That table comes from CLDR, which differs from ISO
// 4217 in two ways corrected here: its digits are display digits (COP, IDR,
// PKR and others show 0 where ISO 4217 has 2), and its data predates some
// changes (VES, SLE, ZWG, XCG, MRU are missing; HRK, VEF, MRO are still in
// use). See isoCorrections and notCurrencies.
func Currency(s string) (code, detail string) {
	if len(s) != 3 {
		return "", DetailInvalidCurrency
	}
	var b [3]byte
	for i := range 3 {
		c := s[i]
		if !isAlpha(c) {
			return "", DetailInvalidCurrency
		}
		b[i] = c &^ 0x20 // upper case
	}
	code = string(b[:])
	digits, ok := minorUnits[code]
	if !ok {
		return "", DetailInvalidCurrency
	}
	if digits != 2 {
		return code, DetailCurrencyNotSupported
	}
	return code, ""
}

// minorUnits maps each ISO 4217 code in use to its minor unit.
var minorUnits = buildMinorUnits()

// notCurrencies are codes in x/text's table of units in use that are not
// usable currencies: metal, fund and test codes without minor units (x/text
// reports 2 places for them), a code that is not ISO 4217, and currencies
// withdrawn after the CLDR data x/text carries.
var notCurrencies = []string{
	// Without minor units in ISO 4217.
	"XAG", "XAU", "XBA", "XBB", "XBC", "XBD", "XDR", "XPD", "XPT", "XSU", "XTS", "XUA", "XXX",
	// CNH (offshore yuan) is a market convention, not an ISO 4217 code.
	"CNH",
	// Withdrawn: HRK (euro, 2023), MRO (MRU, 2018), VEF (VES, 2018).
	"HRK", "MRO", "VEF",
}

// isoCorrections are the ISO 4217 minor units of codes that x/text's table
// lacks or gives other digits for.
var isoCorrections = map[string]int{
	// Missing: introduced after the CLDR data, or (SVC) still in ISO 4217
	// though CLDR considers it out of use.
	"MRU": 2, "SLE": 2, "SVC": 2, "UYW": 4, "VED": 2, "VES": 2, "XCG": 2, "ZWG": 2,
	// CLDR's display digits differ from the ISO 4217 minor unit.
	"AFN": 2, "ALL": 2, "AMD": 2, "COP": 2, "GYD": 2, "IDR": 2, "IQD": 3, "IRR": 2,
	"KPW": 2, "LAK": 2, "LBP": 2, "MGA": 2, "MMK": 2, "MNT": 2, "MUR": 2,
	"PKR": 2, "RSD": 2, "SLL": 2, "SOS": 2, "SYP": 2, "TZS": 2, "UZS": 2,
	"YER": 2,
}

func buildMinorUnits() map[string]int {
	m := make(map[string]int, 200)
	it := currency.Query(currency.NonTender)
	for it.Next() {
		u := it.Unit()
		digits, _ := currency.Standard.Rounding(u)
		m[u.String()] = digits
	}
	for _, code := range notCurrencies {
		delete(m, code)
	}
	for code, digits := range isoCorrections {
		m[code] = digits
	}
	return m
}
