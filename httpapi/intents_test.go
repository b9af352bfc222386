package httpapi_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/provider/sandbox"
)

func TestCreateAndReadIntent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.shop(t, "app_shop_usd")
	body := intentBody(s, 1999)
	body["currency"] = "usd"
	body["description"] = "Two mugs"
	body["reference"] = "order-17"
	body["metadata"] = map[string]any{"order": "17"}
	body["billing"] = map[string]any{"country": "us", "state": "CA", "postal_code": "94103"}
	body["page_origins"] = []string{"https://shop.example"}
	r := b.createIntent(t, s, body)
	id := pi(t, r)
	require.Regexp(t, "^"+id+"_secret_[0-9A-Za-z]{24}$", r.str("client_secret"))
	want := map[string]any{
		"id":             id,
		"object":         "payment_intent",
		"status":         "requires_payment_method",
		"amount":         1999.0,
		"currency":       "USD",
		"client_secret":  r.str("client_secret"),
		"customer":       customerJSON(),
		"description":    "Two mugs",
		"reference":      "order-17",
		"metadata":       map[string]any{"order": "17"},
		"billing":        map[string]any{"country": "US", "state": "CA", "postal_code": "94103"},
		"page_origins":   []any{"https://shop.example"},
		"card":           nil,
		"payment_method": nil,
		"refund":         nil,
		"next_action":    nil,
		"expires_at":     "2026-11-22T10:00:00Z",
		"created_at":     "2026-11-21T10:00:00Z",
	}
	require.Equal(t, want, r.Body)
	require.Equal(t, want, b.getIntent(t, s, id).Body)

	// The least an intent has.
	r = b.createIntent(t, s, intentBody(s, 1))
	for _, key := range []string{"description", "reference", "card", "payment_method", "refund", "next_action"} {
		require.Contains(t, r.Body, key)
		require.Nil(t, r.Body[key], key)
	}
	require.Equal(t, map[string]any{}, r.Body["metadata"])
	require.Equal(t, []any{}, r.Body["page_origins"])
	for _, key := range []string{"billing", "last_error", "authorization_code", "order_id", "succeeded_at", "cancellation_reason"} {
		require.NotContains(t, r.Body, key)
	}
}

func TestListIntents(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.shop(t, "app_shop")
	var ids []string // oldest first
	for i := range 12 {
		ids = append(ids, pi(t, b.createIntent(t, s, intentBody(s, 100+i))))
	}
	list := func(query string) ([]string, bool) {
		t.Helper()
		r := b.do(t, req{method: "GET", path: "/v1/payment_intents" + query, key: s.sk})
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Raw)
		require.Equal(t, "list", r.str("object"))
		var got []string
		for _, d := range r.Body["data"].([]any) {
			obj := d.(map[string]any)
			require.Equal(t, "payment_intent", obj["object"])
			require.Equal(t, customerJSON(), obj["customer"], "the secret key sees the customer")
			got = append(got, obj["id"].(string))
		}
		return got, r.Body["has_more"].(bool)
	}
	rev := func(ids ...string) []string {
		out := make([]string, len(ids))
		for i, id := range ids {
			out[len(ids)-1-i] = id
		}
		return out
	}
	got, more := list("")
	require.Equal(t, rev(ids[2:]...), got, "newest first, 10 by default")
	require.True(t, more)
	got, more = list("?limit=5&starting_after=" + ids[7])
	require.Equal(t, rev(ids[2:7]...), got)
	require.True(t, more)
	got, more = list("?starting_after=" + ids[2])
	require.Equal(t, rev(ids[:2]...), got)
	require.False(t, more)
	got, more = list("?limit=3&ending_before=" + ids[5])
	require.Equal(t, rev(ids[6:9]...), got)
	require.True(t, more)
	got, more = list("?limit=100")
	require.Len(t, got, 12)
	require.False(t, more)
	got, more = list("?limit=1")
	require.Equal(t, []string{ids[11]}, got)
	require.True(t, more)

	for _, tc := range []struct{ query, field, code string }{
		{"?limit=0", "limit", "invalid_limit"},
		{"?limit=101", "limit", "invalid_limit"},
		{"?limit=ten", "limit", "invalid_limit"},
		{"?limit=", "limit", "invalid_limit"},
		{"?limit=-1", "limit", "invalid_limit"},
		{"?limit=5&limit=6", "limit", "duplicate_parameter"},
		{"?Limit=5", "Limit", "unknown_parameter"},
		{"?type=payment_intent", "type", "unknown_parameter"},
		{"?limit=%zz", "", "invalid_query"},
		{"?limit=5;starting_after=x", "", "invalid_query"},
		{"?starting_after=pi_nope", "starting_after", "invalid_starting_after"},
		{"?starting_after=", "starting_after", "invalid_starting_after"},
		{"?starting_after=" + keelpay.NewID("pi_"), "starting_after", "invalid_starting_after"},
		{"?ending_before=" + keelpay.NewID("pi_"), "ending_before", "invalid_ending_before"},
		{"?starting_after=" + ids[3] + "&ending_before=" + ids[5], "ending_before", "invalid_ending_before"},
	} {
		requireInvalid(t, b.do(t, req{method: "GET", path: "/v1/payment_intents" + tc.query, key: s.sk}), tc.field, tc.code)
	}
	requireError(t, b.do(t, req{method: "GET", path: "/v1/payment_intents", key: s.pk}), http.StatusUnauthorized, "invalid_api_key")
}

func TestCancelIntent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.shop(t, "app_shop")
	cancel := func(id string, body any) *response {
		return b.do(t, req{method: "POST", path: "/v1/payment_intents/" + id + "/cancel", key: s.sk, body: body})
	}
	for _, tc := range []struct {
		body   any
		reason string
	}{
		{nil, "requested_by_customer"},
		{`{}`, "requested_by_customer"},
		{`{"cancellation_reason":null}`, "requested_by_customer"},
		{map[string]any{"cancellation_reason": "abandoned"}, "abandoned"},
		{map[string]any{"cancellation_reason": "duplicate"}, "duplicate"},
		{map[string]any{"cancellation_reason": "fraudulent"}, "fraudulent"},
	} {
		id := pi(t, b.createIntent(t, s, intentBody(s, 100)))
		r := cancel(id, tc.body)
		requireStatus(t, r, http.StatusOK, keelpay.IntentCanceled)
		require.Equal(t, tc.reason, r.str("cancellation_reason"))
		obj := b.requireOneEvent(t, s, keelpay.EventPaymentIntentCanceled, id)
		require.Equal(t, tc.reason, obj["cancellation_reason"])

		again := cancel(id, nil)
		requireError(t, again, http.StatusConflict, "payment_intent_not_cancelable")
		require.Equal(t, "canceled", again.details()["status"])
		requireError(t, b.confirmNew(t, s, b.getIntent(t, s, id), sandbox.CardVisa, nil), http.StatusConflict, "payment_intent_unexpected_state")
	}

	id := pi(t, b.createIntent(t, s, intentBody(s, 100)))
	for _, tc := range []struct{ body, field, code string }{
		{`{"cancellation_reason":"expired"}`, "cancellation_reason", "invalid_cancellation_reason"},
		{`{"cancellation_reason":"voided"}`, "cancellation_reason", "invalid_cancellation_reason"},
		{`{"cancellation_reason":"Abandoned"}`, "cancellation_reason", "invalid_cancellation_reason"},
		{`{"cancellation_reason":""}`, "cancellation_reason", "invalid_cancellation_reason"},
		{`{"cancellation_reason":1}`, "cancellation_reason", "invalid_cancellation_reason"},
		{`{"reason":"abandoned"}`, "reason", "unknown_field"},
	} {
		requireInvalid(t, cancel(id, tc.body), tc.field, tc.code)
	}

	// A succeeded intent is not cancelable.
	intent := b.createIntent(t, s, intentBody(s, 100))
	requireStatus(t, b.confirmNew(t, s, intent, sandbox.CardVisa, nil), http.StatusOK, keelpay.IntentSucceeded)
	r := cancel(pi(t, intent), nil)
	requireError(t, r, http.StatusConflict, "payment_intent_not_cancelable")
	require.Equal(t, "succeeded", r.details()["status"])
}

func TestIntentExpiresAfter24Hours(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.shop(t, "app_shop")
	ctx := context.Background()
	first := b.createIntent(t, s, intentBody(s, 100))
	b.clock.Advance(time.Hour)
	second := b.createIntent(t, s, intentBody(s, 200))
	paid := b.createIntent(t, s, intentBody(s, 300))
	requireStatus(t, b.confirmNew(t, s, paid, sandbox.CardVisa, nil), http.StatusOK, keelpay.IntentSucceeded)
	worker := b.worker(t)

	b.clock.Advance(23*time.Hour - time.Second)
	require.NoError(t, worker.Expire(ctx))
	require.Empty(t, b.events(t, s.id, keelpay.EventPaymentIntentCanceled))

	b.clock.Advance(time.Second)
	require.NoError(t, worker.Expire(ctx))
	require.NoError(t, worker.Expire(ctx))
	got := b.getIntent(t, s, pi(t, first))
	require.Equal(t, "canceled", got.str("status"))
	require.Equal(t, "expired", got.str("cancellation_reason"))
	obj := b.requireOneEvent(t, s, keelpay.EventPaymentIntentCanceled, pi(t, first))
	require.Equal(t, "expired", obj["cancellation_reason"])
	require.Equal(t, "requires_payment_method", b.getIntent(t, s, pi(t, second)).str("status"))
	require.Equal(t, "succeeded", b.getIntent(t, s, pi(t, paid)).str("status"))

	// Past its expiry, a confirm finds it expired even before the
	// expirer ran, and nothing is charged.
	b.clock.Advance(time.Hour)
	r := b.confirmNew(t, s, second, sandbox.CardVisa, nil)
	requireError(t, r, http.StatusConflict, "payment_intent_unexpected_state")
	require.Equal(t, "canceled", r.details()["status"])
	require.Equal(t, "expired", b.getIntent(t, s, pi(t, second)).str("cancellation_reason"))
	b.requireOneEvent(t, s, keelpay.EventPaymentIntentCanceled, pi(t, second))
	require.NoError(t, worker.Expire(ctx))
	b.requireOneEvent(t, s, keelpay.EventPaymentIntentCanceled, pi(t, second))
	require.Equal(t, 1, b.sandbox.Charges())
}

func TestPaymentMetrics(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.shop(t, "app_shop")
	requireStatus(t, b.confirmNew(t, s, b.createIntent(t, s, intentBody(s, 100)), sandbox.CardVisa, nil), http.StatusOK, keelpay.IntentSucceeded)
	requireStatus(t, b.confirmNew(t, s, b.createIntent(t, s, intentBody(s, 100)), sandbox.CardInsufficientFunds, nil), http.StatusOK, keelpay.IntentRequiresPaymentMethod)
	requireStatus(t, b.confirmNew(t, s, b.createIntent(t, s, intentBody(s, 100)), sandbox.CardAmountMismatch, nil), http.StatusOK, keelpay.IntentCanceled)
	requireStatus(t, b.confirmNew(t, s, b.createIntent(t, s, intentBody(s, 100)), sandbox.CardOutcomeUnknown, nil), http.StatusOK, keelpay.IntentProcessing)
	requireStatus(t, b.confirmNew(t, s, b.createIntent(t, s, intentBody(s, 100)), sandbox.CardThreeDSecure, nil), http.StatusOK, keelpay.IntentRequiresAction)
	b.sandbox.SetUnavailable(true)
	requireError(t, b.confirmNew(t, s, b.createIntent(t, s, intentBody(s, 100)), sandbox.CardVisa, nil), http.StatusServiceUnavailable, "provider_api_unavailable")

	r := b.do(t, req{method: "GET", path: "/metrics"})
	require.Equal(t, http.StatusOK, r.Status)
	metrics := string(r.Raw)
	for _, line := range []string{
		`keelpay_payment_attempts_total{code="",outcome="succeeded"} 1`,
		`keelpay_payment_attempts_total{code="card_declined",outcome="failed"} 1`,
		`keelpay_payment_attempts_total{code="amount_mismatch",outcome="voided"} 1`,
		`keelpay_payment_attempts_total{code="provider_api_unavailable",outcome="not_sent"} 1`,
		`keelpay_payment_intents{status="requires_payment_method"} 2`,
		`keelpay_payment_intents{status="requires_action"} 1`,
		`keelpay_payment_intents{status="processing"} 1`,
		`keelpay_payment_intents{status="succeeded"} 1`,
		`keelpay_payment_intents{status="canceled"} 1`,
		`keelpay_payment_outcomes_unknown 1`,
	} {
		require.True(t, strings.Contains(metrics, line+"\n"), "missing %q in\n%s", line, grep(metrics, "keelpay_payment"))
	}
}

func grep(text, prefix string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
