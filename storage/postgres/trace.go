package postgres

import (
	"context"
	"errors"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/storage"
)

// pgxTracer makes a client span of each statement ("postgres SELECT"),
// each batch ("postgres batch") and each new connection ("postgres
// connect"), on pgx's tracer hooks. A statement's span carries its SQL:
// keelpay's statements are constant text whose values are all bound
// parameters, and parameters are never recorded. A connection's span
// carries nothing of its configuration (the password is in it).
type pgxTracer struct {
	tracer trace.Tracer
}

var (
	_ pgx.QueryTracer   = pgxTracer{}
	_ pgx.BatchTracer   = pgxTracer{}
	_ pgx.ConnectTracer = pgxTracer{}
)

// newPgxTracer returns the tracer of tp for a pool, or nil (no hooks at
// all) without a TracerProvider or with the no-op one. Its instrumentation
// scope is this package.
func newPgxTracer(tp trace.TracerProvider) pgx.QueryTracer {
	if _, isNoop := tp.(noop.TracerProvider); tp == nil || isNoop {
		return nil
	}
	return pgxTracer{tracer: tp.Tracer("github.com/keelpay/keelpay/storage/postgres",
		trace.WithInstrumentationVersion(keelpay.Version))}
}

var dbSystem = attribute.String("db.system.name", "postgresql")

// nonRecording is a span that records nothing: the span of a statement
// made with a quiet context (storage.Quiet).
var nonRecording = trace.SpanFromContext(context.Background())

func (t pgxTracer) start(ctx context.Context, name string) (context.Context, trace.Span) {
	if storage.IsQuiet(ctx) {
		// Work that makes no spans (an idle dispatcher's poll). The
		// context gets a span that records nothing, so that the end hooks
		// end that one and never the caller's.
		return trace.ContextWithSpan(ctx, nonRecording), nonRecording
	}
	return t.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(dbSystem))
}

func (t pgxTracer) TraceQueryStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	ctx, span := t.start(ctx, "postgres "+operation(data.SQL))
	if span.IsRecording() {
		span.SetAttributes(attribute.String("db.query.text", data.SQL))
	}
	return ctx
}

func (t pgxTracer) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryEndData) {
	endPgSpan(trace.SpanFromContext(ctx), data.Err)
}

func (t pgxTracer) TraceBatchStart(ctx context.Context, _ *pgx.Conn, data pgx.TraceBatchStartData) context.Context {
	ctx, span := t.start(ctx, "postgres batch")
	if span.IsRecording() && data.Batch != nil {
		span.SetAttributes(attribute.Int("db.operation.batch.size", data.Batch.Len()))
	}
	return ctx
}

func (t pgxTracer) TraceBatchQuery(ctx context.Context, _ *pgx.Conn, data pgx.TraceBatchQueryData) {
	span := trace.SpanFromContext(ctx)
	if span.IsRecording() {
		span.AddEvent("statement", trace.WithAttributes(attribute.String("db.query.text", data.SQL)))
	}
}

func (t pgxTracer) TraceBatchEnd(ctx context.Context, _ *pgx.Conn, data pgx.TraceBatchEndData) {
	endPgSpan(trace.SpanFromContext(ctx), data.Err)
}

func (t pgxTracer) TraceConnectStart(ctx context.Context, _ pgx.TraceConnectStartData) context.Context {
	ctx, _ = t.start(ctx, "postgres connect")
	return ctx
}

func (t pgxTracer) TraceConnectEnd(ctx context.Context, data pgx.TraceConnectEndData) {
	endPgSpan(trace.SpanFromContext(ctx), data.Err)
}

// endPgSpan ends a span with the SQLSTATE of its error, never the error's
// text (a constraint's message can quote a row's values).
func endPgSpan(span trace.Span, err error) {
	if err != nil && span.IsRecording() {
		desc := "error"
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) {
			desc = pgErr.Code
			span.SetAttributes(attribute.String("db.response.status_code", pgErr.Code))
		}
		span.SetStatus(codes.Error, desc)
	}
	span.End()
}

// operation is the first keyword of a statement, upper-cased, for a span
// name of few values: SELECT, INSERT, UPDATE, DELETE, WITH, BEGIN, ...
func operation(sql string) string {
	sql = strings.TrimSpace(sql)
	end := strings.IndexFunc(sql, func(r rune) bool { return r == ' ' || r == '\n' || r == '\t' || r == '(' || r == ';' })
	if end < 0 {
		end = len(sql)
	}
	op := strings.ToUpper(sql[:end])
	for _, r := range op {
		if r < 'A' || r > 'Z' {
			return "statement"
		}
	}
	if op == "" {
		return "statement"
	}
	return op
}
