package storagetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/storage"
)

// NewEventRecord returns an event of the store with a fresh id.
func NewEventRecord(storeID string, typ keelpay.EventType, at time.Time) *keelpay.Event {
	id := keelpay.NewID(keelpay.PrefixEvent)
	return &keelpay.Event{
		ID:        id,
		StoreID:   storeID,
		Type:      typ,
		Body:      []byte(fmt.Sprintf(`{"id":%q,"type":%q}`, id, typ)),
		CreatedAt: at,
	}
}

func insertStore(t *testing.T, db storage.Storage) *keelpay.Store {
	t.Helper()
	s := NewStoreRecord(t0)
	require.NoError(t, db.StoreInsert(context.Background(), s))
	return s
}

func testEvents(t *testing.T, newStorage NewStorage) {
	ctx := context.Background()

	t.Run("InsertAndGet", func(t *testing.T) {
		t.Parallel()
		db := newStorage(t)
		s := insertStore(t, db)
		e := NewEventRecord(s.ID, keelpay.EventWebhookTest, t0)
		require.NoError(t, db.EventInsert(ctx, e))
		got, err := db.EventGet(ctx, s.ID, e.ID)
		require.NoError(t, err)
		want := *e
		want.Delivery = keelpay.Delivery{Status: keelpay.DeliveryPending, NextAttemptAt: t0}
		if diff := cmp.Diff(&want, got); diff != "" {
			t.Errorf("EventGet (-want +got):\n%s", diff)
		}
		// Another store's event is not found.
		other := insertStore(t, db)
		_, err = db.EventGet(ctx, other.ID, e.ID)
		require.ErrorIs(t, err, storage.ErrNotFound)
	})

	t.Run("InsertRollsBackWithItsChange", func(t *testing.T) {
		t.Parallel()
		db := newStorage(t)
		s := insertStore(t, db)
		e := NewEventRecord(s.ID, keelpay.EventWebhookTest, t0)
		err := db.WithTx(ctx, func(ctx context.Context, tx storage.Executor) error {
			if err := tx.EventInsert(ctx, e); err != nil {
				return err
			}
			return errors.New("the change failed")
		})
		require.Error(t, err)
		_, err = db.EventGet(ctx, s.ID, e.ID)
		require.ErrorIs(t, err, storage.ErrNotFound)
		jobs, err := db.DeliveryClaimDue(ctx, claimParams(t0, 10))
		require.NoError(t, err)
		require.Empty(t, jobs)
	})

	t.Run("ListPages", func(t *testing.T) {
		t.Parallel()
		db := newStorage(t)
		s := insertStore(t, db)
		other := insertStore(t, db)
		var ids []string // oldest first
		for i := range 7 {
			typ := keelpay.EventWebhookTest
			if i%2 == 1 {
				typ = keelpay.EventCardCreated
			}
			e := NewEventRecord(s.ID, typ, t0.Add(time.Duration(i)*time.Second))
			require.NoError(t, db.EventInsert(ctx, e))
			ids = append(ids, e.ID)
			require.NoError(t, db.EventInsert(ctx, NewEventRecord(other.ID, typ, t0)))
		}
		list := func(p storage.EventListParams) ([]string, bool) {
			t.Helper()
			p.StoreID = s.ID
			events, more, err := db.EventList(ctx, p)
			require.NoError(t, err)
			var got []string
			for _, e := range events {
				require.Equal(t, s.ID, e.StoreID)
				require.Equal(t, keelpay.DeliveryPending, e.Delivery.Status)
				got = append(got, e.ID)
			}
			return got, more
		}
		got, more := list(storage.EventListParams{Limit: 3})
		require.Equal(t, []string{ids[6], ids[5], ids[4]}, got)
		require.True(t, more)
		got, more = list(storage.EventListParams{Limit: 3, StartingAfter: ids[4]})
		require.Equal(t, []string{ids[3], ids[2], ids[1]}, got)
		require.True(t, more)
		got, more = list(storage.EventListParams{Limit: 3, StartingAfter: ids[1]})
		require.Equal(t, []string{ids[0]}, got)
		require.False(t, more)
		got, more = list(storage.EventListParams{Limit: 2, EndingBefore: ids[1]})
		require.Equal(t, []string{ids[3], ids[2]}, got)
		require.True(t, more)
		got, more = list(storage.EventListParams{Limit: 10, EndingBefore: ids[4]})
		require.Equal(t, []string{ids[6], ids[5]}, got)
		require.False(t, more)
		got, more = list(storage.EventListParams{Limit: 10, Type: keelpay.EventCardCreated})
		require.Equal(t, []string{ids[5], ids[3], ids[1]}, got)
		require.False(t, more)

		_, _, err := db.EventList(ctx, storage.EventListParams{StoreID: other.ID, Limit: 3, StartingAfter: ids[0]})
		require.ErrorIs(t, err, storage.ErrNotFound, "a cursor of another store")
	})
}

func claimParams(now time.Time, limit int) storage.DeliveryClaimParams {
	return storage.DeliveryClaimParams{
		Now:        now,
		LeaseUntil: now.Add(time.Minute),
		Limit:      limit,
		PerStore:   limit,
		LeaseToken: keelpay.NewID("lease_"),
	}
}
