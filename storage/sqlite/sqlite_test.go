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
	"github.com/keelpay/keelpay/keyring/keyringtest"
	"github.com/keelpay/keelpay/storage"
	"github.com/keelpay/keelpay/storage/sqlite"
	"github.com/keelpay/keelpay/storage/storagetest"
)

func open(t *testing.T, path string, kr ...*keyring.Keyring) *sqlite.DB {
	t.Helper()
	k := keyringtest.Keyring()
	if len(kr) > 0 {
		k = kr[0]
	}
	db, err := sqlite.Open(context.Background(), sqlite.Config{Keyring: k, Path: path})
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	return db
}

func TestConformance(t *testing.T) {
	t.Parallel()
	storagetest.Run(t, func(t *testing.T) storage.Storage {
		return open(t, filepath.Join(t.TempDir(), "keelpay.db"))
	})
}

func TestReopenKeepsDataAndSkipsAppliedMigrations(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "keelpay.db")
	db, err := sqlite.Open(ctx, sqlite.Config{Keyring: keyringtest.Keyring(), Path: path})
	require.NoError(t, err)
	s := storagetest.NewStoreRecord(storagetestNow())
	require.NoError(t, db.StoreInsert(ctx, s))
	require.NoError(t, db.Close())

	db2 := open(t, path)
	got, err := db2.StoreGetByID(ctx, s.ID)
	require.NoError(t, err)
	require.Equal(t, s.ClientID, got.ClientID)
}

func storagetestNow() (t time.Time) { return time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC) }

func TestNestedWithTxPanicsInsteadOfDeadlocking(t *testing.T) {
	t.Parallel()
	db := open(t, filepath.Join(t.TempDir(), "keelpay.db"))
	ctx := context.Background()
	require.Panics(t, func() {
		_ = db.WithTx(ctx, func(ctx context.Context, tx storage.Executor) error {
			// The mistake: writing through db, not tx.
			return db.StoreInsert(ctx, storagetest.NewStoreRecord(storagetestNow()))
		})
	})
	// The writer is still alive.
	require.NoError(t, db.StoreInsert(ctx, storagetest.NewStoreRecord(storagetestNow())))
}

func newKeyring(t *testing.T, ids ...string) (*keyring.Keyring, []keyring.Key) {
	t.Helper()
	var keys []keyring.Key
	for _, id := range ids {
		k, err := keyring.Generate(id)
		require.NoError(t, err)
		keys = append(keys, k)
	}
	kr, err := keyring.New(keys[0], keys[1:]...)
	require.NoError(t, err)
	return kr, keys
}

// TestOlderDatabaseIsSealedInPlace: what an older version kept in plain
// text (the client secret, the webhook secret, client secrets of card
// sessions and intents, stored responses) is hashed or sealed at Open, and
// no byte of it stays in the file.
func TestOlderDatabaseIsSealedInPlace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "keelpay.db")
	kr, _ := newKeyring(t, "k1")
	db, err := sqlite.Open(ctx, sqlite.Config{Keyring: kr, Path: path})
	require.NoError(t, err)
	s := storagetest.NewStoreRecord(storagetestNow())
	require.NoError(t, db.StoreInsert(ctx, s))
	rec, began, err := db.IdempotencyBegin(ctx, storage.IdempotencyBeginParams{StoreID: s.ID, Key: "k", Fingerprint: []byte("f"),
		LockToken: "lt", Now: storagetestNow(), LockedUntil: storagetestNow().Add(time.Minute), ExpiresAt: storagetestNow().Add(time.Hour)})
	require.NoError(t, err)
	require.True(t, began, "%v", rec)
	require.NoError(t, db.Close())

	// Plain text as an older version wrote it.
	const clientSecret, whsec, body = "secret_older_plaintext_1", "whsec_OlderPlaintextWebhookSecret0000000000=", `{"secret_key":"sk_older_plaintext_body"}`
	raw, err := sql.Open("sqlite", "file:"+path)
	require.NoError(t, err)
	_, err = raw.Exec(`UPDATE stores SET client_secret = ?, client_secret_hash = '', webhook_secret = ? WHERE id = ?`, clientSecret, whsec, s.ID)
	require.NoError(t, err)
	_, err = raw.Exec(`UPDATE idempotency_keys SET status = 200, body = ? WHERE store_id = ?`, []byte(body), s.ID)
	require.NoError(t, err)
	require.NoError(t, raw.Close())

	db = open(t, path, kr)
	got, err := db.StoreGetByID(ctx, s.ID)
	require.NoError(t, err)
	require.Equal(t, whsec, got.WebhookSecret)
	require.True(t, keyring.SecretMatches(got.ClientSecretHash, clientSecret), "the client secret is kept as its hash")
	r, _, err := db.IdempotencyBegin(ctx, storage.IdempotencyBeginParams{StoreID: s.ID, Key: "k", Fingerprint: []byte("f"),
		LockToken: "lt2", Now: storagetestNow(), LockedUntil: storagetestNow().Add(time.Minute), ExpiresAt: storagetestNow().Add(time.Hour)})
	require.NoError(t, err)
	require.Equal(t, body, string(r.Body))
	require.NoError(t, db.Close())

	for _, suffix := range []string{"", "-wal"} {
		data, err := os.ReadFile(path + suffix)
		if os.IsNotExist(err) {
			continue
		}
		require.NoError(t, err)
		for _, plain := range []string{clientSecret, whsec, "sk_older_plaintext_body"} {
			require.False(t, bytes.Contains(data, []byte(plain)), "%s still in keelpay.db%s", plain, suffix)
		}
	}
}

// TestKeyRotation: a new current key with the old one kept re-seals every
// value at Open; from then on the old key may go, and the old key alone
// opens nothing.
func TestKeyRotation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "keelpay.db")
	old, oldKeys := newKeyring(t, "k1")
	db := open(t, path, old)
	s := storagetest.NewStoreRecord(storagetestNow())
	require.NoError(t, db.StoreInsert(ctx, s))
	require.NoError(t, db.Close())

	k2, err := keyring.Generate("k2")
	require.NoError(t, err)
	both, err := keyring.New(k2, oldKeys[0])
	require.NoError(t, err)
	db = open(t, path, both)
	require.NoError(t, db.Close())

	onlyNew, err := keyring.New(k2)
	require.NoError(t, err)
	db = open(t, path, onlyNew)
	got, err := db.StoreGetByID(ctx, s.ID)
	require.NoError(t, err)
	require.Equal(t, s.WebhookSecret, got.WebhookSecret)
	require.NoError(t, db.Close())

	_, err = sqlite.Open(ctx, sqlite.Config{Keyring: old, Path: path})
	require.ErrorContains(t, err, "sealed with another key")
	_, err = sqlite.Open(ctx, sqlite.Config{Path: path})
	require.ErrorContains(t, err, "Keyring is required")
}

// TestOlderPersonalDataIsSealedInPlace: a database of the migration level
// before personal data was sealed, whose intents and card sessions hold
// their customers' name, email, phone and billing details in plain text,
// is sealed at Open: the values read back as they were, and no byte of
// them stays in the file or its log.
func TestOlderPersonalDataIsSealedInPlace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "keelpay.db")
	kr, _ := newKeyring(t, "k1")
	db := open(t, path, kr)
	now := storagetestNow()
	s := storagetest.NewStoreRecord(now)
	require.NoError(t, db.StoreInsert(ctx, s))
	customer := keelpay.Customer{ID: "cus_older", Name: "Philippa Olderrow-Plaintext", Email: "philippa@older.example", Phone: "+35840999888777"}
	billing := keelpay.Billing{Country: "FI", State: "Pirkanmaa-Older", PostalCode: "OLD33100"}
	pi := storagetest.NewIntentRecord(s.ID, now)
	pi.Customer, pi.Billing = customer, &billing
	require.NoError(t, db.PaymentIntentInsert(ctx, pi))
	cs := &keelpay.CardSession{
		ID: keelpay.NewID(keelpay.PrefixCardSession), StoreID: s.ID, ClientSecret: keelpay.NewID("cs_secret_"),
		Customer: customer, PageOrigins: []string{"https://shop.example"}, Status: keelpay.CardSessionOpen,
		ExpiresAt: now.Add(time.Hour), CreatedAt: now,
	}
	require.NoError(t, db.CardSessionInsert(ctx, cs))
	require.NoError(t, db.Close())

	// The rows as the version before migration 015 wrote them.
	raw, err := sql.Open("sqlite", "file:"+path)
	require.NoError(t, err)
	_, err = raw.Exec(`UPDATE payment_intents SET customer_name = ?, customer_email = ?, customer_phone = ?,
		billing_country = ?, billing_state = ?, billing_postal_code = ? WHERE id = ?`,
		customer.Name, customer.Email, customer.Phone, billing.Country, billing.State, billing.PostalCode, pi.ID)
	require.NoError(t, err)
	_, err = raw.Exec(`UPDATE card_sessions SET customer_name = ?, customer_email = ?, customer_phone = ? WHERE id = ?`,
		customer.Name, customer.Email, customer.Phone, cs.ID)
	require.NoError(t, err)
	_, err = raw.Exec(`DELETE FROM ` + sqlite.MigrationsTable + ` WHERE version = 15`)
	require.NoError(t, err)
	require.NoError(t, raw.Close())
	plain := []string{customer.Name, customer.Email, customer.Phone, billing.State, billing.PostalCode}
	files := func() []byte {
		var all []byte
		for _, suffix := range []string{"", "-wal"} {
			data, err := os.ReadFile(path + suffix)
			if !os.IsNotExist(err) {
				require.NoError(t, err)
			}
			all = append(all, data...)
		}
		return all
	}
	for _, v := range plain {
		require.True(t, bytes.Contains(files(), []byte(v)), "the test sees %q in the older file", v)
	}

	db = open(t, path, kr)
	got, err := db.PaymentIntentGet(ctx, s.ID, pi.ID)
	require.NoError(t, err)
	require.Equal(t, customer, got.Customer)
	require.Equal(t, &billing, got.Billing)
	gotCS, err := db.CardSessionGet(ctx, s.ID, cs.ID)
	require.NoError(t, err)
	require.Equal(t, customer, gotCS.Customer)
	require.Equal(t, cs.ClientSecret, gotCS.ClientSecret)
	require.NoError(t, db.Close())

	for _, v := range plain {
		require.False(t, bytes.Contains(files(), []byte(v)), "%q still in the files", v)
	}
	raw = rawDB(t, path)
	require.Equal(t, len(migrationFiles(t)), appliedVersions(t, raw, sqlite.MigrationsTable))
	var name, postal string
	require.NoError(t, raw.QueryRow(`SELECT customer_name, billing_postal_code FROM payment_intents WHERE id = ?`, pi.ID).Scan(&name, &postal))
	require.True(t, strings.HasPrefix(name, "enc:v1:k1:"), name)
	require.True(t, strings.HasPrefix(postal, "enc:v1:k1:"), postal)
}
