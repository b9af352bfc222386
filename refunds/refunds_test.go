package refunds_test

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/keelpaytest"
	"github.com/keelpay/keelpay/keyring/keyringtest"
	"github.com/keelpay/keelpay/payments"
	"github.com/keelpay/keelpay/provider"
	"github.com/keelpay/keelpay/provider/sandbox"
	"github.com/keelpay/keelpay/refunds"
	"github.com/keelpay/keelpay/storage"
	"github.com/keelpay/keelpay/storage/sqlite"
	"github.com/keelpay/keelpay/stores"
)

// unavailable is a provider whose refunds do nothing: the provider is
// down and says when to come back.
type unavailable struct{ provider.Provider }

func (unavailable) Refund(context.Context, provider.RefundRequest) (*provider.RefundResult, error) {
	return nil, &provider.Error{Kind: provider.KindUnavailable, RetryAfter: 7 * time.Second}
}

type bundle struct {
	db    storage.Storage
	clock *keelpaytest.Clock
	sb    *sandbox.Sandbox
	store *keelpay.Store
	paid  *keelpay.PaymentIntent

	mu        sync.Mutex
	committed []*keelpay.Event
}

func setup(t *testing.T) *bundle {
	t.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, sqlite.Config{Keyring: keyringtest.Keyring(), Path: filepath.Join(t.TempDir(), "keelpay.db")})
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	clock := keelpaytest.NewClock(time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC))
	sb := sandbox.New(sandbox.Config{Clock: clock})
	res, err := mustNew(stores.New(stores.Config{Clock: clock, Provider: sb, Storage: db})).Setup(ctx,
		stores.SetupParams{ClientID: "app_shop", ClientSecret: "secret_shop", WebhookURL: "https://shop.example/hooks"})
	require.NoError(t, err)
	pay := mustNew(payments.New(payments.Config{Clock: clock, Provider: sb, Storage: db}))
	pi, err := pay.CreateIntent(ctx, res.Store, payments.IntentParams{Amount: 1999, Currency: "eur",
		Customer: keelpay.Customer{ID: "cus_1", Name: "Jane Roe", Email: "jane@example.com", Phone: "+4915112345678"}})
	require.NoError(t, err)
	pi, err = pay.ConfirmIntent(ctx, res.Store, pi.ID, payments.ConfirmParams{ClientSecret: pi.ClientSecret,
		Card: &payments.NewCard{Number: sandbox.CardVisa, ExpMonth: 12, ExpYear: 2030, CVC: "123"}})
	require.NoError(t, err)
	require.Equal(t, keelpay.IntentSucceeded, pi.Status)
	return &bundle{db: db, clock: clock, sb: sb, store: res.Store, paid: pi}
}

func (b *bundle) service(p provider.Provider) *refunds.Service {
	return mustNew(refunds.New(refunds.Config{Clock: b.clock, Provider: p, Storage: b.db,
		Committed: func(_ context.Context, e *keelpay.Event) {
			b.mu.Lock()
			defer b.mu.Unlock()
			b.committed = append(b.committed, e)
		}}))

}

func TestSendCommitsTheRefundWithItsEvent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	ref := b.service(b.sb)
	res, err := ref.Send(ctx, b.store, refunds.Params{PaymentIntent: b.paid.ID, Reason: "Returned"})
	require.NoError(t, err)
	require.True(t, res.Created)
	require.Equal(t, keelpay.RefundSucceeded, res.Refund.Status)

	// The event was announced once its transaction had committed: it is
	// in storage, with its delivery.
	require.Len(t, b.committed, 1)
	e := b.committed[0]
	require.Equal(t, keelpay.EventRefundSucceeded, e.Type)
	stored, err := b.db.EventGet(ctx, b.store.ID, e.ID)
	require.NoError(t, err)
	require.Equal(t, keelpay.DeliveryPending, stored.Delivery.Status)

	_, err = ref.Send(ctx, b.store, refunds.Params{PaymentIntent: b.paid.ID, Reason: "Again"})
	require.Equal(t, keelpay.CodeRefundExists, keelpay.ErrorCode(err))
	got, err := ref.Get(ctx, b.store, res.Refund.ID)
	require.NoError(t, err)
	require.Equal(t, res.Refund.ID, got.ID)
	_, err = ref.Get(ctx, b.store, "re_000000000000000000000000")
	require.Equal(t, keelpay.CodeRefundNotFound, keelpay.ErrorCode(err))
}

func TestProviderDownKeepsNothingAndSaysWhenToRetry(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	_, err := b.service(unavailable{b.sb}).Send(ctx, b.store, refunds.Params{PaymentIntent: b.paid.ID, Reason: "Returned"})
	e, ok := keelpay.AsError(err)
	require.True(t, ok, "%v", err)
	require.Equal(t, keelpay.CodeProviderAPIUnavailable, e.Code)
	require.Equal(t, 7*time.Second, e.RetryAfter, "the provider's Retry-After")
	_, err = b.db.RefundGetByIntent(ctx, b.store.ID, b.paid.ID)
	require.ErrorIs(t, err, storage.ErrNotFound, "nothing was kept")
	require.Empty(t, b.committed)

	// Once the provider is back the first send is made as if nothing
	// happened.
	res, err := b.service(b.sb).Send(ctx, b.store, refunds.Params{PaymentIntent: b.paid.ID, Reason: "Returned"})
	require.NoError(t, err)
	require.True(t, res.Created)
}

func TestSendChecksTheRequest(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ref := b.service(b.sb)
	for _, p := range []refunds.Params{
		{Reason: "Returned"},
		{PaymentIntent: "pi_x", Reason: "Returned"},
		{PaymentIntent: b.paid.ID},
		{PaymentIntent: b.paid.ID, Reason: "Returned", Metadata: map[string]string{"": "x"}},
	} {
		_, err := ref.Send(context.Background(), b.store, p)
		require.Equal(t, keelpay.CodeInvalidRequest, keelpay.ErrorCode(err), "%+v", p)
	}
	_, err := ref.Send(context.Background(), b.store, refunds.Params{PaymentIntent: "pi_000000000000000000000000", Reason: "Returned"})
	require.Equal(t, keelpay.CodePaymentIntentNotFound, keelpay.ErrorCode(err))
}
