package fields

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestCurrency(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, code, detail string
	}{
		{"EUR", "EUR", ""},
		{"eur", "EUR", ""},
		{"Eur", "EUR", ""},
		{"usd", "USD", ""},
		{"GBP", "GBP", ""},
		{"CHF", "CHF", ""},
		{"XCD", "XCD", ""}, // a real X currency
		// Two places in ISO 4217 though CLDR displays none.
		{"COP", "COP", ""},
		{"IDR", "IDR", ""},
		{"AMD", "AMD", ""},
		{"HUF", "HUF", ""},
		// Newer than x/text's data.
		{"VES", "VES", ""},
		{"SLE", "SLE", ""},
		{"ZWG", "ZWG", ""},
		{"XCG", "XCG", ""},
		{"MRU", "MRU", ""},
		// Fund codes with two places are ISO 4217 codes with minor units.
		{"USN", "USN", ""},
		// Other than two places.
		{"JPY", "JPY", DetailCurrencyNotSupported},
		{"jpy", "JPY", DetailCurrencyNotSupported},
		{"KRW", "KRW", DetailCurrencyNotSupported},
		{"ISK", "ISK", DetailCurrencyNotSupported},
		{"KWD", "KWD", DetailCurrencyNotSupported},
		{"BHD", "BHD", DetailCurrencyNotSupported},
		{"IQD", "IQD", DetailCurrencyNotSupported},
		{"CLF", "CLF", DetailCurrencyNotSupported},
		{"UYW", "UYW", DetailCurrencyNotSupported},
		{"UYI", "UYI", DetailCurrencyNotSupported},
		{"XOF", "XOF", DetailCurrencyNotSupported},
		{"XAF", "XAF", DetailCurrencyNotSupported},
		{"XPF", "XPF", DetailCurrencyNotSupported},
		// Metal, fund and test codes without minor units.
		{"XAU", "", DetailInvalidCurrency},
		{"xau", "", DetailInvalidCurrency},
		{"XAG", "", DetailInvalidCurrency},
		{"XPT", "", DetailInvalidCurrency},
		{"XPD", "", DetailInvalidCurrency},
		{"XDR", "", DetailInvalidCurrency},
		{"XTS", "", DetailInvalidCurrency},
		{"XXX", "", DetailInvalidCurrency},
		{"XSU", "", DetailInvalidCurrency},
		{"XUA", "", DetailInvalidCurrency},
		{"XBA", "", DetailInvalidCurrency},
		{"XBD", "", DetailInvalidCurrency},
		// Withdrawn or not ISO 4217.
		{"DEM", "", DetailInvalidCurrency},
		{"FRF", "", DetailInvalidCurrency},
		{"XEU", "", DetailInvalidCurrency},
		{"HRK", "", DetailInvalidCurrency},
		{"VEF", "", DetailInvalidCurrency},
		{"MRO", "", DetailInvalidCurrency},
		{"ZWL", "", DetailInvalidCurrency},
		{"CNH", "", DetailInvalidCurrency},
		// Not a code.
		{"ABC", "", DetailInvalidCurrency},
		{"QQQ", "", DetailInvalidCurrency},
		{"", "", DetailInvalidCurrency},
		{"EU", "", DetailInvalidCurrency},
		{"EURO", "", DetailInvalidCurrency},
		{"eur ", "", DetailInvalidCurrency},
		{" eur", "", DetailInvalidCurrency},
		{"E R", "", DetailInvalidCurrency},
		{"E1R", "", DetailInvalidCurrency},
		{"EU\x00", "", DetailInvalidCurrency},
		{"€", "", DetailInvalidCurrency}, // three bytes
		{"ÉUR", "", DetailInvalidCurrency},
		{"EUR\n", "", DetailInvalidCurrency},
		{"978", "", DetailInvalidCurrency}, // numeric code
	}
	for _, tt := range tests {
		code, detail := Currency(tt.in)
		assert.Equal(t, tt.code, code, "Currency(%q) code", tt.in)
		assert.Equal(t, tt.detail, detail, "Currency(%q) detail", tt.in)
	}
}

// TestCurrencyTable pins the whole set of usable currencies, so that an
// upgrade of golang.org/x/text that changes it is noticed.
func TestCurrencyTable(t *testing.T) {
	t.Parallel()
	want := strings.Fields(`
		AED AFN ALL AMD ANG AOA ARS AUD AWG AZN BAM BBD BDT BGN BMD BND BOB BOV BRL
		BSD BTN BWP BYN BZD CAD CDF CHE CHF CHW CNY COP COU CRC CUC CUP CVE CZK DKK
		DOP DZD EGP ERN ETB EUR FJD FKP GBP GEL GHS GIP GMD GTQ GYD HKD HNL HTG HUF
		IDR ILS INR IRR JMD KES KGS KHR KPW KYD KZT LAK LBP LKR LRD LSL MAD MDL MGA
		MKD MMK MNT MOP MRU MUR MVR MWK MXN MXV MYR MZN NAD NGN NIO NOK NPR NZD PAB
		PEN PGK PHP PKR PLN QAR RON RSD RUB SAR SBD SCR SDG SEK SGD SHP SLE SLL SOS
		SRD SSP STN SVC SYP SZL THB TJS TMT TOP TRY TTD TWD TZS UAH USD USN UYU UZS
		VED VES WST XCD XCG YER ZAR ZMW ZWG`)
	var got []string
	for a := 'A'; a <= 'Z'; a++ {
		for b := 'A'; b <= 'Z'; b++ {
			for c := 'A'; c <= 'Z'; c++ {
				if code, detail := Currency(string([]rune{a, b, c})); detail == "" {
					got = append(got, code)
				}
			}
		}
	}
	assert.Equal(t, want, got)
	assert.True(t, slices.IsSorted(want))
}
