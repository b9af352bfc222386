package storagetest

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay/storage"
)

func testIdempotency(t *testing.T, newStorage NewStorage) {
	ctx := context.Background()
	const (
		lock = time.Minute
		ttl  = 24 * time.Hour
	)
	fingerprint := func(s string) []byte { sum := sha256.Sum256([]byte(s)); return sum[:] }
	// setup returns a fresh database with one store, and its id.
	setup := func(t *testing.T) (storage.Storage, string) {
		db := newStorage(t)
		s := NewStoreRecord(t0)
		require.NoError(t, db.StoreInsert(ctx, s))
		return db, s.ID
	}
	// params begins key at now, locking for a minute and keeping a day.
	params := func(storeID, key, fp, token string, now time.Time) storage.IdempotencyBeginParams {
		return storage.IdempotencyBeginParams{StoreID: storeID, Key: key, Fingerprint: fingerprint(fp),
			LockToken: token, Now: now, LockedUntil: now.Add(lock), ExpiresAt: now.Add(ttl)}
	}
	complete := func(storeID, key, token string, status int, body string) storage.IdempotencyCompleteParams {
		return storage.IdempotencyCompleteParams{StoreID: storeID, Key: key, LockToken: token, Status: status, Body: []byte(body)}
	}

	t.Run("BeginLocksAFreeKey", func(t *testing.T) {
		t.Parallel()
		db, store := setup(t)
		rec, began, err := db.IdempotencyBegin(ctx, params(store, "k1", "POST /a {}", "tok1", t0))
		require.NoError(t, err)
		require.True(t, began)
		want := &storage.IdempotencyRecord{StoreID: store, Key: "k1", Fingerprint: fingerprint("POST /a {}"),
			LockToken: "tok1", LockedUntil: t0.Add(lock), CreatedAt: t0, ExpiresAt: t0.Add(ttl)}
		if diff := cmp.Diff(want, rec); diff != "" {
			t.Errorf("begun record (-want +got):\n%s", diff)
		}
		require.False(t, rec.Completed())

		// While it runs, another run gets the locked record, whatever its
		// fingerprint, and changes nothing.
		for _, fp := range []string{"POST /a {}", "POST /b {}"} {
			got, began, err := db.IdempotencyBegin(ctx, params(store, "k1", fp, "tok2", t0.Add(time.Second)))
			require.NoError(t, err)
			require.False(t, began, fp)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("locked record (-want +got):\n%s", diff)
			}
		}
	})

	t.Run("GetReadsWithoutLocking", func(t *testing.T) {
		t.Parallel()
		db, store := setup(t)
		_, err := db.IdempotencyGet(ctx, store, "k1")
		require.ErrorIs(t, err, storage.ErrNotFound)
		begun, _, err := db.IdempotencyBegin(ctx, params(store, "k1", "f", "tok1", t0))
		require.NoError(t, err)
		got, err := db.IdempotencyGet(ctx, store, "k1")
		require.NoError(t, err)
		if diff := cmp.Diff(begun, got); diff != "" {
			t.Errorf("read of a locked record (-begun +got):\n%s", diff)
		}
		require.NoError(t, db.IdempotencyComplete(ctx, complete(store, "k1", "tok1", 201, "sealed answer\n")))
		got, err = db.IdempotencyGet(ctx, store, "k1")
		require.NoError(t, err)
		require.Equal(t, 201, got.Status)
		require.Equal(t, "sealed answer\n", string(got.Body), "the body comes back opened")
		// Keys are per store.
		other := NewStoreRecord(t0)
		require.NoError(t, db.StoreInsert(ctx, other))
		_, err = db.IdempotencyGet(ctx, other.ID, "k1")
		require.ErrorIs(t, err, storage.ErrNotFound)
	})

	t.Run("TakeLocksAFreeKeyWithItsStep", func(t *testing.T) {
		t.Parallel()
		db, store := setup(t)
		take := func(key, fp, token string, now time.Time, point string, status int, body string) bool {
			t.Helper()
			err := db.WithTx(ctx, func(ctx context.Context, tx storage.Executor) error {
				return tx.IdempotencyTake(ctx, storage.IdempotencyTakeParams{
					IdempotencyBeginParams: params(store, key, fp, token, now),
					RecoveryPoint:          point, ObjectID: "obj_" + token, Status: status, Body: []byte(body),
				})
			})
			if errors.Is(err, storage.ErrIdempotencyKeyBusy) {
				return false
			}
			require.NoError(t, err)
			return true
		}
		get := func(key string) *storage.IdempotencyRecord {
			t.Helper()
			rec, err := db.IdempotencyGet(ctx, store, key)
			require.NoError(t, err)
			return rec
		}

		// A free key is locked with the step...
		require.True(t, take("k1", "f", "tok1", t0, "attempt", 0, ""))
		want := &storage.IdempotencyRecord{StoreID: store, Key: "k1", Fingerprint: fingerprint("f"), LockToken: "tok1",
			LockedUntil: t0.Add(lock), CreatedAt: t0, ExpiresAt: t0.Add(ttl), RecoveryPoint: "attempt", ObjectID: "obj_tok1"}
		if diff := cmp.Diff(want, get("k1")); diff != "" {
			t.Errorf("taken record (-want +got):\n%s", diff)
		}
		// ...and then held: not taken by another run, even after its lock
		// lapsed, since it has a step to resume (IdempotencyBegin's work).
		require.False(t, take("k1", "f", "tok2", t0.Add(time.Second), "attempt", 0, ""))
		require.False(t, take("k1", "f", "tok2", t0.Add(2*lock), "attempt", 0, ""))
		require.Equal(t, "tok1", get("k1").LockToken)
		// The run that holds it takes it again with its next step.
		require.True(t, take("k1", "f", "tok1", t0, "attempt2", 0, ""))
		require.Equal(t, "attempt2", get("k1").RecoveryPoint)
		require.Equal(t, t0.Add(lock), get("k1").LockedUntil, "still locked")
		// A step completed with the response.
		require.NoError(t, db.IdempotencyProgress(ctx, storage.IdempotencyProgressParams{
			StoreID: store, Key: "k1", LockToken: "tok1", RecoveryPoint: "done", ObjectID: "obj_tok1",
			Status: 200, Body: []byte("answer\n"),
		}))
		rec := get("k1")
		require.Equal(t, 200, rec.Status)
		require.Equal(t, "answer\n", string(rec.Body))
		require.Equal(t, "done", rec.RecoveryPoint)
		require.True(t, rec.LockedUntil.IsZero(), "unlocked")
		require.ErrorIs(t, db.IdempotencyProgress(ctx, storage.IdempotencyProgressParams{
			StoreID: store, Key: "k1", LockToken: "tok1", RecoveryPoint: "done", Status: 200, Body: []byte("again"),
		}), storage.ErrIdempotencyKeyLost, "a completed record is not completed again")
		// An answered key is not taken until it expires.
		require.False(t, take("k1", "f", "tok3", t0.Add(ttl-time.Microsecond), "", 201, "x"))
		require.True(t, take("k1", "g", "tok3", t0.Add(ttl), "done", 201, "fresh\n"), "expired")
		rec = get("k1")
		require.Equal(t, 201, rec.Status)
		require.Equal(t, "fresh\n", string(rec.Body))
		require.Equal(t, fingerprint("g"), rec.Fingerprint)

		// A lapsed run that committed nothing is taken over by the same
		// request only.
		require.True(t, take("k2", "f", "tok1", t0, "", 0, ""))
		require.False(t, take("k2", "other", "tok2", t0.Add(lock), "attempt", 0, ""))
		require.False(t, take("k2", "f", "tok2", t0.Add(lock-time.Microsecond), "attempt", 0, ""))
		require.True(t, take("k2", "f", "tok2", t0.Add(lock), "attempt", 0, ""))
		require.Equal(t, "tok2", get("k2").LockToken)

		// Taken in a transaction that rolls back: nothing is left.
		errRollback := errors.New("roll back")
		require.ErrorIs(t, db.WithTx(ctx, func(ctx context.Context, tx storage.Executor) error {
			require.NoError(t, tx.IdempotencyTake(ctx, storage.IdempotencyTakeParams{IdempotencyBeginParams: params(store, "k3", "f", "tok1", t0)}))
			return errRollback
		}), errRollback)
		_, err := db.IdempotencyGet(ctx, store, "k3")
		require.ErrorIs(t, err, storage.ErrNotFound)
	})

	t.Run("CompleteStoresTheResponse", func(t *testing.T) {
		t.Parallel()
		db, store := setup(t)
		_, began, err := db.IdempotencyBegin(ctx, params(store, "k1", "f", "tok1", t0))
		require.NoError(t, err)
		require.True(t, began)
		require.NoError(t, db.IdempotencyComplete(ctx, complete(store, "k1", "tok1", 201, `{"id":"x"}`+"\n")))
		want := &storage.IdempotencyRecord{StoreID: store, Key: "k1", Fingerprint: fingerprint("f"),
			LockToken: "tok1", CreatedAt: t0, ExpiresAt: t0.Add(ttl), Status: 201, Body: []byte(`{"id":"x"}` + "\n")}
		// A completed record is returned, not taken over, long after its
		// lock would have lapsed and until it expires.
		for _, at := range []time.Duration{time.Second, 2 * lock, ttl - time.Microsecond} {
			got, began, err := db.IdempotencyBegin(ctx, params(store, "k1", "f", "tok2", t0.Add(at)))
			require.NoError(t, err)
			require.False(t, began, at)
			require.True(t, got.Completed())
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("at +%v (-want +got):\n%s", at, diff)
			}
		}
		// Only once: completing again changes nothing.
		require.NoError(t, db.IdempotencyComplete(ctx, complete(store, "k1", "tok1", 500, "x")))
		require.ErrorIs(t, db.IdempotencyRelease(ctx, store, "k1", "tok1"), storage.ErrNotFound)
		got, _, err := db.IdempotencyBegin(ctx, params(store, "k1", "f", "tok3", t0))
		require.NoError(t, err)
		require.Equal(t, 201, got.Status)
	})

	t.Run("CompleteAndReleaseNeedTheLockToken", func(t *testing.T) {
		t.Parallel()
		db, store := setup(t)
		_, began, err := db.IdempotencyBegin(ctx, params(store, "k1", "f", "tok1", t0))
		require.NoError(t, err)
		require.True(t, began)
		require.ErrorIs(t, db.IdempotencyComplete(ctx, complete(store, "k1", "other", 200, "x")), storage.ErrNotFound)
		require.ErrorIs(t, db.IdempotencyRelease(ctx, store, "k1", "other"), storage.ErrNotFound)
		require.ErrorIs(t, db.IdempotencyComplete(ctx, complete(store, "nope", "tok1", 200, "x")), storage.ErrNotFound)
		require.ErrorIs(t, db.IdempotencyRelease(ctx, "store_other", "k1", "tok1"), storage.ErrNotFound)
		rec, began, err := db.IdempotencyBegin(ctx, params(store, "k1", "f", "tok2", t0))
		require.NoError(t, err)
		require.False(t, began)
		require.Equal(t, "tok1", rec.LockToken)
		require.False(t, rec.Completed())
	})

	t.Run("ReleaseFreesTheKey", func(t *testing.T) {
		t.Parallel()
		db, store := setup(t)
		_, began, err := db.IdempotencyBegin(ctx, params(store, "k1", "f", "tok1", t0))
		require.NoError(t, err)
		require.True(t, began)
		require.NoError(t, db.IdempotencyRelease(ctx, store, "k1", "tok1"))
		require.ErrorIs(t, db.IdempotencyRelease(ctx, store, "k1", "tok1"), storage.ErrNotFound)
		// Free at once, for any request.
		rec, began, err := db.IdempotencyBegin(ctx, params(store, "k1", "g", "tok2", t0))
		require.NoError(t, err)
		require.True(t, began)
		require.Equal(t, fingerprint("g"), rec.Fingerprint)
	})

	t.Run("AbandonedRunIsTakenOverBySameRequest", func(t *testing.T) {
		t.Parallel()
		db, store := setup(t)
		_, began, err := db.IdempotencyBegin(ctx, params(store, "k1", "f", "tok1", t0))
		require.NoError(t, err)
		require.True(t, began)

		// Not before the lock lapses.
		_, began, err = db.IdempotencyBegin(ctx, params(store, "k1", "f", "tok2", t0.Add(lock-time.Microsecond)))
		require.NoError(t, err)
		require.False(t, began)
		// Another request never takes it over.
		rec, began, err := db.IdempotencyBegin(ctx, params(store, "k1", "g", "tok2", t0.Add(lock)))
		require.NoError(t, err)
		require.False(t, began)
		require.Equal(t, "tok1", rec.LockToken)
		require.Equal(t, fingerprint("f"), rec.Fingerprint)

		// The same request does, from the moment the lock lapses, with a
		// fresh lock and expiry.
		at := t0.Add(lock)
		rec, began, err = db.IdempotencyBegin(ctx, params(store, "k1", "f", "tok3", at))
		require.NoError(t, err)
		require.True(t, began)
		want := &storage.IdempotencyRecord{StoreID: store, Key: "k1", Fingerprint: fingerprint("f"),
			LockToken: "tok3", LockedUntil: at.Add(lock), CreatedAt: at, ExpiresAt: at.Add(ttl)}
		if diff := cmp.Diff(want, rec); diff != "" {
			t.Errorf("taken over (-want +got):\n%s", diff)
		}

		// The abandoned run can no longer store or release anything.
		require.ErrorIs(t, db.IdempotencyComplete(ctx, complete(store, "k1", "tok1", 200, "old")), storage.ErrNotFound)
		require.ErrorIs(t, db.IdempotencyRelease(ctx, store, "k1", "tok1"), storage.ErrNotFound)
		require.NoError(t, db.IdempotencyComplete(ctx, complete(store, "k1", "tok3", 200, "new")))
		rec, _, err = db.IdempotencyBegin(ctx, params(store, "k1", "f", "tok4", at))
		require.NoError(t, err)
		require.Equal(t, []byte("new"), rec.Body)
	})

	t.Run("ExpiredRecordIsOverwritten", func(t *testing.T) {
		t.Parallel()
		db, store := setup(t)
		_, began, err := db.IdempotencyBegin(ctx, params(store, "done", "f", "tok1", t0))
		require.NoError(t, err)
		require.True(t, began)
		require.NoError(t, db.IdempotencyComplete(ctx, complete(store, "done", "tok1", 200, "x")))
		_, began, err = db.IdempotencyBegin(ctx, params(store, "running", "f", "tok1", t0))
		require.NoError(t, err)
		require.True(t, began)

		// From ExpiresAt on, by any request.
		at := t0.Add(ttl)
		for _, key := range []string{"done", "running"} {
			rec, began, err := db.IdempotencyBegin(ctx, params(store, key, "g", "tok2", at))
			require.NoError(t, err)
			require.True(t, began, key)
			want := &storage.IdempotencyRecord{StoreID: store, Key: key, Fingerprint: fingerprint("g"),
				LockToken: "tok2", LockedUntil: at.Add(lock), CreatedAt: at, ExpiresAt: at.Add(ttl)}
			if diff := cmp.Diff(want, rec); diff != "" {
				t.Errorf("%s (-want +got):\n%s", key, diff)
			}
		}
	})

	t.Run("KeysAreScopedPerStore", func(t *testing.T) {
		t.Parallel()
		db, a := setup(t)
		s := NewStoreRecord(t0)
		require.NoError(t, db.StoreInsert(ctx, s))
		b := s.ID
		_, began, err := db.IdempotencyBegin(ctx, params(a, "k1", "f", "tok-a", t0))
		require.NoError(t, err)
		require.True(t, began)
		rec, began, err := db.IdempotencyBegin(ctx, params(b, "k1", "g", "tok-b", t0))
		require.NoError(t, err)
		require.True(t, began, "another store's key is another key")
		require.Equal(t, b, rec.StoreID)
		require.NoError(t, db.IdempotencyComplete(ctx, complete(a, "k1", "tok-a", 200, "a")))
		require.ErrorIs(t, db.IdempotencyComplete(ctx, complete(b, "k1", "tok-a", 200, "a")), storage.ErrNotFound)
		require.NoError(t, db.IdempotencyRelease(ctx, b, "k1", "tok-b"))
		rec, began, err = db.IdempotencyBegin(ctx, params(a, "k1", "f", "tok-c", t0))
		require.NoError(t, err)
		require.False(t, began, "releasing store b's key left store a's")
		require.Equal(t, []byte("a"), rec.Body)
	})

	t.Run("KeysAreCaseSensitive", func(t *testing.T) {
		t.Parallel()
		db, store := setup(t)
		_, began, err := db.IdempotencyBegin(ctx, params(store, "key", "f", "tok1", t0))
		require.NoError(t, err)
		require.True(t, began)
		_, began, err = db.IdempotencyBegin(ctx, params(store, "KEY", "f", "tok2", t0))
		require.NoError(t, err)
		require.True(t, began)
	})

	t.Run("DeleteExpired", func(t *testing.T) {
		t.Parallel()
		db, store := setup(t)
		// Keys begun a minute apart; the first three completed.
		for i := range 5 {
			at := t0.Add(time.Duration(i) * time.Minute)
			key, token := fmt.Sprintf("k%d", i), fmt.Sprintf("tok%d", i)
			_, began, err := db.IdempotencyBegin(ctx, params(store, key, "f", token, at))
			require.NoError(t, err)
			require.True(t, began)
			if i < 3 {
				require.NoError(t, db.IdempotencyComplete(ctx, complete(store, key, token, 200, "x")))
			}
		}
		// At t0+ttl+3m, k0 to k3 expired (k3, unfinished, exactly now).
		now := t0.Add(ttl + 3*time.Minute)
		n, err := db.IdempotencyDeleteExpired(ctx, now, 3)
		require.NoError(t, err)
		require.Equal(t, 3, n, "at most limit")
		n, err = db.IdempotencyDeleteExpired(ctx, now, 100)
		require.NoError(t, err)
		require.Equal(t, 1, n)
		n, err = db.IdempotencyDeleteExpired(ctx, now, 100)
		require.NoError(t, err)
		require.Zero(t, n)

		// What was deleted is gone: a completion of it finds nothing. The
		// record not yet expired is still there and locked.
		require.ErrorIs(t, db.IdempotencyComplete(ctx, complete(store, "k3", "tok3", 200, "x")), storage.ErrNotFound)
		require.NoError(t, db.IdempotencyComplete(ctx, complete(store, "k4", "tok4", 200, "x")))
		rec, began, err := db.IdempotencyBegin(ctx, params(store, "k4", "g", "tok5", now))
		require.NoError(t, err)
		require.False(t, began)
		require.Equal(t, 200, rec.Status)
	})

	t.Run("ConcurrentBeginsOneWins", func(t *testing.T) {
		t.Parallel()
		db, store := setup(t)
		var began atomic.Int32
		var wg sync.WaitGroup
		for i := range 20 {
			wg.Go(func() {
				rec, ok, err := db.IdempotencyBegin(ctx, params(store, "k1", "f", fmt.Sprintf("tok%d", i), t0))
				if err != nil {
					t.Error(err)
					return
				}
				if ok {
					began.Add(1)
				} else if rec.LockToken == fmt.Sprintf("tok%d", i) {
					t.Errorf("run %d holds the lock but did not begin", i)
				}
			})
		}
		wg.Wait()
		require.EqualValues(t, 1, began.Load())
	})

	t.Run("InsideATransaction", func(t *testing.T) {
		t.Parallel()
		db, store := setup(t)
		var beganInTx bool
		err := db.WithTx(ctx, func(ctx context.Context, tx storage.Executor) error {
			var err error
			if _, beganInTx, err = tx.IdempotencyBegin(ctx, params(store, "k1", "f", "tok1", t0)); err != nil {
				return err
			}
			return tx.IdempotencyComplete(ctx, complete(store, "k1", "tok1", 200, "x"))
		})
		require.NoError(t, err)
		require.True(t, beganInTx)
		rec, began, err := db.IdempotencyBegin(ctx, params(store, "k1", "f", "tok2", t0))
		require.NoError(t, err)
		require.False(t, began)
		require.Equal(t, []byte("x"), rec.Body)
	})

	t.Run("ProgressIsFencedByTheLockToken", func(t *testing.T) {
		t.Parallel()
		db, store := setup(t)
		_, began, err := db.IdempotencyBegin(ctx, params(store, "k1", "f", "tok1", t0))
		require.NoError(t, err)
		require.True(t, began)
		step := storage.IdempotencyProgressParams{StoreID: store, Key: "k1", LockToken: "tok1", RecoveryPoint: "attempt", ObjectID: "pi_1"}
		require.NoError(t, db.IdempotencyProgress(ctx, step))
		other := step
		other.LockToken = "tok2"
		require.ErrorIs(t, db.IdempotencyProgress(ctx, other), storage.ErrIdempotencyKeyLost)

		// The lock lapses and the same request takes the key over: it
		// sees the step the first run committed, and the first run can
		// no longer record anything.
		rec, began, err := db.IdempotencyBegin(ctx, params(store, "k1", "f", "tok2", t0.Add(lock)))
		require.NoError(t, err)
		require.True(t, began)
		require.Equal(t, "attempt", rec.RecoveryPoint)
		require.Equal(t, "pi_1", rec.ObjectID)
		require.ErrorIs(t, db.IdempotencyProgress(ctx, step), storage.ErrIdempotencyKeyLost)
		require.ErrorIs(t, db.IdempotencyComplete(ctx, complete(store, "k1", "tok1", 200, "x")), storage.ErrNotFound)

		// A progress write that loses its key rolls its transaction back.
		err = db.WithTx(ctx, func(ctx context.Context, tx storage.Executor) error {
			return tx.IdempotencyProgress(ctx, step)
		})
		require.ErrorIs(t, err, storage.ErrIdempotencyKeyLost)
	})

	t.Run("ReleaseKeepsCommittedProgress", func(t *testing.T) {
		t.Parallel()
		db, store := setup(t)
		_, began, err := db.IdempotencyBegin(ctx, params(store, "k1", "f", "tok1", t0))
		require.NoError(t, err)
		require.True(t, began)
		require.NoError(t, db.IdempotencyProgress(ctx, storage.IdempotencyProgressParams{
			StoreID: store, Key: "k1", LockToken: "tok1", RecoveryPoint: "refund", ObjectID: "re_1"}))
		require.NoError(t, db.IdempotencyRelease(ctx, store, "k1", "tok1"))

		// Another request still may not use the key; the same one resumes
		// at once, without waiting for the lock to lapse.
		rec, began, err := db.IdempotencyBegin(ctx, params(store, "k1", "g", "tok2", t0))
		require.NoError(t, err)
		require.False(t, began)
		require.Equal(t, fingerprint("f"), rec.Fingerprint)
		rec, began, err = db.IdempotencyBegin(ctx, params(store, "k1", "f", "tok3", t0))
		require.NoError(t, err)
		require.True(t, began)
		require.Equal(t, "refund", rec.RecoveryPoint)
		require.Equal(t, "re_1", rec.ObjectID)

		// Once the record expires, the key starts afresh.
		rec, began, err = db.IdempotencyBegin(ctx, params(store, "k1", "g", "tok4", t0.Add(ttl)))
		require.NoError(t, err)
		require.True(t, began)
		require.Empty(t, rec.RecoveryPoint)
		require.Empty(t, rec.ObjectID)
	})

	t.Run("CompleteInsideTheLastChangeThenAgain", func(t *testing.T) {
		t.Parallel()
		db, store := setup(t)
		_, began, err := db.IdempotencyBegin(ctx, params(store, "k1", "f", "tok1", t0))
		require.NoError(t, err)
		require.True(t, began)
		err = db.WithTx(ctx, func(ctx context.Context, tx storage.Executor) error {
			if err := tx.IdempotencyProgress(ctx, storage.IdempotencyProgressParams{
				StoreID: store, Key: "k1", LockToken: "tok1", RecoveryPoint: "created", ObjectID: "pi_1"}); err != nil {
				return err
			}
			return tx.IdempotencyComplete(ctx, complete(store, "k1", "tok1", 201, "first"))
		})
		require.NoError(t, err)
		// The request's own store of its response afterwards changes
		// nothing; another run's does not succeed.
		require.NoError(t, db.IdempotencyComplete(ctx, complete(store, "k1", "tok1", 201, "first")))
		require.ErrorIs(t, db.IdempotencyComplete(ctx, complete(store, "k1", "tok2", 201, "x")), storage.ErrNotFound)
		require.ErrorIs(t, db.IdempotencyRelease(ctx, store, "k1", "tok1"), storage.ErrNotFound)
		rec, began, err := db.IdempotencyBegin(ctx, params(store, "k1", "f", "tok2", t0))
		require.NoError(t, err)
		require.False(t, began)
		require.Equal(t, 201, rec.Status)
		require.Equal(t, []byte("first"), rec.Body)
		require.Equal(t, "created", rec.RecoveryPoint)
	})
}
