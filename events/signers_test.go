package events

import (
	"crypto/rand"
	"encoding/base64"
	"testing"
)

// TestSignerCacheIsBounded: a dispatcher that meets more secrets than it
// keeps (stores rotating their secrets) stays within signerCacheMax, and a
// secret in use gets the same signer back.
func TestSignerCacheIsBounded(t *testing.T) {
	newSecret := func() string {
		b := make([]byte, 24)
		_, _ = rand.Read(b)
		return "whsec_" + base64.StdEncoding.EncodeToString(b)
	}
	var c signerCache
	in := newSecret()
	first, err := c.get(in)
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := c.get(in); again != first {
		t.Fatal("a cached secret got a new signer")
	}
	for range signerCacheMax + 100 {
		if _, err := c.get(newSecret()); err != nil {
			t.Fatal(err)
		}
		if n := c.len(); n > signerCacheMax {
			t.Fatalf("%d signers kept, over %d", n, signerCacheMax)
		}
	}
	if _, err := c.get("whsec_not base64!"); err == nil {
		t.Fatal("a malformed secret got a signer")
	}
}
