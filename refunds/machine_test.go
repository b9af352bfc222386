package refunds

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/provider"
)

var t0 = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

func TestRefundable(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		pi     keelpay.PaymentIntent
		reason string // "" when refundable
	}{
		{keelpay.PaymentIntent{Status: keelpay.IntentSucceeded, OrderID: "ord_1"}, ""},
		{keelpay.PaymentIntent{Status: keelpay.IntentSucceeded}, "order_unknown"},
		{keelpay.PaymentIntent{Status: keelpay.IntentProcessing, OrderID: "ord_1"}, "not_succeeded"},
		{keelpay.PaymentIntent{Status: keelpay.IntentCanceled}, "not_succeeded"},
		{keelpay.PaymentIntent{Status: keelpay.IntentRequiresPaymentMethod}, "not_succeeded"},
	} {
		err := refundable(&tc.pi)
		if tc.reason == "" {
			require.NoError(t, err, tc.pi.Status)
			continue
		}
		e, ok := keelpay.AsError(err)
		require.True(t, ok)
		require.Equal(t, keelpay.CodePaymentIntentNotRefundable, e.Code)
		require.Equal(t, tc.reason, e.Details["reason"])
	}
}

func TestResend(t *testing.T) {
	t.Parallel()
	pending := keelpay.Refund{ID: "re_1", Status: keelpay.RefundPending, Attempts: 1, AttemptID: "rfatt_a",
		LastSentAt: t0, ReconcileAt: t0.Add(time.Minute), ReconcileCount: 2, LastError: &keelpay.LastError{Code: "outcome_unknown"}}
	failed := pending
	failed.Status, failed.LastError = keelpay.RefundFailed, &keelpay.LastError{Code: "refund_rejected"}
	for _, tc := range []struct {
		name   string
		before keelpay.Refund
		after  time.Duration
		code   keelpay.Code
		detail string        // details.reason or details.refund
		wait   time.Duration // Retry-After of refund_in_progress
		want   keelpay.Refund
	}{
		{name: "pending, too soon", before: pending, after: time.Minute,
			code: keelpay.CodeRefundInProgress, wait: 2 * time.Minute},
		{name: "pending, a fraction too soon: rounded up", before: pending, after: ResendAfter - 1500*time.Millisecond,
			code: keelpay.CodeRefundInProgress, wait: 2 * time.Second},
		{name: "pending, after the wait: the same attempt again", before: pending, after: ResendAfter,
			want: keelpay.Refund{ID: "re_1", Status: keelpay.RefundPending, Attempts: 2, AttemptID: "rfatt_a",
				LastSentAt: t0.Add(ResendAfter), ReconcileAt: t0.Add(ResendAfter + time.Minute), UpdatedAt: t0.Add(ResendAfter),
				LastError: &keelpay.LastError{Code: "outcome_unknown"}}},
		{name: "failed: a new attempt", before: failed, after: time.Second,
			want: keelpay.Refund{ID: "re_1", Status: keelpay.RefundPending, Attempts: 2, AttemptID: "rfatt_new",
				LastSentAt: t0.Add(time.Second), ReconcileAt: t0.Add(time.Second + time.Minute), UpdatedAt: t0.Add(time.Second),
				LastError: &keelpay.LastError{Code: "refund_rejected"}}},
		{name: "succeeded: exists", before: keelpay.Refund{ID: "re_1", Status: keelpay.RefundSucceeded, Attempts: 1},
			code: keelpay.CodeRefundExists, detail: "re_1"},
		{name: "three sends made", before: func() keelpay.Refund { r := failed; r.Attempts = MaxSends; return r }(),
			code: keelpay.CodePaymentIntentNotRefundable, detail: "attempts_exhausted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := resend(tc.before, "rfatt_new", t0.Add(tc.after))
			if tc.code != "" {
				e, ok := keelpay.AsError(err)
				require.True(t, ok, "%v", err)
				require.Equal(t, tc.code, e.Code)
				require.Equal(t, tc.wait, e.RetryAfter)
				if tc.detail != "" {
					require.Contains(t, []any{e.Details["reason"], e.Details["refund"]}, tc.detail)
				}
				return
			}
			require.NoError(t, err)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

func TestSettled(t *testing.T) {
	t.Parallel()
	r := keelpay.Refund{ID: "re_1", Status: keelpay.RefundPending, Attempts: 1, ReconcileAt: t0.Add(time.Minute),
		LastError: &keelpay.LastError{Code: "outcome_unknown"}}
	now := t0.Add(time.Hour)
	for _, tc := range []struct {
		name string
		res  provider.RefundResult
		typ  keelpay.EventType
		want keelpay.Refund
	}{
		{"succeeded", provider.RefundResult{Status: provider.RefundSucceeded}, keelpay.EventRefundSucceeded,
			keelpay.Refund{ID: "re_1", Status: keelpay.RefundSucceeded, Attempts: 1, SucceededAt: now, UpdatedAt: now}},
		{"rejected, the provider's words kept", provider.RefundResult{Status: provider.RefundFailed,
			Failure: &provider.Failure{Code: provider.FailureRefundRejected, Message: "Too late for this card."}}, keelpay.EventRefundFailed,
			keelpay.Refund{ID: "re_1", Status: keelpay.RefundFailed, Attempts: 1, UpdatedAt: now,
				LastError: &keelpay.LastError{Code: "refund_rejected", Message: "Too late for this card."}}},
		{"rejected without words", provider.RefundResult{Status: provider.RefundFailed,
			Failure: &provider.Failure{Code: provider.FailureRefundRejected}}, keelpay.EventRefundFailed,
			keelpay.Refund{ID: "re_1", Status: keelpay.RefundFailed, Attempts: 1, UpdatedAt: now,
				LastError: &keelpay.LastError{Code: "refund_rejected", Message: "The provider rejected the refund."}}},
		{"order unknown", provider.RefundResult{Status: provider.RefundFailed,
			Failure: &provider.Failure{Code: provider.FailureOrderNotFound, Message: "internal text"}}, keelpay.EventRefundFailed,
			keelpay.Refund{ID: "re_1", Status: keelpay.RefundFailed, Attempts: 1, UpdatedAt: now,
				LastError: &keelpay.LastError{Code: "order_not_found", Message: "The provider does not know the order; contact the provider."}}},
		{"another failure becomes provider_error", provider.RefundResult{Status: provider.RefundFailed,
			Failure: &provider.Failure{Code: provider.FailureCardDeclined}}, keelpay.EventRefundFailed,
			keelpay.Refund{ID: "re_1", Status: keelpay.RefundFailed, Attempts: 1, UpdatedAt: now,
				LastError: &keelpay.LastError{Code: "provider_error", Message: "The provider could not process the refund; send it again later or contact the provider."}}},
		{"still pending: nothing final", provider.RefundResult{Status: provider.RefundPending}, "", r},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, typ := settled(r, &tc.res, now)
			require.Equal(t, tc.typ, typ)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

func TestUnknownAndLookAgain(t *testing.T) {
	t.Parallel()
	r := keelpay.Refund{ID: "re_1", Status: keelpay.RefundPending, Attempts: 1, LastSentAt: t0, ReconcileAt: t0.Add(time.Minute)}
	u := unknown(r, t0.Add(time.Second))
	require.Equal(t, "outcome_unknown", u.LastError.Code)
	require.Equal(t, keelpay.RefundPending, u.Status)
	require.Equal(t, t0.Add(time.Minute), u.ReconcileAt, "the schedule is kept")

	// Looked up at +1 min and +5 min without an answer: next at +5, +15.
	a := lookAgain(u, t0.Add(time.Minute))
	require.Equal(t, 1, a.ReconcileCount)
	require.Equal(t, t0.Add(5*time.Minute), a.ReconcileAt)
	a = lookAgain(a, t0.Add(5*time.Minute))
	require.Equal(t, 2, a.ReconcileCount)
	require.Equal(t, t0.Add(15*time.Minute), a.ReconcileAt)
}

func TestFailedLater(t *testing.T) {
	t.Parallel()
	paid := keelpay.Refund{ID: "re_1", Status: keelpay.RefundSucceeded, Attempts: 1, SucceededAt: t0, UpdatedAt: t0}
	now := t0.Add(time.Hour)
	rejected := &provider.RefundResult{Status: provider.RefundFailed,
		Failure: &provider.Failure{Code: provider.FailureProviderError, Message: "The bank returned the refund."}}

	got, typ := failedLater(paid, rejected, now)
	require.Equal(t, keelpay.EventRefundFailed, typ)
	require.Empty(t, cmp.Diff(keelpay.Refund{ID: "re_1", Status: keelpay.RefundFailed, Attempts: 1, UpdatedAt: now,
		LastError: &keelpay.LastError{Code: "refund_rejected", Message: "The bank returned the refund."}}, got),
		"refund_rejected with the provider's words, whatever its code; succeeded_at cleared")

	// It may be sent again, as a new attempt.
	next, err := resend(got, "rfatt_2", now)
	require.NoError(t, err)
	require.Equal(t, "rfatt_2", next.AttemptID)
	require.Equal(t, 2, next.Attempts)

	for name, tc := range map[string]struct {
		r   keelpay.Refund
		res *provider.RefundResult
	}{
		"still succeeded": {paid, &provider.RefundResult{Status: provider.RefundSucceeded}},
		"not succeeded":   {keelpay.Refund{ID: "re_1", Status: keelpay.RefundFailed}, rejected},
		"pending":         {paid, &provider.RefundResult{Status: provider.RefundPending}},
	} {
		got, typ := failedLater(tc.r, tc.res, now)
		require.Empty(t, typ, name)
		require.Equal(t, tc.r, got, name)
	}
}
