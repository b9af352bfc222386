package httpapi

import (
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/payments"
)

// parseQuery reads a query string strictly: unreadable is invalid_query, a
// parameter not in allowed is unknown_parameter, a repeated one
// duplicate_parameter (docs/api.md), each reported with details.field.
// The map is for reading only: an empty query is the nil map.
func parseQuery(raw string, allowed ...string) (map[string]string, error) {
	if raw == "" {
		return nil, nil
	}
	out := map[string]string{}
	for _, part := range strings.Split(raw, "&") {
		if part == "" {
			continue
		}
		k, v, _ := strings.Cut(part, "=")
		key, err1 := url.QueryUnescape(k)
		val, err2 := url.QueryUnescape(v)
		if err1 != nil || err2 != nil || strings.Contains(part, ";") {
			return nil, keelpay.InvalidRequest("", "invalid_query", "The query string could not be read.")
		}
		known := false
		for _, a := range allowed {
			known = known || a == key
		}
		if !known {
			return nil, keelpay.InvalidRequest(key, "unknown_parameter", "The query has an unknown parameter; see details.field.")
		}
		if _, dup := out[key]; dup {
			return nil, keelpay.InvalidRequest(key, "duplicate_parameter", "A query parameter appears more than once.")
		}
		out[key] = val
	}
	return out, nil
}

// queryLimit parses the limit parameter (1 to 100; default 0 = the
// service's default). Anything else is invalid_limit.
func queryLimit(q map[string]string) (int, error) {
	s, ok := q["limit"]
	if !ok {
		return 0, nil
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' || n > 100 {
			n = -1
			break
		}
		n = n*10 + int(s[i]-'0')
	}
	if s == "" || n < 1 || n > 100 || (len(s) > 1 && s[0] == '0') {
		return 0, keelpay.InvalidRequest("limit", "invalid_limit", "limit must be an integer from 1 to 100.")
	}
	return n, nil
}

// queryPage reads limit, starting_after and ending_before; an empty
// cursor is invalidCursor's error (the list's own, which names its
// objects).
func queryPage(q map[string]string, invalidCursor func(field string) error) (payments.ListParams, error) {
	limit, err := queryLimit(q)
	if err != nil {
		return payments.ListParams{}, err
	}
	for _, cursor := range []string{"starting_after", "ending_before"} {
		if v, ok := q[cursor]; ok && v == "" {
			return payments.ListParams{}, invalidCursor(cursor)
		}
	}
	return payments.ListParams{Limit: limit, StartingAfter: q["starting_after"], EndingBefore: q["ending_before"]}, nil
}

// queryCreated reads the creation-time range of a list, created[gte] and
// created[lt]: each an RFC 3339 time in UTC with whole seconds
// (2026-11-21T10:00:00Z), as the API writes times; anything else is
// invalid_created with the parameter in details.field.
func queryCreated(q map[string]string) (gte, lt time.Time, err error) {
	for _, name := range []string{"created[gte]", "created[lt]"} {
		v, ok := q[name]
		if !ok {
			continue
		}
		t, perr := time.Parse(time.RFC3339, v)
		if perr != nil || !strings.HasSuffix(v, "Z") || strings.Contains(v, ".") {
			return gte, lt, keelpay.InvalidRequest(name, "invalid_created",
				name+" must be a time in RFC 3339, UTC, whole seconds: 2026-11-21T10:00:00Z.")
		}
		if name == "created[gte]" {
			gte = t
		} else {
			lt = t
		}
	}
	return gte, lt, nil
}

// queryString reads a filter of 1 to max characters; given empty or
// longer it is code.
func queryString(q map[string]string, name, code string, max int) (string, error) {
	v, ok := q[name]
	if ok && (v == "" || utf8.RuneCountInString(v) > max || !utf8.ValidString(v)) {
		return "", keelpay.InvalidRequest(name, code, name+" must be 1 to "+strconv.Itoa(max)+" characters.")
	}
	return v, nil
}
