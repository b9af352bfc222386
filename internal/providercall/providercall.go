// Package providercall is the one policy of the services' calls to the
// provider: each call runs under a context detached from the request (a
// client that hangs up must not turn a charge or a refund into an unknown
// outcome) and bounded by a time-out, and a provider error that did
// nothing becomes one answer, with the provider's Retry-After when it gave
// one.
package providercall

import (
	"cmp"
	"context"
	"errors"
	"time"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/provider"
)

// Retry-After defaults, when the provider gives none.
const (
	UnavailableRetryAfter   = 30 * time.Second
	AccessPendingRetryAfter = 60 * time.Second
)

// Context returns the context of one provider call: it keeps ctx's values
// but not its cancellation, and ends after timeout
// (provider.CallTimeoutDefault when not positive).
func Context(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	if timeout <= 0 {
		timeout = provider.CallTimeoutDefault
	}
	return context.WithTimeout(context.WithoutCancel(ctx), timeout)
}

// RetryAfter is how long a client should wait after err before it tries
// again: the provider's Retry-After, or the default of err's kind.
func RetryAfter(err error) time.Duration {
	var pe *provider.Error
	if errors.As(err, &pe) && pe.RetryAfter > 0 {
		return pe.RetryAfter
	}
	if provider.KindOf(err) == provider.KindAccessPending {
		return AccessPendingRetryAfter
	}
	return UnavailableRetryAfter
}

// Unavailable is the provider_api_unavailable answer: nothing was done,
// retry after retryAfter (UnavailableRetryAfter when not positive).
func Unavailable(retryAfter time.Duration) *keelpay.Error {
	return keelpay.NewError(keelpay.CodeProviderAPIUnavailable,
		"The provider is unavailable; nothing was done. Retry after the time in Retry-After.").
		WithRetryAfter(cmp.Or(max(retryAfter, 0), UnavailableRetryAfter))
}

// NotSent returns the answer to a provider error that did nothing and is
// worth repeating (unavailable: provider_api_unavailable; access pending:
// platform_access_pending), with its Retry-After, and nil for any other
// error.
func NotSent(err error) *keelpay.Error {
	switch provider.KindOf(err) {
	case provider.KindUnavailable:
		return Unavailable(RetryAfter(err))
	case provider.KindAccessPending:
		return keelpay.NewError(keelpay.CodePlatformAccessPending,
			"The platform's access to the store is not ready yet; nothing was done. Retry after the time in Retry-After.").
			WithRetryAfter(RetryAfter(err))
	}
	return nil
}
