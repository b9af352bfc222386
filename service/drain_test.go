package service_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/payments"
	"github.com/keelpay/keelpay/provider"
	"github.com/keelpay/keelpay/provider/sandbox"
	"github.com/keelpay/keelpay/service"
	"github.com/keelpay/keelpay/stores"
)

// heldCharges holds every charge until release is closed.
type heldCharges struct {
	provider.Provider
	release chan struct{}
}

func (p heldCharges) Charge(ctx context.Context, r provider.ChargeRequest) (*provider.ChargeResult, error) {
	<-p.release
	return p.Provider.Charge(ctx, r)
}

// TestStopWaitsForACallThatOutlivedItsAnswer: a confirm answered
// processing at its answer deadline leaves its provider call running. Stop
// waits for it (here until its context ends, since the call is held), and
// once the call ends its outcome is committed before the wait returns, so
// that a server shutting down does not close its database under it.
func TestStopWaitsForACallThatOutlivedItsAnswer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	held := heldCharges{Provider: sandbox.New(sandbox.Config{}), release: make(chan struct{})}
	svc, err := service.New(service.Config{
		AllowInsecureWebhooks: true,
		AnswerTimeout:         50 * time.Millisecond,
		Logger:                slog.New(slog.DiscardHandler),
		Provider:              held,
		Storage:               openDB(t),
	})
	require.NoError(t, err)
	require.NoError(t, svc.Start(ctx))
	res, err := svc.Stores().Setup(ctx, stores.SetupParams{ClientID: "app_drain", ClientSecret: "secret_drain", WebhookURL: "http://127.0.0.1:9/hooks"})
	require.NoError(t, err)
	st := res.Store
	customer := keelpay.Customer{ID: "cus_1", Name: "Jane Roe", Email: "jane@example.com", Phone: "+4915112345678"}
	pi, err := svc.Payments().CreateIntent(ctx, st, payments.IntentParams{Amount: 900, Currency: "EUR", Customer: customer})
	require.NoError(t, err)
	answered, err := svc.Payments().ConfirmIntent(ctx, st, pi.ID, payments.ConfirmParams{
		ClientSecret: pi.ClientSecret,
		Card:         &payments.NewCard{Number: sandbox.CardVisa, ExpMonth: 12, ExpYear: int64(time.Now().Year() + 2), CVC: "123"},
	})
	require.NoError(t, err)
	require.Equal(t, keelpay.IntentProcessing, answered.Status, "answered at the deadline")

	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, svc.Stop(short), context.DeadlineExceeded, "Stop waits for the call still running")

	close(held.release)
	require.NoError(t, svc.Payments().Drain(ctx))
	got, err := svc.Payments().GetIntent(ctx, st, pi.ID)
	require.NoError(t, err)
	require.Equal(t, keelpay.IntentSucceeded, got.Status, "the outcome is committed once the wait returns")
}
