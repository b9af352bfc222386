// Package netguard keeps webhook deliveries away from internal addresses.
//
// A webhook URL is chosen by the merchant, so without a guard the service
// could be made to send requests to its own network (server-side request
// forgery). Checking the URL's host when it is saved is not enough: a name
// can resolve to a public address at setup and to 127.0.0.1 at delivery
// (DNS rebinding). [Control] therefore runs inside the dialer, after name
// resolution, on the very address the socket is about to connect to:
//
//	dialer := &net.Dialer{Timeout: 10 * time.Second, Control: netguard.Control}
//	client := &http.Client{Transport: &http.Transport{
//		Proxy:       nil, // a proxy would be dialed instead of the receiver
//		DialContext: dialer.DialContext,
//	}}
//
// Every connection the client makes, including those for redirects, is then
// checked. A refused dial fails with an error that wraps
// [ErrForbiddenAddress].
package netguard

import (
	"errors"
	"fmt"
	"net/netip"
	"syscall"
)

// ErrForbiddenAddress is wrapped by the error [Control] returns for an
// address that [Forbidden] refuses.
var ErrForbiddenAddress = errors.New("netguard: forbidden address")

// Control is a [net.Dialer] Control function that refuses to connect to an
// address that [Forbidden] reports. The address it receives is the resolved
// "ip:port"; anything that does not parse as one (a Unix socket path, say) is
// refused too. The returned error wraps [ErrForbiddenAddress] and names the
// network and IP address, nothing else.
func Control(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("connecting over %s to a non-IP address: %w", network, ErrForbiddenAddress)
	}
	if Forbidden(ap.Addr()) {
		return fmt.Errorf("connecting to %s over %s: %w", ap.Addr(), network, ErrForbiddenAddress)
	}
	return nil
}

// Forbidden reports whether a webhook delivery must not connect to addr: any
// address that is not public unicast, from the IANA IPv4 and IPv6
// special-purpose address registries.
//
// IPv4:
//   - 0.0.0.0/8 "this network" (0.0.0.0 reaches the local host on Linux)
//   - 10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16 private
//   - 100.64.0.0/10 shared address space (carrier-grade NAT)
//   - 127.0.0.0/8 loopback
//   - 169.254.0.0/16 link-local (includes cloud metadata at 169.254.169.254)
//   - 192.0.0.0/24 IETF protocol assignments
//   - 192.0.2.0/24, 198.51.100.0/24, 203.0.113.0/24 documentation
//   - 192.88.99.0/24 deprecated 6to4 relay anycast
//   - 198.18.0.0/15 benchmarking
//   - 224.0.0.0/4 multicast
//   - 240.0.0.0/4 reserved, including broadcast 255.255.255.255
//
// IPv6: everything outside global unicast 2000::/3 (unspecified, loopback,
// IPv4-compatible, discard-only 100::/64, local-use NAT64 64:ff9b:1::/48,
// unique local fc00::/7, link-local fe80::/10, multicast ff00::/8, ...), and
// inside it 2001::/23 IETF protocol assignments (Teredo, benchmarking,
// ORCHID), 2001:db8::/32 and 3fff::/20 documentation.
//
// Addresses that embed an IPv4 address are judged by it: IPv4-mapped
// (::ffff:0:0/96), NAT64 well-known prefix (64:ff9b::/96) and 6to4
// (2002::/16). A zone is ignored. The zero Addr is forbidden.
func Forbidden(addr netip.Addr) bool {
	if !addr.IsValid() {
		return true
	}
	addr = addr.WithZone("").Unmap()
	if addr.Is4() {
		return within(forbidden4, addr)
	}
	b := addr.As16()
	switch {
	case nat64.Contains(addr):
		return Forbidden(netip.AddrFrom4([4]byte(b[12:16])))
	case sixToFour.Contains(addr):
		return Forbidden(netip.AddrFrom4([4]byte(b[2:6])))
	case !globalUnicast.Contains(addr):
		return true
	}
	return within(forbidden6, addr)
}

func within(prefixes []netip.Prefix, addr netip.Addr) bool {
	for _, p := range prefixes {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

var (
	nat64         = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour     = netip.MustParsePrefix("2002::/16")
	globalUnicast = netip.MustParsePrefix("2000::/3")
)

var forbidden4 = prefixes(
	"0.0.0.0/8",
	"10.0.0.0/8",
	"100.64.0.0/10",
	"127.0.0.0/8",
	"169.254.0.0/16",
	"172.16.0.0/12",
	"192.0.0.0/24",
	"192.0.2.0/24",
	"192.88.99.0/24",
	"192.168.0.0/16",
	"198.18.0.0/15",
	"198.51.100.0/24",
	"203.0.113.0/24",
	"224.0.0.0/4",
	"240.0.0.0/4",
)

// forbidden6 are the forbidden ranges inside 2000::/3.
var forbidden6 = prefixes(
	"2001::/23",
	"2001:db8::/32",
	"3fff::/20",
)

func prefixes(ss ...string) []netip.Prefix {
	ps := make([]netip.Prefix, len(ss))
	for i, s := range ss {
		ps[i] = netip.MustParsePrefix(s)
	}
	return ps
}
