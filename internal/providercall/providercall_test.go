package providercall

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/provider"
)

func TestNotSent(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		err   error
		code  keelpay.Code
		after time.Duration
	}{
		{"unavailable, the provider's wait", &provider.Error{Kind: provider.KindUnavailable, RetryAfter: 7 * time.Second}, keelpay.CodeProviderAPIUnavailable, 7 * time.Second},
		{"unavailable, no wait given", &provider.Error{Kind: provider.KindUnavailable}, keelpay.CodeProviderAPIUnavailable, UnavailableRetryAfter},
		{"access pending, the provider's wait", &provider.Error{Kind: provider.KindAccessPending, RetryAfter: 90 * time.Second}, keelpay.CodePlatformAccessPending, 90 * time.Second},
		{"access pending, no wait given", &provider.Error{Kind: provider.KindAccessPending}, keelpay.CodePlatformAccessPending, AccessPendingRetryAfter},
		{"wrapped", fmt.Errorf("charge: %w", &provider.Error{Kind: provider.KindUnavailable}), keelpay.CodeProviderAPIUnavailable, UnavailableRetryAfter},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := NotSent(tc.err)
			require.NotNil(t, e)
			require.Equal(t, tc.code, e.Code)
			require.Equal(t, tc.after, e.RetryAfter)
		})
	}
	for _, err := range []error{
		nil,
		errors.New("connection reset"),
		&provider.Error{Kind: provider.KindOutcomeUnknown},
		provider.ErrUnknownAttempt,
	} {
		require.Nil(t, NotSent(err), "%v may have done something", err)
	}
}

func TestContextOutlivesTheRequest(t *testing.T) {
	t.Parallel()
	req, cancel := context.WithCancel(context.Background())
	call, done := Context(req, time.Hour)
	defer done()
	cancel()
	require.NoError(t, call.Err(), "a client that hangs up does not cut the call off")
	deadline, ok := call.Deadline()
	require.True(t, ok, "the call has a time-out")
	require.WithinDuration(t, time.Now().Add(time.Hour), deadline, time.Minute)

	call, done = Context(context.Background(), 0)
	defer done()
	deadline, ok = call.Deadline()
	require.True(t, ok)
	require.WithinDuration(t, time.Now().Add(provider.CallTimeoutDefault), deadline, time.Minute, "no time-out given: the default")
}
