package webhooks

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"hash"
	"strconv"
	"strings"
	"sync"
	"time"
)

const secretPrefix = "whsec_"

// key is one decoded secret with a pool of keyed HMAC states, so that signing
// and verifying allocate nothing and a key is safe for concurrent use.
type key struct {
	pool sync.Pool // of *mac
}

// mac is one HMAC-SHA256 state with the scratch space a computation needs.
type mac struct {
	h   hash.Hash
	buf [128]byte // gathers "<id>.<timestamp>." into one Write
	n   int       // bytes used in buf
	sum [sha256.Size]byte
}

// write adds s to the signed content through buf. Writing a string to the
// hash directly would convert it to a []byte on the heap.
func write[T string | []byte](m *mac, s T) {
	for len(s) > 0 {
		if m.n == len(m.buf) {
			m.h.Write(m.buf[:])
			m.n = 0
		}
		c := copy(m.buf[m.n:], s)
		m.n += c
		s = s[c:]
	}
}

func newKey(secret string) (*key, error) {
	raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, secretPrefix))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidSecret, err)
	}
	if len(raw) == 0 {
		return nil, fmt.Errorf("%w: empty", ErrInvalidSecret)
	}
	k := &key{}
	k.pool.New = func() any { return &mac{h: hmac.New(sha256.New, raw)} }
	return k, nil
}

// compute returns a mac from the pool holding in sum the signature of
// "<msgID>.<ts>.<body>", ts being the timestamp's decimal digits. The caller
// returns it with k.pool.Put.
func compute[T string | []byte](k *key, msgID string, ts T, body []byte) *mac {
	m := k.pool.Get().(*mac)
	m.h.Reset()
	m.n = 0
	write(m, msgID)
	write(m, ".")
	write(m, ts)
	write(m, ".")
	m.h.Write(m.buf[:m.n])
	m.h.Write(body)
	m.h.Sum(m.sum[:0])
	return m
}

// Signer signs deliveries with one webhook secret. It is safe for concurrent
// use.
type Signer struct {
	key *key
}

// NewSigner returns a Signer for a webhook secret: "whsec_" followed by the
// key in standard padded base64, or the base64 key alone, as the Standard
// Webhooks libraries accept. It reports [ErrInvalidSecret] otherwise.
func NewSigner(secret string) (*Signer, error) {
	k, err := newKey(secret)
	if err != nil {
		return nil, err
	}
	return &Signer{key: k}, nil
}

// AppendSignature appends one webhook-signature entry, "v1,<base64 HMAC>",
// for the delivery of body with id msgID at time ts (whole seconds) to dst
// and returns the extended slice. It allocates nothing when dst has room for
// the 47 bytes of the entry.
func (s *Signer) AppendSignature(dst []byte, msgID string, ts time.Time, body []byte) []byte {
	var digits [20]byte
	m := compute(s.key, msgID, strconv.AppendInt(digits[:0], ts.Unix(), 10), body)
	dst = append(dst, "v1,"...)
	dst = base64.StdEncoding.AppendEncode(dst, m.sum[:])
	s.key.pool.Put(m)
	return dst
}

// signatureLen is the length of one entry: "v1," and 44 base64 characters.
const signatureLen = 3 + 44

// Sign returns the webhook-signature value for a delivery; see
// [Signer.AppendSignature].
func (s *Signer) Sign(msgID string, ts time.Time, body []byte) string {
	var buf [signatureLen]byte
	return string(s.AppendSignature(buf[:0], msgID, ts, body))
}
