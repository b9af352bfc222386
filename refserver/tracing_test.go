package refserver

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTracingWanted(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want bool
		err  string
	}{
		{env: nil, want: false},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, want: true},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"}, want: true},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, want: true},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, want: false},
		{env: map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "otlp"}, want: false},
		{env: map[string]string{"OTEL_SERVICE_NAME": "shop"}, want: false},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, err: "OTEL_TRACES_EXPORTER=zipkin"},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, err: "OTEL_EXPORTER_OTLP_PROTOCOL=grpc"},
		{env: map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, want: true},
	} {
		got, err := tracingWanted(func(k string) string { return c.env[k] })
		if c.err != "" {
			require.ErrorContains(t, err, c.err, "%v", c.env)
			continue
		}
		require.NoError(t, err, "%v", c.env)
		require.Equal(t, c.want, got, "%v", c.env)
	}
}
