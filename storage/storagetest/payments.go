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

func newCardSession(storeID string, at time.Time) *keelpay.CardSession {
	return &keelpay.CardSession{
		ID:           keelpay.NewID(keelpay.PrefixCardSession),
		StoreID:      storeID,
		ClientSecret: keelpay.NewID("cs_secret_"),
		Customer:     keelpay.Customer{ID: "cus_1", Name: "Jane Roe", Email: "jane@example.com", Phone: "+4915112345678"},
		PageOrigins:  []string{"https://shop.example", "http://localhost:3000"},
		Status:       keelpay.CardSessionOpen,
		ExpiresAt:    at.Add(30 * time.Minute),
		CreatedAt:    at,
	}
}

func newCard(storeID string, at time.Time) *keelpay.Card {
	return &keelpay.Card{
		ID:            keelpay.NewID(keelpay.PrefixCard),
		StoreID:       storeID,
		CustomerID:    "cus_1",
		CardSessionID: keelpay.NewID(keelpay.PrefixCardSession),
		ProviderToken: keelpay.NewID("tok_"),
		Brand:         "visa",
		Last4:         "4242",
		ExpMonth:      12,
		ExpYear:       2030,
		Status:        keelpay.CardActive,
		CreatedAt:     at,
	}
}

// NewIntentRecord returns a fresh, unconfirmed intent of a store with only
// what creation always sets.
func NewIntentRecord(storeID string, at time.Time) *keelpay.PaymentIntent {
	return &keelpay.PaymentIntent{
		ID:           keelpay.NewID(keelpay.PrefixPaymentIntent),
		StoreID:      storeID,
		Status:       keelpay.IntentRequiresPaymentMethod,
		Amount:       1234,
		Currency:     "EUR",
		Customer:     keelpay.Customer{ID: "cus_1", Name: "Jane Roe", Email: "jane@example.com", Phone: "+4915112345678"},
		ClientSecret: keelpay.NewID("pi_secret_"),
		ExpiresAt:    at.Add(24 * time.Hour),
		CreatedAt:    at,
		UpdatedAt:    at,
		Version:      1,
	}
}

// NewSucceededIntentRecord returns an intent of a store as a payment with a
// saved card leaves it: succeeded, with its payment method, authorization
// and attempt. The benchmarks of both adapters read and update it.
func NewSucceededIntentRecord(storeID string, at time.Time) *keelpay.PaymentIntent {
	pi := NewIntentRecord(storeID, at)
	pi.Status = keelpay.IntentSucceeded
	pi.Amount = 2500
	pi.Customer = keelpay.Customer{ID: "cus_bench", Name: "Bench Buyer", Email: "bench@shop.example", Phone: "+358401234567"}
	pi.CardID = keelpay.NewID(keelpay.PrefixCard)
	pi.PaymentMethod = &keelpay.PaymentMethod{Brand: "visa", Last4: "4242", ExpMonth: 12, ExpYear: 2035, Saved: true}
	pi.AuthorizationCode = "O4B59W"
	pi.OrderID = "ord_IkWJuEqyxz39NQZVtzf2gRT9"
	pi.MerchantID, pi.AttemptID = "merch_x", "att_x"
	pi.SucceededAt = at
	pi.Version = 3
	return pi
}

// fullIntent returns an intent with every field set, so that a round trip
// shows each column is kept.
func fullIntent(storeID string, at time.Time) *keelpay.PaymentIntent {
	pi := NewIntentRecord(storeID, at)
	pi.Status = keelpay.IntentRequiresAction
	pi.Description = "Order 1 — two mugs"
	pi.Reference = "order-1"
	pi.Metadata = map[string]string{"order": "1", "note": "line one\nline two"}
	pi.Billing = &keelpay.Billing{Country: "DE", State: "Berlin", PostalCode: "10115"}
	pi.PageOrigins = []string{"https://shop.example"}
	pi.CardID = keelpay.NewID(keelpay.PrefixCard)
	pi.PaymentMethod = &keelpay.PaymentMethod{Brand: "visa", Last4: "3220", ExpMonth: 1, ExpYear: 2031, Saved: true}
	pi.AuthorizationCode = "A1B2C3"
	pi.OrderID = "ord_1"
	pi.RefundID = keelpay.NewID(keelpay.PrefixRefund)
	pi.LastError = &keelpay.LastError{Code: "card_declined", DeclineCode: "insufficient_funds", Message: "Declined."}
	pi.NextAction = &keelpay.NextAction{Type: "three_d_secure", URL: "https://sandbox.example/3ds/x"}
	pi.CancellationReason = "requested_by_customer"
	pi.MerchantID = "merch_1"
	pi.AttemptID = keelpay.NewID("att_")
	pi.AttemptAt = at.Add(time.Second)
	pi.ReconcileAt = at.Add(10 * time.Minute)
	pi.ReconcileCount = 2
	pi.SucceededAt = at.Add(3 * time.Second)
	pi.UpdatedAt = at.Add(4 * time.Second)
	pi.Version = 7
	pi.VoidedCharges = []keelpay.VoidedCharge{
		{AttemptID: keelpay.NewID("att_"), Amount: 1234, Currency: "EUR", VoidedAt: at.Add(2 * time.Second)},
		{AttemptID: keelpay.NewID("att_"), Amount: 1234, Currency: "EUR", VoidedAt: at.Add(5 * time.Second)},
	}
	return pi
}

func testPayments(t *testing.T, newStorage NewStorage) {
	ctx := context.Background()

	t.Run("CardSessionInsertAndGet", func(t *testing.T) {
		t.Parallel()
		db := newStorage(t)
		s := insertStore(t, db)
		cs := newCardSession(s.ID, t0)
		require.NoError(t, db.CardSessionInsert(ctx, cs))
		got, err := db.CardSessionGet(ctx, s.ID, cs.ID)
		require.NoError(t, err)
		if diff := cmp.Diff(cs, got); diff != "" {
			t.Errorf("CardSessionGet (-want +got):\n%s", diff)
		}
		other := insertStore(t, db)
		_, err = db.CardSessionGet(ctx, other.ID, cs.ID)
		require.ErrorIs(t, err, storage.ErrNotFound, "another store's session")
		_, err = db.CardSessionGet(ctx, s.ID, keelpay.NewID(keelpay.PrefixCardSession))
		require.ErrorIs(t, err, storage.ErrNotFound)
		require.ErrorIs(t, db.CardSessionInsert(ctx, cs), storage.ErrDuplicate)
	})

	t.Run("CardSessionComplete", func(t *testing.T) {
		t.Parallel()
		db := newStorage(t)
		s := insertStore(t, db)
		other := insertStore(t, db)
		cs := newCardSession(s.ID, t0)
		require.NoError(t, db.CardSessionInsert(ctx, cs))
		cardID := keelpay.NewID(keelpay.PrefixCard)

		require.ErrorIs(t, db.CardSessionComplete(ctx, other.ID, cs.ID, cardID, t0), storage.ErrNotFound)
		require.ErrorIs(t, db.CardSessionComplete(ctx, s.ID, keelpay.NewID(keelpay.PrefixCardSession), cardID, t0), storage.ErrNotFound)
		require.NoError(t, db.CardSessionComplete(ctx, s.ID, cs.ID, cardID, t0.Add(time.Minute)))
		got, err := db.CardSessionGet(ctx, s.ID, cs.ID)
		require.NoError(t, err)
		require.Equal(t, keelpay.CardSessionCompleted, got.Status)
		require.Equal(t, cardID, got.CardID)
		// A second capture cannot complete it again.
		require.ErrorIs(t, db.CardSessionComplete(ctx, s.ID, cs.ID, keelpay.NewID(keelpay.PrefixCard), t0.Add(time.Minute)), storage.ErrConflict)
		got, err = db.CardSessionGet(ctx, s.ID, cs.ID)
		require.NoError(t, err)
		require.Equal(t, cardID, got.CardID)

		// At its expiry a session is no longer open, even before the
		// expirer marked it.
		late := newCardSession(s.ID, t0)
		require.NoError(t, db.CardSessionInsert(ctx, late))
		require.ErrorIs(t, db.CardSessionComplete(ctx, s.ID, late.ID, cardID, late.ExpiresAt), storage.ErrConflict)
	})

	t.Run("CardSessionCompleteConcurrently", func(t *testing.T) {
		t.Parallel()
		db := newStorage(t)
		s := insertStore(t, db)
		cs := newCardSession(s.ID, t0)
		require.NoError(t, db.CardSessionInsert(ctx, cs))
		const n = 10
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { errs[i] = db.CardSessionComplete(ctx, s.ID, cs.ID, keelpay.NewID(keelpay.PrefixCard), t0) })
		}
		wg.Wait()
		won := 0
		for _, err := range errs {
			if err == nil {
				won++
			} else {
				require.ErrorIs(t, err, storage.ErrConflict)
			}
		}
		require.Equal(t, 1, won)
	})

	t.Run("CardSessionExpireDue", func(t *testing.T) {
		t.Parallel()
		db := newStorage(t)
		s := insertStore(t, db)
		due := newCardSession(s.ID, t0)
		later := newCardSession(s.ID, t0.Add(10*time.Minute))
		completed := newCardSession(s.ID, t0)
		for _, cs := range []*keelpay.CardSession{due, later, completed} {
			require.NoError(t, db.CardSessionInsert(ctx, cs))
		}
		require.NoError(t, db.CardSessionComplete(ctx, s.ID, completed.ID, keelpay.NewID(keelpay.PrefixCard), t0))

		n, err := db.CardSessionExpireDue(ctx, due.ExpiresAt.Add(-time.Microsecond))
		require.NoError(t, err)
		require.Zero(t, n)
		n, err = db.CardSessionExpireDue(ctx, due.ExpiresAt)
		require.NoError(t, err)
		require.Equal(t, 1, n)
		want := map[string]keelpay.CardSessionStatus{
			due.ID: keelpay.CardSessionExpired, later.ID: keelpay.CardSessionOpen, completed.ID: keelpay.CardSessionCompleted,
		}
		for id, status := range want {
			got, err := db.CardSessionGet(ctx, s.ID, id)
			require.NoError(t, err)
			require.Equal(t, status, got.Status, id)
		}
		n, err = db.CardSessionExpireDue(ctx, due.ExpiresAt)
		require.NoError(t, err)
		require.Zero(t, n, "already expired")
	})

	t.Run("CardInsertGetAndUpdateStatus", func(t *testing.T) {
		t.Parallel()
		db := newStorage(t)
		s := insertStore(t, db)
		other := insertStore(t, db)
		c := newCard(s.ID, t0)
		require.NoError(t, db.CardInsert(ctx, c))
		got, err := db.CardGet(ctx, s.ID, c.ID)
		require.NoError(t, err)
		if diff := cmp.Diff(c, got); diff != "" {
			t.Errorf("CardGet (-want +got):\n%s", diff)
		}
		_, err = db.CardGet(ctx, other.ID, c.ID)
		require.ErrorIs(t, err, storage.ErrNotFound, "another store's card")
		require.ErrorIs(t, db.CardInsert(ctx, c), storage.ErrDuplicate)

		require.ErrorIs(t, db.CardUpdateStatus(ctx, other.ID, c.ID, keelpay.CardUnavailable), storage.ErrNotFound)
		require.NoError(t, db.CardUpdateStatus(ctx, s.ID, c.ID, keelpay.CardUnavailable))
		got, err = db.CardGet(ctx, s.ID, c.ID)
		require.NoError(t, err)
		require.Equal(t, keelpay.CardUnavailable, got.Status)
	})

	t.Run("CardListPagesAndDelete", func(t *testing.T) {
		t.Parallel()
		db := newStorage(t)
		s := insertStore(t, db)
		other := insertStore(t, db)
		// Five cards of cus_1, oldest first; two share a created_at, which
		// the id orders. Another customer's and another store's card are
		// never listed.
		var ids []string
		for _, at := range []time.Duration{0, time.Second, time.Second, 2 * time.Second, 3 * time.Second} {
			c := newCard(s.ID, t0.Add(at))
			require.NoError(t, db.CardInsert(ctx, c))
			ids = append(ids, c.ID)
		}
		if ids[2] < ids[1] {
			ids[1], ids[2] = ids[2], ids[1] // the larger id is the newer
		}
		c := newCard(s.ID, t0.Add(time.Hour))
		c.CustomerID = "cus_2"
		require.NoError(t, db.CardInsert(ctx, c))
		require.NoError(t, db.CardInsert(ctx, newCard(other.ID, t0.Add(time.Hour))))

		list := func(p storage.CardListParams) ([]string, bool) {
			t.Helper()
			p.StoreID, p.CustomerID = s.ID, "cus_1"
			cards, more, err := db.CardList(ctx, p)
			require.NoError(t, err)
			var got []string
			for _, c := range cards {
				got = append(got, c.ID)
			}
			return got, more
		}
		got, more := list(storage.CardListParams{Limit: 3})
		require.Equal(t, []string{ids[4], ids[3], ids[2]}, got)
		require.True(t, more)
		got, more = list(storage.CardListParams{Limit: 3, StartingAfter: ids[2]})
		require.Equal(t, []string{ids[1], ids[0]}, got)
		require.False(t, more)
		got, more = list(storage.CardListParams{Limit: 2, EndingBefore: ids[1]})
		require.Equal(t, []string{ids[3], ids[2]}, got)
		require.True(t, more)
		got, more = list(storage.CardListParams{Limit: 10, EndingBefore: ids[4]})
		require.Empty(t, got)
		require.False(t, more)
		first, err := db.CardGet(ctx, s.ID, ids[4])
		require.NoError(t, err)
		all, _, err := db.CardList(ctx, storage.CardListParams{StoreID: s.ID, CustomerID: "cus_1", Limit: 1})
		require.NoError(t, err)
		if diff := cmp.Diff([]*keelpay.Card{first}, all); diff != "" {
			t.Errorf("CardList reads the card whole (-want +got):\n%s", diff)
		}

		for _, cursor := range []string{c.ID, keelpay.NewID(keelpay.PrefixCard)} {
			_, _, err := db.CardList(ctx, storage.CardListParams{StoreID: s.ID, CustomerID: "cus_1", Limit: 3, StartingAfter: cursor})
			require.ErrorIs(t, err, storage.ErrNotFound, "a cursor that is not this customer's card")
		}
		none, more, err := db.CardList(ctx, storage.CardListParams{StoreID: other.ID, CustomerID: "cus_2", Limit: 3})
		require.NoError(t, err)
		require.Empty(t, none, "another store's customer of the same id")
		require.False(t, more)

		require.ErrorIs(t, db.CardDelete(ctx, other.ID, ids[2]), storage.ErrNotFound, "another store's card")
		require.NoError(t, db.CardDelete(ctx, s.ID, ids[2]))
		_, err = db.CardGet(ctx, s.ID, ids[2])
		require.ErrorIs(t, err, storage.ErrNotFound)
		require.ErrorIs(t, db.CardDelete(ctx, s.ID, ids[2]), storage.ErrNotFound, "deleted already")
		got, more = list(storage.CardListParams{Limit: 10})
		require.Equal(t, []string{ids[4], ids[3], ids[1], ids[0]}, got)
		require.False(t, more)
		_, _, err = db.CardList(ctx, storage.CardListParams{StoreID: s.ID, CustomerID: "cus_1", Limit: 3, StartingAfter: ids[2]})
		require.ErrorIs(t, err, storage.ErrNotFound, "a deleted card as the cursor")
	})

	t.Run("CustomerErase", func(t *testing.T) {
		t.Parallel()
		db := newStorage(t)
		s := insertStore(t, db)
		other := insertStore(t, db)
		pi := fullIntent(s.ID, t0)
		keep := NewIntentRecord(s.ID, t0)
		keep.Customer = keelpay.Customer{ID: "cus_2", Name: "John Doe", Email: "john@example.com", Phone: "+4915100000000"}
		theirs := NewIntentRecord(other.ID, t0)
		for _, p := range []*keelpay.PaymentIntent{pi, keep, theirs} {
			require.NoError(t, db.PaymentIntentInsert(ctx, p))
		}
		cs := newCardSession(s.ID, t0)
		theirCS := newCardSession(other.ID, t0)
		require.NoError(t, db.CardSessionInsert(ctx, cs))
		require.NoError(t, db.CardSessionInsert(ctx, theirCS))

		e, err := db.CustomerErase(ctx, s.ID, "cus_1")
		require.NoError(t, err)
		require.Equal(t, storage.CustomerErasure{PaymentIntents: 1, CardSessions: 1}, e)

		want := *pi
		want.Customer = keelpay.Customer{ID: "cus_1"}
		want.Billing = nil
		want.Version = pi.Version + 1
		got, err := db.PaymentIntentGet(ctx, s.ID, pi.ID)
		require.NoError(t, err)
		if diff := cmp.Diff(&want, got); diff != "" {
			t.Errorf("erased intent (-want +got):\n%s", diff)
		}
		require.ErrorIs(t, db.PaymentIntentUpdate(ctx, pi, pi.Version), storage.ErrConflict,
			"an update read before the erasure does not write the data back")
		gotCS, err := db.CardSessionGet(ctx, s.ID, cs.ID)
		require.NoError(t, err)
		require.Equal(t, keelpay.Customer{ID: "cus_1"}, gotCS.Customer)
		require.Equal(t, keelpay.CardSessionExpired, gotCS.Status, "an open session can no longer save a card")
		require.Equal(t, cs.ClientSecret, gotCS.ClientSecret)

		for _, p := range []*keelpay.PaymentIntent{keep, theirs} {
			got, err := db.PaymentIntentGet(ctx, p.StoreID, p.ID)
			require.NoError(t, err)
			require.Equal(t, p.Customer, got.Customer, "another customer's intent is kept")
		}
		gotCS, err = db.CardSessionGet(ctx, other.ID, theirCS.ID)
		require.NoError(t, err)
		require.Equal(t, theirCS.Customer, gotCS.Customer, "another store's customer of the same id")
		require.Equal(t, keelpay.CardSessionOpen, gotCS.Status)

		e, err = db.CustomerErase(ctx, s.ID, "cus_9")
		require.NoError(t, err)
		require.Zero(t, e)
	})

	t.Run("PaymentIntentInsertAndGet", func(t *testing.T) {
		t.Parallel()
		db := newStorage(t)
		s := insertStore(t, db)
		for name, pi := range map[string]*keelpay.PaymentIntent{"minimal": NewIntentRecord(s.ID, t0), "full": fullIntent(s.ID, t0)} {
			require.NoError(t, db.PaymentIntentInsert(ctx, pi), name)
			got, err := db.PaymentIntentGet(ctx, s.ID, pi.ID)
			require.NoError(t, err, name)
			if diff := cmp.Diff(pi, got); diff != "" {
				t.Errorf("%s: PaymentIntentGet (-want +got):\n%s", name, diff)
			}
			require.ErrorIs(t, db.PaymentIntentInsert(ctx, pi), storage.ErrDuplicate, name)
		}
		other := insertStore(t, db)
		pi := NewIntentRecord(s.ID, t0)
		require.NoError(t, db.PaymentIntentInsert(ctx, pi))
		_, err := db.PaymentIntentGet(ctx, other.ID, pi.ID)
		require.ErrorIs(t, err, storage.ErrNotFound, "another store's intent")
		_, err = db.PaymentIntentGet(ctx, s.ID, keelpay.NewID(keelpay.PrefixPaymentIntent))
		require.ErrorIs(t, err, storage.ErrNotFound)
	})

	t.Run("PaymentIntentUpdateChecksVersion", func(t *testing.T) {
		t.Parallel()
		db := newStorage(t)
		s := insertStore(t, db)
		pi := NewIntentRecord(s.ID, t0)
		require.NoError(t, db.PaymentIntentInsert(ctx, pi))

		// Every field changes, pointers are set...
		full := fullIntent(s.ID, t0)
		full.ID, full.ClientSecret, full.CreatedAt = pi.ID, pi.ClientSecret, pi.CreatedAt
		require.NoError(t, db.PaymentIntentUpdate(ctx, full, pi.Version))
		require.EqualValues(t, pi.Version+1, full.Version)
		got, err := db.PaymentIntentGet(ctx, s.ID, pi.ID)
		require.NoError(t, err)
		if diff := cmp.Diff(full, got); diff != "" {
			t.Errorf("after update (-want +got):\n%s", diff)
		}

		// ...and cleared again.
		cleared := *pi
		cleared.UpdatedAt = t0.Add(time.Minute)
		require.NoError(t, db.PaymentIntentUpdate(ctx, &cleared, full.Version))
		got, err = db.PaymentIntentGet(ctx, s.ID, pi.ID)
		require.NoError(t, err)
		if diff := cmp.Diff(&cleared, got); diff != "" {
			t.Errorf("after clearing (-want +got):\n%s", diff)
		}

		stale := *pi
		stale.Status = keelpay.IntentCanceled
		require.ErrorIs(t, db.PaymentIntentUpdate(ctx, &stale, pi.Version), storage.ErrConflict)
		require.Equal(t, pi.Version, stale.Version, "a failed update leaves the version as it was")
		got, err = db.PaymentIntentGet(ctx, s.ID, pi.ID)
		require.NoError(t, err)
		require.Equal(t, keelpay.IntentRequiresPaymentMethod, got.Status)

		other := insertStore(t, db)
		foreign := cleared
		foreign.StoreID = other.ID
		require.ErrorIs(t, db.PaymentIntentUpdate(ctx, &foreign, cleared.Version), storage.ErrNotFound)
		require.ErrorIs(t, db.PaymentIntentUpdate(ctx, NewIntentRecord(s.ID, t0), 1), storage.ErrNotFound)
	})

	t.Run("PaymentIntentUpdateConcurrently", func(t *testing.T) {
		// Twenty confirms read the same version: exactly one records its
		// attempt.
		t.Parallel()
		db := newStorage(t)
		s := insertStore(t, db)
		pi := NewIntentRecord(s.ID, t0)
		require.NoError(t, db.PaymentIntentInsert(ctx, pi))
		const n = 20
		errs := make([]error, n)
		attempts := make([]string, n)
		var wg sync.WaitGroup
		for i := range n {
			next := *pi
			next.Status = keelpay.IntentProcessing
			next.AttemptID = keelpay.NewID("att_")
			attempts[i] = next.AttemptID
			wg.Go(func() { errs[i] = db.PaymentIntentUpdate(ctx, &next, pi.Version) })
		}
		wg.Wait()
		var winner string
		for i, err := range errs {
			if err == nil {
				require.Empty(t, winner, "two updates of one version succeeded")
				winner = attempts[i]
			} else {
				require.ErrorIs(t, err, storage.ErrConflict)
			}
		}
		got, err := db.PaymentIntentGet(ctx, s.ID, pi.ID)
		require.NoError(t, err)
		require.Equal(t, winner, got.AttemptID)
		require.EqualValues(t, pi.Version+1, got.Version)
	})

	t.Run("PaymentIntentGetWithCard", func(t *testing.T) {
		t.Parallel()
		db := newStorage(t)
		s := insertStore(t, db)
		own, named := newCard(s.ID, t0), newCard(s.ID, t0)
		require.NoError(t, db.CardInsert(ctx, own))
		require.NoError(t, db.CardInsert(ctx, named))
		pi := fullIntent(s.ID, t0)
		pi.CardID = own.ID
		require.NoError(t, db.PaymentIntentInsert(ctx, pi))

		got, card, err := db.PaymentIntentGetWithCard(ctx, s.ID, pi.ID, "")
		require.NoError(t, err)
		if diff := cmp.Diff(pi, got); diff != "" {
			t.Errorf("the intent (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(own, card); diff != "" {
			t.Errorf("the intent's own card (-want +got):\n%s", diff)
		}
		_, card, err = db.PaymentIntentGetWithCard(ctx, s.ID, pi.ID, named.ID)
		require.NoError(t, err)
		require.Equal(t, named.ID, card.ID, "the card asked for")

		// No such card, another store's card, an intent without a card.
		_, card, err = db.PaymentIntentGetWithCard(ctx, s.ID, pi.ID, keelpay.NewID(keelpay.PrefixCard))
		require.NoError(t, err)
		require.Nil(t, card)
		other := insertStore(t, db)
		theirs := newCard(other.ID, t0)
		require.NoError(t, db.CardInsert(ctx, theirs))
		_, card, err = db.PaymentIntentGetWithCard(ctx, s.ID, pi.ID, theirs.ID)
		require.NoError(t, err)
		require.Nil(t, card, "another store's card")
		bare := NewIntentRecord(s.ID, t0)
		require.NoError(t, db.PaymentIntentInsert(ctx, bare))
		got, card, err = db.PaymentIntentGetWithCard(ctx, s.ID, bare.ID, "")
		require.NoError(t, err)
		require.Equal(t, bare.ID, got.ID)
		require.Nil(t, card)

		// No such intent for the store.
		_, _, err = db.PaymentIntentGetWithCard(ctx, other.ID, pi.ID, named.ID)
		require.ErrorIs(t, err, storage.ErrNotFound)
		_, _, err = db.PaymentIntentGetWithCard(ctx, s.ID, keelpay.NewID(keelpay.PrefixPaymentIntent), "")
		require.ErrorIs(t, err, storage.ErrNotFound)
	})

	t.Run("PaymentIntentGetByAttempt", func(t *testing.T) {
		t.Parallel()
		db := newStorage(t)
		s := insertStore(t, db)
		pi := fullIntent(s.ID, t0)
		require.NoError(t, db.PaymentIntentInsert(ctx, pi))
		require.NoError(t, db.PaymentIntentInsert(ctx, NewIntentRecord(s.ID, t0)), "intents without an attempt do not collide")
		require.NoError(t, db.PaymentIntentInsert(ctx, NewIntentRecord(s.ID, t0)))

		got, err := db.PaymentIntentGetByAttempt(ctx, pi.AttemptID)
		require.NoError(t, err)
		require.Equal(t, pi.ID, got.ID)
		_, err = db.PaymentIntentGetByAttempt(ctx, "att_unknown")
		require.ErrorIs(t, err, storage.ErrNotFound)
		_, err = db.PaymentIntentGetByAttempt(ctx, "")
		require.ErrorIs(t, err, storage.ErrNotFound)

		old := pi.AttemptID
		next := *pi
		next.AttemptID = keelpay.NewID("att_")
		require.NoError(t, db.PaymentIntentUpdate(ctx, &next, pi.Version))
		_, err = db.PaymentIntentGetByAttempt(ctx, old)
		require.ErrorIs(t, err, storage.ErrNotFound, "only the current or last attempt")
		got, err = db.PaymentIntentGetByAttempt(ctx, next.AttemptID)
		require.NoError(t, err)
		require.Equal(t, pi.ID, got.ID)
	})

	t.Run("PaymentIntentListPages", func(t *testing.T) {
		t.Parallel()
		db := newStorage(t)
		s := insertStore(t, db)
		other := insertStore(t, db)
		var ids []string // oldest first
		for i := range 7 {
			pi := NewIntentRecord(s.ID, t0.Add(time.Duration(i)*time.Second))
			require.NoError(t, db.PaymentIntentInsert(ctx, pi))
			ids = append(ids, pi.ID)
			require.NoError(t, db.PaymentIntentInsert(ctx, NewIntentRecord(other.ID, t0)))
		}
		list := func(p storage.PaymentIntentListParams) ([]string, bool) {
			t.Helper()
			p.StoreID = s.ID
			intents, more, err := db.PaymentIntentList(ctx, p)
			require.NoError(t, err)
			var got []string
			for _, pi := range intents {
				require.Equal(t, s.ID, pi.StoreID)
				got = append(got, pi.ID)
			}
			return got, more
		}
		got, more := list(storage.PaymentIntentListParams{Limit: 3})
		require.Equal(t, []string{ids[6], ids[5], ids[4]}, got)
		require.True(t, more)
		got, more = list(storage.PaymentIntentListParams{Limit: 3, StartingAfter: ids[4]})
		require.Equal(t, []string{ids[3], ids[2], ids[1]}, got)
		require.True(t, more)
		got, more = list(storage.PaymentIntentListParams{Limit: 3, StartingAfter: ids[1]})
		require.Equal(t, []string{ids[0]}, got)
		require.False(t, more)
		got, more = list(storage.PaymentIntentListParams{Limit: 2, EndingBefore: ids[1]})
		require.Equal(t, []string{ids[3], ids[2]}, got)
		require.True(t, more)
		got, more = list(storage.PaymentIntentListParams{Limit: 10, EndingBefore: ids[4]})
		require.Equal(t, []string{ids[6], ids[5]}, got)
		require.False(t, more)
		got, more = list(storage.PaymentIntentListParams{Limit: 100})
		require.Len(t, got, 7)
		require.False(t, more)

		_, _, err := db.PaymentIntentList(ctx, storage.PaymentIntentListParams{StoreID: other.ID, Limit: 3, StartingAfter: ids[0]})
		require.ErrorIs(t, err, storage.ErrNotFound, "a cursor of another store")
		_, _, err = db.PaymentIntentList(ctx, storage.PaymentIntentListParams{StoreID: s.ID, Limit: 3, EndingBefore: "pi_nope"})
		require.ErrorIs(t, err, storage.ErrNotFound)
		empty, more, err := db.PaymentIntentList(ctx, storage.PaymentIntentListParams{StoreID: insertStore(t, db).ID, Limit: 10})
		require.NoError(t, err)
		require.Empty(t, empty)
		require.False(t, more)
	})

	t.Run("PaymentIntentListReconcileDue", func(t *testing.T) {
		t.Parallel()
		db := newStorage(t)
		s := insertStore(t, db)
		other := insertStore(t, db)
		at := func(storeID string, status keelpay.PaymentIntentStatus, reconcileAt time.Time) *keelpay.PaymentIntent {
			pi := NewIntentRecord(storeID, t0)
			pi.Status, pi.ReconcileAt = status, reconcileAt
			if !reconcileAt.IsZero() {
				pi.AttemptID = keelpay.NewID("att_")
			}
			require.NoError(t, db.PaymentIntentInsert(ctx, pi))
			return pi
		}
		unknown := at(s.ID, keelpay.IntentProcessing, t0.Add(time.Minute))
		challenge := at(other.ID, keelpay.IntentRequiresAction, t0.Add(10*time.Minute))
		later := at(s.ID, keelpay.IntentProcessing, t0.Add(time.Hour))
		at(s.ID, keelpay.IntentProcessing, time.Time{})      // nothing scheduled
		at(s.ID, keelpay.IntentSucceeded, t0)                // finished
		at(s.ID, keelpay.IntentRequiresPaymentMethod, t0)    // no attempt open
		at(s.ID, keelpay.IntentCanceled, t0.Add(-time.Hour)) // finished
		due := func(now time.Time, limit int) []string {
			t.Helper()
			intents, err := db.PaymentIntentListReconcileDue(ctx, now, limit)
			require.NoError(t, err)
			var ids []string
			for _, pi := range intents {
				ids = append(ids, pi.ID)
			}
			return ids
		}
		require.Empty(t, due(t0.Add(time.Minute-time.Microsecond), 10))
		require.Equal(t, []string{unknown.ID}, due(t0.Add(time.Minute), 10))
		require.Equal(t, []string{unknown.ID, challenge.ID}, due(t0.Add(10*time.Minute), 10), "every store, earliest first")
		require.Equal(t, []string{unknown.ID, challenge.ID, later.ID}, due(t0.Add(time.Hour), 10))
		require.Equal(t, []string{unknown.ID, challenge.ID}, due(t0.Add(time.Hour), 2), "limit")
	})

	t.Run("PaymentIntentListExpireDue", func(t *testing.T) {
		t.Parallel()
		db := newStorage(t)
		s := insertStore(t, db)
		other := insertStore(t, db)
		first := NewIntentRecord(s.ID, t0)
		second := NewIntentRecord(other.ID, t0.Add(time.Minute))
		for _, pi := range []*keelpay.PaymentIntent{first, second} {
			require.NoError(t, db.PaymentIntentInsert(ctx, pi))
		}
		for _, status := range []keelpay.PaymentIntentStatus{
			keelpay.IntentRequiresAction, keelpay.IntentProcessing, keelpay.IntentSucceeded, keelpay.IntentCanceled,
		} {
			pi := NewIntentRecord(s.ID, t0)
			pi.Status = status
			require.NoError(t, db.PaymentIntentInsert(ctx, pi))
		}
		due := func(now time.Time, limit int) []string {
			t.Helper()
			intents, err := db.PaymentIntentListExpireDue(ctx, now, limit)
			require.NoError(t, err)
			var ids []string
			for _, pi := range intents {
				ids = append(ids, pi.ID)
			}
			return ids
		}
		require.Empty(t, due(first.ExpiresAt.Add(-time.Microsecond), 10))
		require.Equal(t, []string{first.ID}, due(first.ExpiresAt, 10))
		require.Equal(t, []string{first.ID, second.ID}, due(second.ExpiresAt, 10))
		require.Equal(t, []string{first.ID}, due(second.ExpiresAt, 1))
	})

	t.Run("PaymentIntentCounts", func(t *testing.T) {
		t.Parallel()
		db := newStorage(t)
		c, err := db.PaymentIntentCounts(ctx)
		require.NoError(t, err)
		require.Empty(t, c.ByStatus)
		require.Zero(t, c.OutcomeUnknown)

		s := insertStore(t, db)
		other := insertStore(t, db)
		add := func(storeID string, status keelpay.PaymentIntentStatus, lastError string) *keelpay.PaymentIntent {
			pi := NewIntentRecord(storeID, t0)
			pi.Status = status
			if lastError != "" {
				pi.LastError = &keelpay.LastError{Code: lastError, Message: "x"}
			}
			require.NoError(t, db.PaymentIntentInsert(ctx, pi))
			return pi
		}
		add(s.ID, keelpay.IntentRequiresPaymentMethod, "")
		add(s.ID, keelpay.IntentRequiresPaymentMethod, "outcome_unknown") // not processing: resolved
		add(other.ID, keelpay.IntentProcessing, "outcome_unknown")
		unknown := add(s.ID, keelpay.IntentProcessing, "outcome_unknown")
		add(s.ID, keelpay.IntentProcessing, "")
		add(s.ID, keelpay.IntentSucceeded, "")
		c, err = db.PaymentIntentCounts(ctx)
		require.NoError(t, err)
		require.Equal(t, map[keelpay.PaymentIntentStatus]int{
			keelpay.IntentRequiresPaymentMethod: 2, keelpay.IntentProcessing: 3, keelpay.IntentSucceeded: 1,
		}, c.ByStatus)
		require.Equal(t, 2, c.OutcomeUnknown)

		// The counts follow changes of status, and only those.
		resolved := *unknown
		resolved.Status, resolved.LastError = keelpay.IntentSucceeded, nil
		require.NoError(t, db.PaymentIntentUpdate(ctx, &resolved, unknown.Version))
		same := resolved
		same.Description = "changed, same status"
		require.NoError(t, db.PaymentIntentUpdate(ctx, &same, resolved.Version))
		c, err = db.PaymentIntentCounts(ctx)
		require.NoError(t, err)
		require.Equal(t, map[keelpay.PaymentIntentStatus]int{
			keelpay.IntentRequiresPaymentMethod: 2, keelpay.IntentProcessing: 2, keelpay.IntentSucceeded: 2,
		}, c.ByStatus)
		require.Equal(t, 1, c.OutcomeUnknown)
	})
}
