package traced

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/keelpay/keelpay/internal/tracing"
	"github.com/keelpay/keelpay/storage"
)

// Storage returns db with a span for each transaction ("storage.WithTx",
// "storage.Commit")
// and each query method ("storage.PaymentIntentGet"), the queries of a
// transaction under its span. With a nil tracer it returns db itself.
// storage.StoreWatcher, when db implements it, stays visible.
func Storage(db storage.Storage, tracer trace.Tracer) storage.Storage {
	if tracer == nil {
		return db
	}
	tracer = quietable{tracer}
	s := tracedStorage{executor: executor{Executor: db, tracer: tracer}, db: db}
	if w, ok := db.(storage.StoreWatcher); ok {
		return watchingStorage{s, w}
	}
	return s
}

type executor struct {
	storage.Executor
	tracer trace.Tracer
}

type tracedStorage struct {
	executor
	db storage.Storage
}

func (s tracedStorage) WithTx(ctx context.Context, fn func(ctx context.Context, tx storage.Executor) error) error {
	ctx, span := s.tracer.Start(ctx, "storage.WithTx")
	runs := 0
	err := s.db.WithTx(ctx, func(ctx context.Context, tx storage.Executor) error {
		runs++
		return fn(ctx, executor{Executor: tx, tracer: s.tracer})
	})
	if runs > 1 && span.IsRecording() {
		// The adapter ran fn again after a serialisation failure.
		span.SetAttributes(attribute.Int("keelpay.storage.runs", runs))
	}
	endStorage(span, err)
	return err
}

// Commit makes a span for the batch ("storage.Commit") with its number of
// writes; the writes themselves are one round trip, without spans of
// their own.
func (s tracedStorage) Commit(ctx context.Context, b *storage.Batch) error {
	ctx, span := s.tracer.Start(ctx, "storage.Commit")
	if span.IsRecording() {
		span.SetAttributes(attribute.Int("keelpay.storage.writes", b.Len()))
	}
	err := s.db.Commit(ctx, b)
	if we := (*storage.WriteError)(nil); errors.As(err, &we) && span.IsRecording() {
		span.SetAttributes(attribute.String("keelpay.storage.failed_write", we.Op))
	}
	endStorage(span, err)
	return err
}

func (s tracedStorage) Close() error { return s.db.Close() }

// Ping is not traced: readiness probes would make a trace each.
func (s tracedStorage) Ping(ctx context.Context) error { return s.db.Ping(ctx) }

type watchingStorage struct {
	tracedStorage
	w storage.StoreWatcher
}

func (s watchingStorage) StoreEpoch() (uint64, bool) { return s.w.StoreEpoch() }

// endStorage ends a storage span. A row not found is an answer, not a
// failure; other errors mark the span failed with their kind only.
func endStorage(span trace.Span, err error) {
	if err != nil && span.IsRecording() {
		switch {
		case errors.Is(err, storage.ErrNotFound):
			span.SetAttributes(attribute.String(tracing.AttrOutcome, "not_found"))
		case errors.Is(err, storage.ErrIdempotencyKeyBusy):
			// Not a failure: the request is answered as a retry.
			span.SetAttributes(attribute.String(tracing.AttrOutcome, "key_busy"))
		case errors.Is(err, storage.ErrDuplicate):
			span.SetStatus(codes.Error, "duplicate")
		case errors.Is(err, storage.ErrConflict):
			span.SetStatus(codes.Error, "conflict")
		case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
			span.SetStatus(codes.Error, "context ended")
		default:
			span.SetStatus(codes.Error, "storage error")
		}
	}
	span.End()
}

// quietable is a tracer that starts no span for a context marked with
// tracing.Quiet.
type quietable struct{ trace.Tracer }

func (q quietable) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	if tracing.IsQuiet(ctx) {
		return ctx, tracing.NonRecording
	}
	return q.Tracer.Start(ctx, name, opts...)
}
