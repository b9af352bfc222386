package storage

import "context"

// quietKey marks a context whose storage work makes no spans.
type quietKey struct{}

// Quiet returns ctx marked so that an adapter's instrumentation (the
// PostgreSQL adapter's statement spans, keelpay's traced storage) makes
// no span for the work done with it: for background work that usually
// finds nothing to do, such as the webhook dispatcher's poll, so that an
// idle server exports no trace every second. The mark lives here, beside
// the interface the adapters implement, so that an adapter honours it
// without importing anything above storage.
func Quiet(ctx context.Context) context.Context {
	return context.WithValue(ctx, quietKey{}, true)
}

// IsQuiet reports whether ctx was made by Quiet, or derives from such a
// context.
func IsQuiet(ctx context.Context) bool {
	q, _ := ctx.Value(quietKey{}).(bool)
	return q
}
