package webhooks_test

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/keelpay/keelpay/webhooks"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/require"
)

// Test vectors of the Standard Webhooks Go library (libraries/go/webhook_test.go,
// v0.0.1).
const (
	vectorSecret    = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	vectorMsgID     = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	vectorTimestamp = 1614265330
	vectorPayload   = `{"test": 2432232314}`
	vectorSignature = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
	// A well-formed v1 entry that matches nothing, from the same file.
	vectorWrongSignature = "v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc="
)

func TestKnownVector(t *testing.T) {
	t.Parallel()

	ts := time.Unix(vectorTimestamp, 0)
	for _, secret := range []string{vectorSecret, vectorSecret[len("whsec_"):]} {
		s := newSigner(t, secret)
		require.Equal(t, vectorSignature, s.Sign(vectorMsgID, ts, []byte(vectorPayload)))

		v, err := webhooks.NewVerifier([]string{secret}, webhooks.WithClock(func() time.Time { return ts.Add(time.Minute) }))
		require.NoError(t, err)
		tsText := strconv.Itoa(vectorTimestamp)
		require.NoError(t, v.VerifyValues(vectorMsgID, tsText, vectorSignature, []byte(vectorPayload)))
		require.ErrorIs(t, v.VerifyValues(vectorMsgID, tsText, vectorWrongSignature, []byte(vectorPayload)), webhooks.ErrNoValidSignature)
		// The library's multi-signature case: v1 and v2 decoys around the valid one.
		multi := vectorWrongSignature + " v2," + vectorWrongSignature[3:] + " " + vectorSignature + " " + vectorWrongSignature
		require.NoError(t, v.VerifyValues(vectorMsgID, tsText, multi, []byte(vectorPayload)))
	}
}

// The library checks timestamps against time.Now, so these tests sign now.
func TestInteropLibrarySignsWeVerify(t *testing.T) {
	t.Parallel()

	lib, err := standardwebhooks.NewWebhook(secretA)
	require.NoError(t, err)
	v, err := webhooks.NewVerifier([]string{secretA})
	require.NoError(t, err)
	for _, body := range interopBodies() {
		ts := time.Now()
		sig, err := lib.Sign("evt_interop", ts, body)
		require.NoError(t, err)
		h := http.Header{}
		h.Set(standardwebhooks.HeaderWebhookID, "evt_interop")
		h.Set(standardwebhooks.HeaderWebhookTimestamp, strconv.FormatInt(ts.Unix(), 10))
		h.Set(standardwebhooks.HeaderWebhookSignature, sig)
		require.NoError(t, v.Verify(body, h), "body of %d bytes", len(body))

		h.Set(standardwebhooks.HeaderWebhookID, "evt_other")
		require.ErrorIs(t, v.Verify(body, h), webhooks.ErrNoValidSignature)
	}
}

func TestInteropWeSignLibraryVerifies(t *testing.T) {
	t.Parallel()

	lib, err := standardwebhooks.NewWebhook(secretA)
	require.NoError(t, err)
	s := newSigner(t, secretA)
	for _, body := range interopBodies() {
		ts := time.Now()
		h := http.Header{}
		h.Set(webhooks.HeaderID, "evt_interop")
		h.Set(webhooks.HeaderTimestamp, strconv.FormatInt(ts.Unix(), 10))
		h.Set(webhooks.HeaderSignature, s.Sign("evt_interop", ts, body))
		require.NoError(t, lib.Verify(body, h), "body of %d bytes", len(body))

		libSig, err := lib.Sign("evt_interop", ts, body)
		require.NoError(t, err)
		require.Equal(t, libSig, h.Get(webhooks.HeaderSignature))

		// A library receiver mid-rotation: ours appended to an old entry.
		other := newSigner(t, secretB)
		h.Set(webhooks.HeaderSignature, string(s.AppendSignature(append(other.AppendSignature(nil, "evt_interop", ts, body), ' '), "evt_interop", ts, body)))
		require.NoError(t, lib.Verify(body, h))
	}
}

func interopBodies() [][]byte {
	return [][]byte{
		[]byte(""),
		[]byte(vectorPayload),
		[]byte(`{"id":"evt_1","type":"payment_intent.succeeded","data":{"object":{"status":"succeeded","note":"ünïcødé \u2028"}}}`),
		make([]byte, 16<<10),
	}
}
