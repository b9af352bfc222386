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
	r := must(t, "POST", s.url+"/v1/setup", "", map[string]any{
		"client_id": "app_sbx", "client_secret": "secret_sbx", "webhook_url": rec.URL() + "/webhooks"})
	require.Equal(t, http.StatusCreated, r.status)
	require.NoError(t, rec.SetSecrets(r.str("webhook_secret")))
	return s, rec, r.str("secret_key")
}

// attemptsOf waits until the event has n attempts and returns them, newest
// first.
func attemptsOf(t *testing.T, s *started, key, id string, n int) []map[string]any {
	t.Helper()
	var out []map[string]any
	require.Eventually(t, func() bool {
		r := must(t, "GET", s.url+"/v1/events/"+id+"/attempts", key, nil)
		data, _ := r.body["data"].([]any)
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
	faults := s.url + "/sandbox/webhooks/faults"

	r := must(t, "GET", faults, key, nil)
	require.Equal(t, http.StatusOK, r.status)
	require.EqualValues(t, 0, r.body["fail"], "none by default")

	// Fail: the receiver is not called; the attempt says why.
	r = must(t, "POST", faults, key, map[string]any{"fail": 1})
	require.Equal(t, http.StatusOK, r.status, "%v", r.body)
	require.EqualValues(t, 1, r.body["fail"])
	require.EqualValues(t, sandbox.ReorderHoldDefault.Seconds(), r.body["reorder_hold_seconds"])
	r = must(t, "POST", s.url+"/v1/webhooks/test", key, nil)
	require.Equal(t, http.StatusAccepted, r.status)
	id := r.str("id")
	require.Equal(t, "connection_error", r.body["delivery"].(map[string]any)["last_failure"])
	att := attemptsOf(t, s, key, id, 1)
	require.Equal(t, "connection_error", att[0]["failure"])
	require.Equal(t, sandbox.FailedBody, att[0]["response_body"])
	require.Empty(t, rec.Deliveries(), "the receiver was not called")

	// Duplicate: sent twice, same id and bytes.
	r = must(t, "POST", faults, key, map[string]any{"duplicate": 1, "seed": 7, "fail": 0})
	require.Equal(t, http.StatusOK, r.status, "%v", r.body)
	r = must(t, "POST", s.url+"/v1/webhooks/test", key, nil)
	require.Equal(t, http.StatusAccepted, r.status)
	got := rec.Wait(t, 2)
	require.Equal(t, got[0].Header.Get("webhook-id"), got[1].Header.Get("webhook-id"))
	require.Equal(t, r.str("id"), got[0].Header.Get("webhook-id"))
	require.Equal(t, got[0].Body, got[1].Body)
	require.NoError(t, got[1].Err)

	// A change names what it changes; the rest stays.
	r = must(t, "POST", faults, key, map[string]any{"fail": 0.25, "reorder_hold_seconds": 60})
	require.Equal(t, http.StatusOK, r.status, "%v", r.body)
	require.EqualValues(t, 1, r.body["duplicate"], "kept")
	require.EqualValues(t, 7, r.body["seed"], "kept")
	require.EqualValues(t, 0.25, r.body["fail"])
	require.EqualValues(t, 60, r.body["reorder_hold_seconds"])
	// A wait of 0 goes back to its default and turns nothing off.
	r = must(t, "POST", faults, key, map[string]any{"reorder_hold_seconds": 0})
	require.Equal(t, http.StatusOK, r.status, "%v", r.body)
	require.EqualValues(t, sandbox.ReorderHoldDefault.Seconds(), r.body["reorder_hold_seconds"])
	require.EqualValues(t, 1, r.body["duplicate"])
	require.EqualValues(t, 0.25, r.body["fail"])
	require.Equal(t, r.body, must(t, "GET", faults, key, nil).body, "GET reads what POST answered")
	// A body that names nothing changes nothing and says so.
	for _, body := range []any{map[string]any{}, nil, map[string]any{"fail": nil}} {
		r = must(t, "POST", faults, key, body)
		require.Equal(t, http.StatusBadRequest, r.status, "%v", body)
		require.Equal(t, "no_fields", r.body["error"].(map[string]any)["details"].(map[string]any)["code"], "%v", body)
	}
	require.EqualValues(t, 1, must(t, "GET", faults, key, nil).body["duplicate"], "still on")

	// Off again: DELETE.
	r = must(t, "DELETE", faults, key, nil)
	require.Equal(t, http.StatusOK, r.status)
	for _, k := range []string{"duplicate", "reorder", "reorder_hold_seconds", "delay", "delay_seconds", "fail", "seed"} {
		require.EqualValues(t, 0, r.body[k], k)
	}
	require.Equal(t, r.body, must(t, "GET", faults, key, nil).body)

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
		require.Equal(t, http.StatusBadRequest, r.status, "%v", tc.body)
		require.Equal(t, "invalid_request", r.code())
		d := r.body["error"].(map[string]any)["details"].(map[string]any)
		require.Equal(t, tc.field, d["field"], "%v", tc.body)
		require.Equal(t, tc.code, d["code"], "%v", tc.body)
	}
	require.Equal(t, http.StatusUnauthorized, must(t, "POST", faults, "", map[string]any{"fail": 1}).status)
	require.Equal(t, http.StatusUnauthorized, must(t, "POST", faults, "sk_nope", map[string]any{"fail": 1}).status)
	require.Equal(t, http.StatusUnauthorized, must(t, "DELETE", faults, "", nil).status)
	put := must(t, "PUT", faults, key, nil)
	require.Equal(t, http.StatusMethodNotAllowed, put.status)
	require.Equal(t, "GET, POST, DELETE", put.header.Get("Allow"))
}

func TestSandboxTriggerMakesEveryEventThroughTheRealFlows(t *testing.T) {
	t.Parallel()
	s, rec, key := sandboxShop(t)
	trigger := s.url + "/sandbox/trigger"
	for _, tc := range []struct {
		typ     string
		objects []string // the ids the answer has
		check   func(t *testing.T, r reply)
	}{
		{"card.created", []string{"card_session", "card"}, nil},
		{"payment_intent.succeeded", []string{"card_session", "card", "payment_intent"}, func(t *testing.T, r reply) {
			pi := must(t, "GET", s.url+"/v1/payment_intents/"+r.str("payment_intent"), key, nil)
			require.Equal(t, "succeeded", pi.str("status"))
		}},
		{"payment_intent.payment_failed", []string{"card_session", "card", "payment_intent"}, func(t *testing.T, r reply) {
			pi := must(t, "GET", s.url+"/v1/payment_intents/"+r.str("payment_intent"), key, nil)
			require.Equal(t, "requires_payment_method", pi.str("status"))
		}},
		{"payment_intent.canceled", []string{"payment_intent"}, nil},
		{"refund.succeeded", []string{"card_session", "card", "payment_intent", "refund"}, func(t *testing.T, r reply) {
			re := must(t, "GET", s.url+"/v1/refunds/"+r.str("refund"), key, nil)
			require.Equal(t, "succeeded", re.str("status"))
		}},
		{"refund.failed", []string{"card_session", "card", "payment_intent", "refund"}, func(t *testing.T, r reply) {
			re := must(t, "GET", s.url+"/v1/refunds/"+r.str("refund"), key, nil)
			require.Equal(t, "failed", re.str("status"))
			require.Equal(t, "refund_rejected", re.body["last_error"].(map[string]any)["code"])
		}},
		{"webhook.test", nil, nil},
	} {
		r := must(t, "POST", trigger, key, map[string]any{"type": tc.typ})
		require.Equal(t, http.StatusOK, r.status, "%s: %v", tc.typ, r.body)
		require.Equal(t, tc.typ, r.str("type"))
		for _, field := range []string{"card_session", "card", "payment_intent", "refund"} {
			if slices.Contains(tc.objects, field) {
				require.NotEmpty(t, r.str(field), "%s: %s", tc.typ, field)
			} else {
				require.Nil(t, r.body[field], "%s: %s", tc.typ, field)
			}
		}
		id := r.str("event")
		require.NotEmpty(t, id, tc.typ)
		ev := must(t, "GET", s.url+"/v1/events/"+id, key, nil)
		require.Equal(t, tc.typ, ev.str("type"))
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
		require.Equal(t, http.StatusBadRequest, r.status, "%v", tc.body)
		d := r.body["error"].(map[string]any)["details"].(map[string]any)
		require.Equal(t, tc.field, d["field"], "%v", tc.body)
		require.Equal(t, tc.code, d["code"], "%v", tc.body)
	}
	require.Equal(t, http.StatusUnauthorized, must(t, "POST", trigger, "", map[string]any{"type": "webhook.test"}).status)
	require.Equal(t, http.StatusMethodNotAllowed, must(t, "GET", trigger, key, nil).status)
}
