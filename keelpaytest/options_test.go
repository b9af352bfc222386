package keelpaytest_test

import (
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/keelpaytest"
	"github.com/keelpay/keelpay/provider/sandbox"
)

// Deliveries reach the store's handler at "/" by default, so a mux that
// routes only POST /webhooks never sees them; WithWebhookPath makes the
// kit deliver where the mux listens.
func TestWebhookPath(t *testing.T) {
	mux := func(hits *atomic.Int32) http.Handler {
		m := http.NewServeMux()
		m.HandleFunc("POST /webhooks", func(w http.ResponseWriter, r *http.Request) {
			hits.Add(1)
			w.WriteHeader(http.StatusNoContent)
		})
		return m
	}

	t.Run("default /", func(t *testing.T) {
		kp := keelpaytest.Start(t)
		var hits atomic.Int32
		kp.HandleWebhooks(mux(&hits))
		shop := kp.Store(t)
		pi := shop.Pay(t, shop.SaveCard(t, sandbox.CardVisa), 100, "eur")
		h := kp.RequireHandled(t, keelpay.EventPaymentIntentSucceeded, pi.ID)
		require.Equal(t, "/", h.Path)
		require.Equal(t, http.StatusNotFound, h.Status, "the mux has no route for /")
		require.Zero(t, hits.Load())
	})
	t.Run("WithWebhookPath", func(t *testing.T) {
		kp := keelpaytest.Start(t, keelpaytest.WithWebhookPath("/webhooks"))
		var hits atomic.Int32
		kp.HandleWebhooks(mux(&hits))
		shop := kp.Store(t)
		pi := shop.Pay(t, shop.SaveCard(t, sandbox.CardVisa), 100, "eur")
		h := kp.RequireHandled(t, keelpay.EventPaymentIntentSucceeded, pi.ID)
		require.Equal(t, "/webhooks", h.Path)
		require.Equal(t, http.StatusNoContent, h.Status)
		require.NotZero(t, hits.Load())
	})
	t.Run("a path must start with /", func(t *testing.T) {
		msg := failure(t, func(tb testing.TB) { keelpaytest.Start(tb, keelpaytest.WithWebhookPath("webhooks")) })
		require.Contains(t, msg, "must start with /")
	})
}

// RequireEvent returns once the kit's receiver has a delivery; the store's
// handler may still be running. RequireHandled waits for the handler.
func TestRequireHandledWaitsForTheStoresHandler(t *testing.T) {
	kp := keelpaytest.Start(t, keelpaytest.WithWaitTimeout(300*time.Millisecond))
	release := make(chan struct{})
	var finished atomic.Bool
	kp.HandleWebhooks(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		e, _ := (keelpaytest.Handled{Body: body}).Event()
		if e.Type == string(keelpay.EventPaymentIntentSucceeded) {
			select {
			case <-release:
			case <-r.Context().Done():
				return
			}
			finished.Store(true)
		}
		w.WriteHeader(http.StatusAccepted)
	}))
	shop := kp.Store(t)
	pi := shop.Pay(t, shop.SaveCard(t, sandbox.CardVisa), 100, "eur")

	// The receiver has the delivery while the handler is held.
	kp.RequireEvent(t, keelpay.EventPaymentIntentSucceeded, pi.ID)
	msg := failure(t, func(tb testing.TB) { kp.RequireHandled(tb, keelpay.EventPaymentIntentSucceeded, pi.ID) })
	require.Contains(t, msg, "finished with no payment_intent.succeeded event for "+pi.ID)
	require.False(t, finished.Load())

	close(release)
	h := kp.RequireHandled(t, keelpay.EventPaymentIntentSucceeded, pi.ID)
	require.True(t, finished.Load(), "RequireHandled returned after the handler did")
	require.Equal(t, http.StatusAccepted, h.Status)
	e, err := h.Event()
	require.NoError(t, err)
	require.Equal(t, string(keelpay.EventPaymentIntentSucceeded), e.Type)
}

// A new card confirmed with the publishable key, as the card field does:
// card_rejected is a failed attempt.
func TestPayWithNewCard(t *testing.T) {
	kp := keelpaytest.Start(t)
	shop := kp.Store(t)

	pi := shop.PayWithNewCard(t, sandbox.CardVisa, 1500, "eur")
	require.Equal(t, keelpay.IntentSucceeded, pi.Status)
	require.NotNil(t, pi.PaymentMethod)
	require.False(t, pi.PaymentMethod.Saved, "a new card is not saved")
	require.Empty(t, pi.ClientSecret, "the publishable key's view")
	kp.RequireEvent(t, keelpay.EventPaymentIntentSucceeded, pi.ID)

	rejected := shop.PayWithNewCard(t, sandbox.CardRejected, 1500, "eur")
	require.Equal(t, keelpay.IntentRequiresPaymentMethod, rejected.Status)
	require.Equal(t, "card_rejected", string(rejected.LastError.Code))
	kp.RequireEvent(t, keelpay.EventPaymentIntentPaymentFailed, rejected.ID)
}

func TestStoreOptions(t *testing.T) {
	kp := keelpaytest.Start(t)

	eur := kp.Store(t)
	require.Equal(t, "EUR", eur.Currency)

	usd := kp.Store(t, keelpaytest.WithCurrency("usd"))
	require.Equal(t, "USD", usd.Currency)
	require.Contains(t, usd.ClientID, "_usd")
	pi := usd.Pay(t, usd.SaveCard(t, sandbox.CardVisa), 1000, "usd")
	require.Equal(t, keelpay.IntentSucceeded, pi.Status)
	require.Equal(t, "USD", pi.Currency)

	sek := kp.Store(t, keelpaytest.WithCurrency("sek"))
	require.Equal(t, "SEK", sek.Currency)

	gbp := kp.Store(t, keelpaytest.WithClientIDPart("_gbp"))
	require.Equal(t, "GBP", gbp.Currency)

	// A part whose setup fails: Setup returns the answer, Store fails.
	store, err := kp.Setup(t, keelpaytest.WithClientIDPart("_missing_roles"))
	require.Nil(t, store)
	require.NotNil(t, err)
	require.Equal(t, http.StatusUnprocessableEntity, err.Status)
	require.Equal(t, "missing_roles", err.Code)
	require.Equal(t, []any{"payments", "refunds"}, err.Details["missing_roles"])
	msg := failure(t, func(tb testing.TB) { kp.Store(tb, keelpaytest.WithClientIDPart("_unavailable")) })
	require.Contains(t, msg, "status 503, provider_api_unavailable")

	msg = failure(t, func(tb testing.TB) { kp.Store(tb, keelpaytest.WithClientIDPart("usd")) })
	require.Contains(t, msg, "a part is _ followed by")
	msg = failure(t, func(tb testing.TB) {
		kp.Store(tb, keelpaytest.WithCurrency("sek"), keelpaytest.WithClientIDPart("_x"))
	})
	require.Contains(t, msg, "cannot be combined")
}

// One kit's clock is every subtest's: Advance in one moves the others'.
func TestAdvanceMovesTheClockOfEverySubtestOnTheKit(t *testing.T) {
	kp := keelpaytest.Start(t)
	shop := kp.Store(t)
	pi := shop.Pay(t, shop.SaveCard(t, sandbox.CardThreeDSecure), 500, "eur")
	require.Equal(t, keelpay.IntentRequiresAction, pi.Status)
	advanced := make(chan struct{})
	t.Run("group", func(t *testing.T) {
		t.Run("moves the clock", func(t *testing.T) {
			t.Parallel()
			kp.Advance(t, 11*time.Minute)
			close(advanced)
		})
		t.Run("waits for 3D Secure", func(t *testing.T) {
			t.Parallel()
			<-advanced
			// This subtest never moved the clock, yet its challenge timed out.
			failed := shop.RequireIntentStatus(t, pi.ID, keelpay.IntentRequiresPaymentMethod)
			require.Equal(t, "authentication_expired", string(failed.LastError.Code))
		})
	})
}

// With WithWebhookFaults the store's faults shape the kit's deliveries,
// and deliveries leave only when the test asks: a delivery sent twice
// arrives twice with the same bytes, and one held back arrives once the
// clock has moved past the hold.
func TestWebhookFaults(t *testing.T) {
	faults := sandbox.NewWebhookFaults()
	kp := keelpaytest.Start(t, keelpaytest.WithWebhookFaults(faults))
	shop := kp.Store(t)
	card := shop.SaveCard(t, sandbox.CardVisa)
	require.Equal(t, 1, kp.Deliver(t), "the card's card.created")
	require.Len(t, kp.Webhooks.Deliveries(), 1)

	require.NoError(t, faults.Set(shop.ID, sandbox.Faults{Duplicate: 1}))
	twice := shop.Pay(t, card, 100, "eur")
	require.Len(t, kp.Webhooks.Deliveries(), 1, "nothing leaves before the test asks")
	require.Equal(t, 1, kp.Deliver(t))
	got := kp.Webhooks.Deliveries()[1:]
	require.Len(t, got, 2, "sent twice")
	require.Equal(t, got[0].Body, got[1].Body)
	require.Equal(t, got[0].Header.Get("webhook-id"), got[1].Header.Get("webhook-id"))
	kp.RequireEvent(t, keelpay.EventPaymentIntentSucceeded, twice.ID)

	require.NoError(t, faults.Set(shop.ID, sandbox.Faults{Reorder: 1, ReorderHold: time.Minute}))
	held := shop.Pay(t, card, 200, "eur")
	require.Equal(t, 1, kp.Deliver(t), "claimed and held back")
	require.Len(t, kp.Webhooks.Deliveries(), 3)
	kp.Advance(t, 59*time.Second)
	require.Len(t, kp.Webhooks.Deliveries(), 3, "still held")
	kp.Advance(t, time.Second)
	require.Len(t, kp.Webhooks.Deliveries(), 4)
	kp.RequireEvent(t, keelpay.EventPaymentIntentSucceeded, held.ID)
	kp.RequireNoEvent(t, keelpay.EventPaymentIntentCanceled, held.ID)
}

// Deliver is for a kit whose dispatcher waits for the test; any other
// kit delivers on its own, and Deliver says so.
func TestDeliverNeedsWebhookFaults(t *testing.T) {
	kp := keelpaytest.Start(t)
	msg := failure(t, func(tb testing.TB) { kp.Deliver(tb) })
	require.Contains(t, msg, "Deliver needs a kit started WithWebhookFaults")
}
