package refserver

import (
	"context"
	"fmt"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/keelpay/keelpay"
)

// serviceNameDefault is the service.name of the server's spans unless
// OTEL_SERVICE_NAME (or service.name in OTEL_RESOURCE_ATTRIBUTES) names
// another.
const serviceNameDefault = "keelpay-refserver"

// tracingWanted reports whether the standard OpenTelemetry variables ask
// for traces to be exported: OTEL_TRACES_EXPORTER=otlp, or an OTLP
// endpoint set without OTEL_TRACES_EXPORTER=none. OTEL_SDK_DISABLED=true
// turns it off. Only OTLP over HTTP (http/protobuf) is built in.
func tracingWanted(getenv func(string) string) (bool, error) {
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") {
		return false, nil
	}
	exporter := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER"))
	switch exporter {
	case "none":
		return false, nil
	case "", "otlp":
	default:
		return false, fmt.Errorf("OTEL_TRACES_EXPORTER=%s: this server exports only otlp (or none)", exporter)
	}
	for _, name := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		if p := getenv(name); p != "" {
			if p != "http/protobuf" {
				return false, fmt.Errorf("%s=%s: this server exports only http/protobuf", name, p)
			}
			break
		}
	}
	return exporter == "otlp" || getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "", nil
}

// newTracerProvider returns the SDK's provider exporting OTLP over HTTP
// when the environment asks for it (see tracingWanted), or nil. The
// exporter, the batching and the sampler read the rest of their settings
// from the standard variables themselves (OTEL_EXPORTER_OTLP_ENDPOINT,
// _HEADERS, _TIMEOUT, OTEL_BSP_*, OTEL_TRACES_SAMPLER, ...), and the
// resource from OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES. It also
// makes the W3C trace context the process's propagator, so that a
// caller's traceparent header puts the request's span in the caller's
// trace. Shut the provider down to flush what is buffered.
func newTracerProvider(ctx context.Context, getenv func(string) string) (*sdktrace.TracerProvider, error) {
	want, err := tracingWanted(getenv)
	if err != nil || !want {
		return nil, err
	}
	exp, err := otlptracehttp.New(ctx)
	if err != nil {
		return nil, fmt.Errorf("OTLP exporter: %w", err)
	}
	// Later options win: the environment overrides the default name.
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", serviceNameDefault), attribute.String("service.version", keelpay.Version)),
		resource.WithFromEnv(),
		resource.WithTelemetrySDK(),
	)
	if err != nil {
		return nil, fmt.Errorf("OpenTelemetry resource: %w", err)
	}
	otel.SetTextMapPropagator(propagation.TraceContext{})
	return sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res)), nil
}
