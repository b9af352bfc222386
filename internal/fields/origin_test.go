package fields

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestPageOrigin(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, want string // want "" means invalid
	}{
		{"https://shop.example.com", "https://shop.example.com"},
		{"https://example.com", "https://example.com"},
		{"HTTPS://Shop.Example.COM", "https://shop.example.com"},
		{"https://shop.example.com:8443", "https://shop.example.com:8443"},
		{"https://shop.example.com:443", "https://shop.example.com"},
		{"https://shop.example.com:80", "https://shop.example.com:80"},
		{"https://shop.example.com:1", "https://shop.example.com:1"},
		{"https://shop.example.com:65535", "https://shop.example.com:65535"},
		{"https://xn--bcher-kva.example", "https://xn--bcher-kva.example"},
		{"https://localhost", "https://localhost"},
		{"https://devbox", "https://devbox"},
		{"https://203.0.113.5", "https://203.0.113.5"},
		{"https://[2001:DB8:0:0::1]:8443", "https://[2001:db8::1]:8443"},
		// http only for local development hosts.
		{"http://localhost", "http://localhost"},
		{"http://LOCALHOST:3000", "http://localhost:3000"},
		{"http://localhost:80", "http://localhost"},
		{"http://localhost:443", "http://localhost:443"},
		{"http://127.0.0.1:8080", "http://127.0.0.1:8080"},
		{"http://[::1]:5173", "http://[::1]:5173"},
		{"http://[0:0::1]", "http://[::1]"},
		{"http://example.com", ""},
		{"http://shop.localhost", ""},
		{"http://127.0.0.2", ""},
		{"http://192.168.1.10", ""},
		{"http://[::2]", ""},
		// No path, query, fragment or user info.
		{"https://shop.example.com/", ""},
		{"https://shop.example.com/checkout", ""},
		{"https://shop.example.com?x=1", ""},
		{"https://shop.example.com#top", ""},
		{"https://user@shop.example.com", ""},
		{"https://user:pw@shop.example.com", ""},
		{"http://localhost/", ""},
		// Ports.
		{"https://shop.example.com:", ""},
		{"https://shop.example.com:0", ""},
		{"https://shop.example.com:65536", ""},
		{"https://shop.example.com:08443", ""},
		{"https://shop.example.com:-1", ""},
		{"https://shop.example.com:https", ""},
		{"https://shop.example.com:443:443", ""},
		// Hosts.
		{"https://", ""},
		{"https://:443", ""},
		{"https://shop.example.com.", ""},
		{"https://shop..example.com", ""},
		{"https://-shop.example.com", ""},
		{"https://shop_1.example.com", ""},
		{"https://bücher.example", ""},
		{"https://shop example.com", ""},
		{"https://0x7f.1", ""},
		{"https://127.1", ""},
		{"https://2130706433", ""},
		{"https://010.0.0.1", ""},
		{"https://1.2.3.4.5", ""},
		{"https://example.123", ""},
		{"https://[::1", ""},
		{"https://::1", ""},
		{"https://[fe80::1%25eth0]", ""},
		{"https://[::ffff:192.0.2.1]", ""},
		{"https://[192.0.2.1]", ""},
		{"https://" + strings.Repeat("a", 64) + ".com", ""},
		// Schemes and shape.
		{"", ""},
		{"shop.example.com", ""},
		{"//shop.example.com", ""},
		{"ftp://shop.example.com", ""},
		{"wss://shop.example.com", ""},
		{"https:shop.example.com", ""},
		{"https:/shop.example.com", ""},
		{"null", ""},
		{" https://shop.example.com", ""},
		{"https://shop.example.com ", ""},
		{"https://shop.example.com\n", ""},
	}
	for _, tt := range tests {
		got, ok := PageOrigin(tt.in)
		assert.Equal(t, tt.want != "", ok, "PageOrigin(%q) ok", tt.in)
		assert.Equal(t, tt.want, got, "PageOrigin(%q)", tt.in)
	}
}

func TestPageOrigins(t *testing.T) {
	t.Parallel()
	ten := make([]string, 10)
	for i := range ten {
		ten[i] = "https://s" + string(rune('a'+i)) + ".example.com"
	}
	tests := []struct {
		name string
		in   []string
		want []string // nil means invalid
	}{
		{"one", []string{"https://a.com"}, []string{"https://a.com"}},
		{"canonicalised in order", []string{"https://B.com:443", "http://localhost:3000"}, []string{"https://b.com", "http://localhost:3000"}},
		{"ten", ten, ten},
		{"eleven", append(append([]string(nil), ten...), "https://k.example.com"), nil},
		{"nil", nil, nil},
		{"empty", []string{}, nil},
		{"one invalid", []string{"https://a.com", "https://b.com/"}, nil},
		{"duplicate", []string{"https://a.com", "https://a.com"}, nil},
		{"duplicate after canonicalisation", []string{"https://a.com", "HTTPS://A.COM:443"}, nil},
		{"same host other scheme", []string{"https://localhost", "http://localhost"}, []string{"https://localhost", "http://localhost"}},
		{"same host other port", []string{"https://a.com", "https://a.com:8443"}, []string{"https://a.com", "https://a.com:8443"}},
	}
	for _, tt := range tests {
		got, ok := PageOrigins(tt.in)
		assert.Equal(t, tt.want != nil, ok, tt.name)
		assert.Equal(t, tt.want, got, tt.name)
	}
}

func TestWebhookURL(t *testing.T) {
	t.Parallel()
	base := "https://hooks.example.com/"
	atMax := base + strings.Repeat("p", WebhookURLMaxLength-len(base))
	tests := []struct {
		in       string
		secure   bool // valid when !allowInsecure
		insecure bool // valid when allowInsecure
	}{
		{"https://hooks.example.com/keelpay", true, true},
		{"https://hooks.example.com", true, true},
		{"HTTPS://Hooks.Example.com/Path", true, true},
		{"https://hooks.example.com:8443/k?token=abc&x=1", true, true},
		{"https://hooks.example.com/a%20b", true, true},
		{"https://hooks.example.com?", true, true},
		{"https://xn--bcher-kva.example/hook", true, true},
		{"https://203.0.113.0/hook", false, true}, // documentation range
		{"https://8.8.8.8/hook", true, true},
		{"https://[2606:4700::1111]/hook", true, true},
		{atMax, true, true},
		{atMax + "p", false, false},
		// http only when insecure.
		{"http://hooks.example.com/", false, true},
		{"HTTP://hooks.example.com/", false, true},
		// Local and internal hosts only when insecure.
		{"https://localhost/hook", false, true},
		{"https://LocalHost:8443/hook", false, true},
		{"https://api.localhost/hook", false, true},
		{"http://localhost:8080/hook", false, true},
		{"https://intranet/hook", false, true},
		{"https://127.0.0.1/hook", false, true},
		{"https://10.1.2.3/hook", false, true},
		{"https://172.16.0.1/hook", false, true},
		{"https://192.168.1.1/hook", false, true},
		{"https://169.254.169.254/latest/meta-data", false, true},
		{"https://100.64.0.1/hook", false, true},
		{"https://0.0.0.0/hook", false, true},
		{"https://[::1]/hook", false, true},
		{"https://[fd00::1]/hook", false, true},
		{"https://[fe80::1]/hook", false, true},
		{"https://[64:ff9b::a00:1]/hook", false, true},
		{"https://[64:ff9b::808:808]/hook", true, true},
		{"https://notlocalhost.com/hook", true, true},
		{"https://localhost.example.com/hook", true, true},
		// Never valid.
		{"", false, false},
		{"hooks.example.com/keelpay", false, false},
		{"/keelpay", false, false},
		{"//hooks.example.com/keelpay", false, false},
		{"ftp://hooks.example.com/", false, false},
		{"wss://hooks.example.com/", false, false},
		{"javascript:alert(1)", false, false},
		{"https:hooks.example.com", false, false},
		{"https:/hooks.example.com", false, false},
		{"https:///keelpay", false, false},
		{"https://user@hooks.example.com/", false, false},
		{"https://user:pw@hooks.example.com/", false, false},
		{"https://@hooks.example.com/", false, false},
		{"https://hooks.example.com/#frag", false, false},
		{"https://hooks.example.com/#", false, false},
		{"https://hooks.example.com/a b", false, false},
		{" https://hooks.example.com/", false, false},
		{"https://hooks.example.com/\n", false, false},
		{"https://hooks.example.com/\x7f", false, false},
		{"https://hooks.example.com/é", false, false},
		{"https://bücher.example/", false, false},
		{"https://hooks.example.com:/", false, false},
		{"https://hooks.example.com:0/", false, false},
		{"https://hooks.example.com:65536/", false, false},
		{"https://hooks.example.com:0443/", false, false},
		{"https://hooks.example.com./", false, false},
		{"https://localhost./", false, false},
		{"https://hooks_1.example.com/", false, false},
		{"https://0x7f.1/", false, false},
		{"https://127.1/", false, false},
		{"https://2130706433/", false, false},
		{"https://[fe80::1%25eth0]/", false, false},
		{"https://[::ffff:127.0.0.1]/", false, false},
		{"https://hooks.example.com/%zz", false, false},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.secure, WebhookURL(tt.in, false), "WebhookURL(%q, false)", tt.in)
		assert.Equal(t, tt.insecure, WebhookURL(tt.in, true), "WebhookURL(%q, true)", tt.in)
	}
}
