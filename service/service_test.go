package service_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/keelpaytest"
	"github.com/keelpay/keelpay/keyring/keyringtest"
	"github.com/keelpay/keelpay/payments"
	"github.com/keelpay/keelpay/provider/sandbox"
	"github.com/keelpay/keelpay/service"
	"github.com/keelpay/keelpay/storage"
	"github.com/keelpay/keelpay/storage/sqlite"
	"github.com/keelpay/keelpay/stores"
	"github.com/keelpay/keelpay/webhooks/webhookstest"
)

func openDB(t *testing.T) storage.Storage {
	t.Helper()
	db, err := sqlite.Open(context.Background(), sqlite.Config{Keyring: keyringtest.Keyring(), Path: filepath.Join(t.TempDir(), "keelpay.db")})
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	return db
}

func TestNewNamesWhatIsWrong(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	sb := sandbox.New(sandbox.Config{})
	for _, tc := range []struct {
		name string
		cfg  service.Config
		want []string
	}{
		{"nothing", service.Config{}, []string{"Config.Provider is required", "Config.Storage is required"}},
		{"no storage", service.Config{Provider: sb}, []string{"Config.Storage is required"}},
		{"call timeout too long", service.Config{CallTimeout: time.Hour, Provider: sb, Storage: db}, []string{"Config.CallTimeout"}},
		{"answer deadline within the server's write time-out", service.Config{AnswerTimeout: 26 * time.Second, Provider: sb, Storage: db},
			[]string{"Config.AnswerTimeout is 26s; it must be positive and at most 25s"}},
		{"negative interval", service.Config{ReconcileInterval: -time.Second, Provider: sb, Storage: db}, []string{"Config.ReconcileInterval"}},
		{"lease within the attempt", service.Config{Provider: sb, Storage: db,
			WebhookAttemptTimeout: time.Minute, WebhookLease: 30 * time.Second},
			[]string{"Config.WebhookLease", "Config.WebhookAttemptTimeout"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			svc, err := service.New(tc.cfg)
			require.Nil(t, svc)
			require.Error(t, err)
			for _, w := range tc.want {
				require.Contains(t, err.Error(), w)
			}
		})
	}
}

// bundle is a started Service over SQLite and the sandbox, with a store
// whose webhooks go to a recorder.
type bundle struct {
	svc   *service.Service
	clock *keelpaytest.Clock
	store *keelpay.Store
	rec   *webhookstest.Recorder
}

func start(t *testing.T) *bundle {
	t.Helper()
	ctx := context.Background()
	clock := keelpaytest.NewClock(time.Now().UTC().Truncate(time.Second))
	svc, err := service.New(service.Config{
		AllowInsecureWebhooks: true,
		Clock:                 clock,
		// The workers' own passes stay out of the way; the test drives
		// what it needs.
		ExpireInterval:      time.Hour,
		Provider:            sandbox.New(sandbox.Config{Clock: clock}),
		ReconcileInterval:   time.Hour,
		Storage:             openDB(t),
		WebhookPollInterval: time.Hour,
	})
	require.NoError(t, err)
	rec := webhookstest.NewRecorder(t, "")
	res, err := svc.Stores().Setup(ctx, stores.SetupParams{ClientID: "app_shop", ClientSecret: "secret_shop", WebhookURL: rec.URL() + "/hooks"})
	require.NoError(t, err)
	require.NoError(t, rec.SetSecrets(res.Store.WebhookSecret))
	require.NoError(t, svc.Start(ctx))
	t.Cleanup(func() { require.NoError(t, svc.Stop(context.Background())) })
	return &bundle{svc: svc, clock: clock, store: res.Store, rec: rec}
}

func (b *bundle) pay(t *testing.T, card string) *keelpay.PaymentIntent {
	t.Helper()
	ctx := context.Background()
	pay := b.svc.Payments()
	pi, err := pay.CreateIntent(ctx, b.store, payments.IntentParams{
		Amount: 1999, Currency: "eur",
		Customer: keelpay.Customer{ID: "cus_1", Name: "Jane Roe", Email: "jane@example.com", Phone: "+4915112345678"},
	})
	require.NoError(t, err)
	pi, err = pay.ConfirmIntent(ctx, b.store, pi.ID, payments.ConfirmParams{
		ClientSecret: pi.ClientSecret,
		Card:         &payments.NewCard{Number: card, ExpMonth: 12, ExpYear: int64(time.Now().Year() + 2), CVC: "123"},
	})
	require.NoError(t, err)
	return pi
}

func TestSubscribeGetsCommittedEventsTyped(t *testing.T) {
	t.Parallel()
	b := start(t)
	succeeded, stop := b.svc.Subscribe(keelpay.EventPaymentIntentSucceeded)
	all, stopAll := b.svc.Subscribe()
	defer stopAll()

	pi := b.pay(t, sandbox.CardVisa)
	require.Equal(t, keelpay.IntentSucceeded, pi.Status)
	// Delivered after commit, before ConfirmIntent returned.
	require.Len(t, succeeded, 1)
	e := <-succeeded
	require.Equal(t, keelpay.EventPaymentIntentSucceeded, e.Type)
	require.Equal(t, b.store.ID, e.StoreID)
	require.NotNil(t, e.PaymentIntent)
	require.Equal(t, pi.ID, e.PaymentIntent.ID)
	require.Equal(t, keelpay.IntentSucceeded, e.PaymentIntent.Status)
	require.Nil(t, e.Refund)

	// The subscription to every type sees the same event.
	got := <-all
	require.Equal(t, e.ID, got.ID)

	stop()
	_, open := <-succeeded
	require.False(t, open, "ending a subscription closes its channel")
	b.pay(t, sandbox.CardDeclined)
	require.Equal(t, keelpay.EventPaymentIntentPaymentFailed, (<-all).Type)
}

func TestPaymentWebhookLeavesWithoutWaitingForThePoll(t *testing.T) {
	t.Parallel()
	b := start(t)
	// The dispatcher polls every hour here: only the wake-up after commit
	// can deliver the webhook while the test waits.
	pi := b.pay(t, sandbox.CardVisa)
	got := b.rec.Wait(t, 1)
	require.NoError(t, got[0].Err)
	ev, err := got[0].Event()
	require.NoError(t, err)
	require.Equal(t, "payment_intent.succeeded", string(ev.Type))
	require.Contains(t, string(got[0].Body), pi.ID)
}

func TestHandlersStandApart(t *testing.T) {
	t.Parallel()
	b := start(t)
	srv := httptest.NewServer(b.svc.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/healthz")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusNotFound, resp.StatusCode, "the API does not mount health checks inside its prefix")

	rec := httptest.NewRecorder()
	b.svc.HealthHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/anything", nil))
	require.Equal(t, http.StatusOK, rec.Code)
	require.JSONEq(t, `{"status":"ok"}`, rec.Body.String())

	rec = httptest.NewRecorder()
	b.svc.MetricsHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/m", nil))
	require.Equal(t, http.StatusOK, rec.Code)
	require.True(t, strings.Contains(rec.Body.String(), "keelpay_payment_intents"), "the services' metrics are registered")
}

func TestStartTwiceAndStopWithoutStart(t *testing.T) {
	t.Parallel()
	svc, err := service.New(service.Config{Provider: sandbox.New(sandbox.Config{}), Storage: openDB(t)})
	require.NoError(t, err)
	require.NoError(t, svc.Stop(context.Background()), "Stop without Start does nothing")
	require.NoError(t, svc.Start(context.Background()))
	require.ErrorIs(t, svc.Start(context.Background()), service.ErrStarted)
	require.NoError(t, svc.Stop(context.Background()))
	require.NoError(t, svc.Start(context.Background()), "a stopped Service starts again")
	require.NoError(t, svc.Stop(context.Background()))
}

func TestStopLetsADeliveryUnderWayFinish(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := start(t)
	entered, release := make(chan struct{}, 1), make(chan struct{})
	b.rec.SetResponder(func(w http.ResponseWriter, _ *http.Request) {
		entered <- struct{}{}
		<-release
		w.WriteHeader(http.StatusNoContent)
	})
	b.pay(t, sandbox.CardVisa)
	<-entered // the dispatcher is posting the payment's webhook

	stopped := make(chan error)
	go func() { stopped <- b.svc.Stop(ctx) }()
	select {
	case err := <-stopped:
		t.Fatalf("Stop returned (%v) while the receiver was still answering", err)
	default:
	}
	close(release)
	require.NoError(t, <-stopped)
	list, _, err := b.svc.Events().List(ctx, storage.EventListParams{StoreID: b.store.ID, Type: keelpay.EventPaymentIntentSucceeded})
	require.NoError(t, err)
	require.Len(t, list, 1)
	require.Equal(t, keelpay.DeliverySucceeded, list[0].Delivery.Status, "the attempt under way was finished and recorded")
}
