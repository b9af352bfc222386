package sqlite

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/keyring/keyringtest"
	"github.com/keelpay/keelpay/storage"
	"github.com/keelpay/keelpay/storage/storagetest"
)

// A batch commits its transactions together; one that fails (an error, a
// panic, a statement that breaks a constraint) leaves nothing behind and
// takes nothing of the others with it, wherever it stands in the batch,
// and a canceled caller's transaction does not run. The batch is handed
// to commitBatch as the writer would hand it (the writer is idle: IdleTime
// is off and nothing else writes).
func TestBatchFailuresRollBackAlone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, s, at := openForBatches(t)
	taken := storagetest.NewEventRecord(s.ID, keelpay.EventWebhookTest, at)
	require.NoError(t, db.EventInsert(ctx, taken))
	canceled, cancel := context.WithCancel(ctx)
	cancel()

	errRefused := errors.New("refused")
	type outcome int
	const (
		commits outcome = iota
		fails
		panics
		duplicate // inserts its event, then one that exists
		canceledCaller
	)
	for name, plan := range map[string][]outcome{
		"all commit":           {commits, commits, commits},
		"first fails":          {fails, commits, commits},
		"middle panics":        {commits, panics, commits},
		"last breaks a unique": {commits, commits, duplicate},
		"several fail":         {fails, commits, duplicate, canceledCaller, commits, panics, commits},
		"none commits":         {fails, panics, canceledCaller},
	} {
		t.Run(name, func(t *testing.T) {
			runs := make([]int, len(plan))
			events := make([]*keelpay.Event, len(plan))
			batch := make([]*txRequest, len(plan))
			for i, o := range plan {
				events[i] = storagetest.NewEventRecord(s.ID, keelpay.EventWebhookTest, at)
				req := &txRequest{ctx: ctx, done: make(chan struct{})}
				if o == canceledCaller {
					req.ctx = canceled
				}
				req.fn = func(ctx context.Context, tx storage.Executor) error {
					runs[i]++
					if err := tx.EventInsert(ctx, events[i]); err != nil {
						return err
					}
					switch o {
					case fails:
						return errRefused
					case panics:
						panic("boom")
					case duplicate:
						return tx.EventInsert(ctx, taken)
					}
					return nil
				}
				batch[i] = req
			}
			db.commitBatch(batch)
			for i, o := range plan {
				<-batch[i].done
				_, err := db.EventGet(ctx, s.ID, events[i].ID)
				switch o {
				case commits:
					require.NoError(t, batch[i].err, "transaction %d", i)
					require.Nil(t, batch[i].pan)
					require.NoError(t, err, "transaction %d committed, its event must be there", i)
				case fails:
					require.ErrorIs(t, batch[i].err, errRefused)
					require.LessOrEqual(t, runs[i], 2, "a batch runs at most twice")
				case panics:
					require.Equal(t, "boom", batch[i].pan)
				case duplicate:
					require.ErrorIs(t, batch[i].err, storage.ErrDuplicate)
				case canceledCaller:
					require.ErrorIs(t, batch[i].err, context.Canceled)
					require.Zero(t, runs[i])
				}
				if o != commits {
					require.ErrorIs(t, err, storage.ErrNotFound, "transaction %d failed, its event must not be there", i)
				}
			}
		})
	}
}

// A transaction that fails because of the change of one before it in the
// same batch is answered with its failure only once that change committed:
// its caller, reading again, sees what made it fail.
func TestBatchFailureAfterAChangeItSawIsAnsweredOnceTheChangeCommitted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, s, at := openForBatches(t)
	cs := &keelpay.CardSession{ID: keelpay.NewID(keelpay.PrefixCardSession), StoreID: s.ID, Status: keelpay.CardSessionOpen,
		ClientSecret: "cs_secret_x", Customer: keelpay.Customer{ID: "cus_1"}, ExpiresAt: at.Add(time.Hour), CreatedAt: at}
	require.NoError(t, db.CardSessionInsert(ctx, cs))

	complete := func(cardID string) *txRequest {
		return &txRequest{ctx: ctx, done: make(chan struct{}), fn: func(ctx context.Context, tx storage.Executor) error {
			return tx.CardSessionComplete(ctx, s.ID, cs.ID, cardID, at)
		}}
	}
	first, second := complete(keelpay.NewID(keelpay.PrefixCard)), complete(keelpay.NewID(keelpay.PrefixCard))
	seen := make(chan *keelpay.CardSession, 1)
	go func() {
		<-second.done
		got, _ := db.CardSessionGet(ctx, s.ID, cs.ID)
		seen <- got
	}()
	db.commitBatch([]*txRequest{first, second})
	<-first.done
	require.NoError(t, first.err)
	require.ErrorIs(t, second.err, storage.ErrConflict)
	got := <-seen
	require.NotNil(t, got)
	require.Equal(t, keelpay.CardSessionCompleted, got.Status, "the losing capture was answered before the winner committed")
}

// openForBatches opens a database whose writer is idle (IdleTime off, nothing
// else writes), so that a test can hand batches to commitBatch as the
// writer would, with one store created at the returned time.
func openForBatches(t *testing.T) (*DB, *keelpay.Store, time.Time) {
	t.Helper()
	ctx := context.Background()
	db, err := Open(ctx, Config{Keyring: keyringtest.Keyring(), Path: filepath.Join(t.TempDir(), "keelpay.db"), IdleTime: -1})
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	at := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	s := storagetest.NewStoreRecord(at)
	require.NoError(t, db.StoreInsert(ctx, s))
	return db, s, at
}
