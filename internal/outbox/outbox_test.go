package outbox_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/internal/outbox"
	"github.com/keelpay/keelpay/keyring/keyringtest"
	"github.com/keelpay/keelpay/provider/sandbox"
	"github.com/keelpay/keelpay/storage"
	"github.com/keelpay/keelpay/storage/sqlite"
	"github.com/keelpay/keelpay/stores"
)

func TestCommitAnnouncesOnlyWhatCommitted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, sqlite.Config{Keyring: keyringtest.Keyring(), Path: filepath.Join(t.TempDir(), "keelpay.db")})
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	res, err := mustNew(stores.New(stores.Config{Provider: sandbox.New(sandbox.Config{}), Storage: db})).Setup(ctx,
		stores.SetupParams{ClientID: "app_shop", ClientSecret: "secret_shop", WebhookURL: "https://shop.example/hooks"})
	require.NoError(t, err)
	storeID := res.Store.ID

	var announced []string
	var inTx bool
	o := outbox.New(db, func(_ context.Context, e *keelpay.Event) {
		require.False(t, inTx, "announced inside the transaction")
		announced = append(announced, e.ID)
	})
	now := time.Now()
	ok, err := outbox.Event(storeID, keelpay.EventWebhookTest, map[string]string{"message": "test"}, now)
	require.NoError(t, err)
	require.NoError(t, o.CommitTx(ctx, func(ctx context.Context, tx storage.Executor, _ *storage.Batch) error {
		inTx = true
		defer func() { inTx = false }()
		// The event is already in the transaction when the change runs.
		_, err := tx.EventGet(ctx, storeID, ok.ID)
		return err
	}, ok, nil))
	require.Equal(t, []string{ok.ID}, announced)
	stored, err := db.EventGet(ctx, storeID, ok.ID)
	require.NoError(t, err)
	require.Equal(t, ok.Body, stored.Body, "the envelope is stored byte for byte")
	require.Equal(t, keelpay.DeliveryPending, stored.Delivery.Status, "with its delivery")

	failed, err := outbox.Event(storeID, keelpay.EventWebhookTest, map[string]string{"message": "test"}, now)
	require.NoError(t, err)
	boom := errors.New("the change failed")
	require.ErrorIs(t, o.CommitTx(ctx, func(context.Context, storage.Executor, *storage.Batch) error { return boom }, failed), boom)
	require.Equal(t, []string{ok.ID}, announced, "a rolled-back event is not announced")
	_, err = db.EventGet(ctx, storeID, failed.ID)
	require.ErrorIs(t, err, storage.ErrNotFound, "nor stored")

	// A batch whose change fails: the error names the write, and the
	// event is neither stored nor announced.
	err = o.Commit(ctx, func(b *storage.Batch) error {
		b.CardUpdateStatus(storeID, "card_missing", keelpay.CardUnavailable)
		return nil
	}, failed)
	require.ErrorIs(t, err, storage.ErrNotFound)
	var we *storage.WriteError
	require.ErrorAs(t, err, &we)
	require.Equal(t, 1, we.Index, "after the event's insert")
	require.Equal(t, "CardUpdateStatus", we.Op)
	require.Equal(t, []string{ok.ID}, announced, "a rolled-back event is not announced")
	_, err = db.EventGet(ctx, storeID, failed.ID)
	require.ErrorIs(t, err, storage.ErrNotFound, "nor stored")
	// One that commits is announced once it has.
	require.NoError(t, o.Commit(ctx, nil, failed))
	require.Equal(t, []string{ok.ID, failed.ID}, announced)

	_, err = outbox.Event(storeID, "no.such_type", nil, now)
	require.Error(t, err)
}
