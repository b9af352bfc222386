package httpapi_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/storage"
	"github.com/keelpay/keelpay/storage/postgres/postgrestest"
)

// keyReads counts the reads of stores by secret key hash, the read that
// the key cache saves.
type keyReads struct {
	storage.Storage
	n atomic.Int64
}

func (k *keyReads) StoreGetBySecretKeyHash(ctx context.Context, hash []byte) (*keelpay.Store, error) {
	k.n.Add(1)
	return k.Storage.StoreGetBySecretKeyHash(ctx, hash)
}

// StoreEpoch passes the database's on, so that the key cache is kept.
func (k *keyReads) StoreEpoch() (uint64, bool) {
	return k.Storage.(storage.StoreWatcher).StoreEpoch()
}

// waitListening waits, a bounded time, until db hears store changes.
func waitListening(t *testing.T, db storage.StoreWatcher) {
	t.Helper()
	require.Eventually(t, func() bool { _, ok := db.StoreEpoch(); return ok }, 15*time.Second, time.Millisecond,
		"the database never listened for store changes")
}

// Two servers on one PostgreSQL database, each with its own key cache: a
// secret key rotated through one is refused by the other as soon as the
// change is announced, though the other had it cached.
func TestRotatedKeyIsRefusedByEveryServerPostgreSQL(t *testing.T) {
	t.Parallel()
	schema := postgrestest.NewSchema(t)
	dbA, dbB := &keyReads{Storage: postgrestest.Open(t, schema)}, &keyReads{Storage: postgrestest.Open(t, schema)}
	a := setup(t, func(o *options) { o.db = dbA })
	b := setup(t, func(o *options) { o.db = dbB })
	waitListening(t, dbA)
	waitListening(t, dbB)

	clientID := "app_rotate_everywhere"
	heardB, _ := dbB.StoreEpoch()
	old := a.setupStore(t, clientID).str("secret_key")
	// B hears of the new store (its epoch moves, which empties its cache)
	// before its cache is counted on.
	require.Eventually(t, func() bool { e, _ := dbB.StoreEpoch(); return e != heardB }, 10*time.Second, time.Millisecond,
		"B never heard of the new store")
	list := func(b *bundle, key string) *response {
		return b.do(t, req{method: "GET", path: "/v1/payment_intents", key: key})
	}
	for _, srv := range []*bundle{a, b} {
		require.Equal(t, http.StatusOK, list(srv, old).Status)
	}
	// From now on B answers the key from its cache.
	readsB := dbB.n.Load()
	for range 3 {
		require.Equal(t, http.StatusOK, list(b, old).Status)
	}
	require.Equal(t, readsB, dbB.n.Load(), "B's cache answers a key it knows")

	body := setupBody(clientID, "https://store.example/hooks")
	body["rotate_secret_key"] = true
	r := a.do(t, req{method: "POST", path: "/v1/setup", key: old, body: body})
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
	rotated := r.str("secret_key")

	// A made the change: refused before the rotation's answer left.
	requireError(t, list(a, old), http.StatusUnauthorized, "invalid_api_key")
	// B hears of it when PostgreSQL delivers the announcement.
	deadline := time.Now().Add(10 * time.Second)
	for list(b, old).Status != http.StatusUnauthorized {
		require.True(t, time.Now().Before(deadline), "B still accepts the rotated key after 10 s")
	}
	for range 3 {
		requireError(t, list(b, old), http.StatusUnauthorized, "invalid_api_key")
	}
	for _, srv := range []*bundle{a, b} {
		require.Equal(t, http.StatusOK, list(srv, rotated).Status)
	}
}
