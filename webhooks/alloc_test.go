//go:build !race

// The race detector makes sync.Pool drop objects at random, so allocations are
// only counted without it.

package webhooks_test

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Not parallel: AllocsPerRun counts the allocations of the whole program.
func TestAllocations(t *testing.T) {
	s := newSigner(t, secretA)
	v := newVerifier(t, secretB, secretA)
	body := bytes.Repeat([]byte("x"), 1024)
	id := "evt_" + strings.Repeat("1", 200) // longer than the scratch buffer
	buf := make([]byte, 0, 64)
	ts := strconv.FormatInt(now.Unix(), 10)
	sig := s.Sign(id, now, body)
	h := signed(t, secretA, now, string(body)).header()
	multi := "v2,x v1," + strings.Repeat("A", 43) + "= " + sig

	require.Zero(t, testing.AllocsPerRun(100, func() { buf = s.AppendSignature(buf[:0], id, now, body) }), "AppendSignature")
	require.Equal(t, 1.0, testing.AllocsPerRun(100, func() { _ = s.Sign(id, now, body) }), "Sign: the string only")
	require.Zero(t, testing.AllocsPerRun(100, func() {
		if v.VerifyValues(id, ts, multi, body) != nil {
			panic("invalid")
		}
	}), "VerifyValues")
	require.Zero(t, testing.AllocsPerRun(100, func() {
		if v.Verify(body, h) != nil {
			panic("invalid")
		}
	}), "Verify")
}
