package fields

import (
	"unicode"
	"unicode/utf8"
)

// lengthBetween reports whether s is valid UTF-8 of min to max characters.
func lengthBetween(s string, lo, hi int) bool {
	if !utf8.ValidString(s) {
		return false
	}
	n := utf8.RuneCountInString(s)
	return lo <= n && n <= hi
}

// noControl reports whether s has no rune of category Cc.
func noControl(s string) bool {
	for _, r := range s {
		if unicode.IsControl(r) {
			return false
		}
	}
	return true
}

// printable reports whether every rune of s is printable ([unicode.IsPrint]).
func printable(s string) bool {
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

// Reference reports whether s is a valid merchant reference of a payment
// intent: 1 to 100 printable characters (docs/api.md, field rules).
// Spaces are allowed anywhere, as the rule does not forbid them.
func Reference(s string) bool {
	return lengthBetween(s, 1, 100) && printable(s)
}

// Description reports whether s is a valid description of a payment intent:
// at most 1000 characters and no control characters (docs/api.md, field
// rules). The rule sets no minimum, so the empty string is valid; whether
// the field may be absent is decided by the caller. Line breaks are control
// characters and so are rejected.
func Description(s string) bool {
	return lengthBetween(s, 0, 1000) && noControl(s)
}

// Reason reports whether s is a valid refund reason: 1 to 150 characters
// without control characters (docs/api.md).
func Reason(s string) bool {
	return lengthBetween(s, 1, 150) && noControl(s)
}

// Cancellation reasons a client may give when canceling a payment intent
// (docs/api.md, payment intent). The service itself also uses "expired"
// and "voided", which clients may not send.
const (
	CancellationRequestedByCustomer = "requested_by_customer"
	CancellationAbandoned           = "abandoned"
	CancellationDuplicate           = "duplicate"
	CancellationFraudulent          = "fraudulent"
)

// CancellationReason reports whether s is one of the cancellation reasons a
// client may give: requested_by_customer (the default when absent),
// abandoned, duplicate or fraudulent. Values are case-sensitive, like every
// other name in the API.
func CancellationReason(s string) bool {
	switch s {
	case CancellationRequestedByCustomer, CancellationAbandoned, CancellationDuplicate, CancellationFraudulent:
		return true
	}
	return false
}

// Metadata limits (Stripe's, per docs/api.md).
const (
	MetadataMaxKeys        = 50
	MetadataKeyMaxLength   = 40
	MetadataValueMaxLength = 500
)

// Metadata reports whether m is valid metadata: at most 50 keys, each a
// valid [MetadataKey], each value a valid [MetadataValue]. A nil or empty map
// is valid. That every value was a JSON string is checked by the decoder.
func Metadata(m map[string]string) bool {
	if len(m) > MetadataMaxKeys {
		return false
	}
	for k, v := range m {
		if !MetadataKey(k) || !MetadataValue(v) {
			return false
		}
	}
	return true
}

// MetadataKey reports whether k is a valid metadata key: 1 to 40 characters,
// none of them '[' or ']' (Stripe reserves brackets for its form encoding).
func MetadataKey(k string) bool {
	if !lengthBetween(k, 1, MetadataKeyMaxLength) {
		return false
	}
	for _, r := range k {
		if r == '[' || r == ']' {
			return false
		}
	}
	return true
}

// MetadataValue reports whether v is a valid metadata value: at most 500
// characters. The empty string is valid. The rule puts no limit on which
// characters a value holds, so line breaks are allowed.
func MetadataValue(v string) bool {
	return lengthBetween(v, 0, MetadataValueMaxLength)
}
