package storagetest

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/storage"
)

func testStores(t *testing.T, newStorage NewStorage) {
	ctx := context.Background()

	t.Run("InsertAndGetByEveryKey", func(t *testing.T) {
		t.Parallel()
		db := newStorage(t)
		want := NewStoreRecord(t0)
		require.NoError(t, db.StoreInsert(ctx, want))
		gets := map[string]func() (*keelpay.Store, error){
			"id":              func() (*keelpay.Store, error) { return db.StoreGetByID(ctx, want.ID) },
			"client_id":       func() (*keelpay.Store, error) { return db.StoreGetByClientID(ctx, want.ClientID) },
			"secret_key_hash": func() (*keelpay.Store, error) { return db.StoreGetBySecretKeyHash(ctx, want.SecretKeyHash) },
			"publishable_key": func() (*keelpay.Store, error) { return db.StoreGetByPublishableKey(ctx, want.PublishableKey) },
		}
		for name, get := range gets {
			got, err := get()
			require.NoError(t, err, name)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("get by %s (-want +got):\n%s", name, diff)
			}
		}
	})

	t.Run("NotFound", func(t *testing.T) {
		t.Parallel()
		db := newStorage(t)
		_, err := db.StoreGetByID(ctx, "store_nope")
		require.ErrorIs(t, err, storage.ErrNotFound)
		_, err = db.StoreGetByClientID(ctx, "app_nope")
		require.ErrorIs(t, err, storage.ErrNotFound)
		_, err = db.StoreGetBySecretKeyHash(ctx, []byte("nope"))
		require.ErrorIs(t, err, storage.ErrNotFound)
		_, err = db.StoreGetByPublishableKey(ctx, "pk_nope")
		require.ErrorIs(t, err, storage.ErrNotFound)
	})

	t.Run("InsertDuplicateClientID", func(t *testing.T) {
		t.Parallel()
		db := newStorage(t)
		a := NewStoreRecord(t0)
		require.NoError(t, db.StoreInsert(ctx, a))
		b := NewStoreRecord(t0)
		b.ClientID = a.ClientID
		require.ErrorIs(t, db.StoreInsert(ctx, b), storage.ErrDuplicate)
		_, err := db.StoreGetByID(ctx, b.ID)
		require.ErrorIs(t, err, storage.ErrNotFound)
	})

	t.Run("UpdateChecksVersion", func(t *testing.T) {
		t.Parallel()
		db := newStorage(t)
		s := NewStoreRecord(t0)
		require.NoError(t, db.StoreInsert(ctx, s))

		changed := *s
		changed.WebhookURL = "https://store.example/new"
		changed.UpdatedAt = t0.Add(time.Second)
		require.NoError(t, db.StoreUpdate(ctx, &changed, 1))
		require.EqualValues(t, 2, changed.Version)

		stale := *s
		stale.WebhookURL = "https://store.example/stale"
		require.ErrorIs(t, db.StoreUpdate(ctx, &stale, 1), storage.ErrConflict)

		got, err := db.StoreGetByID(ctx, s.ID)
		require.NoError(t, err)
		if diff := cmp.Diff(&changed, got); diff != "" {
			t.Errorf("after update (-want +got):\n%s", diff)
		}

		missing := NewStoreRecord(t0)
		require.ErrorIs(t, db.StoreUpdate(ctx, missing, 1), storage.ErrNotFound)
	})

	t.Run("UpdateToTakenClientID", func(t *testing.T) {
		t.Parallel()
		db := newStorage(t)
		a, b := NewStoreRecord(t0), NewStoreRecord(t0)
		require.NoError(t, db.StoreInsert(ctx, a))
		require.NoError(t, db.StoreInsert(ctx, b))
		b2 := *b
		b2.ClientID = a.ClientID
		require.ErrorIs(t, db.StoreUpdate(ctx, &b2, b.Version), storage.ErrDuplicate)
	})

	t.Run("EpochMovesWithEveryChange", func(t *testing.T) {
		t.Parallel()
		db := newStorage(t)
		w, ok := db.(storage.StoreWatcher)
		if !ok {
			t.Skip("the storage keeps no store epoch: stores.Service keeps no key cache on it")
		}
		current := func() uint64 {
			t.Helper()
			var e uint64
			require.Eventually(t, func() bool {
				var live bool
				e, live = w.StoreEpoch()
				return live
			}, 10*time.Second, 5*time.Millisecond, "the storage never heard store changes")
			return e
		}
		// Each change moves the epoch before it returns: a cache that
		// compares epochs cannot serve what was read before it.
		s := NewStoreRecord(t0)
		before := current()
		require.NoError(t, db.StoreInsert(ctx, s))
		after := current()
		require.NotEqual(t, before, after, "StoreInsert")

		before = after
		changed := *s
		changed.WebhookURL = "https://store.example/moved"
		require.NoError(t, db.StoreUpdate(ctx, &changed, 1))
		after = current()
		require.NotEqual(t, before, after, "StoreUpdate")

		before = after
		again := changed
		again.SecretKeyHash = []byte(keelpay.NewID("hash_"))
		require.NoError(t, db.WithTx(ctx, func(ctx context.Context, tx storage.Executor) error {
			return tx.StoreUpdate(ctx, &again, changed.Version)
		}))
		after = current()
		require.NotEqual(t, before, after, "StoreUpdate in a transaction")
	})
}
