package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/keyring/keyringtest"
	"github.com/keelpay/keelpay/storage/sqlite"
	"github.com/keelpay/keelpay/storage/storagetest"
)

// An intent is read as the JSON array SQLite builds of its columns: every
// text comes back as it was written, whatever bytes it holds, and so do
// the extremes of the integers.
func FuzzIntentTextRoundTrip(f *testing.F) {
	for _, s := range []string{"", "plain", `quote " and \ backslash`, "\x00\x01\x1f\x7f", "é \u2028 😀", "\xff\xfe invalid", `\u0041`, "]", ","} {
		f.Add(s, s+"!")
	}
	ctx := context.Background()
	db, err := sqlite.Open(ctx, sqlite.Config{Keyring: keyringtest.Keyring(), Path: filepath.Join(f.TempDir(), "k.db")})
	require.NoError(f, err)
	f.Cleanup(func() { db.Close() })
	t0 := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	st := storagetest.NewStoreRecord(t0)
	require.NoError(f, db.StoreInsert(ctx, st))
	f.Fuzz(func(t *testing.T, a, b string) {
		// Metadata and page origins are kept as JSON written by
		// encoding/json, which replaces invalid UTF-8 whichever way the
		// row is read.
		ma, mb := a, b
		if !utf8.ValidString(a) || !utf8.ValidString(b) {
			ma, mb = "valid", "text"
		}
		pi := &keelpay.PaymentIntent{
			ID: keelpay.NewID("pi_"), StoreID: st.ID, Status: keelpay.IntentCanceled, Amount: -1 << 63, Currency: a,
			Customer:    keelpay.Customer{ID: a, Name: b, Email: a + b, Phone: b},
			Description: a, Reference: b, Metadata: map[string]string{ma: mb, "k": ma},
			Billing:     &keelpay.Billing{Country: "FI" + a, State: b, PostalCode: a},
			PageOrigins: []string{ma, mb}, ClientSecret: b, CardID: a,
			PaymentMethod:     &keelpay.PaymentMethod{Brand: "visa" + b, Last4: a, ExpMonth: 1<<31 - 1, ExpYear: -2035, Saved: true},
			AuthorizationCode: a, OrderID: b, RefundID: a,
			LastError:          &keelpay.LastError{Code: "x" + a, DeclineCode: b, Message: a},
			NextAction:         &keelpay.NextAction{Type: "y" + b, URL: a},
			CancellationReason: b, MerchantID: a, AttemptID: keelpay.NewID("att_") + a,
			AttemptAt: t0, ReconcileAt: t0.Add(time.Microsecond), ReconcileCount: 1<<62 + 3,
			SucceededAt: t0.Add(time.Hour), ExpiresAt: t0.Add(-time.Hour), CreatedAt: t0, UpdatedAt: t0, Version: 1<<63 - 1,
		}
		require.NoError(t, db.PaymentIntentInsert(ctx, pi))
		got, err := db.PaymentIntentGet(ctx, st.ID, pi.ID)
		require.NoError(t, err)
		if diff := cmp.Diff(pi, got); diff != "" {
			t.Fatalf("read back (-wrote +read):\n%s", diff)
		}
	})
}
