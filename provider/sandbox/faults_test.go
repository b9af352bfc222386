package sandbox

import (
	"testing"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/storage"
)

// The choice of a fault depends only on the seed, the event and the
// attempt: the same seed picks the same deliveries, whatever order
// concurrent attempts run in; another seed picks others; a share picks
// about that share.
func TestFaultRollIsSeededAndProportional(t *testing.T) {
	t.Parallel()
	a, b, c := Faults{Seed: 1}, Faults{Seed: 1}, Faults{Seed: 2}
	hits, same, differ := 0, 0, 0
	const n = 4000
	for range n {
		job := &storage.DeliveryJob{EventID: keelpay.NewID(keelpay.PrefixEvent)}
		x := a.roll("fail", job, 0.25)
		if x == b.roll("fail", job, 0.25) {
			same++
		}
		if x != c.roll("fail", job, 0.25) {
			differ++
		}
		if x {
			hits++
		}
		if a.roll("fail", job, 0) || !a.roll("fail", job, 1) {
			t.Fatal("share 0 never hits, share 1 always does")
		}
	}
	if same != n {
		t.Errorf("the same seed chose differently for %d events", n-same)
	}
	if differ == 0 {
		t.Error("another seed chose exactly the same events")
	}
	if hits < n/5 || hits > n*3/10 {
		t.Errorf("share 0.25 hit %d of %d", hits, n)
	}
}
