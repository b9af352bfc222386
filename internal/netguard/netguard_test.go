package netguard

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestForbidden(t *testing.T) {
	t.Parallel()
	tests := []struct {
		addr string
		want bool
	}{
		// Public.
		{"8.8.8.8", false},
		{"1.1.1.1", false},
		{"93.184.215.14", false},
		{"9.255.255.255", false},
		{"11.0.0.0", false},
		{"100.63.255.255", false},
		{"100.128.0.0", false},
		{"169.253.255.255", false},
		{"169.255.0.0", false},
		{"172.15.255.255", false},
		{"172.32.0.0", false},
		{"192.0.1.255", false},
		{"192.0.3.0", false},
		{"192.167.255.255", false},
		{"192.169.0.0", false},
		{"198.17.255.255", false},
		{"198.20.0.0", false},
		{"223.255.255.255", false},
		{"2606:4700:4700::1111", false},
		{"2001:4860:4860::8888", false},
		{"2a00:1450:4001:81b::200e", false},
		{"2001:200::1", false}, // just past 2001::/23
		{"3ffe::1", false},
		{"64:ff9b::808:808", false},     // NAT64 of 8.8.8.8
		{"2002:808:808::1", false},      // 6to4 of 8.8.8.8
		{"::ffff:8.8.8.8", false},       // IPv4-mapped public
		{"fe80::1%eth0", true},          // zone ignored, still link-local
		{"2606:4700::1111%eth0", false}, // zone ignored
		// IPv4 special ranges.
		{"0.0.0.0", true},
		{"0.255.255.255", true},
		{"10.0.0.0", true},
		{"10.255.255.255", true},
		{"100.64.0.0", true},
		{"100.127.255.255", true},
		{"127.0.0.1", true},
		{"127.255.255.254", true},
		{"169.254.0.1", true},
		{"169.254.169.254", true},
		{"172.16.0.0", true},
		{"172.31.255.255", true},
		{"192.0.0.8", true},
		{"192.0.2.1", true},
		{"192.88.99.1", true},
		{"192.168.0.1", true},
		{"192.168.255.255", true},
		{"198.18.0.1", true},
		{"198.19.255.255", true},
		{"198.51.100.7", true},
		{"203.0.113.9", true},
		{"224.0.0.1", true},
		{"239.255.255.250", true},
		{"240.0.0.1", true},
		{"255.255.255.255", true},
		// IPv6 special ranges.
		{"::", true},
		{"::1", true},
		{"::127.0.0.1", true}, // IPv4-compatible
		{"::8.8.8.8", true},
		{"100::1", true},
		{"64:ff9b:1::1", true},
		{"fc00::1", true},
		{"fd12:3456:789a::1", true},
		{"fe80::1", true},
		{"febf::1", true},
		{"fec0::1", true},
		{"ff02::1", true},
		{"ff0e::1", true},
		{"2001::1", true},     // Teredo
		{"2001:2::1", true},   // benchmarking
		{"2001:1ff::1", true}, // end of 2001::/23
		{"2001:db8::1", true}, // documentation
		{"3fff::1", true},     // documentation
		{"5f00::1", true},     // SRv6 SIDs, outside 2000::/3
		{"4000::1", true},     // unallocated
		{"e000::1", true},     // unallocated
		// Embedded forbidden IPv4.
		{"::ffff:127.0.0.1", true},
		{"::ffff:10.0.0.1", true},
		{"::ffff:169.254.169.254", true},
		{"::ffff:0.0.0.0", true},
		{"64:ff9b::7f00:1", true},
		{"64:ff9b::a9fe:a9fe", true},
		{"64:ff9b::c0a8:101", true},
		{"2002:7f00:1::1", true},
		{"2002:a00:1::", true},
		{"2002:c0a8:101::1", true},
	}
	for _, tt := range tests {
		addr, err := netip.ParseAddr(tt.addr)
		require.NoError(t, err, tt.addr)
		assert.Equal(t, tt.want, Forbidden(addr), "Forbidden(%s)", tt.addr)
	}
	assert.True(t, Forbidden(netip.Addr{}), "zero Addr")
}

func TestControl(t *testing.T) {
	t.Parallel()
	tests := []struct {
		network, address string
		forbidden        bool
	}{
		{"tcp4", "8.8.8.8:443", false},
		{"tcp6", "[2606:4700:4700::1111]:443", false},
		{"tcp4", "127.0.0.1:443", true},
		{"tcp6", "[::1]:443", true},
		{"tcp6", "[::ffff:10.0.0.1]:443", true},
		{"tcp6", "[fe80::1%eth0]:443", true},
		{"tcp4", "169.254.169.254:80", true},
		{"unix", "/run/docker.sock", true},
		{"tcp", "localhost:443", true}, // not resolved: refuse
		{"tcp", "", true},
	}
	for _, tt := range tests {
		err := Control(tt.network, tt.address, nil)
		if !tt.forbidden {
			assert.NoError(t, err, "%s %s", tt.network, tt.address)
			continue
		}
		require.Error(t, err, "%s %s", tt.network, tt.address)
		assert.ErrorIs(t, err, ErrForbiddenAddress)
	}
}

// TestControlDial dials a real server on the loopback interface: a client
// whose dialer has Control refuses it, the same client without the guard
// reaches it.
func TestControlDial(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "reached")
	}))
	t.Cleanup(srv.Close)

	client := func(control func(string, string, syscall.RawConn) error) *http.Client {
		d := &net.Dialer{Timeout: 5 * time.Second, Control: control}
		return &http.Client{
			Timeout:   10 * time.Second,
			Transport: &http.Transport{Proxy: nil, DialContext: d.DialContext},
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	get := func(c *http.Client, url string) (string, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		require.NoError(t, err)
		resp, err := c.Do(req)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return string(b), err
	}

	body, err := get(client(nil), srv.URL)
	require.NoError(t, err)
	assert.Equal(t, "reached", body)

	_, err = get(client(Control), srv.URL)
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrForbiddenAddress)
	var opErr *net.OpError
	assert.True(t, errors.As(err, &opErr), "a net.OpError from the dial: %v", err)

	// A name that resolves to loopback is refused after resolution.
	_, port, err := net.SplitHostPort(srv.Listener.Addr().String())
	require.NoError(t, err)
	_, err = get(client(Control), "http://localhost:"+port)
	require.Error(t, err)
	assert.ErrorIs(t, err, ErrForbiddenAddress)
}
