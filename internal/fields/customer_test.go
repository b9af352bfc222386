package fields

import (
	"strings"
	"testing"
)

func TestCustomerID(t *testing.T) {
	t.Parallel()
	checkStrings(t, "CustomerID", CustomerID, append([]stringCase{
		{"", false},
		{"c", true},
		{"cus_123", true},
		{"user@example.com", true},
		{"Kunde Müller", true},
		{"顧客", true},
		{strings.Repeat("a", 64), true},
		{strings.Repeat("a", 65), false},
		{strings.Repeat(twoByte, 64), true},
		{strings.Repeat(twoByte, 65), false},
		{strings.Repeat(fourByte, 64), true},
		{strings.Repeat(fourByte, 65), false},
		{"a\u00a0b", false},
		{"a\u200db", false},
	}, controlCases...))
}

func TestName(t *testing.T) {
	t.Parallel()
	checkStrings(t, "Name", Name, append([]stringCase{
		{"", false},
		{"J", true},
		{"Jane Doe", true},
		{"José Ñúñez-O'Brien", true},
		{"山田 太郎", true},
		{strings.Repeat("a", 200), true},
		{strings.Repeat("a", 201), false},
		{strings.Repeat(twoByte, 200), true},
		{strings.Repeat(twoByte, 201), false},
		{strings.Repeat(fourByte, 200), true},
		{strings.Repeat(fourByte, 201), false},
	}, controlCases...))
}

func TestEmail(t *testing.T) {
	t.Parallel()
	// 64 + 1 + 189 = 254 characters; the domain has labels of 63 at most.
	local64 := strings.Repeat("l", 64)
	domain189 := strings.Repeat("d", 63) + "." + strings.Repeat("d", 63) + "." + strings.Repeat("d", 57) + ".com"
	checkStrings(t, "Email", Email, []stringCase{
		{"jane@example.com", true},
		{"Jane.Doe@Example.COM", true},
		{"jane+tag@mail.example.co.uk", true},
		{"a@b.co", true},
		{"o'brien@example.ie", true},
		{"!#$%&'*+-/=?^_`{|}~@example.com", true},
		{"jane@xn--bcher-kva.example", true},
		{"jane@sub-domain.example.com", true},
		{"jane@123.example.com", true},
		{local64 + "@" + domain189, true},
		{local64 + "@x" + domain189, false}, // 255
		{local64 + "l@example.com", false},  // local part 65
		{"jane@" + strings.Repeat("d", 63) + ".com", true},
		{"jane@" + strings.Repeat("d", 64) + ".com", false},
		{"", false},
		{"jane", false},
		{"@example.com", false},
		{"jane@", false},
		{"jane@example", false}, // no dot
		{"jane@example.", false},
		{"jane@.example.com", false},
		{"jane@example..com", false},
		{"jane@-example.com", false},
		{"jane@example-.com", false},
		{"jane@exa_mple.com", false},
		{"jane@192.0.2.1", false},
		{"jane@[192.0.2.1]", false},
		{"jane@example.123", false},
		{"jane@example.0x1f", false},
		{"jane@@example.com", false},
		{"ja@ne@example.com", false},
		{".jane@example.com", false},
		{"jane.@example.com", false},
		{"ja..ne@example.com", false},
		{`"jane doe"@example.com`, false},
		{"jane doe@example.com", false},
		{" jane@example.com", false},
		{"jane@example.com ", false},
		{"Jane Doe <jane@example.com>", false},
		{"<jane@example.com>", false},
		{"jane@example.com (Jane)", false},
		{"jane(comment)@example.com", false},
		{"josé@example.com", false},
		{"jane@bücher.example", false},
		{"jane@example.com\n", false},
		{"jane\x00@example.com", false},
	})
}

func TestPhone(t *testing.T) {
	t.Parallel()
	checkStrings(t, "Phone", Phone, []stringCase{
		{"+14155552671", true},
		{"+442071838750", true},
		{"+12", true},                // shortest: two digits
		{"+123456789012345", true},   // 15 digits
		{"+1234567890123456", false}, // 16 digits
		{"+1", false},
		{"+", false},
		{"", false},
		{"14155552671", false},
		{"+04155552671", false},
		{"++14155552671", false},
		{"+1 415 555 2671", false},
		{"+1-415-555-2671", false},
		{"+1(415)5552671", false},
		{"+1415555267a", false},
		{"+１４１５５５５２６７１", false}, // full-width digits
		{"+14155552671\n", false},
		{" +14155552671", false},
	})
}
