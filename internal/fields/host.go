package fields

import (
	"net/netip"
	"strings"
)

// dnsName reports whether s is a DNS host name in ASCII: dot-separated
// labels of 1 to 63 letters, digits and hyphens, no hyphen at either end of
// a label, at most 253 characters. A trailing dot (the root label) is not
// accepted, nor are underscores.
func dnsName(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for label := range strings.SplitSeq(s, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			if !isAlnum(label[i]) && label[i] != '-' {
				return false
			}
		}
	}
	return true
}

// endsInNumber reports whether the last label of host is a number (decimal,
// or 0x followed by hex digits). Browsers (the WHATWG URL standard) then
// parse the whole host as an IPv4 address, and some resolvers do the same
// with forms like "0x7f.1"; so such a host must be a dotted-quad IPv4
// address or nothing.
func endsInNumber(host string) bool {
	last := host[strings.LastIndexByte(host, '.')+1:]
	if allDigits(last) {
		return true
	}
	if len(last) < 2 || last[0] != '0' || (last[1] != 'x' && last[1] != 'X') {
		return false
	}
	for i := 2; i < len(last); i++ {
		if c := last[i] | 0x20; !isDigit(last[i]) && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// parseHost parses the host of a URL authority and returns it in canonical
// form, as a browser serialises it: a DNS name in lower case, an IPv4
// address in dotted-quad form, or an IPv6 address in brackets in RFC 5952
// form. addr is the address when the host is an IP literal and the zero
// Addr otherwise. IPv6 zones and IPv4-mapped IPv6 literals are rejected: a
// browser serialises the latter differently from net/netip, and neither has
// a use in a public URL.
func parseHost(h string) (canon string, addr netip.Addr, ok bool) {
	if strings.HasPrefix(h, "[") {
		if len(h) < 2 || h[len(h)-1] != ']' {
			return "", netip.Addr{}, false
		}
		a, err := netip.ParseAddr(h[1 : len(h)-1])
		if err != nil || !a.Is6() || a.Zone() != "" || a.Is4In6() {
			return "", netip.Addr{}, false
		}
		return "[" + a.String() + "]", a, true
	}
	h = strings.ToLower(h)
	if !dnsName(h) {
		return "", netip.Addr{}, false
	}
	if endsInNumber(h) {
		// netip accepts only the four-part decimal form without leading
		// zeros, so a.String() equals h.
		a, err := netip.ParseAddr(h)
		if err != nil || !a.Is4() {
			return "", netip.Addr{}, false
		}
		return a.String(), a, true
	}
	return h, netip.Addr{}, true
}

// parseAuthority parses host[:port] (no user info) into the canonical host,
// its address when it is an IP literal, and the port, 0 when absent. A port
// is 1 to 65535 in decimal without leading zeros; a colon without a port
// is rejected.
func parseAuthority(hostport string) (host string, addr netip.Addr, port int, ok bool) {
	h, p := hostport, ""
	hasPort := false
	if i := strings.LastIndexByte(hostport, ':'); i >= 0 && !strings.HasSuffix(hostport, "]") {
		h, p, hasPort = hostport[:i], hostport[i+1:], true
	}
	host, addr, ok = parseHost(h)
	if !ok {
		return "", netip.Addr{}, 0, false
	}
	if hasPort {
		if port, ok = parsePort(p); !ok {
			return "", netip.Addr{}, 0, false
		}
	}
	return host, addr, port, true
}

func parsePort(p string) (int, bool) {
	if !allDigits(p) || len(p) > 5 || p[0] == '0' {
		return 0, false
	}
	n := 0
	for i := 0; i < len(p); i++ {
		n = n*10 + int(p[i]-'0')
	}
	return n, n <= 65535
}
