// Package fields holds the value rules of request fields: the checks that the
// HTTP layer and the services share, so that a field is judged the same way
// wherever it arrives.
//
// Every function is pure (no I/O, no clock other than the one passed in) and
// judges a Go value that has already been decoded from JSON; whether the JSON
// value had the right type is checked elsewhere. Each function documents the
// rule it implements, as docs/api.md states it.
//
// Conventions used throughout:
//
//   - Lengths are counted in characters, that is Unicode code points (runes),
//     never bytes. A string that is not valid UTF-8 is rejected by every rule.
//   - "No control characters" means no rune of Unicode category Cc
//     ([unicode.IsControl]): C0 (U+0000 to U+001F, so also tab and newline),
//     DEL (U+007F) and C1 (U+0080 to U+009F).
//   - "Printable" means [unicode.IsPrint] for every rune: letters, marks,
//     numbers, punctuation, symbols and the ASCII space. It rejects control
//     and format characters (zero-width and bidirectional controls), other
//     spaces (no-break space, ideographic space), line and paragraph
//     separators, private-use and unassigned code points.
//   - Case matters where the API says codes are case-sensitive (cancellation
//     reasons); codes from ISO standards (currencies, countries) are accepted
//     in either case and returned upper case.
//
// The static part of the webhook URL rule lives here ([WebhookURL]); the
// addresses a host name resolves to are checked when the delivery dials, by
// package netguard.
package fields
