package main

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSandboxClockNeedsJSON: POST /sandbox/clock takes a JSON body that
// says so, as the API does: a form, plain text or no Content-Type is 415
// unsupported_media_type and leaves the clock where it was; JSON (with or
// without charset=utf-8) moves it.
func TestSandboxClockNeedsJSON(t *testing.T) {
	t.Parallel()
	s := start(t, t.TempDir(), []string{"KEELPAY_ADDR=127.0.0.1:0"})
	post := func(contentType, body string) (int, map[string]any) {
		req, err := http.NewRequest("POST", s.URL+"/sandbox/clock", strings.NewReader(body))
		require.NoError(t, err)
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		resp, err := client.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		raw, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		var v map[string]any
		require.NoError(t, json.Unmarshal(raw, &v), "%s", raw)
		return resp.StatusCode, v
	}
	for _, c := range []struct{ contentType, body string }{
		{"application/x-www-form-urlencoded", "advance_seconds=300"},
		{"text/plain", `{"advance_seconds":300}`},
		{"", `{"advance_seconds":300}`},
		{"application/json; charset=latin1", `{"advance_seconds":300}`},
	} {
		status, body := post(c.contentType, c.body)
		require.Equal(t, http.StatusUnsupportedMediaType, status, "Content-Type %q: %v", c.contentType, body)
		e := body["error"].(map[string]any)
		require.Equal(t, "unsupported_media_type", e["code"])
		require.Equal(t, "Content-Type must be application/json.", e["message"])
	}
	require.EqualValues(t, 0, must(t, "GET", s.URL+"/sandbox/clock", "", nil).Body["offset_seconds"], "a refused move moves nothing")
	status, body := post("application/json; charset=utf-8", `{"advance_seconds":300}`)
	require.Equal(t, http.StatusOK, status, "%v", body)
	require.EqualValues(t, 300, body["offset_seconds"])
}
