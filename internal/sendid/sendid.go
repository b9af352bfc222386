// Package sendid derives the ids of keelpay's sends to a provider (payment
// attempts and refund sends) from the record a send starts from.
//
// A send's id is the provider's idempotency key. It is derived, not drawn
// at random, so that a send that has to be made again from the same
// starting point carries the same key, and the provider answers it with
// the first send's outcome instead of charging or paying out a second
// time. That happens when the database loses its most recent commits: a
// PostgreSQL primary that fails over to an asynchronous standby, or a
// database restored from a backup. The record of the first send is gone,
// but the record it started from (the intent or refund at the same
// version) is back, and the retry derives the same id.
//
// A send starts from a record at one version and moves it on with a
// conditional update on that version, so only one send ever starts from a
// given (record, version) in one history: two sends with the same id are
// the same send.
package sendid

import (
	"crypto/sha256"
	"encoding/binary"
)

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// length is the number of characters after the prefix, as in keelpay's
// random ids.
const length = 24

// For returns the id of the send that starts from the record parent at
// version: prefix followed by 24 base62 characters of a SHA-256 digest of
// prefix, parent and version.
func For(prefix, parent string, version int64) string {
	h := sha256.New()
	// Each part is length-prefixed, so no two inputs share a digest input.
	var n [8]byte
	for _, s := range []string{prefix, parent} {
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	binary.BigEndian.PutUint64(n[:], uint64(version))
	h.Write(n[:])
	sum := h.Sum(nil)
	b := make([]byte, 0, len(prefix)+length)
	b = append(b, prefix...)
	// 24 characters from the 32-byte digest: each takes one byte modulo
	// 62. The slight bias toward the first eight characters costs a
	// fraction of a bit of the ~142 bits an id carries.
	for _, c := range sum[:length] {
		b = append(b, base62[c%62])
	}
	return string(b)
}
