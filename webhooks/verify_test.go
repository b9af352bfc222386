package webhooks_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/keelpay/keelpay/webhooks"
	"github.com/stretchr/testify/require"
)

// Secrets of the tests: 24 random bytes each, as whsec_ strings.
const (
	secretA = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	secretB = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD"
)

var now = time.Date(2025, 3, 14, 15, 9, 26, 0, time.UTC)

func fixedClock() time.Time { return now }

type delivery struct {
	id, ts, sig string
	body        []byte
}

func (d delivery) header() http.Header {
	h := http.Header{}
	for k, v := range map[string]string{webhooks.HeaderID: d.id, webhooks.HeaderTimestamp: d.ts, webhooks.HeaderSignature: d.sig} {
		if v != "" {
			h.Set(k, v)
		}
	}
	return h
}

func newSigner(t testing.TB, secret string) *webhooks.Signer {
	t.Helper()
	s, err := webhooks.NewSigner(secret)
	require.NoError(t, err)
	return s
}

func newVerifier(t testing.TB, secrets ...string) *webhooks.Verifier {
	t.Helper()
	v, err := webhooks.NewVerifier(secrets, webhooks.WithClock(fixedClock))
	require.NoError(t, err)
	return v
}

// signed returns a delivery of body signed with secret at time ts.
func signed(t testing.TB, secret string, ts time.Time, body string) delivery {
	t.Helper()
	const id = "evt_1Nf3aQ2eZvKYlo2C"
	return delivery{
		id:   id,
		ts:   strconv.FormatInt(ts.Unix(), 10),
		sig:  newSigner(t, secret).Sign(id, ts, []byte(body)),
		body: []byte(body),
	}
}

func TestVerify(t *testing.T) {
	t.Parallel()

	const body = `{"id":"evt_1Nf3aQ2eZvKYlo2C","type":"webhook.test","created_at":"2025-03-14T15:09:26Z","data":{"object":{"message":"test"}}}`
	valid := signed(t, secretA, now, body)
	otherSig := signed(t, secretB, now, body).sig
	v2 := "v2," + strings.TrimPrefix(valid.sig, "v1,")

	tests := []struct {
		name   string
		change func(d *delivery)
		want   error
	}{
		{"valid", func(*delivery) {}, nil},
		{"missing id", func(d *delivery) { d.id = "" }, webhooks.ErrMissingHeaders},
		{"missing timestamp", func(d *delivery) { d.ts = "" }, webhooks.ErrMissingHeaders},
		{"missing signature", func(d *delivery) { d.sig = "" }, webhooks.ErrMissingHeaders},
		{"timestamp not a number", func(d *delivery) { d.ts = "soon" }, webhooks.ErrInvalidTimestamp},
		{"timestamp with sign", func(d *delivery) { d.ts = "+" + d.ts }, webhooks.ErrInvalidTimestamp},
		{"timestamp negative", func(d *delivery) { d.ts = "-1" }, webhooks.ErrInvalidTimestamp},
		{"timestamp in milliseconds overflowing", func(d *delivery) { d.ts = "99999999999999999999" }, webhooks.ErrInvalidTimestamp},
		{"timestamp with fraction", func(d *delivery) { d.ts += ".5" }, webhooks.ErrInvalidTimestamp},
		{"too old", func(d *delivery) { *d = signed(t, secretA, now.Add(-webhooks.DefaultTolerance-time.Second), body) }, webhooks.ErrTooOld},
		{"too new", func(d *delivery) { *d = signed(t, secretA, now.Add(webhooks.DefaultTolerance+time.Second), body) }, webhooks.ErrTooNew},
		{"oldest accepted", func(d *delivery) { *d = signed(t, secretA, now.Add(-webhooks.DefaultTolerance), body) }, nil},
		{"newest accepted", func(d *delivery) { *d = signed(t, secretA, now.Add(webhooks.DefaultTolerance), body) }, nil},
		{"timestamp zero", func(d *delivery) { d.ts = "0" }, webhooks.ErrTooOld},
		{"wrong secret", func(d *delivery) { d.sig = otherSig }, webhooks.ErrNoValidSignature},
		{"tampered body", func(d *delivery) { d.body = bytes.Replace(d.body, []byte("test"), []byte("tesT"), 1) }, webhooks.ErrNoValidSignature},
		{"body with trailing newline", func(d *delivery) { d.body = append(d.body, '\n') }, webhooks.ErrNoValidSignature},
		{"tampered id", func(d *delivery) { d.id += "x" }, webhooks.ErrNoValidSignature},
		{"tampered timestamp", func(d *delivery) { d.ts = strconv.FormatInt(now.Unix()-1, 10) }, webhooks.ErrNoValidSignature},
		{"timestamp with leading zero", func(d *delivery) { d.ts = "0" + d.ts }, webhooks.ErrNoValidSignature},
		{"second of several entries valid", func(d *delivery) { d.sig = otherSig + " " + d.sig }, nil},
		{"last of several entries valid", func(d *delivery) { d.sig = strings.Join([]string{v2, "junk", otherSig, "v1,", d.sig}, " ") }, nil},
		{"double spaces between entries", func(d *delivery) { d.sig = otherSig + "  " + d.sig + " " }, nil},
		{"v2 entry ignored", func(d *delivery) { d.sig = v2 }, webhooks.ErrNoValidSignature},
		{"entry without version", func(d *delivery) { d.sig = strings.TrimPrefix(d.sig, "v1,") }, webhooks.ErrNoValidSignature},
		{"empty v1 entry", func(d *delivery) { d.sig = "v1," }, webhooks.ErrNoValidSignature},
		{"signature not base64", func(d *delivery) { d.sig = "v1," + strings.Repeat("!", 44) }, webhooks.ErrNoValidSignature},
		{"signature truncated", func(d *delivery) { d.sig = d.sig[:len(d.sig)-1] }, webhooks.ErrNoValidSignature},
		{"signature unpadded", func(d *delivery) { d.sig = strings.TrimRight(d.sig, "=") }, webhooks.ErrNoValidSignature},
		// 44 characters without padding decode to 33 bytes: once a panic.
		{"signature of 44 unpadded characters", func(d *delivery) { d.sig = "v1," + strings.Repeat("A", 44) }, webhooks.ErrNoValidSignature},
		{"signature of 44 characters, two pads", func(d *delivery) { d.sig = "v1," + strings.Repeat("A", 42) + "==" }, webhooks.ErrNoValidSignature},
		{"signature in hex", func(d *delivery) { d.sig = "v1," + hexOf(t, d.sig) }, webhooks.ErrNoValidSignature},
		{"signature with non-canonical padding bits", func(d *delivery) { d.sig = nonCanonical(t, d.sig) }, webhooks.ErrNoValidSignature},
		{"version in upper case", func(d *delivery) { d.sig = "V1," + strings.TrimPrefix(d.sig, "v1,") }, webhooks.ErrNoValidSignature},
	}
	v := newVerifier(t, secretA)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := valid
			tt.change(&d)

			err := v.Verify(d.body, d.header())
			require.ErrorIs(t, err, tt.want)
			if tt.want != nil {
				// Sentinels are returned as they are, so receivers can echo them.
				require.Equal(t, tt.want, err)
			}
			require.Equal(t, err, v.VerifyValues(d.id, d.ts, d.sig, d.body), "VerifyValues")
		})
	}
}

func hexOf(t *testing.T, sig string) string {
	raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(sig, "v1,"))
	require.NoError(t, err)
	return hex.EncodeToString(raw)
}

// nonCanonical spells the same signature bytes differently, by setting the
// padding bits of the last base64 character.
func nonCanonical(t *testing.T, sig string) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	b := []byte(sig)
	i := len(b) - 2 // before the single '='
	b[i] = alphabet[strings.IndexByte(alphabet, b[i])^1]
	raw, err := base64.StdEncoding.DecodeString(string(b[3:]))
	require.NoError(t, err, "lenient decoding accepts it")
	want, _ := base64.StdEncoding.DecodeString(sig[3:])
	require.Equal(t, want, raw)
	return string(b)
}

func TestToleranceErrors(t *testing.T) {
	t.Parallel()

	require.ErrorIs(t, webhooks.ErrTooOld, webhooks.ErrTimestampOutOfTolerance)
	require.ErrorIs(t, webhooks.ErrTooNew, webhooks.ErrTimestampOutOfTolerance)
	require.NotErrorIs(t, webhooks.ErrTooOld, webhooks.ErrTooNew)
	require.NotErrorIs(t, webhooks.ErrNoValidSignature, webhooks.ErrTimestampOutOfTolerance)
}

func TestWithTolerance(t *testing.T) {
	t.Parallel()

	d := signed(t, secretA, now.Add(-time.Hour), "{}")
	v, err := webhooks.NewVerifier([]string{secretA}, webhooks.WithClock(fixedClock), webhooks.WithTolerance(time.Hour))
	require.NoError(t, err)
	require.NoError(t, v.Verify(d.body, d.header()))

	v, err = webhooks.NewVerifier([]string{secretA}, webhooks.WithClock(fixedClock), webhooks.WithTolerance(time.Hour-time.Second))
	require.NoError(t, err)
	require.ErrorIs(t, v.Verify(d.body, d.header()), webhooks.ErrTooOld)

	for _, d := range []time.Duration{0, -time.Second} {
		_, err = webhooks.NewVerifier([]string{secretA}, webhooks.WithTolerance(d))
		require.Error(t, err, "tolerance %v", d)
	}
}

func TestDefaultClock(t *testing.T) {
	t.Parallel()

	v, err := webhooks.NewVerifier([]string{secretA})
	require.NoError(t, err)
	d := signed(t, secretA, time.Now(), "{}")
	require.NoError(t, v.Verify(d.body, d.header()))
	d = signed(t, secretA, time.Now().Add(-time.Hour), "{}")
	require.ErrorIs(t, v.Verify(d.body, d.header()), webhooks.ErrTooOld)
}

func TestRotation(t *testing.T) {
	t.Parallel()

	const body = `{"id":"evt_1"}`
	byOld := signed(t, secretA, now, body)
	byNew := signed(t, secretB, now, body)

	both := newVerifier(t, secretA, secretB)
	require.NoError(t, both.Verify(byOld.body, byOld.header()), "old secret, verifier with both")
	require.NoError(t, both.Verify(byNew.body, byNew.header()), "new secret, verifier with both")
	reversed := newVerifier(t, secretB, secretA)
	require.NoError(t, reversed.Verify(byOld.body, byOld.header()), "order of secrets does not matter")

	oldOnly := newVerifier(t, secretA)
	require.ErrorIs(t, oldOnly.Verify(byNew.body, byNew.header()), webhooks.ErrNoValidSignature, "new secret, verifier not rotated yet")
	newOnly := newVerifier(t, secretB)
	require.ErrorIs(t, newOnly.Verify(byOld.body, byOld.header()), webhooks.ErrNoValidSignature, "old secret after rotation")
}

func TestSecrets(t *testing.T) {
	t.Parallel()

	d := signed(t, secretA, now, "{}")
	require.NoError(t, newVerifier(t, strings.TrimPrefix(secretA, "whsec_")).Verify(d.body, d.header()), "secret without prefix")

	for _, bad := range []string{"", "whsec_", "whsec_not base64!", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaS", "sk_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"} {
		_, err := webhooks.NewSigner(bad)
		require.ErrorIs(t, err, webhooks.ErrInvalidSecret, "NewSigner(%q)", bad)
		_, err = webhooks.NewVerifier([]string{secretA, bad})
		require.ErrorIs(t, err, webhooks.ErrInvalidSecret, "NewVerifier(%q)", bad)
	}
	_, err := webhooks.NewVerifier(nil)
	require.ErrorIs(t, err, webhooks.ErrInvalidSecret)
}

func TestAppendSignature(t *testing.T) {
	t.Parallel()

	s := newSigner(t, secretA)
	body := []byte(`{"test": 2432232314}`)
	sig := s.Sign("msg_1", now, body)
	require.Len(t, sig, 47)
	require.True(t, strings.HasPrefix(sig, "v1,"))

	got := s.AppendSignature([]byte("v1,old "), "msg_1", now, body)
	require.Equal(t, "v1,old "+sig, string(got))

	// Sub-second parts are not signed, as the header carries whole seconds.
	require.Equal(t, sig, s.Sign("msg_1", now.Add(999*time.Millisecond), body))
	require.NotEqual(t, sig, s.Sign("msg_1", now.Add(time.Second), body))
}

// Ids longer than the signer's scratch buffer are written in chunks; the
// result must not depend on where the chunks end.
func TestLongIDs(t *testing.T) {
	t.Parallel()

	s := newSigner(t, secretA)
	v := newVerifier(t, secretA)
	ts := strconv.FormatInt(now.Unix(), 10)
	for _, n := range []int{0, 1, 126, 127, 128, 129, 255, 256, 257, 5000} {
		id := strings.Repeat("i", n)
		sig := s.Sign(id, now, []byte("{}"))
		require.Equal(t, referenceSign(t, secretA, id+"."+ts+".{}"), sig, "id length %d", n)
		if n > 0 {
			require.NoError(t, v.VerifyValues(id, ts, sig, []byte("{}")), "id length %d", n)
		}
	}
}

func TestConcurrentUse(t *testing.T) {
	t.Parallel()

	s := newSigner(t, secretA)
	v := newVerifier(t, secretA)
	errs := make(chan error, 16)
	for i := range cap(errs) {
		go func() {
			body := []byte(strings.Repeat(strconv.Itoa(i), 100*i))
			id := "evt_" + strconv.Itoa(i)
			ts := strconv.FormatInt(now.Unix(), 10)
			for range 200 {
				if err := v.VerifyValues(id, ts, s.Sign(id, now, body), body); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range cap(errs) {
		require.NoError(t, <-errs)
	}
}

func TestVerifyNonCanonicalHeaderKeys(t *testing.T) {
	t.Parallel()

	d := signed(t, secretA, now, "{}")
	// A header built by hand with lower-case keys is not found by
	// http.Header.Get either; Verify behaves the same.
	h := http.Header{"webhook-id": {d.id}, "webhook-timestamp": {d.ts}, "webhook-signature": {d.sig}}
	require.ErrorIs(t, newVerifier(t, secretA).Verify(d.body, h), webhooks.ErrMissingHeaders)
	require.NoError(t, newVerifier(t, secretA).Verify(d.body, d.header()))
}

// referenceSign computes an entry the obvious way, straight from the scheme in docs/webhooks.md.
func referenceSign(t *testing.T, secret, content string) string {
	t.Helper()
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	require.NoError(t, err)
	m := hmac.New(sha256.New, key)
	m.Write([]byte(content))
	return "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
}
