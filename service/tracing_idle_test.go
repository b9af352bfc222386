package service_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/keelpay/keelpay"
)

// TestTracingIdleDispatcherExportsNothing: an idle service's dispatcher
// polls every second, and a poll that claims and records nothing makes no
// span (neither webhook.claim nor the storage spans of the claim and of the
// next due time, each of which was a trace of its own), so that an idle
// server does not export a trace a second. A round that does something
// still has its webhook.claim span: the claim of a payment's webhook (with
// its storage.DeliveryClaimDue under it) and the round that records its
// attempt.
func TestTracingIdleDispatcherExportsNothing(t *testing.T) {
	t.Parallel()
	k, exp := traced(t)
	time.Sleep(300 * time.Millisecond) // the workers' first passes at start
	exp.Reset()
	time.Sleep(3500 * time.Millisecond) // three polls at least
	for _, s := range exp.GetSpans() {
		switch s.Name {
		case "webhook.claim", "storage.DeliveryClaimDue", "storage.DeliveryNextDue":
			t.Errorf("an idle poll made a span %s (%v)", s.Name, s.Attributes)
		}
	}

	st := k.Store(t)
	card := st.SaveCard(t, "4242424242424242")
	pi := st.Pay(t, card, 2500, "EUR")
	require.Equal(t, keelpay.PaymentIntentStatus("succeeded"), pi.Status)
	claimed, all := waitSpan(t, exp, "webhook.claim that claimed", func(s tracetest.SpanStub) bool {
		v, _ := attr(s, "keelpay.webhook.claimed")
		return s.Name == "webhook.claim" && v.AsInt64() > 0
	})
	require.False(t, claimed.Parent.IsValid(), "a claim round starts a trace of its own")
	var under int
	for _, s := range named(all, "storage.DeliveryClaimDue") {
		if s.Parent.SpanID() == claimed.SpanContext.SpanID() {
			under++
			require.False(t, s.StartTime.Before(claimed.StartTime))
			require.False(t, s.EndTime.After(claimed.EndTime))
		}
	}
	require.Equal(t, 1, under, "the claim's storage span is under it")
	waitSpan(t, exp, "webhook.claim that recorded", func(s tracetest.SpanStub) bool {
		v, _ := attr(s, "keelpay.webhook.recorded")
		return s.Name == "webhook.claim" && v.AsInt64() > 0
	})
	for _, s := range named(exp.GetSpans(), "webhook.claim") {
		rec, _ := attr(s, "keelpay.webhook.recorded")
		cl, _ := attr(s, "keelpay.webhook.claimed")
		require.True(t, rec.AsInt64() > 0 || cl.AsInt64() > 0, "a webhook.claim span that did nothing: %v", s.Attributes)
	}
}
