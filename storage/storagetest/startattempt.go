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

// testStartAttempt checks PaymentIntentStartAttempt: the attempt is
// written on exactly the intents storage.AttemptStart allows, exactly as
// it says, and on any other nothing is written and the error is
// ErrConflict; in a batch, a later write that fails takes it back.
func testStartAttempt(t *testing.T, newStorage NewStorage) {
	ctx := context.Background()
	now := t0.Add(time.Minute)

	// fresh returns a store with a card of cus_1 and an intent created
	// with it, as a create with payment_method leaves them.
	fresh := func(t *testing.T, db storage.Storage) (*keelpay.Store, *keelpay.Card, *keelpay.PaymentIntent) {
		t.Helper()
		s := insertStore(t, db)
		card := newCard(s.ID, t0)
		require.NoError(t, db.CardInsert(ctx, card))
		pi := NewIntentRecord(s.ID, t0)
		pi.Description, pi.Reference = "Order 7", "order-7"
		pi.Metadata = map[string]string{"order": "7"}
		pi.Billing = &keelpay.Billing{Country: "FI", PostalCode: "00100"}
		pi.PageOrigins = []string{"https://shop.example"}
		pi.CardID = card.ID
		pi.PaymentMethod = &keelpay.PaymentMethod{Brand: card.Brand, Last4: card.Last4, ExpMonth: card.ExpMonth, ExpYear: card.ExpYear, Saved: true}
		require.NoError(t, db.PaymentIntentInsert(ctx, pi))
		return s, card, pi
	}
	start := func(pi *keelpay.PaymentIntent, cardID string) *storage.AttemptStart {
		return &storage.AttemptStart{StoreID: pi.StoreID, ID: pi.ID, ExpectedVersion: 1, CardID: cardID,
			AttemptID: keelpay.NewID("att_"), MerchantID: "merch_x", Now: now, ReconcileAt: now.Add(time.Minute)}
	}
	// want is what the contract says the attempt writes.
	want := func(pi *keelpay.PaymentIntent, a *storage.AttemptStart) *keelpay.PaymentIntent {
		w := *pi
		w.Status = keelpay.IntentProcessing
		w.AttemptID, w.AttemptAt, w.MerchantID, w.ReconcileAt = a.AttemptID, a.Now, a.MerchantID, a.ReconcileAt
		w.UpdatedAt, w.Version = a.Now, pi.Version+1
		return &w
	}
	unchanged := func(t *testing.T, db storage.Storage, pi *keelpay.PaymentIntent) {
		t.Helper()
		got, err := db.PaymentIntentGet(ctx, pi.StoreID, pi.ID)
		require.NoError(t, err)
		if diff := cmp.Diff(pi, got); diff != "" {
			t.Errorf("the intent changed (-before +after):\n%s", diff)
		}
	}

	t.Run("RecordsTheAttemptAndReadsItBack", func(t *testing.T) {
		t.Parallel()
		db := newStorage(t)
		for _, named := range []bool{false, true} {
			_, card, pi := fresh(t, db)
			cardID := ""
			if named {
				cardID = card.ID
			}
			a := start(pi, cardID)
			var b storage.Batch
			b.PaymentIntentStartAttempt(a)
			require.NoError(t, db.Commit(ctx, &b))
			if diff := cmp.Diff(want(pi, a), a.Intent); diff != "" {
				t.Errorf("the intent read back (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(card, a.Card); diff != "" {
				t.Errorf("the card read (-want +got):\n%s", diff)
			}
			unchanged(t, db, want(pi, a))
		}
		// Outside a batch too.
		_, card, pi := fresh(t, db)
		a := start(pi, "")
		require.NoError(t, db.PaymentIntentStartAttempt(ctx, a))
		require.Equal(t, card.ID, a.Card.ID)
		unchanged(t, db, want(pi, a))
	})

	t.Run("WritesNothingOnAnIntentItDoesNotAllow", func(t *testing.T) {
		t.Parallel()
		db := newStorage(t)
		cases := map[string]func(t *testing.T, s *keelpay.Store, card *keelpay.Card, pi *keelpay.PaymentIntent, a *storage.AttemptStart){
			"another version": func(t *testing.T, _ *keelpay.Store, _ *keelpay.Card, _ *keelpay.PaymentIntent, a *storage.AttemptStart) {
				a.ExpectedVersion = 2
			},
			"expired": func(t *testing.T, _ *keelpay.Store, _ *keelpay.Card, pi *keelpay.PaymentIntent, a *storage.AttemptStart) {
				a.Now = pi.ExpiresAt
			},
			"another card named": func(t *testing.T, s *keelpay.Store, _ *keelpay.Card, _ *keelpay.PaymentIntent, a *storage.AttemptStart) {
				other := newCard(s.ID, t0)
				require.NoError(t, db.CardInsert(ctx, other))
				a.CardID = other.ID
			},
			"the card unavailable": func(t *testing.T, s *keelpay.Store, card *keelpay.Card, _ *keelpay.PaymentIntent, _ *storage.AttemptStart) {
				require.NoError(t, db.CardUpdateStatus(ctx, s.ID, card.ID, keelpay.CardUnavailable))
			},
			"the card deleted": func(t *testing.T, s *keelpay.Store, card *keelpay.Card, _ *keelpay.PaymentIntent, _ *storage.AttemptStart) {
				require.NoError(t, db.CardDelete(ctx, s.ID, card.ID))
			},
			"another store": func(t *testing.T, _ *keelpay.Store, _ *keelpay.Card, _ *keelpay.PaymentIntent, a *storage.AttemptStart) {
				a.StoreID = insertStore(t, db).ID
			},
			"no such intent": func(t *testing.T, _ *keelpay.Store, _ *keelpay.Card, _ *keelpay.PaymentIntent, a *storage.AttemptStart) {
				a.ID = keelpay.NewID(keelpay.PrefixPaymentIntent)
			},
		}
		for name, change := range cases {
			t.Run(name, func(t *testing.T) {
				s, card, pi := fresh(t, db)
				a := start(pi, "")
				change(t, s, card, pi, a)
				err := db.PaymentIntentStartAttempt(ctx, a)
				require.ErrorIs(t, err, storage.ErrConflict)
				unchanged(t, db, pi)
			})
		}

		// Intents that are not as created: the write checks each field
		// the caller takes for empty.
		stored := map[string]func(pi *keelpay.PaymentIntent){
			"canceled":        func(pi *keelpay.PaymentIntent) { pi.Status = keelpay.IntentCanceled },
			"attempted":       func(pi *keelpay.PaymentIntent) { pi.AttemptID = keelpay.NewID("att_") },
			"with a merchant": func(pi *keelpay.PaymentIntent) { pi.MerchantID = "merch_x" },
			"attempted at":    func(pi *keelpay.PaymentIntent) { pi.AttemptAt = t0 },
			"to reconcile":    func(pi *keelpay.PaymentIntent) { pi.ReconcileAt = now },
			"reconciled":      func(pi *keelpay.PaymentIntent) { pi.ReconcileCount = 1 },
			"with a last error": func(pi *keelpay.PaymentIntent) {
				pi.LastError = &keelpay.LastError{Code: "card_declined", Message: "The card was declined."}
			},
			"with an action": func(pi *keelpay.PaymentIntent) {
				pi.NextAction = &keelpay.NextAction{Type: "three_d_secure", URL: "https://x"}
			},
			"without a card":   func(pi *keelpay.PaymentIntent) { pi.CardID, pi.PaymentMethod = "", nil },
			"another customer": func(pi *keelpay.PaymentIntent) { pi.Customer.ID = "cus_2" },
		}
		for name, change := range stored {
			t.Run(name, func(t *testing.T) {
				s := insertStore(t, db)
				card := newCard(s.ID, t0)
				require.NoError(t, db.CardInsert(ctx, card))
				pi := NewIntentRecord(s.ID, t0)
				pi.CardID = card.ID
				pi.PaymentMethod = &keelpay.PaymentMethod{Brand: card.Brand, Last4: card.Last4, ExpMonth: card.ExpMonth, ExpYear: card.ExpYear, Saved: true}
				change(pi)
				require.NoError(t, db.PaymentIntentInsert(ctx, pi))
				err := db.PaymentIntentStartAttempt(ctx, start(pi, ""))
				require.ErrorIs(t, err, storage.ErrConflict)
				unchanged(t, db, pi)
			})
		}
	})

	t.Run("ALaterFailureInTheBatchTakesItBack", func(t *testing.T) {
		t.Parallel()
		db := newStorage(t)
		_, _, pi := fresh(t, db)
		var b storage.Batch
		b.PaymentIntentStartAttempt(start(pi, ""))
		stale := *pi
		b.PaymentIntentUpdate(&stale, 1) // at version 2 by then: a conflict
		err := db.Commit(ctx, &b)
		var we *storage.WriteError
		require.ErrorAs(t, err, &we)
		require.Equal(t, 1, we.Index, "the second write failed")
		unchanged(t, db, pi)

		// And a failed start takes back what came before it.
		other := NewIntentRecord(pi.StoreID, t0)
		var b2 storage.Batch
		b2.PaymentIntentInsert(other)
		bad := start(pi, "")
		bad.ExpectedVersion = 5
		b2.PaymentIntentStartAttempt(bad)
		err = db.Commit(ctx, &b2)
		require.ErrorAs(t, err, &we)
		require.Equal(t, "PaymentIntentStartAttempt", we.Op)
		require.ErrorIs(t, err, storage.ErrConflict)
		_, err = db.PaymentIntentGet(ctx, other.StoreID, other.ID)
		require.ErrorIs(t, err, storage.ErrNotFound, "the insert before it was taken back")
	})

	t.Run("OnlyOneOfConcurrentStartsWins", func(t *testing.T) {
		t.Parallel()
		db := newStorage(t)
		_, _, pi := fresh(t, db)
		const n = 8
		errs := make(chan error, n)
		for range n {
			go func() { errs <- db.PaymentIntentStartAttempt(ctx, start(pi, "")) }()
		}
		won := 0
		for range n {
			if err := <-errs; err == nil {
				won++
			} else {
				require.ErrorIs(t, err, storage.ErrConflict)
			}
		}
		require.Equal(t, 1, won)
	})
}
