package webhooks

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"time"
)

// Verifier checks the signature and timestamp of deliveries (docs/webhooks.md). It is
// safe for concurrent use.
type Verifier struct {
	keys      []*key
	now       func() time.Time
	tolerance time.Duration
}

// Option configures a [Verifier].
type Option func(*Verifier)

// WithTolerance sets how far a delivery's timestamp may lie from the clock in
// either direction; the default is [DefaultTolerance]. It must be positive.
func WithTolerance(d time.Duration) Option {
	return func(v *Verifier) { v.tolerance = d }
}

// WithClock sets the clock the timestamp is compared with; the default is
// [time.Now]. Tests pass a fixed clock.
func WithClock(now func() time.Time) Option {
	return func(v *Verifier) {
		if now != nil {
			v.now = now
		}
	}
}

// NewVerifier returns a Verifier that accepts a delivery signed with any of
// secrets. A receiver passes two secrets while it rotates: the one the service
// signs with now and the one it will sign with next, or the reverse. Each
// secret is parsed as by [NewSigner].
func NewVerifier(secrets []string, opts ...Option) (*Verifier, error) {
	if len(secrets) == 0 {
		return nil, fmt.Errorf("%w: no secret", ErrInvalidSecret)
	}
	v := &Verifier{now: time.Now, tolerance: DefaultTolerance}
	for _, s := range secrets {
		k, err := newKey(s)
		if err != nil {
			return nil, err
		}
		v.keys = append(v.keys, k)
	}
	for _, o := range opts {
		o(v)
	}
	if v.tolerance <= 0 {
		return nil, errors.New("webhooks: tolerance must be positive")
	}
	return v, nil
}

// Header keys as stored in an [http.Header]; looking them up directly saves
// the allocation Header.Get makes to canonicalise a lower-case name.
var (
	canonicalID        = http.CanonicalHeaderKey(HeaderID)
	canonicalTimestamp = http.CanonicalHeaderKey(HeaderTimestamp)
	canonicalSignature = http.CanonicalHeaderKey(HeaderSignature)
)

func first(h http.Header, key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// Verify checks a delivery: body is the raw request body, h its headers. It
// returns nil or one of the errors declared by this package, unwrapped.
func (v *Verifier) Verify(body []byte, h http.Header) error {
	return v.VerifyValues(first(h, canonicalID), first(h, canonicalTimestamp), first(h, canonicalSignature), body)
}

// VerifyValues checks a delivery given the values of its webhook-id,
// webhook-timestamp and webhook-signature headers and its raw body. Entries of
// signatureHeader with a version other than v1, or that are malformed, are
// ignored; one matching v1 entry suffices. The timestamp is signed as it is
// written, so a sender that pads it with zeros must sign it padded.
func (v *Verifier) VerifyValues(msgID, timestamp, signatureHeader string, body []byte) error {
	if msgID == "" || timestamp == "" || signatureHeader == "" {
		return ErrMissingHeaders
	}
	unix, ok := parseSeconds(timestamp)
	if !ok {
		return ErrInvalidTimestamp
	}
	// One subtraction: it saturates, so a timestamp far in the future
	// comes out as the most negative duration.
	switch age := v.now().Sub(time.Unix(unix, 0)); {
	case age > v.tolerance:
		return ErrTooOld
	case age < -v.tolerance:
		return ErrTooNew
	}
	for _, k := range v.keys {
		m := compute(k, msgID, timestamp, body)
		ok := matches(signatureHeader, &m.sum)
		k.pool.Put(m)
		if ok {
			return nil
		}
	}
	return ErrNoValidSignature
}

// parseSeconds parses digits only, unlike strconv.ParseInt, which also takes a
// sign.
func parseSeconds(s string) (int64, bool) {
	var n int64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		d := int64(c - '0')
		if n > (math.MaxInt64-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	return n, true
}

// matches reports whether any "v1,<base64>" entry of the space-separated
// header is the base64 of sum, comparing in constant time. Comparing the
// text, as the Standard Webhooks libraries do, accepts exactly one spelling
// of a signature: the canonical one that base64.StdEncoding writes.
func matches(header string, sum *[sha256.Size]byte) bool {
	// Both buffers stay on the stack: comparing with a string would need a
	// []byte conversion, which allocates above 32 bytes.
	var want, got [44]byte
	base64.StdEncoding.Encode(want[:], sum[:])
	for header != "" {
		var entry string
		entry, header, _ = strings.Cut(header, " ")
		version, sig, ok := strings.Cut(entry, ",")
		if !ok || version != "v1" || len(sig) != len(got) {
			continue
		}
		copy(got[:], sig)
		if subtle.ConstantTimeCompare(got[:], want[:]) == 1 {
			return true
		}
	}
	return false
}
