package webhooks_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/keelpay/keelpay/webhooks"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// Every benchmark signs or verifies the same delivery: this id, a timestamp
// of now and a body of each size.
const benchID = "evt_1Nf3aQ2eZvKYlo2CmT8rLx0q"

var benchSizes = []struct {
	name string
	n    int
}{{"1KiB", 1 << 10}, {"16KiB", 16 << 10}}

func benchBody(n int) []byte { return []byte(strings.Repeat("x", n)) }

func benchHeader(b *testing.B, ts time.Time, body []byte) http.Header {
	h := http.Header{}
	h.Set(webhooks.HeaderID, benchID)
	h.Set(webhooks.HeaderTimestamp, strconv.FormatInt(ts.Unix(), 10))
	h.Set(webhooks.HeaderSignature, newSigner(b, secretA).Sign(benchID, ts, body))
	return h
}

func BenchmarkSign(b *testing.B) {
	for _, size := range benchSizes {
		b.Run(size.name, func(b *testing.B) {
			s, body, ts := newSigner(b, secretA), benchBody(size.n), time.Now()
			buf := make([]byte, 0, 64)
			b.ReportAllocs()
			b.SetBytes(int64(size.n))
			for b.Loop() {
				buf = s.AppendSignature(buf[:0], benchID, ts, body)
			}
		})
	}
}

func BenchmarkVerify(b *testing.B) {
	for _, size := range benchSizes {
		b.Run(size.name, func(b *testing.B) {
			v, err := webhooks.NewVerifier([]string{secretA})
			if err != nil {
				b.Fatal(err)
			}
			body := benchBody(size.n)
			h := benchHeader(b, time.Now(), body)
			b.ReportAllocs()
			b.SetBytes(int64(size.n))
			for b.Loop() {
				if err := v.Verify(body, h); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// The Standard Webhooks Go library over the same deliveries, for comparison.
func BenchmarkLibrarySign(b *testing.B) {
	for _, size := range benchSizes {
		b.Run(size.name, func(b *testing.B) {
			lib, err := standardwebhooks.NewWebhook(secretA)
			if err != nil {
				b.Fatal(err)
			}
			body, ts := benchBody(size.n), time.Now()
			b.ReportAllocs()
			b.SetBytes(int64(size.n))
			for b.Loop() {
				if _, err := lib.Sign(benchID, ts, body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkLibraryVerify(b *testing.B) {
	for _, size := range benchSizes {
		b.Run(size.name, func(b *testing.B) {
			lib, err := standardwebhooks.NewWebhook(secretA)
			if err != nil {
				b.Fatal(err)
			}
			body := benchBody(size.n)
			h := benchHeader(b, time.Now(), body)
			b.ReportAllocs()
			b.SetBytes(int64(size.n))
			for b.Loop() {
				if err := lib.Verify(body, h); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkHMAC is the floor: HMAC-SHA256 over the same signed content with
// one reused hash and no encoding.
func BenchmarkHMAC(b *testing.B) {
	for _, size := range benchSizes {
		b.Run(size.name, func(b *testing.B) {
			key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secretA, "whsec_"))
			if err != nil {
				b.Fatal(err)
			}
			m := hmac.New(sha256.New, key)
			prefix := []byte(benchID + "." + strconv.FormatInt(time.Now().Unix(), 10) + ".")
			body := benchBody(size.n)
			sum := make([]byte, 0, sha256.Size)
			b.ReportAllocs()
			b.SetBytes(int64(size.n))
			for b.Loop() {
				m.Reset()
				m.Write(prefix)
				m.Write(body)
				sum = m.Sum(sum[:0])
			}
		})
	}
}
