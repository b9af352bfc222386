package storagetest

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/storage"
)

func testDeliveries(t *testing.T, newStorage NewStorage) {
	ctx := context.Background()

	t.Run("ClaimRecordRetry", func(t *testing.T) {
		t.Parallel()
		db := newStorage(t)
		s := insertStore(t, db)
		e := NewEventRecord(s.ID, keelpay.EventWebhookTest, t0)
		require.NoError(t, db.EventInsert(ctx, e))

		next, err := db.DeliveryNextDue(ctx)
		require.NoError(t, err)
		require.Equal(t, t0, next)

		p := claimParams(t0, 10)
		jobs, err := db.DeliveryClaimDue(ctx, p)
		require.NoError(t, err)
		want := []*storage.DeliveryJob{{
			EventID: e.ID, StoreID: s.ID, Type: e.Type, Body: e.Body, Attempts: 0,
			WebhookURL: s.WebhookURL, WebhookSecret: s.WebhookSecret, LeaseToken: p.LeaseToken,
		}}
		if diff := cmp.Diff(want, jobs); diff != "" {
			t.Fatalf("claim (-want +got):\n%s", diff)
		}
		// Leased: not claimable again until the lease lapses.
		again, err := db.DeliveryClaimDue(ctx, claimParams(t0, 10))
		require.NoError(t, err)
		require.Empty(t, again)
		next, err = db.DeliveryNextDue(ctx)
		require.NoError(t, err)
		require.Equal(t, p.LeaseUntil, next)

		failed := keelpay.Delivery{
			Status: keelpay.DeliveryPending, Attempts: 1, LastAttemptAt: t0, NextAttemptAt: t0.Add(time.Minute),
			LastStatusCode: 500, LastFailure: keelpay.FailureHTTPStatus,
		}
		require.NoError(t, db.DeliveryRecord(ctx, []storage.DeliveryResult{{EventID: e.ID, LeaseToken: p.LeaseToken, Delivery: failed}}))
		got, err := db.EventGet(ctx, s.ID, e.ID)
		require.NoError(t, err)
		if diff := cmp.Diff(failed, got.Delivery); diff != "" {
			t.Errorf("delivery after a failure (-want +got):\n%s", diff)
		}
		// Not due before its next attempt; due at it.
		jobs, err = db.DeliveryClaimDue(ctx, claimParams(t0.Add(59*time.Second), 10))
		require.NoError(t, err)
		require.Empty(t, jobs)
		p2 := claimParams(t0.Add(time.Minute), 10)
		jobs, err = db.DeliveryClaimDue(ctx, p2)
		require.NoError(t, err)
		require.Len(t, jobs, 1)
		require.Equal(t, 1, jobs[0].Attempts)

		ok := keelpay.Delivery{Status: keelpay.DeliverySucceeded, Attempts: 2, LastAttemptAt: p2.Now, LastStatusCode: 204}
		require.NoError(t, db.DeliveryRecord(ctx, []storage.DeliveryResult{{EventID: e.ID, LeaseToken: p2.LeaseToken, Delivery: ok}}))
		got, err = db.EventGet(ctx, s.ID, e.ID)
		require.NoError(t, err)
		if diff := cmp.Diff(ok, got.Delivery); diff != "" {
			t.Errorf("delivery after success (-want +got):\n%s", diff)
		}
		next, err = db.DeliveryNextDue(ctx)
		require.NoError(t, err)
		require.True(t, next.IsZero())
	})

	t.Run("LapsedLeaseIsClaimedAgainAndStaleRecordIgnored", func(t *testing.T) {
		t.Parallel()
		db := newStorage(t)
		s := insertStore(t, db)
		e := NewEventRecord(s.ID, keelpay.EventWebhookTest, t0)
		require.NoError(t, db.EventInsert(ctx, e))
		dead := claimParams(t0, 10) // this process dies mid-attempt
		jobs, err := db.DeliveryClaimDue(ctx, dead)
		require.NoError(t, err)
		require.Len(t, jobs, 1)

		live := claimParams(dead.LeaseUntil, 10)
		jobs, err = db.DeliveryClaimDue(ctx, live)
		require.NoError(t, err)
		require.Len(t, jobs, 1)

		// The dead process's late record is ignored.
		late := keelpay.Delivery{Status: keelpay.DeliveryFailed, Attempts: 7, LastAttemptAt: t0}
		require.NoError(t, db.DeliveryRecord(ctx, []storage.DeliveryResult{{EventID: e.ID, LeaseToken: dead.LeaseToken, Delivery: late}}))
		got, err := db.EventGet(ctx, s.ID, e.ID)
		require.NoError(t, err)
		require.Equal(t, keelpay.DeliveryPending, got.Delivery.Status)
		require.Zero(t, got.Delivery.Attempts)
	})

	t.Run("ClaimEvent", func(t *testing.T) {
		t.Parallel()
		db := newStorage(t)
		s := insertStore(t, db)
		e := NewEventRecord(s.ID, keelpay.EventWebhookTest, t0)
		var job *storage.DeliveryJob
		p := claimParams(t0, 1)
		// Created and claimed in one transaction: never visible unleased.
		err := db.WithTx(ctx, func(ctx context.Context, tx storage.Executor) error {
			if err := tx.EventInsert(ctx, e); err != nil {
				return err
			}
			var err error
			job, err = tx.DeliveryClaimEvent(ctx, e.ID, p)
			return err
		})
		require.NoError(t, err)
		require.Equal(t, e.ID, job.EventID)
		require.Equal(t, s.WebhookSecret, job.WebhookSecret)
		require.Equal(t, p.LeaseToken, job.LeaseToken)
		due, err := db.DeliveryClaimDue(ctx, claimParams(t0, 10))
		require.NoError(t, err)
		require.Empty(t, due, "a leased delivery is not claimed by the dispatcher")
		_, err = db.DeliveryClaimEvent(ctx, e.ID, claimParams(t0, 1))
		require.ErrorIs(t, err, storage.ErrNotFound, "nor claimed twice")
		_, err = db.DeliveryClaimEvent(ctx, "evt_missing", claimParams(t0, 1))
		require.ErrorIs(t, err, storage.ErrNotFound)
		// Once the lease lapses it can be claimed again.
		_, err = db.DeliveryClaimEvent(ctx, e.ID, claimParams(p.LeaseUntil, 1))
		require.NoError(t, err)
	})

	t.Run("PerStoreCap", func(t *testing.T) {
		t.Parallel()
		db := newStorage(t)
		slow, fast := insertStore(t, db), insertStore(t, db)
		for range 10 {
			require.NoError(t, db.EventInsert(ctx, NewEventRecord(slow.ID, keelpay.EventWebhookTest, t0)))
		}
		require.NoError(t, db.EventInsert(ctx, NewEventRecord(fast.ID, keelpay.EventWebhookTest, t0.Add(time.Second))))
		p := claimParams(t0.Add(time.Second), 100)
		p.PerStore = 3
		jobs, err := db.DeliveryClaimDue(ctx, p)
		require.NoError(t, err)
		count := map[string]int{}
		for _, j := range jobs {
			count[j.StoreID]++
		}
		require.Equal(t, map[string]int{slow.ID: 3, fast.ID: 1}, count)
		// The slow store's three leases still count in the next claim.
		p2 := claimParams(t0.Add(time.Second), 100)
		p2.PerStore = 3
		jobs, err = db.DeliveryClaimDue(ctx, p2)
		require.NoError(t, err)
		require.Empty(t, jobs)
	})

	t.Run("CapWithBacklogAcrossStores", func(t *testing.T) {
		t.Parallel()
		db := newStorage(t)
		// a has a backlog due first, b two due later, c only future ones.
		a, b, c := insertStore(t, db), insertStore(t, db), insertStore(t, db)
		for i := range 30 {
			require.NoError(t, db.EventInsert(ctx, NewEventRecord(a.ID, keelpay.EventWebhookTest, t0.Add(time.Duration(i)*time.Millisecond))))
		}
		var bIDs []string
		for i := range 3 {
			e := NewEventRecord(b.ID, keelpay.EventWebhookTest, t0.Add(time.Second+time.Duration(i)*time.Millisecond))
			require.NoError(t, db.EventInsert(ctx, e))
			bIDs = append(bIDs, e.ID)
		}
		require.NoError(t, db.EventInsert(ctx, NewEventRecord(c.ID, keelpay.EventWebhookTest, t0.Add(time.Hour))))
		now := t0.Add(2 * time.Second)
		claim := func(limit, perStore int) []*storage.DeliveryJob {
			t.Helper()
			p := claimParams(now, limit)
			p.PerStore = perStore
			jobs, err := db.DeliveryClaimDue(ctx, p)
			require.NoError(t, err)
			return jobs
		}
		// Stores take turns, earliest due first within each: b's first
		// comes before a's second although a's backlog is due earlier.
		jobs := claim(2, 2)
		require.Len(t, jobs, 2)
		require.Equal(t, []string{a.ID, b.ID}, []string{jobs[0].StoreID, jobs[1].StoreID})
		require.Equal(t, bIDs[0], jobs[1].EventID)
		// At most PerStore of each store, counting its leases.
		jobs = claim(10, 2)
		require.Len(t, jobs, 2)
		require.Equal(t, []string{a.ID, b.ID}, []string{jobs[0].StoreID, jobs[1].StoreID})
		require.Equal(t, bIDs[1], jobs[1].EventID)
		// a is at its cap: its backlog neither comes nor hides anything.
		require.Empty(t, claim(10, 2))
		// A store due later than the whole backlog still gets its turn.
		d := insertStore(t, db)
		e := NewEventRecord(d.ID, keelpay.EventWebhookTest, t0.Add(1500*time.Millisecond))
		require.NoError(t, db.EventInsert(ctx, e))
		jobs = claim(10, 2)
		require.Len(t, jobs, 1)
		require.Equal(t, e.ID, jobs[0].EventID)
	})

	t.Run("StoreCaps", func(t *testing.T) {
		t.Parallel()
		db := newStorage(t)
		// low's cap is lowered below PerStore, high's raised above it;
		// plain has PerStore.
		low, high, plain := insertStore(t, db), insertStore(t, db), insertStore(t, db)
		for i := range 10 {
			for _, s := range []*keelpay.Store{low, high, plain} {
				require.NoError(t, db.EventInsert(ctx, NewEventRecord(s.ID, keelpay.EventWebhookTest, t0.Add(time.Duration(i)*time.Millisecond))))
			}
		}
		now := t0.Add(time.Second)
		claim := func(caps ...storage.StoreCap) map[string]int {
			t.Helper()
			p := claimParams(now, 100)
			p.PerStore = 3
			p.StoreCaps = caps
			jobs, err := db.DeliveryClaimDue(ctx, p)
			require.NoError(t, err)
			count := map[string]int{}
			for _, j := range jobs {
				count[j.StoreID]++
			}
			return count
		}
		require.Equal(t, map[string]int{low.ID: 1, high.ID: 5, plain.ID: 3},
			claim(storage.StoreCap{StoreID: low.ID, Cap: 1}, storage.StoreCap{StoreID: high.ID, Cap: 5}))
		// Each cap counts the store's leases: every store is at its cap.
		require.Empty(t, claim(storage.StoreCap{StoreID: low.ID, Cap: 1}, storage.StoreCap{StoreID: high.ID, Cap: 5}))
		// A store no longer listed is back at PerStore (high is over it);
		// a cap of 0 claims nothing of the store.
		require.Equal(t, map[string]int{low.ID: 2},
			claim(storage.StoreCap{StoreID: plain.ID, Cap: 0}))
		require.Equal(t, map[string]int{plain.ID: 1},
			claim(storage.StoreCap{StoreID: plain.ID, Cap: 4}))
	})

	t.Run("RecordBatch", func(t *testing.T) {
		t.Parallel()
		db := newStorage(t)
		s, other := insertStore(t, db), insertStore(t, db)
		ev := func(store *keelpay.Store) *keelpay.Event {
			e := NewEventRecord(store.ID, keelpay.EventWebhookTest, t0)
			require.NoError(t, db.EventInsert(ctx, e))
			return e
		}
		// b already has a full history, so its next attempt trims the
		// oldest one.
		a, b, c, d, x := ev(s), ev(s), ev(s), ev(s), ev(other)
		var bHistory []string
		for i := range storage.AttemptsKept {
			p := claimParams(t0.Add(time.Duration(i)*time.Second), 1)
			_, err := db.DeliveryClaimEvent(ctx, b.ID, p)
			require.NoError(t, err)
			at := &keelpay.DeliveryAttempt{ID: keelpay.NewID(keelpay.PrefixAttempt), EventID: b.ID, StoreID: s.ID,
				StartedAt: p.Now, StatusCode: 503, Failure: keelpay.FailureHTTPStatus}
			require.NoError(t, db.DeliveryRecord(ctx, []storage.DeliveryResult{{EventID: b.ID, LeaseToken: p.LeaseToken,
				Delivery: keelpay.Delivery{Status: keelpay.DeliveryPending, Attempts: 1, LastAttemptAt: p.Now, NextAttemptAt: t0,
					LastStatusCode: 503, LastFailure: keelpay.FailureHTTPStatus}, Attempt: at}}))
			bHistory = append(bHistory, at.ID)
		}
		now := t0.Add(time.Hour)
		p := claimParams(now, 10)
		jobs, err := db.DeliveryClaimDue(ctx, p)
		require.NoError(t, err)
		require.Len(t, jobs, 5)

		attempt := func(e *keelpay.Event, status int, body string) *keelpay.DeliveryAttempt {
			return &keelpay.DeliveryAttempt{ID: keelpay.NewID(keelpay.PrefixAttempt), EventID: e.ID, StoreID: e.StoreID,
				StartedAt: now, Duration: 2500 * time.Microsecond, StatusCode: status, ResponseBody: body}
		}
		succeeded := keelpay.Delivery{Status: keelpay.DeliverySucceeded, Attempts: 1, LastAttemptAt: now, LastStatusCode: 204}
		retry := keelpay.Delivery{Status: keelpay.DeliveryPending, Attempts: 2, LastAttemptAt: now, NextAttemptAt: now.Add(time.Minute),
			LastStatusCode: 500, LastFailure: keelpay.FailureHTTPStatus}
		held := keelpay.Delivery{Status: keelpay.DeliveryPending, NextAttemptAt: now.Add(30 * time.Second)}
		aAttempt, bAttempt, xAttempt := attempt(a, 204, "ok \u00e9 \"quoted\" <tag> \\ \u2028"), attempt(b, 500, "boom"), attempt(x, 204, "")
		bAttempt.Failure = keelpay.FailureHTTPStatus
		results := []storage.DeliveryResult{
			{EventID: a.ID, LeaseToken: p.LeaseToken, Delivery: succeeded, Attempt: aAttempt},
			{EventID: b.ID, LeaseToken: p.LeaseToken, Delivery: retry, Attempt: bAttempt},
			// A hold: no attempt for the history.
			{EventID: c.ID, LeaseToken: p.LeaseToken, Delivery: held},
			// Another process's lease: ignored, attempt and all.
			{EventID: d.ID, LeaseToken: "lease_gone", Delivery: succeeded, Attempt: attempt(d, 204, "")},
			{EventID: x.ID, LeaseToken: p.LeaseToken, Delivery: succeeded, Attempt: xAttempt},
		}
		require.NoError(t, db.DeliveryRecord(ctx, results))

		for _, want := range []struct {
			e        *keelpay.Event
			delivery keelpay.Delivery
			attempts []*keelpay.DeliveryAttempt
		}{
			{a, succeeded, []*keelpay.DeliveryAttempt{aAttempt}},
			{c, held, nil},
			{d, keelpay.Delivery{Status: keelpay.DeliveryPending, NextAttemptAt: t0}, nil},
			{x, succeeded, []*keelpay.DeliveryAttempt{xAttempt}},
		} {
			got, err := db.EventGet(ctx, want.e.StoreID, want.e.ID)
			require.NoError(t, err)
			if diff := cmp.Diff(want.delivery, got.Delivery); diff != "" {
				t.Errorf("delivery of %s (-want +got):\n%s", want.e.ID, diff)
			}
			attempts, _, err := db.DeliveryAttemptList(ctx, storage.DeliveryAttemptListParams{StoreID: want.e.StoreID, EventID: want.e.ID, Limit: 10})
			require.NoError(t, err)
			if diff := cmp.Diff(want.attempts, attempts, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("attempts of %s (-want +got):\n%s", want.e.ID, diff)
			}
		}
		got, err := db.EventGet(ctx, s.ID, b.ID)
		require.NoError(t, err)
		if diff := cmp.Diff(retry, got.Delivery); diff != "" {
			t.Errorf("delivery of b (-want +got):\n%s", diff)
		}
		attempts, more, err := db.DeliveryAttemptList(ctx, storage.DeliveryAttemptListParams{StoreID: s.ID, EventID: b.ID, Limit: 100})
		require.NoError(t, err)
		require.False(t, more)
		require.Len(t, attempts, storage.AttemptsKept)
		if diff := cmp.Diff(bAttempt, attempts[0]); diff != "" {
			t.Errorf("newest attempt of b (-want +got):\n%s", diff)
		}
		require.Equal(t, bHistory[1], attempts[len(attempts)-1].ID, "the oldest attempt is trimmed")

		pending, failed, err := db.DeliveryCounts(ctx)
		require.NoError(t, err)
		require.Equal(t, [2]int{3, 0}, [2]int{pending, failed})
		// The recorded leases are released: c and b are claimed when due;
		// d stays leased until its lease lapses (a minute after the claim).
		claim := func(at time.Time) []string {
			t.Helper()
			jobs, err := db.DeliveryClaimDue(ctx, claimParams(at, 10))
			require.NoError(t, err)
			ids := []string{}
			for _, j := range jobs {
				ids = append(ids, j.EventID)
			}
			return ids
		}
		require.Equal(t, []string{c.ID}, claim(now.Add(30*time.Second)))
		require.ElementsMatch(t, []string{b.ID, d.ID}, claim(now.Add(time.Minute)))
	})

	t.Run("RecordThenClaimInOneTransaction", func(t *testing.T) {
		t.Parallel()
		db := newStorage(t)
		s := insertStore(t, db)
		var ids []string
		for i := range 3 {
			e := NewEventRecord(s.ID, keelpay.EventWebhookTest, t0.Add(time.Duration(i)*time.Millisecond))
			require.NoError(t, db.EventInsert(ctx, e))
			ids = append(ids, e.ID)
		}
		now := t0.Add(time.Second)
		p := claimParams(now, 10)
		p.PerStore = 2
		jobs, err := db.DeliveryClaimDue(ctx, p)
		require.NoError(t, err)
		require.Len(t, jobs, 2)
		// The store is at its cap. Recording one result releases its
		// lease for a claim later in the same transaction, as the
		// dispatcher does.
		var again []*storage.DeliveryJob
		err = db.WithTx(ctx, func(ctx context.Context, tx storage.Executor) error {
			done := keelpay.Delivery{Status: keelpay.DeliverySucceeded, Attempts: 1, LastAttemptAt: now, LastStatusCode: 204}
			if err := tx.DeliveryRecord(ctx, []storage.DeliveryResult{{EventID: jobs[0].EventID, LeaseToken: p.LeaseToken, Delivery: done}}); err != nil {
				return err
			}
			p2 := claimParams(now, 10)
			p2.PerStore = 2
			var err error
			again, err = tx.DeliveryClaimDue(ctx, p2)
			return err
		})
		require.NoError(t, err)
		require.Len(t, again, 1)
		require.Equal(t, ids[2], again[0].EventID)
	})

	t.Run("RedeliverAndCounts", func(t *testing.T) {
		t.Parallel()
		db := newStorage(t)
		s := insertStore(t, db)
		e := NewEventRecord(s.ID, keelpay.EventWebhookTest, t0)
		require.NoError(t, db.EventInsert(ctx, e))
		p := claimParams(t0, 10)
		_, err := db.DeliveryClaimDue(ctx, p)
		require.NoError(t, err)
		failed := keelpay.Delivery{Status: keelpay.DeliveryFailed, Attempts: 7, LastAttemptAt: t0, LastStatusCode: 500, LastFailure: keelpay.FailureHTTPStatus}
		require.NoError(t, db.DeliveryRecord(ctx, []storage.DeliveryResult{{EventID: e.ID, LeaseToken: p.LeaseToken, Delivery: failed}}))
		pending, nfailed, err := db.DeliveryCounts(ctx)
		require.NoError(t, err)
		require.Equal(t, [2]int{0, 1}, [2]int{pending, nfailed})

		later := t0.Add(48 * time.Hour)
		got, err := db.DeliveryRedeliver(ctx, s.ID, e.ID, later)
		require.NoError(t, err)
		require.Equal(t, keelpay.DeliveryPending, got.Delivery.Status)
		require.Zero(t, got.Delivery.Attempts)
		require.Equal(t, later, got.Delivery.NextAttemptAt)
		pending, nfailed, err = db.DeliveryCounts(ctx)
		require.NoError(t, err)
		require.Equal(t, [2]int{1, 0}, [2]int{pending, nfailed})

		other := insertStore(t, db)
		_, err = db.DeliveryRedeliver(ctx, other.ID, e.ID, later)
		require.ErrorIs(t, err, storage.ErrNotFound)
	})

	t.Run("AttemptHistory", func(t *testing.T) {
		t.Parallel()
		db := newStorage(t)
		s := insertStore(t, db)
		other := insertStore(t, db)
		e := NewEventRecord(s.ID, keelpay.EventWebhookTest, t0)
		require.NoError(t, db.EventInsert(ctx, e))

		// record claims the delivery and records one attempt with its
		// history entry, under the claim's lease.
		at := t0
		record := func(status int, body string) *keelpay.DeliveryAttempt {
			t.Helper()
			p := claimParams(at, 1)
			_, err := db.DeliveryClaimEvent(ctx, e.ID, p)
			require.NoError(t, err)
			a := &keelpay.DeliveryAttempt{
				ID: keelpay.NewID(keelpay.PrefixAttempt), EventID: e.ID, StoreID: s.ID, StartedAt: at,
				Duration: 1500 * time.Microsecond, StatusCode: status, Failure: keelpay.FailureHTTPStatus, ResponseBody: body,
			}
			del := keelpay.Delivery{Status: keelpay.DeliveryPending, Attempts: 1, LastAttemptAt: at, NextAttemptAt: at,
				LastStatusCode: status, LastFailure: keelpay.FailureHTTPStatus}
			require.NoError(t, db.DeliveryRecord(ctx, []storage.DeliveryResult{{EventID: e.ID, LeaseToken: p.LeaseToken, Delivery: del, Attempt: a}}))
			at = at.Add(time.Second)
			return a
		}
		list := func(p storage.DeliveryAttemptListParams) ([]string, bool) {
			t.Helper()
			if p.StoreID == "" {
				p.StoreID = s.ID
			}
			p.EventID = e.ID
			got, more, err := db.DeliveryAttemptList(ctx, p)
			require.NoError(t, err)
			ids := make([]string, len(got))
			for i, a := range got {
				ids[i] = a.ID
			}
			return ids, more
		}

		first := record(500, "boom \u00e9")
		got, more, err := db.DeliveryAttemptList(ctx, storage.DeliveryAttemptListParams{StoreID: s.ID, EventID: e.ID, Limit: 10})
		require.NoError(t, err)
		require.False(t, more)
		if diff := cmp.Diff([]*keelpay.DeliveryAttempt{first}, got); diff != "" {
			t.Fatalf("attempts (-want +got):\n%s", diff)
		}

		// A record whose lease was lost adds no attempt.
		stale := &keelpay.DeliveryAttempt{ID: keelpay.NewID(keelpay.PrefixAttempt), EventID: e.ID, StoreID: s.ID, StartedAt: at}
		require.NoError(t, db.DeliveryRecord(ctx, []storage.DeliveryResult{{EventID: e.ID, LeaseToken: "lease_gone",
			Delivery: keelpay.Delivery{Status: keelpay.DeliveryFailed, Attempts: 7, LastAttemptAt: at}, Attempt: stale}}))
		ids, _ := list(storage.DeliveryAttemptListParams{Limit: 10})
		require.Equal(t, []string{first.ID}, ids)

		// Newest first, with cursors both ways; only the newest
		// AttemptsKept are kept.
		all := []string{first.ID}
		for range storage.AttemptsKept + 2 {
			all = append(all, record(503, "").ID)
		}
		kept := all[len(all)-storage.AttemptsKept:]
		newest := func(i int) string { return kept[len(kept)-1-i] }
		ids, more = list(storage.DeliveryAttemptListParams{Limit: 100})
		require.False(t, more)
		require.Len(t, ids, storage.AttemptsKept)
		require.Equal(t, newest(0), ids[0])
		require.Equal(t, kept[0], ids[len(ids)-1])
		ids, more = list(storage.DeliveryAttemptListParams{Limit: 2, StartingAfter: newest(0)})
		require.Equal(t, []string{newest(1), newest(2)}, ids)
		require.True(t, more)
		ids, more = list(storage.DeliveryAttemptListParams{Limit: 2, EndingBefore: newest(3)})
		require.Equal(t, []string{newest(1), newest(2)}, ids)
		require.True(t, more)

		_, _, err = db.DeliveryAttemptList(ctx, storage.DeliveryAttemptListParams{StoreID: s.ID, EventID: e.ID, Limit: 2, StartingAfter: first.ID})
		require.ErrorIs(t, err, storage.ErrNotFound, "a cursor that was trimmed")
		ids, more = list(storage.DeliveryAttemptListParams{StoreID: other.ID, Limit: 10})
		require.Empty(t, ids, "another store sees no attempts")
		require.False(t, more)
	})

	t.Run("RedeliverMany", func(t *testing.T) {
		t.Parallel()
		db := newStorage(t)
		s := insertStore(t, db)
		other := insertStore(t, db)
		// Six events a minute apart: types alternate, and all but the
		// fourth end failed.
		var ids []string
		for i := range 6 {
			typ := keelpay.EventWebhookTest
			if i%2 == 1 {
				typ = keelpay.EventCardCreated
			}
			e := NewEventRecord(s.ID, typ, t0.Add(time.Duration(i)*time.Minute))
			require.NoError(t, db.EventInsert(ctx, e))
			ids = append(ids, e.ID)
		}
		oe := NewEventRecord(other.ID, keelpay.EventWebhookTest, t0)
		require.NoError(t, db.EventInsert(ctx, oe))
		later := t0.Add(time.Hour)
		jobs, err := db.DeliveryClaimDue(ctx, claimParams(later, 100))
		require.NoError(t, err)
		require.Len(t, jobs, 7)
		var results []storage.DeliveryResult
		for _, j := range jobs {
			d := keelpay.Delivery{Status: keelpay.DeliveryFailed, Attempts: 7, LastAttemptAt: later, LastStatusCode: 500, LastFailure: keelpay.FailureHTTPStatus}
			if j.EventID == ids[3] {
				d = keelpay.Delivery{Status: keelpay.DeliverySucceeded, Attempts: 1, LastAttemptAt: later, LastStatusCode: 200}
			}
			results = append(results, storage.DeliveryResult{EventID: j.EventID, LeaseToken: j.LeaseToken, Delivery: d})
		}
		require.NoError(t, db.DeliveryRecord(ctx, results))
		status := func(id string) keelpay.DeliveryStatus {
			t.Helper()
			e, err := db.EventGet(ctx, s.ID, id)
			require.NoError(t, err)
			return e.Delivery.Status
		}
		now := later.Add(time.Minute)
		base := storage.DeliveryRedeliverManyParams{StoreID: s.ID, Status: keelpay.DeliveryFailed, Limit: 100, Now: now}

		// A window and a type: only ids[2] (webhook.test, failed, created
		// strictly inside).
		p := base
		p.Type = keelpay.EventWebhookTest
		p.CreatedAfter, p.CreatedBefore = t0, t0.Add(4*time.Minute)
		n, next, err := db.DeliveryRedeliverMany(ctx, p)
		require.NoError(t, err)
		require.Equal(t, 1, n)
		require.Empty(t, next)
		e, err := db.EventGet(ctx, s.ID, ids[2])
		require.NoError(t, err)
		require.Equal(t, keelpay.Delivery{Status: keelpay.DeliveryPending, Attempts: 0, LastAttemptAt: later, NextAttemptAt: now,
			LastStatusCode: 500, LastFailure: keelpay.FailureHTTPStatus}, e.Delivery)
		require.Equal(t, keelpay.DeliveryFailed, status(ids[0]))

		// Limit 2 with a cursor: oldest first.
		p = base
		p.Limit = 2
		n, next, err = db.DeliveryRedeliverMany(ctx, p)
		require.NoError(t, err)
		require.Equal(t, 2, n)
		require.Equal(t, ids[1], next, "ids[0] and ids[1] queued; ids[4], ids[5] remain")
		p.StartingAfter = next
		n, next, err = db.DeliveryRedeliverMany(ctx, p)
		require.NoError(t, err)
		require.Equal(t, 2, n)
		require.Empty(t, next, "exactly the last two: nothing beyond")
		for _, i := range []int{0, 1, 2, 4, 5} {
			require.Equal(t, keelpay.DeliveryPending, status(ids[i]), "event %d", i)
		}
		require.Equal(t, keelpay.DeliverySucceeded, status(ids[3]))
		due, err := db.DeliveryNextDue(ctx)
		require.NoError(t, err)
		require.Equal(t, now, due)

		// Succeeded ones on request; nothing matches: zero.
		p = base
		p.Status = keelpay.DeliverySucceeded
		n, _, err = db.DeliveryRedeliverMany(ctx, p)
		require.NoError(t, err)
		require.Equal(t, 1, n)
		n, next, err = db.DeliveryRedeliverMany(ctx, p)
		require.NoError(t, err)
		require.Zero(t, n)
		require.Empty(t, next)

		// Another store's events are untouched and its ids are no cursor.
		oget, err := db.EventGet(ctx, other.ID, oe.ID)
		require.NoError(t, err)
		require.Equal(t, keelpay.DeliveryFailed, oget.Delivery.Status)
		p = base
		p.StartingAfter = oe.ID
		_, _, err = db.DeliveryRedeliverMany(ctx, p)
		require.ErrorIs(t, err, storage.ErrNotFound)
	})
}
