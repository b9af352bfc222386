package postgres_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/keelpay/keelpay/keyring/keyringtest"
	"github.com/keelpay/keelpay/storage"
	"github.com/keelpay/keelpay/storage/postgres"
	"github.com/keelpay/keelpay/storage/postgres/postgrestest"
)

// TestTracerSpansStatementsWithoutValues: with a TracerProvider each
// statement and batch is a span under the caller's, with its SQL and
// never the values bound to it.
func TestTracerSpansStatementsWithoutValues(t *testing.T) {
	t.Parallel()
	dsn := postgrestest.DSN(t)
	schema := postgrestest.NewSchema(t)
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	db, err := postgres.Open(context.Background(), postgres.Config{DSN: dsn, Keyring: keyringtest.Keyring(), MaxConns: 2, Schema: schema, TracerProvider: tp})
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })

	ctx, parent := tp.Tracer("test").Start(context.Background(), "caller")
	const storeID, key = "st_tracedvalue0001", "idem-key-traced-value-0002"
	_, err = db.StoreGetByID(ctx, storeID)
	require.True(t, errors.Is(err, storage.ErrNotFound), "%v", err)
	now := time.Now()
	_, _, _ = db.IdempotencyBegin(ctx, storage.IdempotencyBeginParams{
		StoreID: storeID, Key: key, Fingerprint: []byte("fp-traced-value-0003"), LockToken: "lock-traced-value-0004",
		LockedUntil: now.Add(time.Minute), Now: now, ExpiresAt: now.Add(time.Hour),
	})
	parent.End()

	var selects, batches int
	for _, s := range exp.GetSpans() {
		if s.Name == "caller" || !strings.HasPrefix(s.Name, "postgres ") {
			continue
		}
		for _, kv := range s.Attributes {
			require.NotContains(t, kv.Value.String(), "traced", "span %q: %s holds a bound value", s.Name, kv.Key)
		}
		for _, e := range s.Events {
			for _, kv := range e.Attributes {
				require.NotContains(t, kv.Value.String(), "traced", "span %q: event %s: %s holds a bound value", s.Name, e.Name, kv.Key)
			}
		}
		if s.Parent.SpanID() != parent.SpanContext().SpanID() {
			continue
		}
		switch s.Name {
		case "postgres SELECT":
			selects++
			var text string
			for _, kv := range s.Attributes {
				if kv.Key == "db.query.text" {
					text = kv.Value.AsString()
				}
			}
			require.Contains(t, text, "$1")
		case "postgres batch":
			batches++
			require.NotEmpty(t, s.Events, "a batch's statements are its events")
		}
	}
	require.Positive(t, selects, "no postgres SELECT span under the caller's")
	require.Positive(t, batches, "no postgres batch span under the caller's")
}
