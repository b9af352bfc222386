package fields

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestCountryCode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"US", "US", true},
		{"us", "US", true},
		{"Us", "US", true},
		{"de", "DE", true},
		{"GB", "GB", true},
		{"AQ", "AQ", true}, // Antarctica is assigned
		{"AX", "AX", true},
		{"SS", "SS", true},
		{"BQ", "BQ", true},
		{"TW", "TW", true},
		{"PS", "PS", true},
		// Unassigned or user-assigned.
		{"ZZ", "", false},
		{"AA", "", false},
		{"QO", "", false},
		{"QM", "", false},
		{"XA", "", false},
		{"XK", "", false},
		// Exceptionally reserved.
		{"EU", "", false},
		{"eu", "", false},
		{"EZ", "", false},
		{"UK", "", false},
		{"UN", "", false},
		{"AC", "", false},
		{"CP", "", false},
		{"DG", "", false},
		{"EA", "", false},
		{"IC", "", false},
		{"TA", "", false},
		// Formerly used.
		{"AN", "", false},
		{"CS", "", false},
		{"DD", "", false},
		{"SU", "", false},
		{"YU", "", false},
		{"ZR", "", false},
		{"BU", "", false},
		{"TP", "", false},
		{"FX", "", false},
		{"NT", "", false},
		// Malformed.
		{"", "", false},
		{"U", "", false},
		{"USA", "", false},
		{"419", "", false},
		{"001", "", false},
		{"U1", "", false},
		{" US", "", false},
		{"US ", "", false},
		{"Ü", "", false},
		{"U\x00", "", false},
	}
	for _, tt := range tests {
		got, ok := CountryCode(tt.in)
		assert.Equal(t, tt.ok, ok, "CountryCode(%q) ok", tt.in)
		assert.Equal(t, tt.want, got, "CountryCode(%q)", tt.in)
		assert.Equal(t, tt.ok, Country(tt.in), "Country(%q)", tt.in)
	}
}

// TestCountryCount checks that exactly the 249 officially assigned ISO
// 3166-1 alpha-2 codes are accepted.
func TestCountryCount(t *testing.T) {
	t.Parallel()
	n := 0
	for a := 'A'; a <= 'Z'; a++ {
		for b := 'A'; b <= 'Z'; b++ {
			if Country(string([]rune{a, b})) {
				n++
			}
		}
	}
	assert.Equal(t, 249, n)
}

func TestState(t *testing.T) {
	t.Parallel()
	checkStrings(t, "State", State, append([]stringCase{
		{"", false},
		{"C", true},
		{"CA", true},
		{"Baden-Württemberg", true},
		{"東京都", true},
		{strings.Repeat("s", 50), true},
		{strings.Repeat("s", 51), false},
		{strings.Repeat(twoByte, 50), true},
		{strings.Repeat(twoByte, 51), false},
		{strings.Repeat(fourByte, 50), true},
		{strings.Repeat(fourByte, 51), false},
	}, controlCases...))
}

func TestPostalCode(t *testing.T) {
	t.Parallel()
	checkStrings(t, "PostalCode", PostalCode, []stringCase{
		{"", false},
		{"1", true},
		{"94103", true},
		{"94103-1234", true},
		{"SW1A 1AA", true},
		{"sw1a 1aa", true},
		{"K1A 0B1", true},
		{"1010", true},
		{strings.Repeat("9", 16), true},
		{strings.Repeat("9", 17), false},
		{"12345678 1234567", true}, // 16 with a space
		{" 94103", false},
		{"94103 ", false},
		{"-94103", false},
		{"94103-", false},
		{" ", false},
		{"-", false},
		{"SW1A\t1AA", false},
		{"SW1A_1AA", false},
		{"94103.", false},
		{"ÄB 12", false},
		{"１２３", false}, // full-width digits
		{"9410\n3", false},
	})
}
