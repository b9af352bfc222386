package storagetest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/storage"
)

// NewRefundRecord returns a pending refund of a store's intent, as a first
// send records it.
func NewRefundRecord(storeID, paymentIntentID string, now time.Time) *keelpay.Refund {
	return &keelpay.Refund{
		ID:              keelpay.NewID(keelpay.PrefixRefund),
		StoreID:         storeID,
		PaymentIntentID: paymentIntentID,
		Amount:          1999,
		Currency:        "EUR",
		Reason:          "Returned within 30 days",
		Metadata:        map[string]string{"ticket": "T-1"},
		Status:          keelpay.RefundPending,
		Attempts:        1,
		AttemptID:       keelpay.NewID("rfatt_"),
		LastSentAt:      now,
		ReconcileAt:     now.Add(time.Minute),
		CreatedAt:       now,
		UpdatedAt:       now,
		Version:         1,
	}
}

func testRefunds(t *testing.T, newStorage NewStorage) {
	ctx := context.Background()

	t.Run("InsertGetUpdate", func(t *testing.T) {
		t.Parallel()
		db := newStorage(t)
		s := insertStore(t, db)
		r := NewRefundRecord(s.ID, "pi_1", t0)
		require.NoError(t, db.RefundInsert(ctx, r))
		for name, get := range map[string]func() (*keelpay.Refund, error){
			"id":      func() (*keelpay.Refund, error) { return db.RefundGet(ctx, s.ID, r.ID) },
			"intent":  func() (*keelpay.Refund, error) { return db.RefundGetByIntent(ctx, s.ID, "pi_1") },
			"attempt": func() (*keelpay.Refund, error) { return db.RefundGetByAttempt(ctx, r.AttemptID) },
		} {
			got, err := get()
			require.NoError(t, err, name)
			if diff := cmp.Diff(r, got); diff != "" {
				t.Errorf("get by %s (-want +got):\n%s", name, diff)
			}
		}

		failed := *r
		failed.Status = keelpay.RefundFailed
		failed.LastError = &keelpay.LastError{Code: "refund_rejected", Message: "Refund declined by issuer."}
		failed.ReconcileAt = time.Time{}
		failed.Metadata = nil
		failed.UpdatedAt = t0.Add(time.Second)
		require.NoError(t, db.RefundUpdate(ctx, &failed, 1))
		require.EqualValues(t, 2, failed.Version)
		got, err := db.RefundGet(ctx, s.ID, r.ID)
		require.NoError(t, err)
		failed.Metadata = map[string]string{}
		if diff := cmp.Diff(&failed, got); diff != "" {
			t.Errorf("after update (-want +got):\n%s", diff)
		}

		// A send again with a new attempt id is found by that id only.
		resent := failed
		resent.Status, resent.AttemptID, resent.Attempts = keelpay.RefundPending, keelpay.NewID("rfatt_"), 2
		require.NoError(t, db.RefundUpdate(ctx, &resent, failed.Version))
		got, err = db.RefundGetByAttempt(ctx, resent.AttemptID)
		require.NoError(t, err)
		require.Equal(t, r.ID, got.ID)
		_, err = db.RefundGetByAttempt(ctx, r.AttemptID)
		require.ErrorIs(t, err, storage.ErrNotFound, "the earlier send's attempt id")
		_, err = db.RefundGetByAttempt(ctx, "rfatt_missing")
		require.ErrorIs(t, err, storage.ErrNotFound)

		stale := *r
		require.ErrorIs(t, db.RefundUpdate(ctx, &stale, 1), storage.ErrConflict)
		missing := NewRefundRecord(s.ID, "pi_2", t0)
		require.ErrorIs(t, db.RefundUpdate(ctx, missing, 1), storage.ErrNotFound)
	})

	t.Run("StoreScoped", func(t *testing.T) {
		t.Parallel()
		db := newStorage(t)
		s, other := insertStore(t, db), insertStore(t, db)
		r := NewRefundRecord(s.ID, "pi_1", t0)
		require.NoError(t, db.RefundInsert(ctx, r))
		_, err := db.RefundGet(ctx, other.ID, r.ID)
		require.ErrorIs(t, err, storage.ErrNotFound)
		_, err = db.RefundGetByIntent(ctx, other.ID, "pi_1")
		require.ErrorIs(t, err, storage.ErrNotFound)
		wrongStore := *r
		wrongStore.StoreID = other.ID
		require.ErrorIs(t, db.RefundUpdate(ctx, &wrongStore, 1), storage.ErrNotFound)
		require.ErrorIs(t, db.RefundDelete(ctx, other.ID, r.ID, 1), storage.ErrNotFound)
	})

	t.Run("OnePerIntentEvenConcurrently", func(t *testing.T) {
		t.Parallel()
		db := newStorage(t)
		s := insertStore(t, db)
		var wg sync.WaitGroup
		errs := make([]error, 10)
		for i := range errs {
			wg.Go(func() { errs[i] = db.RefundInsert(ctx, NewRefundRecord(s.ID, "pi_1", t0)) })
		}
		wg.Wait()
		ok := 0
		for _, err := range errs {
			if err == nil {
				ok++
			} else {
				require.ErrorIs(t, err, storage.ErrDuplicate)
			}
		}
		require.Equal(t, 1, ok)
	})

	t.Run("DeleteChecksVersion", func(t *testing.T) {
		t.Parallel()
		db := newStorage(t)
		s := insertStore(t, db)
		r := NewRefundRecord(s.ID, "pi_1", t0)
		require.NoError(t, db.RefundInsert(ctx, r))
		require.ErrorIs(t, db.RefundDelete(ctx, s.ID, r.ID, 7), storage.ErrConflict)
		require.NoError(t, db.RefundDelete(ctx, s.ID, r.ID, 1))
		_, err := db.RefundGet(ctx, s.ID, r.ID)
		require.ErrorIs(t, err, storage.ErrNotFound)
		// The intent can have a refund again.
		require.NoError(t, db.RefundInsert(ctx, NewRefundRecord(s.ID, "pi_1", t0)))
	})

	t.Run("ReconcileDue", func(t *testing.T) {
		t.Parallel()
		db := newStorage(t)
		s, other := insertStore(t, db), insertStore(t, db)
		early := NewRefundRecord(s.ID, "pi_1", t0)
		late := NewRefundRecord(other.ID, "pi_2", t0.Add(time.Minute))
		done := NewRefundRecord(s.ID, "pi_3", t0)
		done.Status, done.ReconcileAt = keelpay.RefundSucceeded, time.Time{}
		unscheduled := NewRefundRecord(s.ID, "pi_4", t0)
		unscheduled.ReconcileAt = time.Time{}
		for _, r := range []*keelpay.Refund{late, early, done, unscheduled} {
			require.NoError(t, db.RefundInsert(ctx, r))
		}
		ids := func(now time.Time, limit int) []string {
			t.Helper()
			list, err := db.RefundListReconcileDue(ctx, now, limit)
			require.NoError(t, err)
			var out []string
			for _, r := range list {
				out = append(out, r.ID)
			}
			return out
		}
		require.Empty(t, ids(t0, 10))
		require.Equal(t, []string{early.ID}, ids(t0.Add(time.Minute), 10))
		require.Equal(t, []string{early.ID, late.ID}, ids(t0.Add(2*time.Minute), 10), "every store, earliest first")
		require.Equal(t, []string{early.ID}, ids(t0.Add(2*time.Minute), 1))
	})
}
