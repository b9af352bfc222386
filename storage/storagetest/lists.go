package storagetest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/storage"
)

// listed is an object of a list as the filter tests see it: its id, when
// it was created, and its place in the order of insertion.
type listed struct {
	id      string
	created time.Time
	n       int
}

// newestFirst orders objects as the lists do: by created_at, then by
// insertion, newest first.
func newestFirst(objs []listed) []string {
	objs = slices.Clone(objs)
	slices.SortFunc(objs, func(a, b listed) int {
		if c := b.created.Compare(a.created); c != 0 {
			return c
		}
		return b.n - a.n
	})
	ids := make([]string, len(objs))
	for i, o := range objs {
		ids[i] = o.id
	}
	return ids
}

// walkPages pages through a list with limit forward from its start
// (starting_after the last of each page) and then back from its end
// (ending_before the first of each page), and requires that both walks
// see want, in order, with has_more true on every page but the last.
func walkPages(t *testing.T, name string, want []string, limit int,
	page func(startingAfter, endingBefore string) ([]string, bool)) {
	t.Helper()
	var got []string
	cursor := ""
	for i := 0; ; i++ {
		require.Less(t, i, 100, name)
		ids, more := page(cursor, "")
		require.LessOrEqual(t, len(ids), limit, name)
		got = append(got, ids...)
		if !more {
			break
		}
		require.Len(t, ids, limit, name)
		cursor = ids[len(ids)-1]
	}
	require.Equal(t, want, append([]string{}, got...), "%s: forward", name)
	if len(want) < 2 {
		return
	}
	// Back from the last object: everything newer than it, page by page.
	got = nil
	cursor = want[len(want)-1]
	for i := 0; ; i++ {
		require.Less(t, i, 100, name)
		ids, more := page("", cursor)
		got = append(ids, got...)
		if !more {
			break
		}
		require.Len(t, ids, limit, name)
		cursor = ids[0]
	}
	require.Equal(t, want[:len(want)-1], got, "%s: backward", name)
}

func testLists(t *testing.T, newStorage NewStorage) {
	ctx := context.Background()

	t.Run("PaymentIntentListFilters", func(t *testing.T) {
		t.Parallel()
		db := newStorage(t)
		s := insertStore(t, db)
		other := insertStore(t, db)
		customers := []string{"cus_a", "cus_b", "cus_a"}
		statuses := []keelpay.PaymentIntentStatus{keelpay.IntentRequiresPaymentMethod, keelpay.IntentSucceeded, keelpay.IntentCanceled, keelpay.IntentSucceeded}
		var all []listed
		byID := map[string]*keelpay.PaymentIntent{}
		for i := range 14 {
			at := t0.Add(time.Duration(i) * time.Minute)
			switch i {
			case 12: // inserted late, created early: the order is by created_at
				at = t0.Add(90 * time.Second)
			case 13: // created at the same moment as another: insertion breaks the tie
				at = t0.Add(5 * time.Minute)
			}
			pi := NewIntentRecord(s.ID, at)
			pi.Customer.ID = customers[i%len(customers)]
			pi.Status = statuses[i%len(statuses)]
			pi.Reference = fmt.Sprintf("order-%d", i%5)
			require.NoError(t, db.PaymentIntentInsert(ctx, pi))
			all = append(all, listed{pi.ID, at, i})
			byID[pi.ID] = pi
			// Another store's intent that matches every filter.
			o := NewIntentRecord(other.ID, at)
			o.Customer.ID, o.Status, o.Reference = pi.Customer.ID, pi.Status, pi.Reference
			require.NoError(t, db.PaymentIntentInsert(ctx, o))
		}
		filters := []storage.PaymentIntentListParams{
			{},
			{CustomerID: "cus_a"},
			{CustomerID: "cus_nobody"},
			{Status: keelpay.IntentSucceeded},
			{Reference: "order-2"},
			{CustomerID: "cus_a", Reference: "order-1"},
			{CustomerID: "cus_b", Status: keelpay.IntentSucceeded},
			{CreatedGTE: t0.Add(2 * time.Minute)},
			{CreatedLT: t0.Add(5 * time.Minute)},
			{CreatedGTE: t0.Add(90 * time.Second), CreatedLT: t0.Add(6 * time.Minute)},
			{Status: keelpay.IntentSucceeded, CreatedGTE: t0.Add(3 * time.Minute), CreatedLT: t0.Add(11 * time.Minute)},
			{CustomerID: "cus_a", Status: keelpay.IntentRequiresPaymentMethod, Reference: "order-0", CreatedLT: t0.Add(time.Hour)},
		}
		for _, f := range filters {
			var want []listed
			for _, o := range all {
				pi := byID[o.id]
				if (f.CustomerID == "" || pi.Customer.ID == f.CustomerID) &&
					(f.Status == "" || pi.Status == f.Status) &&
					(f.Reference == "" || pi.Reference == f.Reference) &&
					(f.CreatedGTE.IsZero() || !o.created.Before(f.CreatedGTE)) &&
					(f.CreatedLT.IsZero() || o.created.Before(f.CreatedLT)) {
					want = append(want, o)
				}
			}
			for _, limit := range []int{1, 2, 3, 100} {
				name := fmt.Sprintf("%+v limit %d", f, limit)
				walkPages(t, name, newestFirst(want), limit, func(after, before string) ([]string, bool) {
					p := f
					p.StoreID, p.Limit, p.StartingAfter, p.EndingBefore = s.ID, limit, after, before
					intents, more, err := db.PaymentIntentList(ctx, p)
					require.NoError(t, err, name)
					ids := []string{}
					for _, pi := range intents {
						require.Equal(t, s.ID, pi.StoreID)
						ids = append(ids, pi.ID)
					}
					return ids, more
				})
			}
		}

		// A cursor that does not match the filter still places the page.
		oldest := newestFirst(all)[len(all)-1]
		newest := newestFirst(all)[0]
		intents, more, err := db.PaymentIntentList(ctx, storage.PaymentIntentListParams{
			StoreID: s.ID, Status: keelpay.IntentCanceled, Limit: 100, EndingBefore: oldest})
		require.NoError(t, err)
		require.False(t, more)
		require.NotEmpty(t, intents)
		for _, pi := range intents {
			require.Equal(t, keelpay.IntentCanceled, pi.Status)
		}
		intents, more, err = db.PaymentIntentList(ctx, storage.PaymentIntentListParams{
			StoreID: s.ID, CustomerID: "cus_b", Limit: 100, EndingBefore: newest})
		require.NoError(t, err)
		require.Empty(t, intents)
		require.False(t, more)
		_, _, err = db.PaymentIntentList(ctx, storage.PaymentIntentListParams{
			StoreID: other.ID, CustomerID: "cus_a", Limit: 3, StartingAfter: newest})
		require.ErrorIs(t, err, storage.ErrNotFound, "a cursor of another store")
	})

	t.Run("RefundListFilters", func(t *testing.T) {
		t.Parallel()
		db := newStorage(t)
		s := insertStore(t, db)
		other := insertStore(t, db)
		statuses := []keelpay.RefundStatus{keelpay.RefundPending, keelpay.RefundSucceeded, keelpay.RefundFailed}
		var all []listed
		byID := map[string]*keelpay.Refund{}
		for i := range 10 {
			at := t0.Add(time.Duration(i) * time.Minute)
			if i == 9 {
				at = t0.Add(30 * time.Second)
			}
			r := NewRefundRecord(s.ID, keelpay.NewID(keelpay.PrefixPaymentIntent), at)
			r.Status = statuses[i%len(statuses)]
			require.NoError(t, db.RefundInsert(ctx, r))
			all = append(all, listed{r.ID, at, i})
			byID[r.ID] = r
			o := NewRefundRecord(other.ID, keelpay.NewID(keelpay.PrefixPaymentIntent), at)
			o.Status = r.Status
			require.NoError(t, db.RefundInsert(ctx, o))
		}
		some := byID[all[4].id]
		filters := []storage.RefundListParams{
			{},
			{Status: keelpay.RefundSucceeded},
			{PaymentIntentID: some.PaymentIntentID},
			{PaymentIntentID: some.PaymentIntentID, Status: keelpay.RefundFailed},
			{PaymentIntentID: "pi_nope"},
			{CreatedGTE: t0.Add(30 * time.Second), CreatedLT: t0.Add(4 * time.Minute)},
			{Status: keelpay.RefundPending, CreatedGTE: t0.Add(time.Minute)},
		}
		for _, f := range filters {
			var want []listed
			for _, o := range all {
				r := byID[o.id]
				if (f.PaymentIntentID == "" || r.PaymentIntentID == f.PaymentIntentID) &&
					(f.Status == "" || r.Status == f.Status) &&
					(f.CreatedGTE.IsZero() || !o.created.Before(f.CreatedGTE)) &&
					(f.CreatedLT.IsZero() || o.created.Before(f.CreatedLT)) {
					want = append(want, o)
				}
			}
			for _, limit := range []int{1, 2, 100} {
				name := fmt.Sprintf("%+v limit %d", f, limit)
				walkPages(t, name, newestFirst(want), limit, func(after, before string) ([]string, bool) {
					p := f
					p.StoreID, p.Limit, p.StartingAfter, p.EndingBefore = s.ID, limit, after, before
					refunds, more, err := db.RefundList(ctx, p)
					require.NoError(t, err, name)
					ids := []string{}
					for _, r := range refunds {
						require.Equal(t, s.ID, r.StoreID)
						ids = append(ids, r.ID)
					}
					return ids, more
				})
			}
		}
		got, _, err := db.RefundList(ctx, storage.RefundListParams{StoreID: s.ID, PaymentIntentID: some.PaymentIntentID, Limit: 10})
		require.NoError(t, err)
		require.Len(t, got, 1)
		if diff := cmp.Diff(some, got[0]); diff != "" {
			t.Errorf("the refund as listed (-stored +listed):\n%s", diff)
		}

		_, _, err = db.RefundList(ctx, storage.RefundListParams{StoreID: other.ID, Limit: 3, StartingAfter: all[0].id})
		require.ErrorIs(t, err, storage.ErrNotFound, "a cursor of another store")
		_, _, err = db.RefundList(ctx, storage.RefundListParams{StoreID: s.ID, Limit: 3, EndingBefore: "re_nope"})
		require.ErrorIs(t, err, storage.ErrNotFound)
	})
}
