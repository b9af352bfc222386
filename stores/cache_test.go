package stores_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/keelpaytest"
	"github.com/keelpay/keelpay/provider/sandbox"
	"github.com/keelpay/keelpay/storage"
	"github.com/keelpay/keelpay/storage/postgres/postgrestest"
	"github.com/keelpay/keelpay/stores"
)

// keyReads counts the reads of stores by key, the reads the key cache
// saves. It keeps no store epoch of its own: no cache is kept on it.
type keyReads struct {
	storage.Storage
	n atomic.Int64
}

func (k *keyReads) StoreGetBySecretKeyHash(ctx context.Context, hash []byte) (*keelpay.Store, error) {
	k.n.Add(1)
	return k.Storage.StoreGetBySecretKeyHash(ctx, hash)
}

func (k *keyReads) StoreGetByPublishableKey(ctx context.Context, key string) (*keelpay.Store, error) {
	k.n.Add(1)
	return k.Storage.StoreGetByPublishableKey(ctx, key)
}

// watchedReads is keyReads that passes the database's store epoch on, so
// that the key cache is kept.
type watchedReads struct{ keyReads }

func (w *watchedReads) StoreEpoch() (uint64, bool) {
	return w.Storage.(storage.StoreWatcher).StoreEpoch()
}

func newService(db storage.Storage, clock *keelpaytest.Clock, sb *sandbox.Sandbox, size int) *stores.Service {
	return mustNew(stores.New(stores.Config{Clock: clock, Provider: sb, Storage: db, KeyCacheSize: size}))
}

// authenticate authenticates key n times and returns how many reads of
// the database it took.
func authenticate(t *testing.T, s *stores.Service, db *watchedReads, key string, n int) int64 {
	t.Helper()
	before := db.n.Load()
	for range n {
		_, err := s.Authenticate(context.Background(), key)
		require.NoError(t, err)
	}
	return db.n.Load() - before
}

func TestKeyCacheServesUntilAStoreChanges(t *testing.T) {
	t.Parallel()
	raw, clock, sb := setup(t)
	db := &watchedReads{keyReads{Storage: raw}}
	ctx := context.Background()
	s := newService(db, clock, sb, 0)

	res, err := s.Setup(ctx, params)
	require.NoError(t, err)
	key := res.SecretKey
	require.EqualValues(t, 1, authenticate(t, s, db, key, 5), "read once, then served from the cache")
	st, err := s.Authenticate(ctx, key)
	require.NoError(t, err)
	require.Equal(t, res.Store.ID, st.ID)
	require.Equal(t, res.Store.WebhookSecret, st.WebhookSecret)
	st.SecretKeyHash[0] ^= 0xff // a caller's changes stay its own
	st.WebhookURL = "https://elsewhere.example/"
	again, err := s.Authenticate(ctx, key)
	require.NoError(t, err)
	require.Equal(t, params.WebhookURL, again.WebhookURL)
	require.Equal(t, stores.HashSecretKey(key), again.SecretKeyHash)

	pres, err := s.AuthenticatePublishable(ctx, res.Store.PublishableKey)
	require.NoError(t, err)
	require.Equal(t, res.Store.ID, pres.ID)
	before := db.n.Load()
	_, err = s.AuthenticatePublishable(ctx, res.Store.PublishableKey)
	require.NoError(t, err)
	require.Equal(t, before, db.n.Load(), "publishable keys are cached too")

	// Bad keys are neither served nor kept.
	for range 2 {
		_, err = s.Authenticate(ctx, "sk_"+res.Store.ID[len("store_"):])
		require.Equal(t, keelpay.CodeInvalidAPIKey, keelpay.ErrorCode(err))
	}
	require.Equal(t, 1, stores.KeyCacheLen(s))

	// Any store change empties the cache: another store's setup here.
	other := params
	other.ClientID, other.ClientSecret = "app_other", "secret_other"
	_, err = s.Setup(ctx, other)
	require.NoError(t, err)
	require.Zero(t, stores.KeyCacheLen(s))
	require.EqualValues(t, 1, authenticate(t, s, db, key, 3))

	// A rotation refuses the old key at once, through this service or
	// another on the same database.
	elsewhere := newService(db, clock, sb, 0)
	require.EqualValues(t, 1, authenticate(t, s, db, key, 1)+authenticate(t, elsewhere, db, key, 2))
	rotate := params
	rotate.StoreID, rotate.RotateSecretKey = res.Store.ID, true
	clock.Advance(time.Minute) // the setup rate limit
	rotated, err := s.Setup(ctx, rotate)
	require.NoError(t, err)
	for _, svc := range []*stores.Service{s, elsewhere} {
		_, err = svc.Authenticate(ctx, key)
		require.Equal(t, keelpay.CodeInvalidAPIKey, keelpay.ErrorCode(err))
	}
	require.EqualValues(t, 1, authenticate(t, s, db, rotated.SecretKey, 3))
}

func TestKeyCacheIsBounded(t *testing.T) {
	t.Parallel()
	raw, clock, sb := setup(t)
	db := &watchedReads{keyReads{Storage: raw}}
	ctx := context.Background()
	var keys []string
	s := newService(db, clock, sb, 3)
	for i := range 5 {
		p := params
		p.ClientID, p.ClientSecret = fmt.Sprintf("app_bound%d", i), fmt.Sprintf("secret_bound%d", i)
		clock.Advance(time.Minute)
		res, err := s.Setup(ctx, p)
		require.NoError(t, err)
		keys = append(keys, res.SecretKey)
	}
	for _, k := range keys {
		authenticate(t, s, db, k, 1)
		require.LessOrEqual(t, stores.KeyCacheLen(s), 3)
	}
	require.Equal(t, 3, stores.KeyCacheLen(s))
	// Every key still authenticates; those evicted are read again.
	var reads int64
	for _, k := range keys {
		reads += authenticate(t, s, db, k, 1)
	}
	require.GreaterOrEqual(t, reads, int64(2), "two of five keys did not fit")
}

func TestNoKeyCache(t *testing.T) {
	t.Parallel()
	raw, clock, sb := setup(t)
	ctx := context.Background()
	res, err := newService(raw, clock, sb, 0).Setup(ctx, params)
	require.NoError(t, err)
	unwatched := &keyReads{Storage: raw}
	watched := &watchedReads{keyReads{Storage: raw}}
	cases := map[string]struct {
		db    storage.Storage
		reads *atomic.Int64
		size  int
	}{
		"a storage that keeps no epoch": {unwatched, &unwatched.n, 0},
		"a negative size":               {watched, &watched.n, -1},
	}
	for name, c := range cases {
		s := newService(c.db, clock, sb, c.size)
		before := c.reads.Load()
		for range 3 {
			_, err := s.Authenticate(ctx, res.SecretKey)
			require.NoError(t, err, name)
		}
		require.EqualValues(t, 3, c.reads.Load()-before, name)
		require.Zero(t, stores.KeyCacheLen(s), name)
	}
}

// Requests authenticating while the key is rotated: once the rotation
// has returned, no request that starts after it is let in with the old
// key, whatever the cache held or was filling in between.
func TestKeyCacheRotationUnderLoad(t *testing.T) {
	t.Parallel()
	raw, clock, sb := setup(t)
	db := &watchedReads{keyReads{Storage: raw}}
	ctx := context.Background()
	s := newService(db, clock, sb, 0)
	res, err := s.Setup(ctx, params)
	require.NoError(t, err)
	key := res.SecretKey

	var rotated atomic.Bool
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var lateAccepted atomic.Int64
	for range 8 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				after := rotated.Load()
				if _, err := s.Authenticate(ctx, key); err == nil && after {
					lateAccepted.Add(1)
				}
			}
		})
	}
	// Let the readers fill the cache first.
	require.Eventually(t, func() bool { return stores.KeyCacheLen(s) == 1 }, 10*time.Second, time.Millisecond)
	rotate := params
	rotate.StoreID, rotate.RotateSecretKey = res.Store.ID, true
	clock.Advance(time.Minute)
	_, err = s.Setup(ctx, rotate)
	require.NoError(t, err)
	rotated.Store(true)
	// Keep them going for a while after the rotation.
	before := db.n.Load()
	require.Eventually(t, func() bool { return db.n.Load()-before > 200 }, 20*time.Second, time.Millisecond)
	close(stop)
	wg.Wait()
	require.Zero(t, lateAccepted.Load(), "the old key was let in after its rotation returned")
}

// On PostgreSQL the cache serves only while its connection listens for
// store changes: when that connection is cut, every authentication reads
// the database until it listens again, and what was cached before is
// gone.
func TestKeyCacheReadsThroughWhileNotListeningPostgreSQL(t *testing.T) {
	t.Parallel()
	dsn := postgrestest.DSN(t)
	schema := postgrestest.NewSchema(t)
	_, clock, sb := setup(t)
	db := &watchedReads{keyReads{Storage: postgrestest.Open(t, schema)}}
	ctx := context.Background()
	s := newService(db, clock, sb, 0)
	listening := func(want bool) {
		t.Helper()
		require.Eventually(t, func() bool { _, ok := db.StoreEpoch(); return ok == want }, 20*time.Second, time.Millisecond,
			"listening never became %v", want)
	}
	listening(true)
	res, err := s.Setup(ctx, params)
	require.NoError(t, err)
	key := res.SecretKey
	// The setup's own announcement empties the cache once more when it
	// arrives; from then on the key is answered from the cache.
	deadline := time.Now().Add(10 * time.Second)
	for authenticate(t, s, db, key, 1) != 0 {
		require.True(t, time.Now().Before(deadline), "the key was never answered from the cache")
	}

	conn, err := pgx.Connect(ctx, dsn)
	require.NoError(t, err)
	defer conn.Close(ctx)
	stores := pgx.Identifier{schema, "stores"}.Sanitize()
	// With the trigger disabled, changes would go unheard: the listener
	// cannot come back while it is so. Then its connection is cut.
	_, err = conn.Exec(ctx, `ALTER TABLE `+stores+` DISABLE TRIGGER stores_changed`)
	require.NoError(t, err)
	var cut int
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE application_name = $1`, "keelpay stores "+schema).Scan(&cut))
	require.Equal(t, 1, cut, "one listening connection")
	listening(false)
	require.EqualValues(t, 4, authenticate(t, s, db, key, 4), "every authentication reads while nothing listens")

	_, err = conn.Exec(ctx, `ALTER TABLE `+stores+` ENABLE TRIGGER stores_changed`)
	require.NoError(t, err)
	listening(true)
	require.EqualValues(t, 1, authenticate(t, s, db, key, 3), "cached again once listening")
}
