package events_test

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay/events"
	"github.com/keelpay/keelpay/keyring/keyringtest"
	"github.com/keelpay/keelpay/storage"
	"github.com/keelpay/keelpay/storage/sqlite"
)

// countingClaim passes a CommitClaim through, counting the jobs of its
// rides.
type countingClaim struct {
	storage.CommitClaim
	jobs atomic.Int64
}

func (c *countingClaim) Claimed(p storage.DeliveryClaimParams, jobs []*storage.DeliveryJob) {
	c.jobs.Add(int64(len(jobs)))
	c.CommitClaim.Claimed(p, jobs)
}

// With its CommitClaim installed on SQLite, the dispatcher gets events'
// deliveries claimed in the commits that insert them (rides) besides its
// own claims, and the two together keep to Concurrency: a receiver that
// holds every request has at most Concurrency of them at once; once it
// answers, every event arrives exactly once and every result is recorded.
func TestDispatcherRidesKeepConcurrencyAndDeliverOnce(t *testing.T) {
	t.Parallel()
	db, err := sqlite.Open(context.Background(), sqlite.Config{Keyring: keyringtest.Keyring(), Path: filepath.Join(t.TempDir(), "keelpay.db")})
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	rc, store := newReceiver(t, db, true)
	const concurrency = 16
	d := mustNew(events.NewDispatcher(events.DispatcherConfig{AllowInsecureWebhooks: true, Logger: quiet, Storage: db,
		AttemptTimeout: 5 * time.Minute, Lease: 10 * time.Minute, Concurrency: concurrency,
		PerStore: events.PerStoreDefault, PerStoreStart: events.PerStoreDefault}))
	cc := &countingClaim{CommitClaim: d.CommitClaim()}
	db.SetCommitClaim(cc)
	stop := runDispatcher(t, d)
	t.Cleanup(rc.open) // before stop, should the test fail

	var ids []string
	// One event a transaction, each once the one before is in flight, up
	// to every slot, then more than the slots left.
	for i := range concurrency + 4 {
		ids = append(ids, insertEvents(t, db, store, 1, time.Now().UTC())...)
		want := min(i+1, concurrency)
		rc.await("the events in flight", func() bool { return rc.inFlight == want })
	}
	ids = append(ids, insertEvents(t, db, store, 20, time.Now().UTC())...)
	rc.mu.Lock()
	require.Equal(t, concurrency, rc.most, "attempts in flight at once")
	rc.mu.Unlock()
	require.Positive(t, cc.jobs.Load(), "deliveries claimed in their event's commit")

	rc.open()
	rc.await("every event", func() bool { return len(rc.got) == len(ids) })
	stop()
	rc.mu.Lock()
	require.Zero(t, rc.invalid)
	for id, n := range rc.got {
		require.Equal(t, 1, n, "deliveries of %s", id)
	}
	require.LessOrEqual(t, rc.most, concurrency)
	rc.mu.Unlock()
	pending, failed, err := db.DeliveryCounts(context.Background())
	require.NoError(t, err)
	require.Equal(t, [2]int{0, 0}, [2]int{pending, failed}, "every result recorded")
}
