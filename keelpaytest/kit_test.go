package keelpaytest_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/keelpaytest"
	"github.com/keelpay/keelpay/provider/sandbox"
	"github.com/keelpay/keelpay/service"
	"github.com/keelpay/keelpay/webhooks"
)

func TestPayAndRefund(t *testing.T) {
	kp := keelpaytest.Start(t)
	shop := kp.Store(t)
	card := shop.SaveCard(t, sandbox.CardVisa)
	require.True(t, strings.HasPrefix(card, "card_"), card)

	pi := shop.Pay(t, card, 1999, "eur")
	require.Equal(t, keelpay.PaymentIntentStatus("succeeded"), pi.Status)
	d := kp.RequireEvent(t, keelpay.EventPaymentIntentSucceeded, pi.ID)
	require.NoError(t, d.Err)
	require.Equal(t, int64(1999), shop.RequireIntentStatus(t, pi.ID, "succeeded").Amount)

	r := shop.Refund(t, pi.ID, "returned")
	require.Equal(t, pi.ID, r.PaymentIntent)
	kp.RequireEvent(t, keelpay.EventRefundSucceeded, r.ID)
	kp.RequireNoEvent(t, keelpay.EventRefundFailed, r.ID)
	require.Equal(t, 1, kp.Sandbox.Refunds())
}

func TestThreeDSecure(t *testing.T) {
	kp := keelpaytest.Start(t)
	shop := kp.Store(t)
	card := shop.SaveCard(t, sandbox.CardThreeDSecure)

	pi := shop.Pay(t, card, 500, "eur")
	require.Equal(t, keelpay.PaymentIntentStatus("requires_action"), pi.Status)
	// The page the buyer is sent to is served beside the API.
	resp, err := http.Get(pi.NextAction.URL)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.True(t, strings.HasPrefix(pi.NextAction.URL, kp.URL+"/sandbox/3ds/"), pi.NextAction.URL)

	pi = shop.Answer3DS(t, pi.ID, true)
	require.Equal(t, keelpay.PaymentIntentStatus("succeeded"), pi.Status)
	kp.RequireEvent(t, keelpay.EventPaymentIntentSucceeded, pi.ID)

	failed := shop.Answer3DS(t, shop.Pay(t, card, 700, "eur").ID, false)
	require.Equal(t, keelpay.PaymentIntentStatus("requires_payment_method"), failed.Status)
	require.Equal(t, "authentication_failed", string(failed.LastError.Code))
	kp.RequireEvent(t, keelpay.EventPaymentIntentPaymentFailed, failed.ID)
	kp.RequireNoEvent(t, keelpay.EventPaymentIntentSucceeded, failed.ID)
}

// An unknown outcome stays processing, with no event, until the clock
// reaches the sandbox's resolution and the reconciler finds it.
func TestOutcomeUnknownResolvesWhenTheClockMoves(t *testing.T) {
	kp := keelpaytest.Start(t)
	shop := kp.Store(t)
	pi := shop.Pay(t, shop.SaveCard(t, sandbox.CardOutcomeUnknown), 1200, "eur")
	require.Equal(t, keelpay.PaymentIntentStatus("processing"), pi.Status)
	kp.RequireNoEvent(t, keelpay.EventPaymentIntentSucceeded, pi.ID)

	kp.Advance(t, 30*time.Second)
	kp.RequireNoEvent(t, keelpay.EventPaymentIntentSucceeded, pi.ID)
	shop.RequireIntentStatus(t, pi.ID, "processing")

	kp.Advance(t, sandbox.ResolveAfter)
	kp.RequireEvent(t, keelpay.EventPaymentIntentSucceeded, pi.ID)
	shop.RequireIntentStatus(t, pi.ID, "succeeded")
}

// Several stores share the receiver; each delivery verifies with its own
// store's secret, and each store's events are its own.
func TestStores(t *testing.T) {
	kp := keelpaytest.Start(t)
	a, b := kp.Store(t), kp.Store(t)
	require.NotEqual(t, a.ID, b.ID)
	pa := a.Pay(t, a.SaveCard(t, sandbox.CardVisa), 100, "eur")
	pb := b.Pay(t, b.SaveCard(t, sandbox.CardVisa), 200, "eur")
	for _, d := range []string{pa.ID, pb.ID} {
		require.NoError(t, kp.RequireEvent(t, keelpay.EventPaymentIntentSucceeded, d).Err)
	}
	types := map[string]int{}
	for _, d := range kp.Drain(t) {
		e, err := d.Event()
		require.NoError(t, err)
		types[e.Type]++
	}
	require.Equal(t, map[string]int{"card.created": 2, "payment_intent.succeeded": 2}, types)
}

// The store's own handler gets each delivery as keelpay sent it, and can
// verify it with its webhook secret.
func TestHandleWebhooks(t *testing.T) {
	kp := keelpaytest.Start(t)
	shop := kp.Store(t)
	v, err := webhooks.NewVerifier([]string{shop.WebhookSecret})
	require.NoError(t, err)
	verified := make(chan error, 10)
	kp.HandleWebhooks(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err == nil {
			err = v.Verify(body, r.Header)
		}
		verified <- err
		w.WriteHeader(http.StatusNoContent)
	}))
	shop.Pay(t, shop.SaveCard(t, sandbox.CardVisa), 100, "eur")
	require.NoError(t, <-verified)
}

// fakeTB records a failure instead of failing the test, so that the test
// can see that a helper fails.
type fakeTB struct {
	testing.TB
	mu     sync.Mutex
	failed string
}

func (f *fakeTB) Helper() {}

func (f *fakeTB) Errorf(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failed = fmt.Sprintf(format, args...)
}

func (f *fakeTB) Fatalf(format string, args ...any) {
	f.Errorf(format, args...)
	runtime.Goexit()
}

// failure runs fn with a fakeTB on a goroutine of its own (Fatalf ends it)
// and returns the failure's message, "" when fn passed.
func failure(t *testing.T, fn func(tb testing.TB)) string {
	f := &fakeTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(f)
	}()
	<-done
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.failed
}

func TestAssertionsFail(t *testing.T) {
	kp := keelpaytest.Start(t, keelpaytest.WithWaitTimeout(100*time.Millisecond))
	shop := kp.Store(t)
	card := shop.SaveCard(t, sandbox.CardVisa)
	pi := shop.Pay(t, card, 100, "eur")
	kp.RequireEvent(t, keelpay.EventPaymentIntentSucceeded, pi.ID)

	t.Run("RequireEvent of an event that does not come", func(t *testing.T) {
		msg := failure(t, func(tb testing.TB) { kp.RequireEvent(tb, keelpay.EventPaymentIntentCanceled, pi.ID) })
		require.Contains(t, msg, "no verified payment_intent.canceled event for "+pi.ID)
		require.Contains(t, msg, "payment_intent.succeeded "+pi.ID, "the failure lists what was received")
	})
	t.Run("RequireEvent of another object", func(t *testing.T) {
		msg := failure(t, func(tb testing.TB) { kp.RequireEvent(tb, keelpay.EventPaymentIntentSucceeded, "pi_other") })
		require.Contains(t, msg, "no verified payment_intent.succeeded event for pi_other")
	})
	t.Run("RequireEvent ignores deliveries that do not verify", func(t *testing.T) {
		require.NoError(t, kp.Webhooks.SetSecrets("whsec_"+strings.Repeat("A", 32)))
		defer func() { require.NoError(t, kp.Webhooks.SetSecrets(shop.WebhookSecret)) }()
		refund := shop.Refund(t, pi.ID, "returned")
		got := kp.Drain(t) // the refund's event arrived, but did not verify
		require.Error(t, got[len(got)-1].Err)
		msg := failure(t, func(tb testing.TB) { kp.RequireEvent(tb, keelpay.EventRefundSucceeded, refund.ID) })
		require.Contains(t, msg, "not verified")
	})
	t.Run("RequireNoEvent of an event that came", func(t *testing.T) {
		msg := failure(t, func(tb testing.TB) { kp.RequireNoEvent(tb, keelpay.EventPaymentIntentSucceeded, pi.ID) })
		require.Contains(t, msg, "unexpected payment_intent.succeeded event for "+pi.ID)
	})
	t.Run("RequireIntentStatus of another status", func(t *testing.T) {
		msg := failure(t, func(tb testing.TB) { shop.RequireIntentStatus(tb, pi.ID, "canceled") })
		require.Contains(t, msg, "is succeeded, want canceled")
	})
	t.Run("passing assertions do not fail", func(t *testing.T) {
		require.Empty(t, failure(t, func(tb testing.TB) {
			kp.RequireEvent(tb, keelpay.EventPaymentIntentSucceeded, pi.ID)
			kp.RequireNoEvent(tb, keelpay.EventPaymentIntentCanceled, pi.ID)
			shop.RequireIntentStatus(tb, pi.ID, "succeeded")
		}))
	})
}

// A challenge nobody answers ends when the clock passes its wait.
func TestThreeDSecureExpires(t *testing.T) {
	kp := keelpaytest.Start(t)
	shop := kp.Store(t)
	pi := shop.Pay(t, shop.SaveCard(t, sandbox.CardThreeDSecure), 500, "eur")
	require.Equal(t, keelpay.IntentRequiresAction, pi.Status)
	kp.Advance(t, 9*time.Minute)
	shop.RequireIntentStatus(t, pi.ID, keelpay.IntentRequiresAction)
	kp.Advance(t, 2*time.Minute)
	kp.RequireEvent(t, keelpay.EventPaymentIntentPaymentFailed, pi.ID)
	failed := shop.RequireIntentStatus(t, pi.ID, keelpay.IntentRequiresPaymentMethod)
	require.Equal(t, "authentication_expired", string(failed.LastError.Code))
}

// RequireNoEvent waits for what is on its way: a payment's event that has
// not arrived yet still counts.
func TestRequireNoEventWaitsForDeliveries(t *testing.T) {
	kp := keelpaytest.Start(t)
	shop := kp.Store(t)
	pi := shop.Pay(t, shop.SaveCard(t, sandbox.CardVisa), 100, "eur")
	msg := failure(t, func(tb testing.TB) { kp.RequireNoEvent(tb, keelpay.EventPaymentIntentSucceeded, pi.ID) })
	require.Contains(t, msg, "unexpected payment_intent.succeeded event for "+pi.ID)
}

// A delivery that cannot reach the receiver makes the drain fail rather
// than pass unseen.
func TestDrainFailsWhenDeliveriesDoNotArrive(t *testing.T) {
	unreachable := roundTripper(func(*http.Request) (*http.Response, error) { return nil, errors.New("unreachable") })
	kp := keelpaytest.Start(t, keelpaytest.WithWaitTimeout(100*time.Millisecond),
		keelpaytest.WithServiceConfig(func(c *service.Config) { c.WebhookTransport = unreachable }))
	shop := kp.Store(t)
	pi := shop.Pay(t, shop.SaveCard(t, sandbox.CardVisa), 100, "eur")
	msg := failure(t, func(tb testing.TB) { kp.RequireNoEvent(tb, keelpay.EventPaymentIntentCanceled, pi.ID) })
	require.Contains(t, msg, "not delivered")
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestRefundThatFailsLater goes through service.New's wiring: the
// sandbox's refund notification reaches the refunds service, and the
// refund that had succeeded is reported failed.
func TestRefundThatFailsLater(t *testing.T) {
	kp := keelpaytest.Start(t)
	shop := kp.Store(t)
	card := shop.SaveCard(t, sandbox.CardRefundFailsLater)
	pi := shop.Pay(t, card, 1999, "eur")
	r := shop.Refund(t, pi.ID, "returned")
	require.Equal(t, "succeeded", string(r.Status))
	kp.RequireEvent(t, keelpay.EventRefundSucceeded, r.ID)

	kp.Advance(t, sandbox.ResolveAfter)
	d := kp.RequireEvent(t, keelpay.EventRefundFailed, r.ID)
	require.NoError(t, d.Err)
	require.Contains(t, string(d.Body), `"refund_rejected"`)
	require.Zero(t, kp.Sandbox.Refunds())
}
