package service_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/keelpay/keelpay/keelpaytest"
	"github.com/keelpay/keelpay/provider/sandbox"
	"github.com/keelpay/keelpay/service"
)

// serve sends one request straight to the service's handler (no network,
// so that the figures are the service's own) and returns the answer,
// failing unless its status is want.
func serve(b *testing.B, h http.Handler, method, path, key, body string, want int) []byte {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != want {
		b.Fatalf("%s %s: %d, want %d: %s", method, path, rec.Code, want, rec.Body)
	}
	return rec.Body.Bytes()
}

// benchRequests measures a read of a payment intent and a complete
// payment (create, then confirm with a saved card) through the API
// handler over SQLite, with the service configured by configure.
func benchRequests(b *testing.B, configure func(*service.Config)) {
	k := keelpaytest.Start(b, keelpaytest.WithServiceConfig(configure))
	st := k.Store(b)
	card := st.SaveCard(b, sandbox.CardVisa)
	pi := st.Pay(b, card, 1000, "eur")
	h := k.Service.Handler()
	b.Run("GetIntent", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			serve(b, h, http.MethodGet, "/v1/payment_intents/"+pi.ID, st.SecretKey, "", http.StatusOK)
		}
	})
	b.Run("Payment", func(b *testing.B) {
		b.ReportAllocs()
		body, err := json.Marshal(map[string]any{"amount": 1000, "currency": "eur", "payment_method": card, "customer": st.Customer})
		if err != nil {
			b.Fatal(err)
		}
		create := string(body)
		for b.Loop() {
			var created struct {
				ID string `json:"id"`
			}
			if err := json.Unmarshal(serve(b, h, http.MethodPost, "/v1/payment_intents", st.SecretKey, create, http.StatusCreated), &created); err != nil {
				b.Fatal(err)
			}
			serve(b, h, http.MethodPost, "/v1/payment_intents/"+created.ID+"/confirm", st.SecretKey, "{}", http.StatusOK)
		}
	})
}

// BenchmarkUntraced is the API without a TracerProvider: the figures
// that tracing must leave alone (docs/operating.md, "Tracing").
func BenchmarkUntraced(b *testing.B) {
	benchRequests(b, func(*service.Config) {})
}

// BenchmarkTracedNoop is the API with the no-op TracerProvider: the same
// as without one.
func BenchmarkTracedNoop(b *testing.B) {
	benchRequests(b, func(c *service.Config) { c.TracerProvider = noop.NewTracerProvider() })
}

// BenchmarkTracedRecording is the API with every span recorded (and
// dropped, with no exporter): the cost of the instrumentation itself.
func BenchmarkTracedRecording(b *testing.B) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()))
	b.Cleanup(func() { _ = tp.Shutdown(b.Context()) })
	benchRequests(b, func(c *service.Config) { c.TracerProvider = tp })
}
