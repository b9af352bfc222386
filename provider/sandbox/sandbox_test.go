package sandbox_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay/keelpaytest"
	"github.com/keelpay/keelpay/provider"
	"github.com/keelpay/keelpay/provider/sandbox"
)

const merchant = "merch_shop1"

// start is the test clock's start; the expiry of newCard is after it.
var start = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

type bundle struct {
	ctx   context.Context
	clock *keelpaytest.Clock
	sb    *sandbox.Sandbox
}

func setup(t *testing.T) *bundle {
	t.Helper()
	clock := keelpaytest.NewClock(start)
	sb := sandbox.New(sandbox.Config{Clock: clock, BaseURL: "https://sandbox.test/"})
	t.Cleanup(func() { require.NoError(t, sb.Close()) })
	return &bundle{ctx: t.Context(), clock: clock, sb: sb}
}

func newCard(number string) *provider.SaveCardRequest {
	return &provider.SaveCardRequest{MerchantID: merchant, Number: number, ExpMonth: 12, ExpYear: 2030, CVC: "123", Name: "Jane Roe"}
}

// chargeNew charges a new card of 12.34 EUR with attempt id attemptID.
func (b *bundle) chargeNew(t *testing.T, attemptID, number string) (*provider.ChargeResult, error) {
	t.Helper()
	return b.sb.Charge(b.ctx, provider.ChargeRequest{
		MerchantID: merchant, AttemptID: attemptID, NewCard: newCard(number), Amount: 1234, Currency: "EUR",
	})
}

// succeeded charges a new card and requires it to succeed.
func (b *bundle) succeeded(t *testing.T, attemptID, number string) *provider.ChargeResult {
	t.Helper()
	res, err := b.chargeNew(t, attemptID, number)
	require.NoError(t, err)
	require.Equal(t, provider.ChargeSucceeded, res.Status, "%+v", res.Failure)
	return res
}

// requireKind requires err to be a provider.Error of kind want.
func requireKind(t *testing.T, want provider.ErrorKind, err error) *provider.Error {
	t.Helper()
	var e *provider.Error
	require.True(t, errors.As(err, &e), "want a *provider.Error of kind %s, got %v", want, err)
	require.Equal(t, want, e.Kind, "error: %v", err)
	return e
}

func requireDiff(t *testing.T, want, got any, opts ...cmp.Option) {
	t.Helper()
	if diff := cmp.Diff(want, got, opts...); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
}
