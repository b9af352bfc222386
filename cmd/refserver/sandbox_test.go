package main

import (
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay/provider/sandbox"
	"github.com/keelpay/keelpay/webhooks/webhookstest"
)

// sandboxShop is a reference server with a store whose webhook_url is a
// recorder.
func sandboxShop(t *testing.T) (*started, *webhookstest.Recorder, string) {
	t.Helper()
	s := start(t, t.TempDir(), []string{"KEELPAY_ADDR=127.0.0.1:0"})
	rec := webhookstest.NewRecorder(t, "")
	r := must(t, "POST", s.URL+"/v1/setup", "", map[string]any{
		"client_id": "app_sbx", "client_secret": "secret_sbx", "webhook_url": rec.URL() + "/webhooks"})
	require.Equal(t, http.StatusCreated, r.Status)
	require.NoError(t, rec.SetSecrets(r.Str("webhook_secret")))
	return s, rec, r.Str("secret_key")
}

// attemptsOf waits until the event has n attempts and returns them, newest
// first.
func attemptsOf(t *testing.T, s *started, key, id string, n int) []map[string]any {
	t.Helper()
	var out []map[string]any
	require.Eventually(t, func() bool {
		r := must(t, "GET", s.URL+"/v1/events/"+id+"/attempts", key, nil)
		data, _ := r.Body["data"].([]any)
		out = out[:0]
		for _, a := range data {
			out = append(out, a.(map[string]any))
		}
		return len(out) == n
	}, time.Minute, 5*time.Millisecond, "event %s has %d attempts", id, n)
	return out
}

func TestSandboxFaults(t *testing.T) {
	t.Parallel()
	s, rec, key := sandboxShop(t)
	faults := s.URL + "/sandbox/webhooks/faults"

	r := must(t, "GET", faults, key, nil)
	require.Equal(t, http.StatusOK, r.Status)
	require.EqualValues(t, 0, r.Body["fail"], "none by default")

	// Fail: the receiver is not called; the attempt says why.
	r = must(t, "POST", faults, key, map[string]any{"fail": 1})
	require.Equal(t, http.StatusOK, r.Status, "%v", r.Body)
	require.EqualValues(t, 1, r.Body["fail"])
	require.EqualValues(t, sandbox.ReorderHoldDefault.Seconds(), r.Body["reorder_hold_seconds"])
	r = must(t, "POST", s.URL+"/v1/webhooks/test", key, nil)
	require.Equal(t, http.StatusAccepted, r.Status)
	id := r.Str("id")
	require.Equal(t, "connection_error", r.Body["delivery"].(map[string]any)["last_failure"])
	att := attemptsOf(t, s, key, id, 1)
	require.Equal(t, "connection_error", att[0]["failure"])
	require.Equal(t, sandbox.FailedBody, att[0]["response_body"])
	require.Empty(t, rec.Deliveries(), "the receiver was not called")

	// Duplicate: sent twice, same id and bytes.
	r = must(t, "POST", faults, key, map[string]any{"duplicate": 1, "seed": 7, "fail": 0})
	require.Equal(t, http.StatusOK, r.Status, "%v", r.Body)
	r = must(t, "POST", s.URL+"/v1/webhooks/test", key, nil)
	require.Equal(t, http.StatusAccepted, r.Status)
	got := rec.Wait(t, 2)
	require.Equal(t, got[0].Header.Get("webhook-id"), got[1].Header.Get("webhook-id"))
	require.Equal(t, r.Str("id"), got[0].Header.Get("webhook-id"))
	require.Equal(t, got[0].Body, got[1].Body)
	require.NoError(t, got[1].Err)

	// A change names what it changes; the rest stays.
	r = must(t, "POST", faults, key, map[string]any{"fail": 0.25, "reorder_hold_seconds": 60})
	require.Equal(t, http.StatusOK, r.Status, "%v", r.Body)
	require.EqualValues(t, 1, r.Body["duplicate"], "kept")
	require.EqualValues(t, 7, r.Body["seed"], "kept")
	require.EqualValues(t, 0.25, r.Body["fail"])
	require.EqualValues(t, 60, r.Body["reorder_hold_seconds"])
	// A wait of 0 goes back to its default and turns nothing off.
	r = must(t, "POST", faults, key, map[string]any{"reorder_hold_seconds": 0})
	require.Equal(t, http.StatusOK, r.Status, "%v", r.Body)
	require.EqualValues(t, sandbox.ReorderHoldDefault.Seconds(), r.Body["reorder_hold_seconds"])
	require.EqualValues(t, 1, r.Body["duplicate"])
	require.EqualValues(t, 0.25, r.Body["fail"])
	require.Equal(t, r.Body, must(t, "GET", faults, key, nil).Body, "GET reads what POST answered")
	// A body that names nothing changes nothing and says so.
	for _, body := range []any{map[string]any{}, nil, map[string]any{"fail": nil}} {
		r = must(t, "POST", faults, key, body)
		require.Equal(t, http.StatusBadRequest, r.Status, "%v", body)
		require.Equal(t, "no_fields", r.Body["error"].(map[string]any)["details"].(map[string]any)["code"], "%v", body)
	}
	require.EqualValues(t, 1, must(t, "GET", faults, key, nil).Body["duplicate"], "still on")

	// Off again: DELETE.
	r = must(t, "DELETE", faults, key, nil)
	require.Equal(t, http.StatusOK, r.Status)
	for _, k := range []string{"duplicate", "reorder", "reorder_hold_seconds", "delay", "delay_seconds", "fail", "seed"} {
		require.EqualValues(t, 0, r.Body[k], k)
	}
	require.Equal(t, r.Body, must(t, "GET", faults, key, nil).Body)

	for _, tc := range []struct {
		body  any
		field string
		code  string
	}{
		{map[string]any{"fail": 2}, "fail", "invalid_fail"},
		{map[string]any{"duplicate": -0.1}, "duplicate", "invalid_duplicate"},
		{map[string]any{"reorder": "half"}, "reorder", "invalid_reorder"},
		{map[string]any{"delay": 0.5, "delay_seconds": 1.5}, "delay_seconds", "invalid_delay_seconds"},
		{map[string]any{"reorder": 0.5, "reorder_hold_seconds": 100000}, "reorder_hold_seconds", "invalid_reorder_hold_seconds"},
		{map[string]any{"colour": "red"}, "colour", "unknown_field"},
	} {
		r := must(t, "POST", faults, key, tc.body)
		require.Equal(t, http.StatusBadRequest, r.Status, "%v", tc.body)
		require.Equal(t, "invalid_request", r.Code())
		d := r.Body["error"].(map[string]any)["details"].(map[string]any)
		require.Equal(t, tc.field, d["field"], "%v", tc.body)
		require.Equal(t, tc.code, d["code"], "%v", tc.body)
	}
	require.Equal(t, http.StatusUnauthorized, must(t, "POST", faults, "", map[string]any{"fail": 1}).Status)
	require.Equal(t, http.StatusUnauthorized, must(t, "POST", faults, "sk_nope", map[string]any{"fail": 1}).Status)
	require.Equal(t, http.StatusUnauthorized, must(t, "DELETE", faults, "", nil).Status)
	put := must(t, "PUT", faults, key, nil)
	require.Equal(t, http.StatusMethodNotAllowed, put.Status)
	require.Equal(t, "GET, POST, DELETE", put.Header.Get("Allow"))
}

func TestSandboxTriggerMakesEveryEventThroughTheRealFlows(t *testing.T) {
	t.Parallel()
	s, rec, key := sandboxShop(t)
	trigger := s.URL + "/sandbox/trigger"
	for _, tc := range []struct {
		typ     string
		objects []string // the ids the answer has
		check   func(t *testing.T, r reply)
	}{
		{"card.created", []string{"card_session", "card"}, nil},
		{"payment_intent.succeeded", []string{"card_session", "card", "payment_intent"}, func(t *testing.T, r reply) {
			pi := must(t, "GET", s.URL+"/v1/payment_intents/"+r.Str("payment_intent"), key, nil)
			require.Equal(t, "succeeded", pi.Str("status"))
		}},
		{"payment_intent.payment_failed", []string{"card_session", "card", "payment_intent"}, func(t *testing.T, r reply) {
			pi := must(t, "GET", s.URL+"/v1/payment_intents/"+r.Str("payment_intent"), key, nil)
			require.Equal(t, "requires_payment_method", pi.Str("status"))
		}},
		{"payment_intent.canceled", []string{"payment_intent"}, nil},
		{"refund.succeeded", []string{"card_session", "card", "payment_intent", "refund"}, func(t *testing.T, r reply) {
			re := must(t, "GET", s.URL+"/v1/refunds/"+r.Str("refund"), key, nil)
			require.Equal(t, "succeeded", re.Str("status"))
		}},
		{"refund.failed", []string{"card_session", "card", "payment_intent", "refund"}, func(t *testing.T, r reply) {
			re := must(t, "GET", s.URL+"/v1/refunds/"+r.Str("refund"), key, nil)
			require.Equal(t, "failed", re.Str("status"))
			require.Equal(t, "refund_rejected", re.Body["last_error"].(map[string]any)["code"])
		}},
		{"webhook.test", nil, nil},
	} {
		r := must(t, "POST", trigger, key, map[string]any{"type": tc.typ})
		require.Equal(t, http.StatusOK, r.Status, "%s: %v", tc.typ, r.Body)
		require.Equal(t, tc.typ, r.Str("type"))
		for _, field := range []string{"card_session", "card", "payment_intent", "refund"} {
			if slices.Contains(tc.objects, field) {
				require.NotEmpty(t, r.Str(field), "%s: %s", tc.typ, field)
			} else {
				require.Nil(t, r.Body[field], "%s: %s", tc.typ, field)
			}
		}
		id := r.Str("event")
		require.NotEmpty(t, id, tc.typ)
		ev := must(t, "GET", s.URL+"/v1/events/"+id, key, nil)
		require.Equal(t, tc.typ, ev.Str("type"))
		if tc.check != nil {
			tc.check(t, r)
		}
		// Delivered, signed with the store's secret.
		require.Eventually(t, func() bool {
			for _, d := range rec.Deliveries() {
				if d.Header.Get("webhook-id") == id {
					return d.Err == nil
				}
			}
			return false
		}, time.Minute, 5*time.Millisecond, "%s delivered", tc.typ)
	}

	for _, tc := range []struct {
		body        any
		field, code string
	}{
		{map[string]any{}, "type", "missing_type"},
		{map[string]any{"type": "nope"}, "type", "invalid_type"},
		{map[string]any{"type": 5}, "type", "invalid_type"},
		{map[string]any{"type": "webhook.test", "x": 1}, "x", "unknown_field"},
	} {
		r := must(t, "POST", trigger, key, tc.body)
		require.Equal(t, http.StatusBadRequest, r.Status, "%v", tc.body)
		d := r.Body["error"].(map[string]any)["details"].(map[string]any)
		require.Equal(t, tc.field, d["field"], "%v", tc.body)
		require.Equal(t, tc.code, d["code"], "%v", tc.body)
	}
	require.Equal(t, http.StatusUnauthorized, must(t, "POST", trigger, "", map[string]any{"type": "webhook.test"}).Status)
	require.Equal(t, http.StatusMethodNotAllowed, must(t, "GET", trigger, key, nil).Status)
}
