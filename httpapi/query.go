package httpapi

import (
	"net/url"
	"strings"

	"github.com/keelpay/keelpay"
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
