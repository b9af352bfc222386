package keelpay

import (
	"crypto/rand"
	"strings"
)

// Id prefixes. An id is its prefix followed by 24 random base62 characters.
const (
	PrefixStore          = "store_"
	PrefixPaymentIntent  = "pi_"
	PrefixCardSession    = "cs_"
	PrefixCard           = "card_"
	PrefixRefund         = "re_"
	PrefixEvent          = "evt_"
	PrefixAttempt        = "att_"
	PrefixSecretKey      = "sk_"
	PrefixPublishableKey = "pk_"
	PrefixWebhookSecret  = "whsec_"
	PrefixRequest        = "req_"
)

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// idLength is the number of random characters after the prefix: 24 base62
// characters carry about 143 bits.
const idLength = 24

// NewID returns prefix followed by 24 random base62 characters from
// crypto/rand.
func NewID(prefix string) string {
	var b strings.Builder
	b.Grow(len(prefix) + idLength)
	b.WriteString(prefix)
	// Rejection sampling keeps every character equally likely: 62*4 = 248 is
	// the largest multiple of 62 that fits in a byte.
	var buf [idLength * 2]byte
	for n := 0; n < idLength; {
		_, _ = rand.Read(buf[:]) // never fails (crypto/rand panics instead)
		for _, c := range buf {
			if c >= 248 {
				continue
			}
			b.WriteByte(base62[c%62])
			n++
			if n == idLength {
				break
			}
		}
	}
	return b.String()
}

// ValidID reports whether s is prefix followed by exactly 24 base62
// characters. It lets a service answer "not found" for a malformed id
// without asking storage.
func ValidID(prefix, s string) bool {
	if len(s) != len(prefix)+idLength || !strings.HasPrefix(s, prefix) {
		return false
	}
	for i := len(prefix); i < len(s); i++ {
		if strings.IndexByte(base62, s[i]) < 0 {
			return false
		}
	}
	return true
}
