package events

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/keelpay/keelpay"
)

var t0 = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

func TestJudge(t *testing.T) {
	t.Parallel()
	for status, want := range map[int]keelpay.DeliveryFailure{
		200: "", 204: "", 299: "",
		301: keelpay.FailureRedirect, 302: keelpay.FailureRedirect, 399: keelpay.FailureRedirect,
		100: keelpay.FailureHTTPStatus, 400: keelpay.FailureHTTPStatus, 410: keelpay.FailureHTTPStatus,
		500: keelpay.FailureHTTPStatus, 503: keelpay.FailureHTTPStatus,
	} {
		if got := judge(status); got != want {
			t.Errorf("judge(%d) = %q, want %q", status, got, want)
		}
	}
}

func TestAfterAttempt(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		attempts int
		status   int
		failure  keelpay.DeliveryFailure
		want     keelpay.Delivery
	}{
		{"first attempt succeeds", 0, 204, "",
			keelpay.Delivery{Status: keelpay.DeliverySucceeded, Attempts: 1, LastAttemptAt: t0, LastStatusCode: 204}},
		{"first attempt fails: again in a minute", 0, 500, keelpay.FailureHTTPStatus,
			keelpay.Delivery{Status: keelpay.DeliveryPending, Attempts: 1, LastAttemptAt: t0, LastStatusCode: 500,
				LastFailure: keelpay.FailureHTTPStatus, NextAttemptAt: t0.Add(time.Minute)}},
		{"no answer: again in five minutes", 1, 0, keelpay.FailureTimeout,
			keelpay.Delivery{Status: keelpay.DeliveryPending, Attempts: 2, LastAttemptAt: t0,
				LastFailure: keelpay.FailureTimeout, NextAttemptAt: t0.Add(5 * time.Minute)}},
		{"sixth failure: the last wait, a day", 5, 302, keelpay.FailureRedirect,
			keelpay.Delivery{Status: keelpay.DeliveryPending, Attempts: 6, LastAttemptAt: t0, LastStatusCode: 302,
				LastFailure: keelpay.FailureRedirect, NextAttemptAt: t0.Add(24 * time.Hour)}},
		{"seventh failure: failed for good", 6, 0, keelpay.FailureConnectionError,
			keelpay.Delivery{Status: keelpay.DeliveryFailed, Attempts: 7, LastAttemptAt: t0,
				LastFailure: keelpay.FailureConnectionError}},
		{"seventh attempt succeeds", 6, 200, "",
			keelpay.Delivery{Status: keelpay.DeliverySucceeded, Attempts: 7, LastAttemptAt: t0, LastStatusCode: 200}},
		{"a redelivered one past the table fails at once", 9, 500, keelpay.FailureHTTPStatus,
			keelpay.Delivery{Status: keelpay.DeliveryFailed, Attempts: 10, LastAttemptAt: t0, LastStatusCode: 500,
				LastFailure: keelpay.FailureHTTPStatus}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tc.want, afterAttempt(tc.attempts, t0, tc.status, tc.failure)); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

func TestRetryScheduleSpansADayAndAHalf(t *testing.T) {
	t.Parallel()
	var total time.Duration
	for n := 1; n < MaxAttempts; n++ {
		if RetryDelay(n) <= 0 {
			t.Fatalf("no delay after attempt %d of %d", n, MaxAttempts)
		}
		total += RetryDelay(n)
	}
	if RetryDelay(0) != 0 || RetryDelay(MaxAttempts) != 0 {
		t.Error("a delay outside attempts 1 to MaxAttempts-1")
	}
	if want := 32*time.Hour + 36*time.Minute; total != want {
		t.Errorf("first to last attempt: %v, want %v", total, want)
	}
}
