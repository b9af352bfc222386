package keelpaytest_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/keelpaytest"
	"github.com/keelpay/keelpay/provider/sandbox"
	"github.com/keelpay/keelpay/webhooks"
)

// orders is a store's order book on disk: fulfilling writes a file, as a
// store's handler writes a row, and takes longer than answering a request.
type orders struct{ dir string }

func (o orders) fulfil(e webhooks.Event) error {
	if e.Type != string(keelpay.EventPaymentIntentSucceeded) {
		return nil
	}
	var pi struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(e.Data.Object, &pi); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(o.dir, pi.ID))
	if err != nil {
		return err
	}
	if _, err := f.WriteString(e.ID); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func (o orders) fulfilled(id string) bool {
	_, err := os.Stat(filepath.Join(o.dir, id))
	return err == nil
}

// RequireHandled waits for the processing webhooks.NewHandler does after it
// answered 204: the store's handler exactly as the docs show it, no
// WithDone. (Before, it returned when the handler had answered, and the
// order was not there yet.) Run it with -race -count=20.
func TestRequireHandledWaitsForTheAsyncHandler(t *testing.T) {
	kp := keelpaytest.Start(t, keelpaytest.WithWebhookPath("/webhooks"))
	shop := kp.Store(t)
	book := orders{dir: t.TempDir()}
	v, err := webhooks.NewVerifier([]string{shop.WebhookSecret})
	require.NoError(t, err)
	var paid []string // written by the handler's function, read by the test
	mux := http.NewServeMux()
	mux.Handle("POST /webhooks", webhooks.NewHandler(v, func(ctx context.Context, e webhooks.Event, body []byte) {
		if err := book.fulfil(e); err != nil {
			t.Errorf("fulfil: %v", err)
		}
		if e.Type == string(keelpay.EventPaymentIntentSucceeded) {
			// Unsynchronised on purpose: the race detector reports it
			// unless RequireHandled waited for this function.
			paid = append(paid, e.ID)
		}
	}))
	kp.HandleWebhooks(mux)

	card := shop.SaveCard(t, sandbox.CardVisa)
	for i := range 3 {
		pi := shop.Pay(t, card, 100+int64(i), "eur")
		h := kp.RequireHandled(t, keelpay.EventPaymentIntentSucceeded, pi.ID)
		require.Equal(t, http.StatusNoContent, h.Status)
		require.True(t, book.fulfilled(pi.ID), "payment %d: the order is fulfilled when RequireHandled returns", i)
		require.Len(t, paid, i+1)
	}
}

// With the durable handler, RequireHandled returns the answer given after
// processing: 500 for a failure, which keelpay delivers again; the retry
// fulfils the order.
func TestRequireHandledWithTheDurableHandler(t *testing.T) {
	kp := keelpaytest.Start(t)
	shop := kp.Store(t)
	book := orders{dir: t.TempDir()}
	v, err := webhooks.NewVerifier([]string{shop.WebhookSecret})
	require.NoError(t, err)
	var up atomic.Bool // the store's database, down at first
	retried := make(chan string, 10)
	h := webhooks.NewDurableHandler(v, func(ctx context.Context, e webhooks.Event, body []byte) error {
		if e.Type != string(keelpay.EventPaymentIntentSucceeded) {
			return nil
		}
		if !up.Swap(true) {
			return errors.New("database is down")
		}
		if err := book.fulfil(e); err != nil {
			return err
		}
		retried <- e.ID
		return nil
	}, webhooks.WithErrorHandler(func(context.Context, webhooks.Event, error) {}))
	kp.HandleWebhooks(h)

	pi := shop.Pay(t, shop.SaveCard(t, sandbox.CardVisa), 100, "eur")
	failed := kp.RequireHandled(t, keelpay.EventPaymentIntentSucceeded, pi.ID)
	require.Equal(t, http.StatusInternalServerError, failed.Status)
	require.False(t, book.fulfilled(pi.ID))

	kp.Advance(t, time.Minute) // keelpay's first retry is due a minute after the failure
	select {
	case id := <-retried:
		e, err := failed.Event()
		require.NoError(t, err)
		require.Equal(t, e.ID, id, "the same event, delivered again")
	case <-time.After(keelpaytest.WaitTimeoutDefault):
		t.Fatal("keelpay did not deliver the failed event again")
	}
	require.True(t, book.fulfilled(pi.ID))
	require.NoError(t, h.Close(t.Context()))
}

// A handler that is not one of package webhooks is handled when it returns,
// as before.
func TestRequireHandledWithAnyHandler(t *testing.T) {
	kp := keelpaytest.Start(t)
	shop := kp.Store(t)
	var got string // written by the handler, read after RequireHandled
	kp.HandleWebhooks(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(webhooks.HeaderEventType) == string(keelpay.EventPaymentIntentSucceeded) {
			got = r.Header.Get(webhooks.HeaderID)
		}
		w.WriteHeader(http.StatusAccepted)
	}))
	pi := shop.Pay(t, shop.SaveCard(t, sandbox.CardVisa), 100, "eur")
	h := kp.RequireHandled(t, keelpay.EventPaymentIntentSucceeded, pi.ID)
	require.Equal(t, http.StatusAccepted, h.Status)
	require.Equal(t, h.Header.Get(webhooks.HeaderID), got)
}
