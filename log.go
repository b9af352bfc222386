package keelpay

import (
	"context"
	"log/slog"
)

// LogKeyRequestID is the attribute under which log lines carry the id of
// the request they were written for (the Request-Id header of its answer).
const LogKeyRequestID = "request_id"

type requestIDKey struct{}

// ContextWithRequestID returns ctx carrying a request id, for the log lines
// written while the request is served. httpapi sets it on every request.
func ContextWithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestIDKey{}, id)
}

// RequestIDFromContext returns the request id of ctx, or "".
func RequestIDFromContext(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// NewLogHandler wraps h so that every record logged with a context that
// carries a request id ([ContextWithRequestID]) gets it as the attribute
// [LogKeyRequestID], whichever package logs it. Give the services one
// logger built on it, and every line written during a request names the
// request:
//
//	logger := slog.New(keelpay.NewLogHandler(slog.NewJSONHandler(os.Stderr, nil)))
//
// A record that already has the attribute keeps its own. Wrapping twice
// adds nothing.
func NewLogHandler(h slog.Handler) slog.Handler {
	if _, ok := h.(*logHandler); ok {
		return h
	}
	return &logHandler{next: h}
}

type logHandler struct {
	next slog.Handler
}

func (h *logHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.next.Enabled(ctx, level)
}

func (h *logHandler) Handle(ctx context.Context, r slog.Record) error {
	if id := RequestIDFromContext(ctx); id != "" {
		has := false
		r.Attrs(func(a slog.Attr) bool {
			has = a.Key == LogKeyRequestID
			return !has
		})
		if !has {
			r = r.Clone()
			r.AddAttrs(slog.String(LogKeyRequestID, id))
		}
	}
	return h.next.Handle(ctx, r)
}

func (h *logHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &logHandler{next: h.next.WithAttrs(attrs)}
}

func (h *logHandler) WithGroup(name string) slog.Handler {
	return &logHandler{next: h.next.WithGroup(name)}
}
