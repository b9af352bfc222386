package main

import (
	"compress/gzip"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// serviceNameDefault is the service.name of the server's spans unless
// OTEL_SERVICE_NAME names another, as the command's documentation says.
const serviceNameDefault = "keelpay-refserver"

// collector is a fake OTLP/HTTP collector: it keeps every span it is sent
// with its resource's service.name.
type collector struct {
	mu    sync.Mutex
	spans map[string][]*tracepb.Span // by service.name
}

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	b, err := io.ReadAll(body)
	var req coltracepb.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(b, &req)
	}
	if err != nil || r.URL.Path != "/v1/traces" {
		http.Error(w, "bad export", http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	for _, rs := range req.ResourceSpans {
		name := ""
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.Key == "service.name" {
				name = kv.Value.GetStringValue()
			}
		}
		for _, ss := range rs.ScopeSpans {
			c.spans[name] = append(c.spans[name], ss.Spans...)
		}
	}
	c.mu.Unlock()
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

// TestExportsTracesWhereTheEnvironmentAsks runs the server with an OTLP
// endpoint: a request made in a caller's trace is exported in that trace,
// under the server's service name, by the time the server has exited.
func TestExportsTracesWhereTheEnvironmentAsks(t *testing.T) {
	t.Parallel()
	col := &collector{spans: map[string][]*tracepb.Span{}}
	srv := httptest.NewServer(col)
	t.Cleanup(srv.Close)
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	for _, c := range []struct{ env, service string }{
		{"", serviceNameDefault},
		{"OTEL_SERVICE_NAME=shop-payments", "shop-payments"},
	} {
		env := []string{"KEELPAY_ADDR=127.0.0.1:0", "OTEL_EXPORTER_OTLP_ENDPOINT=" + srv.URL}
		if c.env != "" {
			env = append(env, c.env)
		}
		s := start(t, t.TempDir(), env)
		must(t, http.MethodPost, s.URL+"/v1/setup", "", map[string]any{
			"client_id": "app_trace", "client_secret": "secret_trace", "webhook_url": "http://127.0.0.1:9/hooks",
		}, "traceparent", "00-"+traceID+"-00f067aa0ba902b7-01")
		require.NoError(t, s.Cmd.Process.Signal(syscall.SIGTERM))
		require.NoError(t, s.Cmd.Wait())

		col.mu.Lock()
		spans := col.spans[c.service]
		col.mu.Unlock()
		var setup *tracepb.Span
		var names []string
		for _, sp := range spans {
			names = append(names, sp.Name)
			if sp.Name == "POST /v1/setup" {
				setup = sp
			}
		}
		require.NotNil(t, setup, "spans of %s: %s", c.service, strings.Join(names, ", "))
		require.Equal(t, traceID, hex.EncodeToString(setup.TraceId), "the request's span is not in the caller's trace")
		require.Contains(t, names, "storage.StoreInsert", "the setup's write")
	}
}
