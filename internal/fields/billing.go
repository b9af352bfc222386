package fields

import "golang.org/x/text/language"

// Country reports whether s is a valid billing country; see [CountryCode].
func Country(s string) bool {
	_, ok := CountryCode(s)
	return ok
}

// CountryCode checks a billing country and returns it in upper case. The
// rule (docs/api.md, billing): an ISO 3166-1 alpha-2 code. Like currency
// codes it is accepted in either case. Only officially assigned codes of
// current countries and territories count (249 of them); rejected are
// codes that are:
//   - unassigned or user-assigned: "ZZ", "AA", "QO", and XK (Kosovo, not
//     in ISO 3166-1);
//   - exceptionally reserved: "EU", "EZ", "UK", "UN", "AC", "CP", "DG", "EA",
//     "IC", "TA";
//   - formerly used: "AN", "CS", "DD", "SU", "YU", "ZR" and the like;
//   - not two ASCII letters, such as M.49 area codes ("419").
//
// golang.org/x/text/language supplies the table: a code counts when it is a
// country there, has a UN M.49 number and is its own canonical form. Its
// remaining deprecated codes are listed in formerCodes.
func CountryCode(s string) (string, bool) {
	if len(s) != 2 || !isAlpha(s[0]) || !isAlpha(s[1]) {
		return "", false
	}
	code := string([]byte{s[0] &^ 0x20, s[1] &^ 0x20})
	r, err := language.ParseRegion(code)
	if err != nil || !r.IsCountry() || r.M49() == 0 || r.Canonicalize() != r || formerCodes[code] {
		return "", false
	}
	return code, true
}

// formerCodes are codes that x/text treats as countries of their own though
// they are no longer (or, for XK, not) assigned in ISO 3166-1.
var formerCodes = map[string]bool{"AN": true, "CS": true, "NT": true, "SU": true, "YU": true, "XK": true}

// State reports whether s is a valid billing state or region: 1 to 50
// characters without control characters (docs/api.md, billing; the
// control-character rule is the one of the other free-text fields).
func State(s string) bool {
	return lengthBetween(s, 1, 50) && noControl(s)
}

// PostalCode reports whether s is a valid billing postal code: 1 to 16 ASCII
// letters, digits, spaces and hyphens (docs/api.md, billing). As no postal
// code begins or ends with a separator, the first and last characters must
// be a letter or digit; this also rejects padding such as " 12345".
func PostalCode(s string) bool {
	if len(s) < 1 || len(s) > 16 || !isAlnum(s[0]) || !isAlnum(s[len(s)-1]) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !isAlnum(c) && c != ' ' && c != '-' {
			return false
		}
	}
	return true
}
