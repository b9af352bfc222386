package keyring_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay/keyring"
)

func ring(t *testing.T, keys ...keyring.Key) *keyring.Keyring {
	t.Helper()
	kr, err := keyring.New(keys[0], keys[1:]...)
	require.NoError(t, err)
	return kr
}

func key(t *testing.T, id string) keyring.Key {
	t.Helper()
	k, err := keyring.Generate(id)
	require.NoError(t, err)
	return k
}

func TestSealOpen(t *testing.T) {
	k1, k2 := key(t, "k1"), key(t, "k2")
	kr := ring(t, k1)
	aad := keyring.AAD("stores", "webhook_secret", "store_1")
	sealed := kr.Seal([]byte("whsec_x"), aad)
	require.True(t, strings.HasPrefix(sealed, "enc:v1:k1:"), sealed)
	require.NotEqual(t, sealed, kr.Seal([]byte("whsec_x"), aad), "a fresh nonce every time")
	got, err := kr.Open(sealed, aad)
	require.NoError(t, err)
	require.Equal(t, "whsec_x", string(got))

	// Moved to another row, it does not open.
	_, err = kr.Open(sealed, keyring.AAD("stores", "webhook_secret", "store_2"))
	require.ErrorIs(t, err, keyring.ErrAuthentication)
	// Tampered with, neither. (The last two characters are replaced by
	// two others: "AA", unless they were that already, one seal in 4,096.)
	tail := "AA"
	if strings.HasSuffix(sealed, tail) {
		tail = "BB"
	}
	_, err = kr.Open(sealed[:len(sealed)-2]+tail, aad)
	require.Error(t, err)
	// Another key of the same id, neither.
	_, err = ring(t, keyring.Key{ID: "k1", Secret: k2.Secret}).Open(sealed, aad)
	require.ErrorIs(t, err, keyring.ErrAuthentication)
	// A keyring without the key says so.
	_, err = ring(t, k2).Open(sealed, aad)
	require.ErrorIs(t, err, keyring.ErrUnknownKey)
	// Rotated: the new key seals, the old one still opens.
	rotated := ring(t, k2, k1)
	got, err = rotated.Open(sealed, aad)
	require.NoError(t, err)
	require.Equal(t, "whsec_x", string(got))
	id, _ := keyring.KeyID(rotated.Seal([]byte("v"), aad))
	require.Equal(t, "k2", id)
	_, err = kr.Open("whsec_plain", aad)
	require.ErrorIs(t, err, keyring.ErrNotSealed)
}

func TestParseAndFiles(t *testing.T) {
	k1, k2 := key(t, "k1"), key(t, "k2")
	kr, err := keyring.Parse(keyring.Format(k2, k1))
	require.NoError(t, err)
	require.Equal(t, []string{"k2", "k1"}, kr.IDs())
	kr, err = keyring.Parse("# comment, with a comma\n" + keyring.Format(k1) + "\n\n" + keyring.Format(k2) + "\n")
	require.NoError(t, err)
	require.Equal(t, "k1", kr.CurrentID())
	for _, bad := range []string{"", "k1", "k1:notbase64!", "k1:AAAA", "bad id:" + strings.Repeat("A", 44), keyring.Format(k1, k1)} {
		_, err := keyring.Parse(bad)
		require.Error(t, err, bad)
		require.NotContains(t, err.Error(), keyring.Format(k1)[3:], "an error never shows a key")
	}
	require.NotContains(t, k1.String(), keyring.Format(k1)[3:])

	dir := t.TempDir()
	path := filepath.Join(dir, "keelpay.db.key")
	made, created, err := keyring.ReadOrCreateFile(path, "k1")
	require.NoError(t, err)
	require.True(t, created)
	fi, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	again, created, err := keyring.ReadOrCreateFile(path, "k1")
	require.NoError(t, err)
	require.False(t, created)
	sealed := made.Seal([]byte("x"), nil)
	_, err = again.Open(sealed, nil)
	require.NoError(t, err, "the file keeps the key")

	require.NoError(t, os.Chmod(path, 0o644))
	_, err = keyring.ReadFile(path)
	require.ErrorContains(t, err, "chmod 600")
	_, err = keyring.ReadFile(filepath.Join(dir, "missing"))
	require.True(t, errors.Is(err, os.ErrNotExist))
}

func TestSecretHash(t *testing.T) {
	h := keyring.HashSecret("secret_shop")
	require.True(t, keyring.IsSecretHash(h))
	require.NotContains(t, h, "secret_shop")
	require.NotEqual(t, h, keyring.HashSecret("secret_shop"), "salted")
	require.True(t, keyring.SecretMatches(h, "secret_shop"))
	require.False(t, keyring.SecretMatches(h, "secret_shoq"))
	require.False(t, keyring.SecretMatches(h, ""))
	require.False(t, keyring.SecretMatches("", "secret_shop"))
	require.False(t, keyring.SecretMatches("secret_shop", "secret_shop"), "plain text is no hash")
}
