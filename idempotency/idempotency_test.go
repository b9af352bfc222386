package idempotency_test

import (
	"testing"

	"github.com/keelpay/keelpay/idempotency"
	"github.com/keelpay/keelpay/storage"
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
	if k.Began() || k.Busy() || k.Answered(200, []byte("{}\n")) {
		t.Fatal("a nil key reports a lock or an answer")
	}
}
