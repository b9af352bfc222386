package main

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay/webhooks/webhookstest"
)

// With KEELPAY_RETENTION=2d, a delivered event reads as not found once
// the sandbox clock has moved past two days: the move runs the retention
// pass before it answers.
func TestEventIsPurgedAfterTheSandboxClockPassesTheRetention(t *testing.T) {
	t.Parallel()
	s := start(t, t.TempDir(), []string{"KEELPAY_ADDR=127.0.0.1:0", "KEELPAY_RETENTION=2d"})
	rec := webhookstest.NewRecorder(t, "")
	status, store := call(t, "POST", s.URL+"/v1/setup", "", map[string]any{
		"client_id": "app_retention", "client_secret": "secret_retention", "webhook_url": rec.URL() + "/webhooks"})
	require.Equal(t, http.StatusCreated, status)
	key := store["secret_key"].(string)
	require.NoError(t, rec.SetSecrets(store["webhook_secret"].(string)))
	status, ev := call(t, "POST", s.URL+"/v1/webhooks/test", key, nil)
	require.Equal(t, http.StatusAccepted, status, "%v", ev)
	eventURL := s.URL + "/v1/events/" + ev["id"].(string)
	rec.Wait(t, 1)
	// The attempt is recorded just after the receiver answered.
	require.Eventually(t, func() bool {
		_, read := call(t, "GET", eventURL, key, nil)
		return read["delivery"].(map[string]any)["status"] == "succeeded"
	}, time.Minute, 5*time.Millisecond)

	status, _ = call(t, "POST", s.URL+"/sandbox/clock", "", map[string]any{"advance_seconds": 24 * 3600})
	require.Equal(t, http.StatusOK, status)
	status, read := call(t, "GET", eventURL, key, nil)
	require.Equal(t, http.StatusOK, status, "a day later the event is kept: %v", read)

	status, _ = call(t, "POST", s.URL+"/sandbox/clock", "", map[string]any{"advance_seconds": 24*3600 + 60})
	require.Equal(t, http.StatusOK, status)
	r := must(t, "GET", eventURL, key, nil)
	require.Equal(t, http.StatusNotFound, r.Status, "%v", r.Body)
	require.Equal(t, "event_not_found", r.Code())
}
