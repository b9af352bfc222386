package sqlite_test

import (
	"bytes"
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/keyring"
	"github.com/keelpay/keelpay/storage"
	"github.com/keelpay/keelpay/storage/storagetest"
)

// After CustomerErase neither the database file nor its write-ahead log
// holds the customer's name, email or phone, in any page or free space,
// not even sealed: a copy of the files taken then, with the keys, has
// nothing of the customer but the id.
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
	// The personal data is sealed: the plain values are never in the
	// files, and the erasure must remove their sealed forms, which the
	// keys would open.
	sealedOf := func(customerID string) []string {
		raw, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
		require.NoError(t, err)
		defer raw.Close()
		var vals []string
		for _, q := range []string{
			`SELECT customer_name, customer_email, customer_phone, billing_state, billing_postal_code FROM payment_intents WHERE customer_id = ?`,
			`SELECT customer_name, customer_email, customer_phone, '', '' FROM card_sessions WHERE customer_id = ?`,
		} {
			rows, err := raw.Query(q, customerID)
			require.NoError(t, err)
			for rows.Next() {
				var v [5]string
				require.NoError(t, rows.Scan(&v[0], &v[1], &v[2], &v[3], &v[4]))
				for _, x := range v {
					if x != "" {
						vals = append(vals, x)
					}
				}
			}
			require.NoError(t, rows.Err())
			require.NoError(t, rows.Close())
		}
		return vals
	}
	erasedSealed, keptSealed := sealedOf(erased.ID), sealedOf(kept.ID)
	require.Len(t, erasedSealed, 25*5+3)
	before := files()
	for _, v := range []string{erased.Name, erased.Email, erased.Phone, "Uusimaa"} {
		require.False(t, bytes.Contains(before, []byte(v)), "%q is in the files in clear", v)
	}
	for _, v := range erasedSealed {
		require.True(t, strings.HasPrefix(v, keyring.Prefix), "%q is sealed", v)
		require.True(t, bytes.Contains(before, []byte(v)), "the test sees %q before the erasure", v)
	}

	e, err := db.CustomerErase(ctx, s.ID, erased.ID)
	require.NoError(t, err)
	require.Equal(t, 25, e.PaymentIntents)
	require.Equal(t, 1, e.CardSessions)

	after := files()
	for _, v := range append([]string{erased.Name, erased.Email, erased.Phone}, erasedSealed...) {
		require.False(t, bytes.Contains(after, []byte(v)), "%q is still in the files", v)
	}
	require.True(t, bytes.Contains(after, []byte(erased.ID)), "the customer id stays")
	for _, v := range keptSealed {
		require.True(t, bytes.Contains(after, []byte(v)), "another customer stays")
	}
	got, _, err := db.PaymentIntentList(ctx, storage.PaymentIntentListParams{StoreID: s.ID, CustomerID: kept.ID, Limit: 100})
	require.NoError(t, err)
	require.Len(t, got, 25)
	require.Equal(t, kept, got[0].Customer, "the kept customer's data opens")
}
