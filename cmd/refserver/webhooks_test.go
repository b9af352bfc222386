package main

import (
	"net/http"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay/webhooks/webhookstest"
)

// call makes a JSON request to the reference server and decodes the answer.
func call(t *testing.T, method, url, key string, body any) (int, map[string]any) {
	t.Helper()
	r := must(t, method, url, key, body)
	return r.Status, r.Body
}

func TestStoreReceivesSignedWebhooksAndRetriesOnTheSandboxClock(t *testing.T) {
	t.Parallel()
	s := start(t, t.TempDir(), []string{"KEELPAY_ADDR=127.0.0.1:0"})
	rec := webhookstest.NewRecorder(t, "")
	status, store := call(t, "POST", s.URL+"/v1/setup", "", map[string]any{
		"client_id": "app_hooks", "client_secret": "secret_hooks", "webhook_url": rec.URL() + "/webhooks"})
	require.Equal(t, http.StatusCreated, status)
	secret, key := store["webhook_secret"].(string), store["secret_key"].(string)
	require.NoError(t, rec.SetSecrets(secret))

	status, ev := call(t, "POST", s.URL+"/v1/webhooks/test", key, nil)
	require.Equal(t, http.StatusAccepted, status, "%v", ev)
	got := rec.Wait(t, 1)
	require.NoError(t, got[0].Err, "verified by package webhooks")
	lib, err := standardwebhooks.NewWebhook(secret)
	require.NoError(t, err)
	require.NoError(t, lib.Verify(got[0].Body, got[0].Header), "and by the standard-webhooks library")
	status, read := call(t, "GET", s.URL+"/v1/events/"+ev["id"].(string), key, nil)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "succeeded", read["delivery"].(map[string]any)["status"])

	// The receiver is down for an hour; the sandbox clock moves through it.
	rec.SetStatus(http.StatusServiceUnavailable)
	status, ev = call(t, "POST", s.URL+"/v1/webhooks/test", key, nil)
	require.Equal(t, http.StatusAccepted, status)
	id := ev["id"].(string)
	require.Equal(t, "pending", ev["delivery"].(map[string]any)["status"])
	// Each move waits until the attempt before it was recorded: moving the
	// clock past an attempt still in flight would lapse its lease, and
	// the delivery would be sent once more (at least once).
	attempts := func(n int) {
		t.Helper()
		require.Eventually(t, func() bool {
			_, read := call(t, "GET", s.URL+"/v1/events/"+id, key, nil)
			return read["delivery"].(map[string]any)["attempts"] == float64(n)
		}, time.Minute, 5*time.Millisecond, "attempt %d recorded", n)
	}
	attempts(1)
	for n, advance := range []int{60, 300, 1800} { // attempts at 1, 6 and 36 minutes
		status, _ = call(t, "POST", s.URL+"/sandbox/clock", "", map[string]any{"advance_seconds": advance})
		require.Equal(t, http.StatusOK, status)
		rec.Wait(t, 3+n) // the dispatcher was woken and attempted again
		attempts(2 + n)
	}
	rec.SetStatus(http.StatusNoContent) // back after an hour
	status, clock := call(t, "POST", s.URL+"/sandbox/clock", "", map[string]any{"advance_seconds": 7200})
	require.Equal(t, http.StatusOK, status)
	require.EqualValues(t, 60+300+1800+7200, clock["offset_seconds"])
	all := rec.Wait(t, 6)
	last := all[len(all)-1]
	require.NoError(t, last.Err)
	require.Equal(t, id, last.Header.Get("webhook-id"))
	require.NotEqual(t, got[0].Header.Get("webhook-id"), id)
	// The attempt is recorded just after the receiver answered.
	var d map[string]any
	require.Eventually(t, func() bool {
		status, read = call(t, "GET", s.URL+"/v1/events/"+id, key, nil)
		d = read["delivery"].(map[string]any)
		return status == http.StatusOK && d["status"] == "succeeded"
	}, time.Minute, 5*time.Millisecond, "delivery %v", d)
	require.EqualValues(t, 5, d["attempts"])

	status, bad := call(t, "POST", s.URL+"/sandbox/clock", "", map[string]any{"advance_seconds": -5})
	require.Equal(t, http.StatusBadRequest, status)
	require.Equal(t, "invalid_request", bad["error"].(map[string]any)["code"])
}
