package idempotency_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/keelpay/keelpay/idempotency"
	"github.com/keelpay/keelpay/keyring/keyringtest"
	"github.com/keelpay/keelpay/storage"
	"github.com/keelpay/keelpay/storage/sqlite"
	"github.com/keelpay/keelpay/storage/storagetest"
)

// A nil Key is no key: its methods record nothing in the batch, so a
// service called without one commits only its own change.
func TestNilKeyRecordsNothing(t *testing.T) {
	var k *idempotency.Key
	var b storage.Batch
	k.Step(&b, idempotency.Attempt, "att_1")
	k.Finish(&b, "pi_1", 200, []byte(`{}`))
	if b.Len() != 0 {
		t.Fatalf("a nil key recorded %d writes", b.Len())
	}
	if _, _, answered := k.Answer([]byte(`{}`)); k.Began() || k.Busy() || answered {
		t.Fatal("a nil key reports a lock or an answer")
	}
}

// A Key with Begin reports what committed: Began only once the batch
// that took the key committed, Busy when a batch's take found the key
// held by another run, and Answered only once Finish's batch committed.
func TestKeyReportsWhatCommitted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, sqlite.Config{Keyring: keyringtest.Keyring(), Path: filepath.Join(t.TempDir(), "keelpay.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	now := time.Now().UTC().Truncate(time.Microsecond)
	st := storagetest.NewStoreRecord(now)
	if err := db.StoreInsert(ctx, st); err != nil {
		t.Fatal(err)
	}
	key := func(token string) *idempotency.Key {
		begin := storage.IdempotencyBeginParams{StoreID: st.ID, Key: "k1", Fingerprint: []byte("fp"), LockToken: token,
			LockedUntil: now.Add(time.Minute), Now: now, ExpiresAt: now.Add(time.Hour)}
		return &idempotency.Key{StoreID: st.ID, Key: "k1", LockToken: token, Begin: &begin,
			Render: func(o idempotency.Outcome, v any) (int, []byte, error) {
				return 200 + int(o), []byte(`{"id":"` + v.(string) + `"}`), nil
			}}
	}

	first := key("lock_1")
	var b storage.Batch
	first.Step(&b, idempotency.Created, "obj_1")
	if first.Began() {
		t.Fatal("Began before the batch committed")
	}
	if err := db.Commit(ctx, &b); err != nil {
		t.Fatal(err)
	}
	if !first.Began() || first.Busy() {
		t.Fatalf("after the commit: began %v, busy %v", first.Began(), first.Busy())
	}

	second := key("lock_2")
	var b2 storage.Batch
	if err := second.Finish(&b2, "obj_2", idempotency.OutcomeCreated, "obj_2"); err != nil {
		t.Fatal(err)
	}
	err = db.Commit(ctx, &b2)
	if !errors.Is(err, idempotency.ErrKeyBusy) {
		t.Fatalf("the second take: %v, want ErrKeyBusy", err)
	}
	if _, _, ok := second.Answer("obj_2"); !second.Busy() || second.Began() || ok {
		t.Fatalf("a busy take: busy %v, began %v", second.Busy(), second.Began())
	}

	var b3 storage.Batch
	if err := first.Finish(&b3, "obj_1", idempotency.OutcomeCreated, "obj_1"); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := first.Answer("obj_1"); ok {
		t.Fatal("an answer before the batch committed")
	}
	if err := db.Commit(ctx, &b3); err != nil {
		t.Fatal(err)
	}
	if status, body, ok := first.Answer("obj_1"); !ok || status != 201 || string(body) != "{\"id\":\"obj_1\"}\n" {
		t.Fatalf("the committed answer: %d %q %v", status, body, ok)
	}
}
