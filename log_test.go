package keelpay_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/keelpay/keelpay"
)

func TestLogHandlerAddsTheRequestID(t *testing.T) {
	var buf bytes.Buffer
	h := keelpay.NewLogHandler(slog.NewTextHandler(&buf, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}))
	if keelpay.NewLogHandler(h) != h {
		t.Fatal("wrapping twice must return the same handler")
	}
	log := slog.New(h).With("service", "payments")
	ctx := keelpay.ContextWithRequestID(context.Background(), "req_1")

	log.WarnContext(ctx, "in a request")
	log.InfoContext(context.Background(), "outside a request")
	log.InfoContext(ctx, "already named", slog.String("request_id", "req_own"))

	want := strings.Join([]string{
		`level=WARN msg="in a request" service=payments request_id=req_1`,
		`level=INFO msg="outside a request" service=payments`,
		`level=INFO msg="already named" service=payments request_id=req_own`,
		``,
	}, "\n")
	if buf.String() != want {
		t.Fatalf("logged:\n%s\nwant:\n%s", buf.String(), want)
	}
}
