package fields

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestCardNumber(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, want string // want "" means invalid
	}{
		{"4242424242424242", "4242424242424242"},
		{"4242 4242 4242 4242", "4242424242424242"},
		{"4242-4242-4242-4242", "4242424242424242"},
		{"4242 4242-4242 4242", "4242424242424242"},
		{"3782 822463 10005", "378282246310005"}, // amex grouping
		{"5555555555554444", "5555555555554444"},
		{"2223003122003222", "2223003122003222"},
		{"6011111111111117", "6011111111111117"},
		{"4 2 4 2 4 2 4 2 4 2 4 2 4 2 4 2", "4242424242424242"},
		{"000000000000", "000000000000"},               // 12 digits, Luhn valid
		{"00000000000", ""},                            // 11 digits
		{"0000000000000000000", "0000000000000000000"}, // 19 digits
		{"00000000000000000000", ""},                   // 20 digits
		{"4242424242424241", ""},                       // Luhn
		{"4242424242424243", ""},
		{"", ""},
		{" 4242424242424242", ""},
		{"4242424242424242 ", ""},
		{"-4242424242424242", ""},
		{"4242424242424242-", ""},
		{"4242  4242 4242 4242", ""},
		{"4242--4242-4242-4242", ""},
		{"4242 -4242 4242 4242", ""},
		{"4242.4242.4242.4242", ""},
		{"4242\t4242\t4242\t4242", ""},
		{"4242424242424242\n", ""},
		{"424242424242424x", ""},
		{"４２４２４２４２４２４２４２４２", ""}, // full-width digits
		{strings.Repeat("4 ", 20) + "4", ""},
	}
	for _, tt := range tests {
		got, ok := CardNumber(tt.in)
		assert.Equal(t, tt.want != "", ok, "CardNumber(%q) ok", tt.in)
		assert.Equal(t, tt.want, got, "CardNumber(%q)", tt.in)
	}
}

func TestBrand(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"4242424242424242", BrandVisa},
		{"4000056655665556", BrandVisa},
		{"4", BrandVisa},
		{"5105105105105100", BrandMastercard},
		{"5555555555554444", BrandMastercard},
		{"5000000000000000", BrandUnknown},
		{"5600000000000000", BrandUnknown},
		{"2221000000000009", BrandMastercard},
		{"2720990000000000", BrandMastercard},
		{"2220990000000000", BrandUnknown},
		{"2721000000000000", BrandUnknown},
		{"378282246310005", BrandAmex},
		{"371449635398431", BrandAmex},
		{"340000000000009", BrandAmex},
		{"350000000000000", BrandUnknown},
		{"360000000000000", BrandUnknown},
		{"6011111111111117", BrandDiscover},
		{"6011000990139424", BrandDiscover},
		{"6012000000000000", BrandUnknown},
		{"6440000000000000", BrandDiscover},
		{"6490000000000000", BrandDiscover},
		{"6430000000000000", BrandUnknown},
		{"6500000000000000", BrandDiscover},
		{"6600000000000000", BrandUnknown},
		{"3530111333300000", BrandUnknown}, // JCB
		{"", BrandUnknown},
		{"5", BrandUnknown},
		{"222", BrandUnknown},
		{"4242 4242", BrandUnknown},
		{"x4", BrandUnknown},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, Brand(tt.in), "Brand(%q)", tt.in)
	}
}

func TestExpiry(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		name        string
		month, year int
		now         time.Time
		want        bool
	}{
		{"this month", 11, 2026, now, true},
		{"next month", 12, 2026, now, true},
		{"last month", 10, 2026, now, false},
		{"next year", 1, 2027, now, true},
		{"last year", 12, 2025, now, false},
		{"last instant of the month", 11, 2026, time.Date(2026, 11, 30, 23, 59, 59, 999999999, time.UTC), true},
		{"first instant after the month", 11, 2026, time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), false},
		// now in another zone is judged in UTC: 2026-12-01 00:30 +01:00 is
		// still November in UTC.
		{"zone before UTC", 11, 2026, time.Date(2026, 12, 1, 0, 30, 0, 0, time.FixedZone("CET", 3600)), true},
		{"zone after UTC", 11, 2026, time.Date(2026, 11, 30, 20, 0, 0, 0, time.FixedZone("UTC-5", -5*3600)), false},
		{"december rolls into next year", 12, 2026, time.Date(2026, 12, 31, 23, 59, 0, 0, time.UTC), true},
		{"20 years ahead", 12, 2046, now, true},
		{"21 years ahead", 1, 2047, now, false},
		{"month 0", 0, 2027, now, false},
		{"month 13", 13, 2027, now, false},
		{"month -1", -1, 2027, now, false},
		{"two-digit year", 12, 27, now, false},
		{"three-digit year", 12, 999, now, false},
		{"five-digit year", 12, 10000, now, false},
		{"far future year", 1, 9999, now, false},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, Expiry(tt.month, tt.year, tt.now), tt.name)
	}
}

func TestCVC(t *testing.T) {
	t.Parallel()
	tests := []struct {
		cvc, brand string
		want       bool
	}{
		{"123", BrandVisa, true},
		{"000", BrandVisa, true},
		{"1234", BrandVisa, false},
		{"12", BrandVisa, false},
		{"123", BrandMastercard, true},
		{"1234", BrandMastercard, false},
		{"123", BrandDiscover, true},
		{"1234", BrandDiscover, false},
		{"1234", BrandAmex, true},
		{"123", BrandAmex, false},
		{"12345", BrandAmex, false},
		{"123", BrandUnknown, true},
		{"1234", BrandUnknown, true},
		{"12", BrandUnknown, false},
		{"12345", BrandUnknown, false},
		{"123", "", true},
		{"", BrandVisa, false},
		{"12a", BrandVisa, false},
		{" 123", BrandVisa, false},
		{"123 ", BrandVisa, false},
		{"-12", BrandVisa, false},
		{"１２３", BrandVisa, false},
		{"12\n", BrandVisa, false},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, CVC(tt.cvc, tt.brand), "CVC(%q, %q)", tt.cvc, tt.brand)
	}
}

func TestAmount(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   int64
		want bool
	}{
		{1, true},
		{100, true},
		{1000000000, true},
		{0, false},
		{-1, false},
		{1000000001, false},
		{-9223372036854775808, false},
		{9223372036854775807, false},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, Amount(tt.in), "Amount(%d)", tt.in)
	}
}
