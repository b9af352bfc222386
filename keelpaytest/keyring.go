package keelpaytest

import (
	"sync"

	"github.com/keelpay/keelpay/keyring"
)

var testKeyring = sync.OnceValue(func() *keyring.Keyring {
	k, err := keyring.Generate("test")
	if err != nil {
		panic(err)
	}
	kr, err := keyring.New(k)
	if err != nil {
		panic(err)
	}
	return kr
})

// Keyring returns the keyring of this test process: one random key with id
// "test", the same for every call, so that a database a test opens twice
// opens with the keys that sealed it.
func Keyring() *keyring.Keyring { return testKeyring() }
