// Package keyringtest gives tests one encryption key for the whole test
// process, so that a database a test opens twice, or shares with servers
// it starts, opens with the key that sealed it.
package keyringtest

import (
	"sync"

	"github.com/keelpay/keelpay/keyring"
)

var testKey = sync.OnceValues(func() (keyring.Key, *keyring.Keyring) {
	k, err := keyring.Generate("test")
	if err != nil {
		panic(err)
	}
	kr, err := keyring.New(k)
	if err != nil {
		panic(err)
	}
	return k, kr
})

// Key returns the encryption key of this test process: random, with id
// "test", the same for every call. keyring.Format(Key()) is its text form,
// for KEELPAY_ENCRYPTION_KEY of a server a test starts.
func Key() keyring.Key {
	k, _ := testKey()
	return k
}

// Keyring returns the keyring of Key, so that a database a test opens
// twice, or shares with servers it started, opens with the key that sealed
// it.
func Keyring() *keyring.Keyring {
	_, kr := testKey()
	return kr
}
