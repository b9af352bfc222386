package sqlite_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/storage/storagetest"
)

// After CustomerErase neither the database file nor its write-ahead log
// holds the customer's name, email or phone, in any page or free space:
// a copy of the files taken then has nothing of the customer but the id.
func TestCustomerEraseLeavesNoPersonalDataInTheFiles(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "keelpay.db")
	db := open(t, path)
	now := storagetestNow()
	s := storagetest.NewStoreRecord(now)
	require.NoError(t, db.StoreInsert(ctx, s))

	erased := keelpay.Customer{ID: "cus_erase", Name: "Zebulon Quixotic-Farnsworth", Email: "zq.farnsworth@erase.example", Phone: "+35840777123987"}
	kept := keelpay.Customer{ID: "cus_keep", Name: "Ottoline Keepington", Email: "ottoline@keep.example", Phone: "+35840555000111"}
	for i := range 50 { // several pages of intents
		pi := storagetest.NewIntentRecord(s.ID, now.Add(time.Duration(i)*time.Second))
		pi.Customer = erased
		if i%2 == 1 {
			pi.Customer = kept
		}
		pi.Billing = &keelpay.Billing{Country: "FI", State: "Uusimaa", PostalCode: "00100"}
		require.NoError(t, db.PaymentIntentInsert(ctx, pi))
		// A change writes the row, and its page, again.
		pi.Status = keelpay.IntentCanceled
		require.NoError(t, db.PaymentIntentUpdate(ctx, pi, pi.Version))
	}
	require.NoError(t, db.CardSessionInsert(ctx, &keelpay.CardSession{
		ID: keelpay.NewID(keelpay.PrefixCardSession), StoreID: s.ID, ClientSecret: keelpay.NewID("cs_secret_"),
		Customer: erased, PageOrigins: []string{"https://shop.example"}, Status: keelpay.CardSessionOpen,
		ExpiresAt: now.Add(time.Hour), CreatedAt: now,
	}))

	files := func() []byte {
		var all []byte
		for _, suffix := range []string{"", "-wal"} {
			b, err := os.ReadFile(path + suffix)
			if !os.IsNotExist(err) {
				require.NoError(t, err)
			}
			all = append(all, b...)
		}
		return all
	}
	before := files()
	for _, v := range []string{erased.Name, erased.Email, erased.Phone} {
		require.True(t, bytes.Contains(before, []byte(v)), "the test sees %q before the erasure", v)
	}

	e, err := db.CustomerErase(ctx, s.ID, erased.ID)
	require.NoError(t, err)
	require.Equal(t, 25, e.PaymentIntents)
	require.Equal(t, 1, e.CardSessions)

	after := files()
	for _, v := range []string{erased.Name, erased.Email, erased.Phone} {
		require.False(t, bytes.Contains(after, []byte(v)), "%q is still in the files", v)
	}
	require.True(t, bytes.Contains(after, []byte(erased.ID)), "the customer id stays")
	require.True(t, bytes.Contains(after, []byte(kept.Email)), "another customer stays")
}
