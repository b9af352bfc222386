package main

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay/webhooks/webhookstest"
)

// TestRefundsOnTheSandboxClock is issue 5's walk through the reference
// server: a refund whose outcome is unknown, refused again within 3 minutes,
// resolved once the sandbox clock moves, and a refused one sent again; every
// webhook arrives once per change.
func TestRefundsOnTheSandboxClock(t *testing.T) {
	t.Parallel()
	s := start(t, t.TempDir(), []string{"KEELPAY_ADDR=127.0.0.1:0"})
	rec := webhookstest.NewRecorder(t, "")
	status, store := call(t, "POST", s.URL+"/v1/setup", "", map[string]any{
		"client_id": "app_refunds", "client_secret": "secret_refunds", "webhook_url": rec.URL() + "/hooks"})
	require.Equal(t, http.StatusCreated, status)
	require.NoError(t, rec.SetSecrets(store["webhook_secret"].(string)))
	sk, pk := store["secret_key"].(string), store["publishable_key"].(string)
	customer := map[string]any{"id": "cus_1", "name": "Ada Lovelace", "email": "ada@example.com", "phone": "+358401234567"}

	pay := func(number string) string {
		t.Helper()
		status, pi := call(t, "POST", s.URL+"/v1/payment_intents", sk, map[string]any{"amount": 4200, "currency": "EUR", "customer": customer})
		require.Equal(t, http.StatusCreated, status, "%v", pi)
		status, pi = call(t, "POST", s.URL+"/v1/payment_intents/"+pi["id"].(string)+"/confirm", pk, map[string]any{
			"client_secret": pi["client_secret"], "number": number, "exp_month": 12, "exp_year": 2035, "cvc": "123"})
		require.Equal(t, http.StatusOK, status, "%v", pi)
		require.Equal(t, "succeeded", pi["status"])
		return pi["id"].(string)
	}
	refund := func(pi string) (int, map[string]any) {
		return call(t, "POST", s.URL+"/v1/refunds", sk, map[string]any{"payment_intent": pi, "reason": "Changed my mind"})
	}
	types := func() map[string]int {
		got := map[string]int{}
		for _, d := range rec.Deliveries() {
			require.NoError(t, d.Err)
			got[d.Header.Get("service-event-type")]++
		}
		return got
	}

	// Unknown outcome: pending, then 409 with Retry-After until 3 minutes.
	unknown := pay("4000000000005142")
	status, r := refund(unknown)
	require.Equal(t, http.StatusCreated, status, "%v", r)
	require.Equal(t, "pending", r["status"])
	require.Equal(t, "outcome_unknown", r["last_error"].(map[string]any)["code"])
	status, again := refund(unknown)
	require.Equal(t, http.StatusConflict, status)
	require.Equal(t, "refund_in_progress", again["error"].(map[string]any)["code"])

	// Three minutes on the sandbox clock: the reconciler's look-up at one
	// minute runs before the answer, and the provider knows by now. The
	// payment's webhook is delivered and recorded first: a delivery still
	// in flight when the clock jumps past its one-minute lease is claimed
	// and sent again (at least once), and this test counts each change's
	// deliveries.
	require.Eventually(t, func() bool {
		_, evs := call(t, "GET", s.URL+"/v1/events?limit=100", sk, nil)
		data, _ := evs["data"].([]any)
		for _, e := range data {
			e := e.(map[string]any)
			if e["type"] != "payment_intent.succeeded" {
				continue
			}
			if d, _ := e["delivery"].(map[string]any); d["status"] != "succeeded" {
				return false
			}
		}
		return len(data) > 0
	}, time.Minute, 5*time.Millisecond, "the payment's webhook is recorded delivered")
	status, _ = call(t, "POST", s.URL+"/sandbox/clock", "", map[string]any{"advance_seconds": 180})
	require.Equal(t, http.StatusOK, status)
	status, got := call(t, "GET", s.URL+"/v1/refunds/"+r["id"].(string), sk, nil)
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "succeeded", got["status"])
	status, exists := refund(unknown)
	require.Equal(t, http.StatusConflict, status)
	require.Equal(t, "refund_exists", exists["error"].(map[string]any)["code"])

	// A refused refund, sent again: a refund.failed for each refused send.
	rejected := pay("4000000000005126")
	for send := 1; send <= 2; send++ {
		_, r := refund(rejected)
		require.Equal(t, "failed", r["status"])
		require.Equal(t, "refund_rejected", r["last_error"].(map[string]any)["code"])
	}

	// Webhooks: each change once (two payments succeeded, one refund
	// succeeded, two refused sends).
	want := map[string]int{"payment_intent.succeeded": 2, "refund.succeeded": 1, "refund.failed": 2}
	require.Eventually(t, func() bool {
		got := types()
		for k, n := range want {
			if got[k] < n {
				return false
			}
		}
		return true
	}, time.Minute, 5*time.Millisecond, "deliveries %v", types())
	require.Equal(t, want, types(), "once per change")
}
