package fields

import "strings"

// CustomerID reports whether s is a valid customer id (the merchant's own
// identifier of the customer, to which saved cards belong): 1 to 64
// printable characters (docs/api.md, field rules). The id is compared
// byte for byte, so no trimming or case folding is applied, and spaces are
// allowed as the rule does not forbid them.
func CustomerID(s string) bool {
	return lengthBetween(s, 1, 64) && printable(s)
}

// Name reports whether s is a valid customer name: 1 to 200 characters
// without control characters (docs/api.md, field rules).
func Name(s string) bool {
	return lengthBetween(s, 1, 200) && noControl(s)
}

// Email reports whether s is a plain e-mail address (docs/api.md: "a plain
// address, at most 254"): local@domain and nothing else, at most 254
// characters in total.
//
//   - No display name, angle brackets, comments, quoted local part or domain
//     literal ("[192.0.2.1]"), and no spaces: forms that net/mail accepts
//     but that are not a plain address.
//   - ASCII only: the local part is a dot-atom of RFC 5322 (letters, digits
//     and !#$%&'*+-/=?^_`{|}~, dots only between them) of at most 64
//     characters; an internationalised domain must be given in its
//     xn-- (A-label) form.
//   - The domain has at least two labels of letters, digits and hyphens (1
//     to 63 each, no hyphen at either end), 253 at most in total, and does
//     not end in a number, so IP addresses are not domains.
func Email(s string) bool {
	if len(s) > 254 {
		return false
	}
	at := strings.LastIndexByte(s, '@')
	if at < 0 {
		return false
	}
	local, domain := s[:at], s[at+1:]
	if len(local) > 64 || !dotAtom(local) {
		return false
	}
	return dnsName(domain) && strings.Contains(domain, ".") && !endsInNumber(domain)
}

// dotAtom reports whether s is a dot-atom of RFC 5322: atoms of atext
// separated by single dots.
func dotAtom(s string) bool {
	if s == "" || s[0] == '.' || s[len(s)-1] == '.' || strings.Contains(s, "..") {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !isAlnum(c) && c != '.' && !strings.ContainsRune("!#$%&'*+-/=?^_`{|}~", rune(c)) {
			return false
		}
	}
	return true
}

// Phone reports whether s is a phone number in E.164 form: '+', then 2 to 15
// digits of which the first is not 0. No spaces, hyphens or parentheses: the
// client formats the number. Whether the number is assigned is not checked.
func Phone(s string) bool {
	if len(s) < 3 || len(s) > 16 || s[0] != '+' || s[1] == '0' {
		return false
	}
	return allDigits(s[1:])
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func isAlpha(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

func isAlnum(c byte) bool { return isDigit(c) || isAlpha(c) }

// allDigits reports whether s is non-empty and only ASCII digits.
func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return true
}
