package idempotency_test

import (
	"context"
	"testing"

	"github.com/keelpay/keelpay/idempotency"
)

// A nil Key is no key: its methods record nothing and touch no
// transaction (nil here), so a service called without one runs as
// before.
func TestNilKeyRecordsNothing(t *testing.T) {
	var k *idempotency.Key
	ctx := context.Background()
	if err := k.Step(ctx, nil, idempotency.Attempt, "att_1"); err != nil {
		t.Fatalf("Step: %v", err)
	}
	if err := k.Finish(ctx, nil, "pi_1", 200, []byte(`{}`)); err != nil {
		t.Fatalf("Finish: %v", err)
	}
	if _, _, answered := k.Answer([]byte(`{}`)); k.Began() || k.Busy() || answered {
		t.Fatal("a nil key reports a lock or an answer")
	}
}
