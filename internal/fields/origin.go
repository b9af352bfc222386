package fields

import (
	"net/url"
	"strconv"
	"strings"

	"github.com/keelpay/keelpay/internal/netguard"
)

// PageOrigins limits (docs/api.md, card session).
const (
	PageOriginsMin = 1
	PageOriginsMax = 10
)

// PageOrigin checks one entry of a card session's page_origins and returns
// it in canonical form. The rule (docs/api.md, card session): an origin
// scheme://host[:port], https, or http only for a local development host,
// with no path. The origin becomes a frame-ancestors source and a
// postMessage target, so it must be exactly what a browser reports as the
// page's origin:
//
//   - The scheme is https, or http when the host is localhost, 127.0.0.1 or
//     [::1]. Scheme and host are matched case-insensitively and returned in
//     lower case.
//   - Nothing follows the authority: no path, not even a lone "/" (a browser
//     never puts one in an origin), no query, no fragment; and there is no
//     user info.
//   - The host is an ASCII DNS name (an internationalised name in its xn--
//     form), a dotted-quad IPv4 address or a bracketed IPv6 address; see
//     parseHost. A trailing dot is rejected.
//   - The port, when present, is 1 to 65535 without leading zeros; the
//     scheme's default port (443 for https, 80 for http) is dropped, as
//     browsers do: "https://a.com:443" gives "https://a.com".
func PageOrigin(s string) (origin string, ok bool) {
	scheme, rest, found := strings.Cut(s, "://")
	if !found {
		return "", false
	}
	scheme = strings.ToLower(scheme)
	if scheme != "https" && scheme != "http" {
		return "", false
	}
	// parseAuthority accepts only host[:port], so a path, query, fragment or
	// user info makes it fail.
	host, _, port, ok := parseAuthority(rest)
	if !ok {
		return "", false
	}
	if scheme == "http" && host != "localhost" && host != "127.0.0.1" && host != "[::1]" {
		return "", false
	}
	origin = scheme + "://" + host
	if port != 0 && port != defaultPort(scheme) {
		origin += ":" + strconv.Itoa(port)
	}
	return origin, true
}

func defaultPort(scheme string) int {
	if scheme == "http" {
		return 80
	}
	return 443
}

// PageOrigins checks a card session's page_origins: 1 to 10 entries, each a
// valid [PageOrigin]. It returns the canonical origins in the given order.
// Two entries that are the same origin after canonicalisation (for example
// "https://A.com" and "https://a.com:443") make the list invalid rather than
// being merged: the client most likely meant two different origins.
func PageOrigins(list []string) ([]string, bool) {
	if len(list) < PageOriginsMin || len(list) > PageOriginsMax {
		return nil, false
	}
	out := make([]string, 0, len(list))
	seen := make(map[string]bool, len(list))
	for _, s := range list {
		o, ok := PageOrigin(s)
		if !ok || seen[o] {
			return nil, false
		}
		seen[o] = true
		out = append(out, o)
	}
	return out, true
}

// WebhookURLMaxLength is the longest webhook_url accepted.
const WebhookURLMaxLength = 2048

// WebhookURL reports whether s is an acceptable webhook_url for store setup
// (docs/api.md, store setup): an absolute URL of at most 2048 characters
// with a host, no user info and no fragment (not even an empty one: a
// trailing "#"). The scheme is https. A query is allowed.
//
// The URL must be ASCII without spaces or control characters; anything else
// must be percent-encoded, and an internationalised host given in its xn--
// form. The host is a DNS name, a dotted-quad IPv4 address or a bracketed
// IPv6 address without zone (see parseHost); the port, when present, is 1 to
// 65535.
//
// Unless allowInsecure (the server's AllowInsecureWebhooks) is set, the host
// must also not be:
//   - an IP literal that [netguard.Forbidden] refuses (loopback, private,
//     link-local, reserved and the like);
//   - localhost or a name under .localhost;
//   - a single-label name such as "intranet", which only resolves through a
//     local search domain.
//
// With allowInsecure, http is allowed too and any host is accepted.
//
// This is the static part of the rule: the addresses a name resolves to are
// checked when a delivery dials, with [netguard.Control], which DNS rebinding
// cannot get around.
func WebhookURL(s string, allowInsecure bool) bool {
	if s == "" || len(s) > WebhookURLMaxLength {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] <= ' ' || s[i] >= 0x7f {
			return false
		}
	}
	if strings.Contains(s, "#") {
		return false
	}
	u, err := url.Parse(s)
	if err != nil || u.Opaque != "" || u.User != nil || u.Host == "" {
		return false
	}
	// url.Parse lower-cases the scheme.
	switch u.Scheme {
	case "https":
	case "http":
		if !allowInsecure {
			return false
		}
	default:
		return false
	}
	host, addr, _, ok := parseAuthority(u.Host)
	if !ok {
		return false
	}
	if allowInsecure {
		return true
	}
	if addr.IsValid() {
		return !netguard.Forbidden(addr)
	}
	return host != "localhost" && !strings.HasSuffix(host, ".localhost") && strings.Contains(host, ".")
}
