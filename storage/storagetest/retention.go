package storagetest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/storage"
)

func testRetention(t *testing.T, newStorage NewStorage) {
	ctx := context.Background()

	// finish claims e's delivery and records attempts for it, the last one
	// leaving the delivery with status (pending: a retry is due later).
	finish := func(t *testing.T, db storage.Storage, e *keelpay.Event, status keelpay.DeliveryStatus, attempts int) {
		t.Helper()
		for i := range attempts {
			at := e.CreatedAt.Add(time.Duration(i+1) * time.Minute)
			p := claimParams(at, 1)
			_, err := db.DeliveryClaimEvent(ctx, e.ID, p)
			require.NoError(t, err)
			d := keelpay.Delivery{Status: keelpay.DeliveryPending, Attempts: i + 1, LastAttemptAt: at,
				NextAttemptAt: at.Add(time.Minute), LastStatusCode: 500, LastFailure: keelpay.FailureHTTPStatus}
			code := 500
			if i == attempts-1 && status != keelpay.DeliveryPending {
				d = keelpay.Delivery{Status: status, Attempts: i + 1, LastAttemptAt: at, LastStatusCode: 500, LastFailure: keelpay.FailureHTTPStatus}
				if status == keelpay.DeliverySucceeded {
					code, d.LastStatusCode, d.LastFailure = 204, 204, ""
				}
			}
			a := &keelpay.DeliveryAttempt{ID: keelpay.NewID(keelpay.PrefixAttempt), EventID: e.ID, StoreID: e.StoreID,
				StartedAt: at, StatusCode: code}
			if code != 204 {
				a.Failure = keelpay.FailureHTTPStatus
			}
			require.NoError(t, db.DeliveryRecord(ctx, []storage.DeliveryResult{{EventID: e.ID, LeaseToken: p.LeaseToken, Delivery: d, Attempt: a}}))
		}
	}
	insertEvent := func(t *testing.T, db storage.Storage, s *keelpay.Store, at time.Time) *keelpay.Event {
		t.Helper()
		e := NewEventRecord(s.ID, keelpay.EventWebhookTest, at)
		require.NoError(t, db.EventInsert(ctx, e))
		return e
	}
	attempts := func(t *testing.T, db storage.Storage, e *keelpay.Event) int {
		t.Helper()
		list, _, err := db.DeliveryAttemptList(ctx, storage.DeliveryAttemptListParams{StoreID: e.StoreID, EventID: e.ID, Limit: 100})
		require.NoError(t, err)
		return len(list)
	}
	gone := func(t *testing.T, db storage.Storage, e *keelpay.Event) bool {
		t.Helper()
		_, err := db.EventGet(ctx, e.StoreID, e.ID)
		if err == nil {
			return false
		}
		require.ErrorIs(t, err, storage.ErrNotFound)
		return true
	}

	t.Run("EventsWithFinalDeliveriesLeave", func(t *testing.T) {
		t.Parallel()
		db := newStorage(t)
		s, other := insertStore(t, db), insertStore(t, db)
		cutoff := t0.Add(30 * 24 * time.Hour)

		// Old and over: they leave, oldest first, with their attempts,
		// whichever store they belong to.
		succeeded := insertEvent(t, db, s, t0.Add(time.Second))
		finish(t, db, succeeded, keelpay.DeliverySucceeded, 2)
		failed := insertEvent(t, db, other, t0.Add(2*time.Second))
		finish(t, db, failed, keelpay.DeliveryFailed, 3)
		// Old but pending: never claimed, retrying, or queued again after
		// it failed. They stay, however old.
		neverSent := insertEvent(t, db, s, t0)
		retrying := insertEvent(t, db, s, t0.Add(3*time.Second))
		finish(t, db, retrying, keelpay.DeliveryPending, 2)
		requeued := insertEvent(t, db, s, t0.Add(4*time.Second))
		finish(t, db, requeued, keelpay.DeliveryFailed, 1)
		_, err := db.DeliveryRedeliver(ctx, s.ID, requeued.ID, cutoff)
		require.NoError(t, err)
		// Over, but not older than the cut-off: they stay.
		atCutoff := insertEvent(t, db, s, cutoff)
		finish(t, db, atCutoff, keelpay.DeliverySucceeded, 1)
		recent := insertEvent(t, db, other, cutoff.Add(time.Hour))
		finish(t, db, recent, keelpay.DeliveryFailed, 1)
		// The store's other records stay.
		pi := NewIntentRecord(s.ID, t0)
		require.NoError(t, db.PaymentIntentInsert(ctx, pi))
		card := newCard(s.ID, t0)
		require.NoError(t, db.CardInsert(ctx, card))

		pending, nfailed, err := db.DeliveryCounts(ctx)
		require.NoError(t, err)
		require.Equal(t, [2]int{3, 2}, [2]int{pending, nfailed})
		require.Equal(t, 2, attempts(t, db, succeeded))

		n, err := db.EventDeleteBefore(ctx, cutoff, 1)
		require.NoError(t, err)
		require.Equal(t, 1, n, "at most limit")
		require.True(t, gone(t, db, succeeded), "the oldest final event leaves first")
		require.False(t, gone(t, db, failed))
		require.Zero(t, attempts(t, db, succeeded), "its attempts leave with it")

		n, err = db.EventDeleteBefore(ctx, cutoff, 10)
		require.NoError(t, err)
		require.Equal(t, 1, n)
		require.True(t, gone(t, db, failed))
		require.Zero(t, attempts(t, db, failed))
		n, err = db.EventDeleteBefore(ctx, cutoff, 10)
		require.NoError(t, err)
		require.Zero(t, n, "nothing else is old and over")

		for _, e := range []*keelpay.Event{neverSent, retrying, requeued, atCutoff, recent} {
			require.False(t, gone(t, db, e), "event %s stays", e.ID)
		}
		require.Equal(t, 2, attempts(t, db, retrying))
		require.Equal(t, 1, attempts(t, db, requeued))
		require.Equal(t, 1, attempts(t, db, atCutoff))
		page, _, err := db.EventList(ctx, storage.EventListParams{StoreID: s.ID, Limit: 10})
		require.NoError(t, err)
		require.Len(t, page, 4)
		_, err = db.PaymentIntentGet(ctx, s.ID, pi.ID)
		require.NoError(t, err)
		_, err = db.CardGet(ctx, s.ID, card.ID)
		require.NoError(t, err)

		// The counts follow the deliveries that left: one failed left,
		// the pending ones stay.
		pending, nfailed, err = db.DeliveryCounts(ctx)
		require.NoError(t, err)
		require.Equal(t, [2]int{3, 1}, [2]int{pending, nfailed})

		// Later, everything over is old enough.
		n, err = db.EventDeleteBefore(ctx, cutoff.Add(2*time.Hour), 10)
		require.NoError(t, err)
		require.Equal(t, 2, n)
		pending, nfailed, err = db.DeliveryCounts(ctx)
		require.NoError(t, err)
		require.Equal(t, [2]int{3, 0}, [2]int{pending, nfailed})
	})

	t.Run("EventBatches", func(t *testing.T) {
		t.Parallel()
		db := newStorage(t)
		s := insertStore(t, db)
		var events []*keelpay.Event
		for i := range 5 {
			e := insertEvent(t, db, s, t0.Add(time.Duration(5-i)*time.Second)) // inserted newest first
			finish(t, db, e, keelpay.DeliverySucceeded, 1)
			events = append(events, e)
		}
		cutoff := t0.Add(time.Hour)
		for _, want := range []int{2, 2, 1, 0} {
			n, err := db.EventDeleteBefore(ctx, cutoff, 2)
			require.NoError(t, err)
			require.Equal(t, want, n)
		}
		for _, e := range events {
			require.True(t, gone(t, db, e))
		}
	})

	t.Run("EventDeleteInTransaction", func(t *testing.T) {
		t.Parallel()
		db := newStorage(t)
		s := insertStore(t, db)
		e := insertEvent(t, db, s, t0)
		finish(t, db, e, keelpay.DeliverySucceeded, 1)
		// A purge in a transaction that rolls back leaves the event.
		errRollback := errNamed("roll back")
		err := db.WithTx(ctx, func(ctx context.Context, tx storage.Executor) error {
			n, err := tx.EventDeleteBefore(ctx, t0.Add(time.Hour), 10)
			require.NoError(t, err)
			require.Equal(t, 1, n)
			return errRollback
		})
		require.ErrorIs(t, err, errRollback)
		require.False(t, gone(t, db, e))
		require.Equal(t, 1, attempts(t, db, e))
	})

	t.Run("CardSessions", func(t *testing.T) {
		t.Parallel()
		db := newStorage(t)
		s, other := insertStore(t, db), insertStore(t, db)
		session := func(store *keelpay.Store, expires time.Time) *keelpay.CardSession {
			t.Helper()
			cs := newCardSession(store.ID, expires.Add(-30*time.Minute))
			require.NoError(t, db.CardSessionInsert(ctx, cs))
			return cs
		}
		cutoff := t0.Add(30 * 24 * time.Hour)
		expired := session(s, t0)
		expiredOther := session(other, t0.Add(time.Second))
		n, err := db.CardSessionExpireDue(ctx, t0.Add(time.Second))
		require.NoError(t, err)
		require.Equal(t, 2, n)
		openPastExpiry := session(s, t0.Add(2*time.Second)) // the expirer has not marked it yet
		completed := session(s, t0)
		require.NoError(t, db.CardSessionComplete(ctx, s.ID, completed.ID, keelpay.NewID(keelpay.PrefixCard), t0.Add(-time.Minute)))
		recent := session(s, cutoff)

		present := func(cs *keelpay.CardSession) bool {
			t.Helper()
			_, err := db.CardSessionGet(ctx, cs.StoreID, cs.ID)
			if err == nil {
				return true
			}
			require.ErrorIs(t, err, storage.ErrNotFound)
			return false
		}
		n, err = db.CardSessionDeleteExpiredBefore(ctx, cutoff, 2)
		require.NoError(t, err)
		require.Equal(t, 2, n, "at most limit")
		require.False(t, present(expired), "the earliest expiry leaves first")
		require.False(t, present(expiredOther))
		require.True(t, present(openPastExpiry))
		n, err = db.CardSessionDeleteExpiredBefore(ctx, cutoff, 10)
		require.NoError(t, err)
		require.Equal(t, 1, n)
		require.False(t, present(openPastExpiry))
		n, err = db.CardSessionDeleteExpiredBefore(ctx, cutoff, 10)
		require.NoError(t, err)
		require.Zero(t, n)
		require.True(t, present(completed), "a completed session stays: its card names it")
		require.True(t, present(recent), "an expiry at the cut-off is not before it")
	})
}

type errNamed string

func (e errNamed) Error() string { return string(e) }
