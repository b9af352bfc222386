package fields

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Strings used at the edges of length rules: é is two bytes, 😀 four, so a
// byte count would give a different answer from a character count.
const (
	twoByte  = "é"
	fourByte = "😀"
)

type stringCase struct {
	in   string
	want bool
}

func checkStrings(t *testing.T, name string, fn func(string) bool, tests []stringCase) {
	t.Helper()
	for _, tt := range tests {
		assert.Equal(t, tt.want, fn(tt.in), "%s(%q)", name, tt.in)
	}
}

// controlCases are strings with one control character (or invalid UTF-8),
// invalid for every rule that forbids control characters.
var controlCases = []stringCase{
	{"a\x00b", false},
	{"a\tb", false},
	{"a\nb", false},
	{"a\rb", false},
	{"a\x1fb", false},
	{"a\x7fb", false},
	{"a\u0080b", false},
	{"a\u009fb", false},
	{"a\xffb", false}, // invalid UTF-8
	{"\xc3", false},   // truncated é
}

func TestReference(t *testing.T) {
	t.Parallel()
	checkStrings(t, "Reference", Reference, append([]stringCase{
		{"", false},
		{"a", true},
		{"order 1234/A-5", true},
		{" ", true},
		{"Bestellung #42 für Müller", true},
		{"注文番号", true},
		{fourByte, true},
		{strings.Repeat("a", 100), true},
		{strings.Repeat("a", 101), false},
		{strings.Repeat(twoByte, 100), true},
		{strings.Repeat(twoByte, 101), false},
		{strings.Repeat(fourByte, 100), true},
		{strings.Repeat(fourByte, 101), false},
		// Not printable though not control characters.
		{"a\u00a0b", false}, // no-break space
		{"a\u200bb", false}, // zero-width space (Cf)
		{"a\u202eb", false}, // right-to-left override (Cf)
		{"a\u2028b", false}, // line separator
		{"a\ue000b", false}, // private use
	}, controlCases...))
}

func TestDescription(t *testing.T) {
	t.Parallel()
	checkStrings(t, "Description", Description, append([]stringCase{
		{"", true},
		{"Two T-shirts", true},
		{"a\u00a0b\u200b", true}, // not control characters
		{strings.Repeat("a", 1000), true},
		{strings.Repeat("a", 1001), false},
		{strings.Repeat(twoByte, 1000), true},
		{strings.Repeat(twoByte, 1001), false},
		{strings.Repeat(fourByte, 1000), true},
		{strings.Repeat(fourByte, 1001), false},
	}, controlCases...))
}

func TestReason(t *testing.T) {
	t.Parallel()
	checkStrings(t, "Reason", Reason, append([]stringCase{
		{"", false},
		{"x", true},
		{"Customer returned the goods", true},
		{strings.Repeat("a", 150), true},
		{strings.Repeat("a", 151), false},
		{strings.Repeat(twoByte, 150), true},
		{strings.Repeat(twoByte, 151), false},
		{strings.Repeat(fourByte, 150), true},
		{strings.Repeat(fourByte, 151), false},
	}, controlCases...))
}

func TestCancellationReason(t *testing.T) {
	t.Parallel()
	checkStrings(t, "CancellationReason", CancellationReason, []stringCase{
		{"requested_by_customer", true},
		{"abandoned", true},
		{"duplicate", true},
		{"fraudulent", true},
		{"", false},
		{"expired", false}, // used by the service only
		{"voided", false},
		{"Abandoned", false},
		{"DUPLICATE", false},
		{"fraudulent ", false},
		{"requested-by-customer", false},
	})
}

func TestMetadataKeyValue(t *testing.T) {
	t.Parallel()
	checkStrings(t, "MetadataKey", MetadataKey, []stringCase{
		{"", false},
		{"k", true},
		{"order_id", true},
		{"clé", true},
		{"a b", true},
		{strings.Repeat("k", 40), true},
		{strings.Repeat("k", 41), false},
		{strings.Repeat(twoByte, 40), true},
		{strings.Repeat(twoByte, 41), false},
		{strings.Repeat(fourByte, 40), true},
		{strings.Repeat(fourByte, 41), false},
		{"a[b", false},
		{"a]b", false},
		{"[0]", false},
		{"a\xff", false},
	})
	checkStrings(t, "MetadataValue", MetadataValue, []stringCase{
		{"", true},
		{"v", true},
		{"line 1\nline 2", true},
		{"[x]", true},
		{strings.Repeat("v", 500), true},
		{strings.Repeat("v", 501), false},
		{strings.Repeat(twoByte, 500), true},
		{strings.Repeat(twoByte, 501), false},
		{strings.Repeat(fourByte, 500), true},
		{strings.Repeat(fourByte, 501), false},
		{"\xff", false},
	})
}

func TestMetadata(t *testing.T) {
	t.Parallel()
	withKeys := func(n int) map[string]string {
		m := make(map[string]string, n)
		for i := range n {
			m[fmt.Sprintf("key%d", i)] = "v"
		}
		return m
	}
	tests := []struct {
		name string
		in   map[string]string
		want bool
	}{
		{"nil", nil, true},
		{"empty", map[string]string{}, true},
		{"one", map[string]string{"order": "42"}, true},
		{"empty value", map[string]string{"order": ""}, true},
		{"50 keys", withKeys(50), true},
		{"51 keys", withKeys(51), false},
		{"empty key", map[string]string{"": "v"}, false},
		{"bracket key", map[string]string{"a[0]": "v"}, false},
		{"long key", map[string]string{strings.Repeat("k", 41): "v"}, false},
		{"long value", map[string]string{"k": strings.Repeat("v", 501)}, false},
		{"one bad among good", map[string]string{"a": "1", "b": "2", "c]": "3"}, false},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, Metadata(tt.in), tt.name)
	}
}
