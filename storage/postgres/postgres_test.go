package postgres_test

import (
	"context"
	"io/fs"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/keyring/keyringtest"
	"github.com/keelpay/keelpay/storage"
	"github.com/keelpay/keelpay/storage/postgres"
	"github.com/keelpay/keelpay/storage/postgres/postgrestest"
	"github.com/keelpay/keelpay/storage/storagetest"
)

var t0 = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

func TestConformance(t *testing.T) {
	t.Parallel()
	postgrestest.DSN(t)
	storagetest.Run(t, func(t *testing.T) storage.Storage { return postgrestest.NewDB(t) })
}

func TestOpenConcurrentlyMigratesOnce(t *testing.T) {
	t.Parallel()
	schema := postgrestest.NewSchema(t)
	ctx := context.Background()
	// Processes starting together against an empty schema.
	dbs := make([]*postgres.DB, 4)
	var wg sync.WaitGroup
	for i := range dbs {
		wg.Go(func() { dbs[i] = postgrestest.Open(t, schema) })
	}
	wg.Wait()
	s := storagetest.NewStoreRecord(t0)
	require.NoError(t, dbs[0].StoreInsert(ctx, s))
	for _, db := range dbs {
		got, err := db.StoreGetByID(ctx, s.ID)
		require.NoError(t, err)
		require.Equal(t, s.ClientID, got.ClientID)
	}
	// Reopening keeps the data and applies nothing twice.
	again := postgrestest.Open(t, schema)
	_, err := again.StoreGetByID(ctx, s.ID)
	require.NoError(t, err)
	files, err := fs.Glob(postgres.Migrations, "migration/*.sql")
	require.NoError(t, err)
	var applied int
	require.NoError(t, postgres.Pool(again).QueryRow(ctx, `SELECT count(*) FROM keelpay_migrations`).Scan(&applied))
	require.Equal(t, len(files), applied)
}

func TestOpenErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, err := postgres.Open(ctx, postgres.Config{})
	require.ErrorContains(t, err, "DSN is required")
	_, err = postgres.Open(ctx, postgres.Config{DSN: "postgres://nobody@127.0.0.1:1/x?connect_timeout=1"})
	require.ErrorContains(t, err, "Keyring is required")
	_, err = postgres.Open(ctx, postgres.Config{DSN: "postgres://nobody@127.0.0.1:1/x?connect_timeout=1", Keyring: keyringtest.Keyring()})
	require.Error(t, err)
	_, err = postgres.Open(ctx, postgres.Config{DSN: postgrestest.DSN(t), Keyring: keyringtest.Keyring(), Schema: "kp_does_not_exist"})
	require.ErrorContains(t, err, `the schema "kp_does_not_exist" of the search_path`)
	require.ErrorContains(t, err, `CREATE SCHEMA "kp_does_not_exist"`)
}

func TestTimesAreUTCMicroseconds(t *testing.T) {
	t.Parallel()
	db := postgrestest.NewDB(t)
	ctx := context.Background()
	s := storagetest.NewStoreRecord(time.Date(2026, 11, 21, 12, 0, 0, 123456789, time.FixedZone("CET", 3600)))
	s.UpdatedAt = time.Time{}
	require.NoError(t, db.StoreInsert(ctx, s))
	got, err := db.StoreGetByID(ctx, s.ID)
	require.NoError(t, err)
	require.Equal(t, time.Date(2026, 11, 21, 11, 0, 0, 123456000, time.UTC), got.CreatedAt)
	require.Equal(t, time.Time{}, got.UpdatedAt, "the zero time stays zero")
}

// TestWithTxRunsAgainAfterDeadlock makes two transactions lock two stores
// in opposite orders: PostgreSQL aborts one, which runs again and commits.
func TestWithTxRunsAgainAfterDeadlock(t *testing.T) {
	t.Parallel()
	db := postgrestest.NewDB(t)
	ctx := context.Background()
	a, b := storagetest.NewStoreRecord(t0), storagetest.NewStoreRecord(t0)
	require.NoError(t, db.StoreInsert(ctx, a))
	require.NoError(t, db.StoreInsert(ctx, b))

	var runs atomic.Int32
	var firstLocks sync.WaitGroup
	firstLocks.Add(2)
	touch := func(ctx context.Context, tx storage.Executor, s *keelpay.Store) error {
		cur, err := tx.StoreGetByID(ctx, s.ID)
		if err != nil {
			return err
		}
		cur.WebhookURL += "x"
		return tx.StoreUpdate(ctx, cur, cur.Version)
	}
	// The run PostgreSQL aborts runs again only once the other has
	// committed: before that, it could read a row the other had changed
	// but not yet committed, and its version-checked update would then
	// rightly fail.
	winnerDone := make(chan struct{})
	var once sync.Once
	swap := func(first, second *keelpay.Store) error {
		defer once.Do(func() { close(winnerDone) })
		return db.WithTx(ctx, func(ctx context.Context, tx storage.Executor) error {
			n := runs.Add(1)
			if n > 2 {
				<-winnerDone
			}
			if err := touch(ctx, tx, first); err != nil {
				return err
			}
			if n <= 2 { // the first run of each: wait until both hold a lock
				firstLocks.Done()
				firstLocks.Wait()
			}
			return touch(ctx, tx, second)
		})
	}
	var errA, errB error
	var wg sync.WaitGroup
	wg.Go(func() { errA = swap(a, b) })
	wg.Go(func() { errB = swap(b, a) })
	wg.Wait()
	require.NoError(t, errA)
	require.NoError(t, errB)
	require.EqualValues(t, 3, runs.Load(), "one of the two ran again")
	for _, s := range []*keelpay.Store{a, b} {
		got, err := db.StoreGetByID(ctx, s.ID)
		require.NoError(t, err)
		require.Equal(t, s.WebhookURL+"xx", got.WebhookURL)
	}
}

func TestWithTxReturnsVersionConflictsAsIs(t *testing.T) {
	t.Parallel()
	db := postgrestest.NewDB(t)
	ctx := context.Background()
	s := storagetest.NewStoreRecord(t0)
	require.NoError(t, db.StoreInsert(ctx, s))
	runs := 0
	err := db.WithTx(ctx, func(ctx context.Context, tx storage.Executor) error {
		runs++
		stale := *s
		return tx.StoreUpdate(ctx, &stale, 7)
	})
	require.ErrorIs(t, err, storage.ErrConflict)
	require.Equal(t, 1, runs, "a version conflict is the caller's to handle")
}

// TestProcessesShareLimits runs claims and rate limits from several pools
// (processes) on one schema at once.
func TestProcessesShareLimits(t *testing.T) {
	t.Parallel()
	schema := postgrestest.NewSchema(t)
	ctx := context.Background()
	procs := []*postgres.DB{postgrestest.Open(t, schema), postgrestest.Open(t, schema), postgrestest.Open(t, schema)}
	s := storagetest.NewStoreRecord(t0)
	require.NoError(t, procs[0].StoreInsert(ctx, s))
	for range 30 {
		require.NoError(t, procs[0].EventInsert(ctx, storagetest.NewEventRecord(s.ID, keelpay.EventWebhookTest, t0)))
	}

	var mu sync.Mutex
	claimed := map[string]int{}
	allowed := 0
	var wg sync.WaitGroup
	for i := range 24 {
		db := procs[i%len(procs)]
		wg.Go(func() {
			p := storage.DeliveryClaimParams{Now: t0, LeaseUntil: t0.Add(time.Minute), Limit: 2, PerStore: 5,
				LeaseToken: keelpay.NewID("lease_")}
			jobs, err := db.DeliveryClaimDue(ctx, p)
			if err != nil {
				t.Error(err)
				return
			}
			wait, err := db.RateLimitTake(ctx, t0, storage.RateLimit{Key: "shared", Limit: 7, Window: time.Minute})
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			for _, j := range jobs {
				claimed[j.EventID]++
			}
			if wait == 0 {
				allowed++
			}
		})
	}
	wg.Wait()
	// Claims that overlap do not see each other's leases, so each may
	// fill the store to its cap; none claims what another did.
	require.GreaterOrEqual(t, len(claimed), 5)
	for id, n := range claimed {
		require.Equal(t, 1, n, "%s claimed twice", id)
	}
	require.Equal(t, 7, allowed, "the rate limit holds across processes")

	// Claims one after another see the leases of the ones before, in
	// whichever process: the per-store cap holds.
	schema = postgrestest.NewSchema(t)
	procs = []*postgres.DB{postgrestest.Open(t, schema), postgrestest.Open(t, schema), postgrestest.Open(t, schema)}
	require.NoError(t, procs[0].StoreInsert(ctx, s))
	for range 30 {
		require.NoError(t, procs[0].EventInsert(ctx, storagetest.NewEventRecord(s.ID, keelpay.EventWebhookTest, t0)))
	}
	total := 0
	for i := range 12 {
		p := storage.DeliveryClaimParams{Now: t0, LeaseUntil: t0.Add(time.Minute), Limit: 2, PerStore: 5,
			LeaseToken: keelpay.NewID("lease_")}
		jobs, err := procs[i%len(procs)].DeliveryClaimDue(ctx, p)
		require.NoError(t, err)
		total += len(jobs)
	}
	require.Equal(t, 5, total, "the per-store cap holds across processes")
}

// A store change committed by one process moves the store epoch of every
// other process on the database when its announcement arrives; a process
// whose listening connection is cut moves its epoch and listens again.
func TestStoreEpochHearsOtherProcesses(t *testing.T) {
	t.Parallel()
	schema := postgrestest.NewSchema(t)
	ctx := context.Background()
	a, b := postgrestest.Open(t, schema), postgrestest.Open(t, schema)
	listening := func(db *postgres.DB) uint64 {
		t.Helper()
		var e uint64
		require.Eventually(t, func() bool {
			var ok bool
			e, ok = db.StoreEpoch()
			return ok
		}, 15*time.Second, time.Millisecond, "never listened")
		return e
	}
	listening(a)
	before := listening(b)
	s := storagetest.NewStoreRecord(t0)
	require.NoError(t, a.StoreInsert(ctx, s))
	require.Eventually(t, func() bool { e, _ := b.StoreEpoch(); return e != before }, 10*time.Second, time.Millisecond,
		"b never heard of a's change")

	before = listening(b)
	conn, err := pgx.Connect(ctx, postgrestest.DSN(t))
	require.NoError(t, err)
	defer conn.Close(ctx)
	var cut int
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE application_name = $1`, "keelpay stores "+schema).Scan(&cut))
	require.Equal(t, 2, cut, "one listening connection for each process")
	require.Eventually(t, func() bool { e, ok := b.StoreEpoch(); return ok && e != before }, 15*time.Second, time.Millisecond,
		"b never listened again")
}

// Transactions that change status counts at once never wait for each
// other's count rows: each connection counts in a slot of its own. With
// slots picked at random, eight open transactions that each create an
// intent and move it on took rows another held until its commit (and two
// that took rows in opposite orders deadlocked), so they could not all
// reach the point before their commit. After the connections end, their
// counts are folded and the totals stay the same.
func TestCountsDoNotMakeTransactionsWait(t *testing.T) {
	t.Parallel()
	const n = 8
	schema := postgrestest.NewSchema(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	open := func() *postgres.DB {
		db, err := postgres.Open(ctx, postgres.Config{DSN: postgrestest.DSN(t), Keyring: keyringtest.Keyring(), MaxConns: n, Schema: schema})
		require.NoError(t, err)
		return db
	}
	db := open()
	s := storagetest.NewStoreRecord(t0)
	require.NoError(t, db.StoreInsert(ctx, s))

	var ready sync.WaitGroup
	ready.Add(n)
	all := make(chan struct{})
	go func() { ready.Wait(); close(all) }()
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			errs[i] = db.WithTx(ctx, func(ctx context.Context, q storage.Executor) error {
				pi := storagetest.NewIntentRecord(s.ID, t0)
				if err := q.PaymentIntentInsert(ctx, pi); err != nil {
					return err
				}
				pi.Status = keelpay.IntentProcessing
				if err := q.PaymentIntentUpdate(ctx, pi, pi.Version); err != nil {
					return err
				}
				ready.Done()
				select {
				case <-all: // every transaction holds its count rows now
					return nil
				case <-ctx.Done():
					return ctx.Err()
				}
			})
		})
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "transaction %d waited for another's count rows", i)
	}
	want := map[keelpay.PaymentIntentStatus]int{keelpay.IntentProcessing: n}
	c, err := db.PaymentIntentCounts(ctx)
	require.NoError(t, err)
	require.Equal(t, want, c.ByStatus)

	// Closing the pool folds each connection's slot into slot 0.
	db.Close()
	conn, err := pgx.Connect(ctx, postgrestest.DSN(t))
	require.NoError(t, err)
	defer conn.Close(ctx)
	counts := pgx.Identifier{schema, "status_counts"}.Sanitize()
	rows, err := conn.Query(ctx, `SELECT DISTINCT slot FROM `+counts)
	require.NoError(t, err)
	slots, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	require.NoError(t, err)
	require.Equal(t, []int32{0}, slots, "the closed pool's slots were folded")

	// A slot whose connection ended without folding (a killed process) is
	// folded by the next Open.
	_, err = conn.Exec(ctx, `INSERT INTO `+counts+` (kind, status, slot, n) VALUES ('payment_intent', 'processing', 2147483646, 5)`)
	require.NoError(t, err)
	db = open()
	defer db.Close()
	c, err = db.PaymentIntentCounts(ctx)
	require.NoError(t, err)
	require.Equal(t, map[keelpay.PaymentIntentStatus]int{keelpay.IntentProcessing: n + 5}, c.ByStatus)
	var left int
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM `+counts+` WHERE slot = 2147483646`).Scan(&left))
	require.Zero(t, left)
}

// A process that pauses in the middle of a claim's transaction (stopped,
// or its connection no longer forwarding) holds the deliveries it claimed
// and nothing else: another process's claim gets every other due delivery
// at once, without waiting for the paused one.
func TestPausedClaimHoldsOnlyItsDeliveries(t *testing.T) {
	t.Parallel()
	schema := postgrestest.NewSchema(t)
	paused, live := postgrestest.Open(t, schema), postgrestest.Open(t, schema)
	ctx := context.Background()
	a, b := storagetest.NewStoreRecord(t0), storagetest.NewStoreRecord(t0)
	require.NoError(t, live.StoreInsert(ctx, a))
	require.NoError(t, live.StoreInsert(ctx, b))
	var ids []string
	for i, s := range []*keelpay.Store{a, a, a, b, b} {
		e := storagetest.NewEventRecord(s.ID, keelpay.EventWebhookTest, t0.Add(time.Duration(i)*time.Millisecond))
		require.NoError(t, live.EventInsert(ctx, e))
		ids = append(ids, e.ID)
	}
	params := func(limit int) storage.DeliveryClaimParams {
		now := t0.Add(time.Second)
		return storage.DeliveryClaimParams{Now: now, LeaseUntil: now.Add(time.Minute), Limit: limit, PerStore: 10,
			LeaseToken: keelpay.NewID("lease_")}
	}

	claimed := make(chan []*storage.DeliveryJob, 1)
	resume := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- paused.WithTx(ctx, func(ctx context.Context, tx storage.Executor) error {
			jobs, err := tx.DeliveryClaimDue(ctx, params(1))
			claimed <- jobs
			if err != nil {
				return err
			}
			<-resume // the process is stopped here, its transaction open
			return nil
		})
	}()
	held := <-claimed
	require.Len(t, held, 1)
	require.Equal(t, ids[0], held[0].EventID)

	// Bounded: on a claim that waits for the paused one this fails at the
	// deadline instead of hanging the test.
	bounded, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	jobs, err := live.DeliveryClaimDue(bounded, params(10))
	close(resume)
	require.NoError(t, err, "the claim waited for the paused process")
	var got []string
	for _, j := range jobs {
		got = append(got, j.EventID)
	}
	require.ElementsMatch(t, ids[1:], got, "every delivery but the paused process's")
	require.NoError(t, <-done)
}

// A process whose lease lapsed records its attempt while a paused process
// holds the delivery it claimed since: the record passes over that
// delivery (the lease is no longer the recorder's) instead of waiting for
// the paused process, and records the rest.
func TestRecordPassesOverADeliveryAPausedClaimHolds(t *testing.T) {
	t.Parallel()
	schema := postgrestest.NewSchema(t)
	paused, late := postgrestest.Open(t, schema), postgrestest.Open(t, schema)
	ctx := context.Background()
	s := storagetest.NewStoreRecord(t0)
	require.NoError(t, late.StoreInsert(ctx, s))
	x, y := storagetest.NewEventRecord(s.ID, keelpay.EventWebhookTest, t0), storagetest.NewEventRecord(s.ID, keelpay.EventWebhookTest, t0)
	require.NoError(t, late.EventInsert(ctx, x))
	require.NoError(t, late.EventInsert(ctx, y))
	p := storage.DeliveryClaimParams{Now: t0, LeaseUntil: t0.Add(time.Minute), Limit: 10, PerStore: 10, LeaseToken: keelpay.NewID("lease_")}
	jobs, err := late.DeliveryClaimDue(ctx, p)
	require.NoError(t, err)
	require.Len(t, jobs, 2)

	// x's lease lapses and the paused process claims x again, then stops
	// with its transaction open.
	claimed := make(chan error, 1)
	resume := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- paused.WithTx(ctx, func(ctx context.Context, tx storage.Executor) error {
			at := t0.Add(2 * time.Minute)
			_, err := tx.DeliveryClaimEvent(ctx, x.ID, storage.DeliveryClaimParams{Now: at, LeaseUntil: at.Add(time.Minute), LeaseToken: keelpay.NewID("lease_")})
			claimed <- err
			<-resume
			return err
		})
	}()
	require.NoError(t, <-claimed)

	ok := keelpay.Delivery{Status: keelpay.DeliverySucceeded, Attempts: 1, LastAttemptAt: t0, LastStatusCode: 204}
	bounded, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	err = late.DeliveryRecord(bounded, []storage.DeliveryResult{
		{EventID: x.ID, LeaseToken: p.LeaseToken, Delivery: ok},
		{EventID: y.ID, LeaseToken: p.LeaseToken, Delivery: ok, Attempt: &keelpay.DeliveryAttempt{
			ID: keelpay.NewID(keelpay.PrefixAttempt), EventID: y.ID, StoreID: s.ID, StartedAt: t0, StatusCode: 204}},
	})
	close(resume)
	require.NoError(t, err, "the record waited for the paused process")
	require.NoError(t, <-done)
	got, err := late.EventGet(ctx, s.ID, y.ID)
	require.NoError(t, err)
	require.Equal(t, ok, got.Delivery)
	got, err = late.EventGet(ctx, s.ID, x.ID)
	require.NoError(t, err)
	require.Equal(t, keelpay.DeliveryPending, got.Delivery.Status, "x is the paused process's now")
}

// TestRoundTripsAreCounted checks Stats().RoundTrips, the figure the
// benchmarks divide by payments: a read is one; a transaction's BEGIN
// travels with its first statement, so two statements and the COMMIT are
// three; a transaction that fails rolls back in one more; a Batch
// (Commit) is one.
func TestRoundTripsAreCounted(t *testing.T) {
	t.Parallel()
	db := postgrestest.NewDB(t)
	ctx := context.Background()
	s := storagetest.NewStoreRecord(t0)
	require.NoError(t, db.StoreInsert(ctx, s))
	trips := func(fn func()) int64 {
		before := db.Stats().RoundTrips
		fn()
		return db.Stats().RoundTrips - before
	}
	require.Equal(t, int64(1), trips(func() {
		_, err := db.StoreGetByID(ctx, s.ID)
		require.NoError(t, err)
	}))
	// A read (with BEGIN), a write, and the COMMIT: each call is sent
	// when it is made.
	require.Equal(t, int64(3), trips(func() {
		require.NoError(t, db.WithTx(ctx, func(ctx context.Context, tx storage.Executor) error {
			got, err := tx.StoreGetByID(ctx, s.ID)
			if err != nil {
				return err
			}
			got.WebhookURL += "/v2"
			return tx.StoreUpdate(ctx, got, got.Version)
		}))
	}))
	got, err := db.StoreGetByID(ctx, s.ID)
	require.NoError(t, err)
	require.Equal(t, s.WebhookURL+"/v2", got.WebhookURL, "the write committed")

	// A batch: one pipeline, committed at its end.
	pi := storagetest.NewIntentRecord(s.ID, t0)
	require.Equal(t, int64(1), trips(func() {
		var b storage.Batch
		b.PaymentIntentInsert(pi)
		next := *pi
		next.Description = "changed"
		b.PaymentIntentUpdate(&next, pi.Version)
		require.NoError(t, db.Commit(ctx, &b))
	}))
	stored, err := db.PaymentIntentGet(ctx, s.ID, pi.ID)
	require.NoError(t, err)
	require.Equal(t, "changed", stored.Description)
	require.Equal(t, pi.Version+1, stored.Version)

	// A write of a batch whose check fails aborts the pipeline: the
	// writes before it roll back, and its error names it.
	other := storagetest.NewIntentRecord(s.ID, t0)
	require.Equal(t, int64(1), trips(func() {
		var b storage.Batch
		b.PaymentIntentInsert(other)
		stale := *stored
		b.PaymentIntentUpdate(&stale, 1)
		err := db.Commit(ctx, &b)
		require.ErrorIs(t, err, storage.ErrConflict)
		var we *storage.WriteError
		require.ErrorAs(t, err, &we)
		require.Equal(t, 1, we.Index)
	}))
	_, err = db.PaymentIntentGet(ctx, s.ID, other.ID)
	require.ErrorIs(t, err, storage.ErrNotFound, "the insert before the failed check rolled back")
	// Inside WithTx a failed write returns its own error, and the
	// transaction rolls back in one more round trip.
	require.Equal(t, int64(4), trips(func() {
		err := db.WithTx(ctx, func(ctx context.Context, tx storage.Executor) error {
			if _, err := tx.StoreGetByID(ctx, s.ID); err != nil {
				return err
			}
			if err := tx.PaymentIntentInsert(ctx, other); err != nil {
				return err
			}
			missing := *stored
			missing.ID = "pi_missing"
			err := tx.PaymentIntentUpdate(ctx, &missing, stored.Version)
			require.ErrorIs(t, err, storage.ErrNotFound, "the update's own error")
			return err
		})
		require.ErrorIs(t, err, storage.ErrNotFound)
	}))
	_, err = db.PaymentIntentGet(ctx, s.ID, other.ID)
	require.ErrorIs(t, err, storage.ErrNotFound, "the insert before the failed write rolled back")
	require.Zero(t, trips(func() {
		require.NoError(t, db.Commit(ctx, &storage.Batch{}))
	}), "an empty batch sends nothing")
	require.Zero(t, trips(func() {
		require.NoError(t, db.WithTx(ctx, func(context.Context, storage.Executor) error { return nil }))
	}), "a transaction that made no statement sends nothing")
}
