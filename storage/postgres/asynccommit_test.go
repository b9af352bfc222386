package postgres_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/keyring/keyringtest"
	"github.com/keelpay/keelpay/storage"
	"github.com/keelpay/keelpay/storage/postgres"
	"github.com/keelpay/keelpay/storage/postgres/postgrestest"
	"github.com/keelpay/keelpay/storage/storagetest"
)

// TestLocalSettingLastsOnePipeline pins the database behaviour the
// delivery writes rely on: set_config(..., true) at the head of a pipeline
// without BEGIN holds for that pipeline's implicit transaction and is gone
// after its Sync, on the same connection. The documentation says a local
// setting lasts until the end of the current transaction
// (https://www.postgresql.org/docs/15/functions-admin.html#FUNCTIONS-ADMIN-SET)
// and that a pipeline outside a transaction block runs as one implicit
// transaction ended by Sync
// (https://www.postgresql.org/docs/15/protocol-flow.html#PROTOCOL-FLOW-PIPELINING);
// it does not say so of the two together, so this checks it on the server.
func TestLocalSettingLastsOnePipeline(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, postgrestest.DSN(t))
	require.NoError(t, err)
	defer conn.Close(ctx)

	var before string
	require.NoError(t, conn.QueryRow(ctx, `SELECT current_setting('synchronous_commit')`).Scan(&before))
	require.NotEqual(t, "off", before, "the test needs a server whose commits wait for the flush")

	b := &pgx.Batch{}
	b.Queue(`SELECT set_config('synchronous_commit', 'off', true)`)
	b.Queue(`SELECT current_setting('synchronous_commit')`)
	br := conn.SendBatch(ctx, b)
	_, err = br.Exec()
	require.NoError(t, err)
	var inside string
	require.NoError(t, br.QueryRow().Scan(&inside))
	require.NoError(t, br.Close())
	require.Equal(t, "off", inside, "the setting holds in its pipeline")

	var after string
	require.NoError(t, conn.QueryRow(ctx, `SELECT current_setting('synchronous_commit')`).Scan(&after))
	require.Equal(t, before, after, "the setting ended with its pipeline's transaction")
}

// TestOnlyDeliveryWritesCommitWithoutWaitingForTheFlush: a claim, and
// results recorded with the next claim, run behind SET LOCAL
// synchronous_commit = off in their own pipeline; a payment's writes and
// a claim inside WithTx (whose other writes must stay durable) do not.
func TestOnlyDeliveryWritesCommitWithoutWaitingForTheFlush(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	db, err := postgres.Open(ctx, postgres.Config{DSN: postgrestest.DSN(t), Keyring: keyringtest.Keyring(), MaxConns: 2,
		Schema: postgrestest.NewSchema(t), TracerProvider: tp})
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })

	now := time.Now().UTC().Truncate(time.Microsecond)
	s := storagetest.NewStoreRecord(now)
	require.NoError(t, db.StoreInsert(ctx, s))
	pay := func() {
		b := &storage.Batch{}
		b.PaymentIntentInsert(storagetest.NewIntentRecord(s.ID, now))
		b.EventInsert(storagetest.NewEventRecord(s.ID, keelpay.EventPaymentIntentSucceeded, now))
		require.NoError(t, db.Commit(ctx, b))
	}
	claim := func(x storage.Executor, token string, record ...storage.DeliveryResult) []*storage.DeliveryJob {
		jobs, err := x.DeliveryClaimDue(ctx, storage.DeliveryClaimParams{
			Now: now, LeaseUntil: now.Add(time.Minute), Limit: 10, PerStore: 10, LeaseToken: token, Record: record,
		})
		require.NoError(t, err)
		return jobs
	}

	pay()
	jobs := claim(db, "lease-one")
	require.Len(t, jobs, 1)
	pay()
	done := storage.DeliveryResult{EventID: jobs[0].EventID, LeaseToken: jobs[0].LeaseToken,
		Delivery: keelpay.Delivery{Status: keelpay.DeliverySucceeded, Attempts: 1, LastAttemptAt: now, LastStatusCode: 204},
		Attempt:  &keelpay.DeliveryAttempt{ID: "dla_async0001", StartedAt: now, Duration: time.Millisecond, StatusCode: 204}}
	require.Len(t, claim(db, "lease-two", done), 1, "the second payment's delivery, claimed behind the first's record")
	pay()
	require.NoError(t, db.WithTx(ctx, func(ctx context.Context, x storage.Executor) error {
		require.Len(t, claim(x, "lease-three"), 1)
		return nil
	}))

	// Each span's statements in order: a batch's are its events.
	var pipelines [][]string
	for _, sp := range exp.GetSpans() {
		var stmts []string
		for _, kv := range sp.Attributes {
			if kv.Key == "db.query.text" {
				stmts = append(stmts, kv.Value.AsString())
			}
		}
		for _, e := range sp.Events {
			for _, kv := range e.Attributes {
				if kv.Key == "db.query.text" {
					stmts = append(stmts, kv.Value.AsString())
				}
			}
		}
		if len(stmts) > 0 {
			pipelines = append(pipelines, stmts)
		}
	}
	var async, claims, payments int
	for _, p := range pipelines {
		head := strings.Contains(p[0], "set_config('synchronous_commit'")
		for i, q := range p {
			switch {
			case strings.Contains(q, "set_config('synchronous_commit'"):
				require.Zero(t, i, "SET LOCAL synchronous_commit heads its pipeline: %q", p)
				async++
				require.Greater(t, len(p), 1, "the setting goes with a claim")
				require.Contains(t, p[len(p)-1], "pending_stores", "the pipeline ends with a claim: %q", p)
			case strings.Contains(q, "pending_stores"):
				claims++
			case strings.Contains(q, "INSERT INTO payment_intents"):
				payments++
				require.False(t, head, "a payment's writes wait for the flush: %q", p)
			}
		}
	}
	require.Equal(t, 3, claims, "three claims traced")
	require.Equal(t, 3, payments, "three payments traced")
	require.Equal(t, 2, async, "the two claims outside WithTx commit without waiting; the one inside does not")
}
