// Package tracing holds keelpay's OpenTelemetry instrumentation that is
// not part of one package: the tracer of a TracerProvider, and the
// wrappers of a storage.Storage and a provider.Provider that service.New
// installs when a TracerProvider is configured.
//
// No span carries a secret, a card's number or CVC, a customer's personal
// data, a header or a body: spans carry ids, names of operations, counts
// and outcomes. Errors set a span's status with a fixed description, never
// the error's text, which may quote what was sent.
package tracing

import (
	"context"

	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/storage"
)

// ScopeName is the instrumentation scope of every keelpay span.
const ScopeName = "github.com/keelpay/keelpay"

// Attribute keys of keelpay's spans, besides the HTTP ones of OpenTelemetry's
// semantic conventions.
const (
	AttrAttemptID = "keelpay.attempt_id" // the provider call's idempotency key
	AttrEventID   = "keelpay.event_id"
	AttrEventType = "keelpay.event_type"
	AttrOutcome   = "keelpay.outcome"
	AttrRequestID = "keelpay.request_id"
	AttrStoreID   = "keelpay.store_id"
	AttrAttempt   = "keelpay.webhook.attempt" // 1 for a delivery's first attempt
	AttrClaimed   = "keelpay.webhook.claimed"
	AttrRecorded  = "keelpay.webhook.recorded"
	AttrWorker    = "keelpay.worker"
)

// Tracer returns keelpay's tracer of tp, or nil when tp is nil or the
// no-op provider: then the instrumentation is not installed at all and
// costs nothing.
func Tracer(tp trace.TracerProvider) trace.Tracer {
	if !Enabled(tp) {
		return nil
	}
	return tp.Tracer(ScopeName, trace.WithInstrumentationVersion(keelpay.Version))
}

// Enabled reports whether tp may record spans: it is neither nil nor the
// no-op provider.
func Enabled(tp trace.TracerProvider) bool {
	if tp == nil {
		return false
	}
	_, isNoop := tp.(noop.TracerProvider)
	return !isNoop
}

// OrNoop returns tp, or the no-op provider when tp is nil.
func OrNoop(tp trace.TracerProvider) trace.TracerProvider {
	if tp == nil {
		return noop.NewTracerProvider()
	}
	return tp
}

// Quiet returns ctx marked so that keelpay's storage instrumentation (the
// traced storage's spans and PostgreSQL's statement spans) makes no span
// for the work done with it: for background work that usually finds
// nothing to do, such as the webhook dispatcher's poll, so that an idle
// server exports no trace every second. A span already in ctx is hidden
// from that work.
//
// The mark itself is storage.Quiet, which the storage adapters read.
func Quiet(ctx context.Context) context.Context {
	return trace.ContextWithSpan(storage.Quiet(ctx), NonRecording)
}

// IsQuiet reports whether ctx was made by Quiet (storage.IsQuiet).
func IsQuiet(ctx context.Context) bool { return storage.IsQuiet(ctx) }

// NonRecording is a span that records nothing: what a quiet context's
// instrumentation starts.
var NonRecording = trace.SpanFromContext(context.Background())
