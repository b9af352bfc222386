package sandbox_test

import (
	"context"
	"time"

	"testing"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay/provider"
	"github.com/keelpay/keelpay/provider/sandbox"
)

// refundOf sends the refund of the charge res made with attempt id
// chargeAttemptID.
func (b *bundle) refundOf(attemptID, chargeAttemptID string, res *provider.ChargeResult) (*provider.RefundResult, error) {
	return b.sb.Refund(b.ctx, provider.RefundRequest{
		MerchantID: merchant, AttemptID: attemptID, ChargeAttemptID: chargeAttemptID,
		OrderID: res.OrderID, Amount: res.Amount, Currency: res.Currency,
	})
}

func TestRefundCards(t *testing.T) {
	t.Parallel()
	failed := func(code provider.FailureCode) *provider.RefundResult {
		return &provider.RefundResult{Status: provider.RefundFailed, Failure: &provider.Failure{Code: code}}
	}
	tests := []struct {
		number   string
		want     *provider.RefundResult
		wantKind provider.ErrorKind
		refunds  int
	}{
		{number: sandbox.CardVisa, want: &provider.RefundResult{Status: provider.RefundSucceeded}, refunds: 1},
		{number: sandbox.CardMastercard, want: &provider.RefundResult{Status: provider.RefundSucceeded}, refunds: 1},
		{number: sandbox.CardRefundRejected, want: failed(provider.FailureRefundRejected)},
		{number: sandbox.CardRefundOrderNotFound, want: failed(provider.FailureOrderNotFound)},
		{number: sandbox.CardRefundOutcomeUnknown, wantKind: provider.KindOutcomeUnknown},
		{number: sandbox.CardRefundProviderError, want: failed(provider.FailureProviderError)},
		{number: sandbox.CardNoOrderID, want: failed(provider.FailureOrderNotFound)},
	}
	for _, tt := range tests {
		t.Run(tt.number, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			charge := b.succeeded(t, "att_1", tt.number)
			got, err := b.refundOf("ref_1", "att_1", charge)
			if tt.wantKind != "" {
				requireKind(t, tt.wantKind, err)
				require.Nil(t, got)
				require.Zero(t, b.sb.Refunds())
				return
			}
			require.NoError(t, err)
			requireDiff(t, tt.want, got, volatile)
			if got.Failure != nil {
				require.NotEmpty(t, got.Failure.Message)
			}
			require.Equal(t, tt.refunds, b.sb.Refunds())

			looked, err := b.sb.LookupRefund(b.ctx, merchant, "ref_1")
			require.NoError(t, err)
			requireDiff(t, got, looked)
			again, err := b.refundOf("ref_1", "att_1", charge)
			require.NoError(t, err)
			requireDiff(t, got, again)
			require.Equal(t, tt.refunds, b.sb.Refunds())
		})
	}
}

func TestRefundRejectedCarriesProviderText(t *testing.T) {
	t.Parallel()
	b := setup(t)
	charge := b.succeeded(t, "att_1", sandbox.CardRefundRejected)
	got, err := b.refundOf("ref_1", "att_1", charge)
	require.NoError(t, err)
	require.Equal(t, "Refund declined by issuer.", got.Failure.Message)
}

func TestRefundOutcomeUnknown(t *testing.T) {
	t.Parallel()
	b := setup(t)
	charge := b.succeeded(t, "att_1", sandbox.CardRefundOutcomeUnknown)
	_, err := b.refundOf("ref_1", "att_1", charge)
	requireKind(t, provider.KindOutcomeUnknown, err)

	b.clock.Advance(sandbox.ResolveAfter - 1)
	got, err := b.sb.LookupRefund(b.ctx, merchant, "ref_1")
	require.NoError(t, err)
	requireDiff(t, &provider.RefundResult{Status: provider.RefundPending}, got)
	_, err = b.refundOf("ref_1", "att_1", charge)
	requireKind(t, provider.KindOutcomeUnknown, err)
	// Another send while the first is pending does not pay out again.
	got, err = b.refundOf("ref_2", "att_1", charge)
	require.NoError(t, err)
	require.Equal(t, provider.FailureRefundRejected, got.Failure.Code)
	require.Zero(t, b.sb.Refunds())

	b.clock.Advance(1)
	got, err = b.sb.LookupRefund(b.ctx, merchant, "ref_1")
	require.NoError(t, err)
	requireDiff(t, &provider.RefundResult{Status: provider.RefundSucceeded}, got)
	got, err = b.refundOf("ref_1", "att_1", charge)
	require.NoError(t, err)
	require.Equal(t, provider.RefundSucceeded, got.Status)
	require.Equal(t, 1, b.sb.Refunds())
}

func TestRefundPaysOutOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	charge := b.succeeded(t, "att_1", sandbox.CardVisa)
	got, err := b.refundOf("ref_1", "att_1", charge)
	require.NoError(t, err)
	require.Equal(t, provider.RefundSucceeded, got.Status)

	got, err = b.refundOf("ref_2", "att_1", charge)
	require.NoError(t, err)
	require.Equal(t, provider.RefundFailed, got.Status)
	require.Equal(t, provider.FailureRefundRejected, got.Failure.Code)
	require.Equal(t, 1, b.sb.Refunds())
}

func TestRefundRefusals(t *testing.T) {
	t.Parallel()
	b := setup(t)
	charge := b.succeeded(t, "att_ok", sandbox.CardVisa)
	declined, err := b.chargeNew(t, "att_declined", sandbox.CardDeclined)
	require.NoError(t, err)
	voided := b.succeeded(t, "att_voided", sandbox.CardVisa)
	require.NoError(t, b.sb.Void(b.ctx, merchant, "att_voided"))

	tests := []struct {
		name string
		req  provider.RefundRequest
		want provider.FailureCode
	}{
		{"unknown charge", provider.RefundRequest{ChargeAttemptID: "att_nope", OrderID: charge.OrderID, Amount: 1234, Currency: "EUR"}, provider.FailureOrderNotFound},
		{"other order", provider.RefundRequest{ChargeAttemptID: "att_ok", OrderID: "ord_other", Amount: 1234, Currency: "EUR"}, provider.FailureOrderNotFound},
		{"no order", provider.RefundRequest{ChargeAttemptID: "att_ok", Amount: 1234, Currency: "EUR"}, provider.FailureOrderNotFound},
		{"failed charge", provider.RefundRequest{ChargeAttemptID: "att_declined", OrderID: declined.OrderID, Amount: 1234, Currency: "EUR"}, provider.FailureOrderNotFound},
		{"part of the amount", provider.RefundRequest{ChargeAttemptID: "att_ok", OrderID: charge.OrderID, Amount: 1000, Currency: "EUR"}, provider.FailureRefundRejected},
		{"other currency", provider.RefundRequest{ChargeAttemptID: "att_ok", OrderID: charge.OrderID, Amount: 1234, Currency: "USD"}, provider.FailureRefundRejected},
		{"voided charge", provider.RefundRequest{ChargeAttemptID: "att_voided", OrderID: voided.OrderID, Amount: 1234, Currency: "EUR"}, provider.FailureRefundRejected},
	}
	for _, tt := range tests {
		tt.req.MerchantID, tt.req.AttemptID = merchant, "ref_"+tt.name
		got, err := b.sb.Refund(b.ctx, tt.req)
		require.NoError(t, err, tt.name)
		require.Equal(t, provider.RefundFailed, got.Status, tt.name)
		require.Equal(t, tt.want, got.Failure.Code, tt.name)
	}
	require.Zero(t, b.sb.Refunds())

	// Another merchant cannot refund the charge.
	got, err := b.sb.Refund(b.ctx, provider.RefundRequest{MerchantID: "merch_other", AttemptID: "ref_1", ChargeAttemptID: "att_ok", OrderID: charge.OrderID, Amount: 1234, Currency: "EUR"})
	require.NoError(t, err)
	require.Equal(t, provider.FailureOrderNotFound, got.Failure.Code)

	_, err = b.sb.Refund(b.ctx, provider.RefundRequest{MerchantID: merchant, ChargeAttemptID: "att_ok", OrderID: charge.OrderID, Amount: 1234, Currency: "EUR"})
	requireKind(t, provider.KindInvalidRequest, err)

	_, err = b.sb.LookupRefund(b.ctx, merchant, "ref_never")
	require.ErrorIs(t, err, provider.ErrUnknownAttempt)
}

// TestRefundThatFailsLater: CardRefundFailsLater's refund succeeds, fails
// ResolveAfter later (found on the clock by Settle or a look-up), notifies
// the refund notifier once, and a refund sent again pays out.
func TestRefundThatFailsLater(t *testing.T) {
	t.Parallel()
	b := setup(t)
	var notified []string
	b.sb.SetRefundNotifier(func(_ context.Context, merchantID, attemptID string) {
		require.Equal(t, merchant, merchantID)
		notified = append(notified, attemptID)
	})
	charge := b.succeeded(t, "att_1", sandbox.CardRefundFailsLater)
	got, err := b.refundOf("ref_1", "att_1", charge)
	require.NoError(t, err)
	require.Equal(t, provider.RefundSucceeded, got.Status)
	require.Equal(t, 1, b.sb.Refunds())

	b.clock.Advance(sandbox.ResolveAfter - time.Second)
	require.NoError(t, b.sb.Settle(b.ctx))
	require.Empty(t, notified)
	looked, err := b.sb.LookupRefund(b.ctx, merchant, "ref_1")
	require.NoError(t, err)
	require.Equal(t, provider.RefundSucceeded, looked.Status)

	b.clock.Advance(time.Second)
	require.NoError(t, b.sb.Settle(b.ctx))
	require.Equal(t, []string{"ref_1"}, notified)
	looked, err = b.sb.LookupRefund(b.ctx, merchant, "ref_1")
	require.NoError(t, err)
	require.Equal(t, provider.RefundFailed, looked.Status)
	require.Equal(t, provider.FailureRefundRejected, looked.Failure.Code)
	require.NotEmpty(t, looked.Failure.Message)
	require.Zero(t, b.sb.Refunds(), "the money went back to the merchant")
	require.NoError(t, b.sb.Settle(b.ctx))
	require.Len(t, notified, 1, "notified once")

	again, err := b.refundOf("ref_2", "att_1", charge)
	require.NoError(t, err)
	require.Equal(t, provider.RefundSucceeded, again.Status, "%+v", again.Failure)
	require.Equal(t, 1, b.sb.Refunds())
}
