// Package keyring seals values kept at rest with AES-256-GCM under keys
// the operator supplies, and hashes secrets that only need comparing.
//
// A keyring holds one current key, which seals, and any number of older
// keys, which still open what they sealed: so keys rotate without a flag
// day. Every key has a short id, written in clear into what it sealed:
//
//	enc:v1:<key id>:<base64url(nonce | ciphertext | tag)>
//
// Seal takes associated data (for keelpay's storage adapters: the table,
// the column and the row's id), which is authenticated but not stored: a
// sealed value copied into another row or column does not open there.
//
// The text form of a keyring, used by KEELPAY_ENCRYPTION_KEY and key
// files, is a comma- or newline-separated list of id:base64key entries,
// the current key first (see [Parse]). docs/security.md describes key
// handling and rotation.
package keyring

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"strings"
)

// KeySize is the size of a key: AES-256.
const KeySize = 32

// Prefix starts every sealed value.
const Prefix = "enc:v1:"

// Key is one encryption key and its id.
type Key struct {
	// ID names the key in sealed values: 1 to 32 characters of
	// [A-Za-z0-9_-].
	ID string
	// Secret is KeySize random bytes.
	Secret []byte
}

// String hides the secret.
func (k Key) String() string { return "keyring.Key{ID:" + k.ID + " Secret:[redacted]}" }

// GoString hides the secret.
func (k Key) GoString() string { return k.String() }

// Generate returns a new random key with this id.
func Generate(id string) (Key, error) {
	if err := checkID(id); err != nil {
		return Key{}, err
	}
	k := Key{ID: id, Secret: make([]byte, KeySize)}
	if _, err := rand.Read(k.Secret); err != nil {
		return Key{}, err
	}
	return k, nil
}

// Format returns the text form of keys ("id:base64key" joined by commas),
// which Parse reads back.
func Format(keys ...Key) string {
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k.ID + ":" + base64.StdEncoding.EncodeToString(k.Secret)
	}
	return strings.Join(parts, ",")
}

// Keyring seals with its current key and opens with any of its keys. It is
// safe for concurrent use.
type Keyring struct {
	current string
	ids     []string
	aeads   map[string]cipher.AEAD
}

// New returns a keyring whose current key is current; older keys only
// open. Ids must be distinct.
func New(current Key, older ...Key) (*Keyring, error) {
	kr := &Keyring{current: current.ID, aeads: map[string]cipher.AEAD{}}
	for _, k := range append([]Key{current}, older...) {
		if err := checkID(k.ID); err != nil {
			return nil, err
		}
		if len(k.Secret) != KeySize {
			return nil, fmt.Errorf("keyring: key %q must be %d bytes, not %d", k.ID, KeySize, len(k.Secret))
		}
		if _, dup := kr.aeads[k.ID]; dup {
			return nil, fmt.Errorf("keyring: key id %q given twice", k.ID)
		}
		block, err := aes.NewCipher(k.Secret)
		if err != nil {
			return nil, err
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, err
		}
		kr.aeads[k.ID] = aead
		kr.ids = append(kr.ids, k.ID)
	}
	return kr, nil
}

// Parse reads the text form of a keyring: entries id:base64key (standard
// or URL base64, padded or not, of KeySize bytes), separated by commas or
// newlines; the first is the current key. Blank lines and lines starting
// with # are ignored.
func Parse(text string) (*Keyring, error) {
	var entries []string
	for _, line := range strings.FieldsFunc(text, func(r rune) bool { return r == '\n' || r == '\r' }) {
		if line = strings.TrimSpace(line); !strings.HasPrefix(line, "#") {
			entries = append(entries, strings.Split(line, ",")...)
		}
	}
	var keys []Key
	for _, line := range entries {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		id, b64, ok := strings.Cut(line, ":")
		if !ok {
			return nil, errors.New("keyring: an entry is not id:base64key")
		}
		secret, err := decodeKey(strings.TrimSpace(b64))
		if err != nil {
			return nil, fmt.Errorf("keyring: key %q: not base64", strings.TrimSpace(id))
		}
		keys = append(keys, Key{ID: strings.TrimSpace(id), Secret: secret})
	}
	if len(keys) == 0 {
		return nil, errors.New("keyring: no key given")
	}
	return New(keys[0], keys[1:]...)
}

// ReadFile parses a key file (see Parse). It refuses a file that others
// than its owner may read or write.
func ReadFile(path string) (*Keyring, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("keyring: %w", err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("keyring: key file %s has mode %04o; it must be readable by its owner only (chmod 600)", path, fi.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("keyring: %w", err)
	}
	kr, err := Parse(string(b))
	if err != nil {
		return nil, fmt.Errorf("%w (key file %s)", err, path)
	}
	return kr, nil
}

// WriteNewFile creates a key file with one new key of this id, mode 0600,
// and fails if the file exists.
func WriteNewFile(path, id string) (*Keyring, error) {
	k, err := Generate(id)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("keyring: %w", err)
	}
	_, err = f.WriteString("# keelpay encryption keys (id:base64key), the current key first; see docs/security.md.\n" + Format(k) + "\n")
	if err = errors.Join(err, f.Sync(), f.Close()); err != nil {
		os.Remove(path)
		return nil, fmt.Errorf("keyring: %w", err)
	}
	return New(k)
}

func decodeKey(s string) ([]byte, error) {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			return b, nil
		}
	}
	return nil, errors.New("not base64")
}

func checkID(id string) error {
	if id == "" || len(id) > 32 {
		return fmt.Errorf("keyring: key id %q must be 1 to 32 characters", id)
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return fmt.Errorf("keyring: key id %q may only have letters, digits, _ and -", id)
		}
	}
	return nil
}

// CurrentID is the id of the key that seals.
func (kr *Keyring) CurrentID() string { return kr.current }

// IDs are the ids of every key, the current one first.
func (kr *Keyring) IDs() []string { return append([]string(nil), kr.ids...) }

// Has reports whether the keyring has a key with this id.
func (kr *Keyring) Has(id string) bool { _, ok := kr.aeads[id]; return ok }

// Seal encrypts plaintext under the current key, bound to aad.
func (kr *Keyring) Seal(plaintext, aad []byte) string {
	return string(kr.SealBytes(plaintext, aad))
}

// SealBytes is Seal returning the sealed value's bytes, in a single
// allocation: for callers that store bytes (a stored response body is
// sealed on every keyed request).
func (kr *Keyring) SealBytes(plaintext, aad []byte) []byte {
	aead := kr.aeads[kr.current]
	raw := aead.NonceSize() + len(plaintext) + aead.Overhead()
	text := len(Prefix) + len(kr.current) + 1 + base64.RawURLEncoding.EncodedLen(raw)
	// One buffer: the text form at its head, and behind it the nonce,
	// ciphertext and tag it encodes (unused once encoded).
	out := make([]byte, text+raw)
	buf := out[text:text:len(out)]
	buf = buf[:aead.NonceSize()]
	if _, err := rand.Read(buf); err != nil {
		panic("keyring: no randomness: " + err.Error())
	}
	buf = aead.Seal(buf, buf, plaintext, aad)
	n := copy(out, Prefix)
	n += copy(out[n:], kr.current)
	out[n] = ':'
	base64.RawURLEncoding.Encode(out[n+1:text], buf)
	return out[:text:text]
}

// Errors of Open.
var (
	// ErrNotSealed: the value is not in the sealed format.
	ErrNotSealed = errors.New("keyring: value is not sealed")
	// ErrUnknownKey: the value was sealed under a key id the keyring does
	// not have.
	ErrUnknownKey = errors.New("keyring: value sealed under a key this keyring does not have")
	// ErrAuthentication: the key of that id is not the one that sealed the
	// value, or the value was changed or moved to another place.
	ErrAuthentication = errors.New("keyring: value does not open with its key (wrong key, or tampered or moved)")
)

// Open decrypts a value sealed under any key of the keyring with the same
// aad.
func (kr *Keyring) Open(sealed string, aad []byte) ([]byte, error) {
	id, body, ok := split(sealed)
	if !ok {
		return nil, ErrNotSealed
	}
	aead, ok := kr.aeads[id]
	if !ok {
		return nil, fmt.Errorf("%w (key id %q)", ErrUnknownKey, id)
	}
	raw, err := base64.RawURLEncoding.DecodeString(body)
	if err != nil || len(raw) < aead.NonceSize()+aead.Overhead() {
		return nil, ErrNotSealed
	}
	n := aead.NonceSize()
	plain, err := aead.Open(nil, raw[:n], raw[n:], aad)
	if err != nil {
		return nil, fmt.Errorf("%w (key id %q)", ErrAuthentication, id)
	}
	return plain, nil
}

// IsSealed reports whether s has the sealed format.
func IsSealed(s string) bool {
	_, _, ok := split(s)
	return ok
}

// KeyID returns the id of the key a sealed value was sealed under.
func KeyID(sealed string) (string, bool) {
	id, _, ok := split(sealed)
	return id, ok
}

func split(s string) (id, body string, ok bool) {
	rest, ok := strings.CutPrefix(s, Prefix)
	if !ok {
		return "", "", false
	}
	id, body, ok = strings.Cut(rest, ":")
	return id, body, ok && id != "" && body != ""
}

// AAD joins the parts that name a value's place (table, column, row id)
// into associated data for Seal and Open.
func AAD(parts ...string) []byte {
	return []byte(strings.Join(parts, "\x00"))
}

// Secret hashes: "h1:" base64url(16-byte salt) ":" base64url(HMAC-SHA256
// keyed by the salt, of the secret).
const hashPrefix = "h1:"

// HashSecret returns a salted hash of secret, for a secret that is only
// ever compared (an application's client secret): a new random salt every
// call.
func HashSecret(secret string) string {
	salt := make([]byte, 16)
	if _, err := rand.Read(salt); err != nil {
		panic("keyring: no randomness: " + err.Error())
	}
	return hashPrefix + base64.RawURLEncoding.EncodeToString(salt) + ":" +
		base64.RawURLEncoding.EncodeToString(mac(salt, secret))
}

// SecretMatches reports, in constant time for secrets of any length,
// whether secret is the one hash was made from. A malformed or empty hash
// matches nothing.
func SecretMatches(hash, secret string) bool {
	rest, ok := strings.CutPrefix(hash, hashPrefix)
	if !ok {
		return false
	}
	s, m, ok := strings.Cut(rest, ":")
	if !ok {
		return false
	}
	salt, err1 := base64.RawURLEncoding.DecodeString(s)
	want, err2 := base64.RawURLEncoding.DecodeString(m)
	if err1 != nil || err2 != nil || len(salt) == 0 {
		return false
	}
	return subtle.ConstantTimeCompare(mac(salt, secret), want) == 1
}

// IsSecretHash reports whether s has the format of HashSecret.
func IsSecretHash(s string) bool { return strings.HasPrefix(s, hashPrefix) }

func mac(salt []byte, secret string) []byte {
	h := hmac.New(sha256.New, salt)
	h.Write([]byte(secret))
	return h.Sum(nil)
}

// Only returns a keyring with just the key of this id, as its current key.
func (kr *Keyring) Only(id string) (*Keyring, error) {
	aead, ok := kr.aeads[id]
	if !ok {
		return nil, fmt.Errorf("%w (key id %q)", ErrUnknownKey, id)
	}
	return &Keyring{current: id, ids: []string{id}, aeads: map[string]cipher.AEAD{id: aead}}, nil
}

// ReadOrCreateFile reads the key file at path, or creates it with one new
// key of this id when there is none; created says which.
func ReadOrCreateFile(path, id string) (kr *Keyring, created bool, err error) {
	kr, err = ReadFile(path)
	if err == nil || !errors.Is(err, os.ErrNotExist) {
		return kr, false, err
	}
	kr, err = WriteNewFile(path, id)
	return kr, err == nil, err
}
