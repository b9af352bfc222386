package httpapi_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/provider"
	"github.com/keelpay/keelpay/provider/sandbox"
)

// Real time of the answer deadline tests: the server's WriteTimeout, the
// services' AnswerTimeout below it, and a provider that answers only after
// the WriteTimeout (unless released earlier).
const (
	slowWriteTimeout  = 2 * time.Second
	slowAnswerTimeout = 300 * time.Millisecond
	slowProviderHang  = 3 * time.Second
)

// slowProvider holds charges and refunds until release is closed, or for
// slowProviderHang: a provider slower than the server's WriteTimeout.
type slowProvider struct {
	provider.Provider
	release chan struct{}
}

func (p *slowProvider) hang() {
	select {
	case <-p.release:
	case <-time.After(slowProviderHang):
	}
}

func (p *slowProvider) Charge(ctx context.Context, r provider.ChargeRequest) (*provider.ChargeResult, error) {
	p.hang()
	return p.Provider.Charge(ctx, r)
}

func (p *slowProvider) Refund(ctx context.Context, r provider.RefundRequest) (*provider.RefundResult, error) {
	p.hang()
	return p.Provider.Refund(ctx, r)
}

func slowSetup(t *testing.T, slow *slowProvider, holdCharges bool) *bundle {
	return setup(t, func(o *options) {
		o.answerTimeout, o.writeTimeout = slowAnswerTimeout, slowWriteTimeout
		o.wrap = func(p provider.Provider) provider.Provider {
			slow.Provider = p
			if !holdCharges {
				// Only refunds are slow.
				return refundsOnly{slow}
			}
			return slow
		}
	})
}

// refundsOnly passes charges straight to the sandbox.
type refundsOnly struct{ *slowProvider }

func (p refundsOnly) Charge(ctx context.Context, r provider.ChargeRequest) (*provider.ChargeResult, error) {
	return p.Provider.Charge(ctx, r)
}

// TestConfirmAnswersBeforeTheWriteTimeout: a provider slower than the
// server's WriteTimeout. The confirm answers in full before the time-out,
// processing with outcome_unknown, and that is the answer its key keeps;
// the charge goes on, and the run that made it commits the outcome.
func TestConfirmAnswersBeforeTheWriteTimeout(t *testing.T) {
	t.Parallel()
	slow := &slowProvider{release: make(chan struct{})}
	b := slowSetup(t, slow, true)
	s := b.shop(t, "app_shop")
	card := b.saveCard(t, s, sandbox.CardVisa)
	id := pi(t, b.createIntent(t, s, intentBody(s, 4200)))
	confirm := func() *response {
		return b.do(t, req{method: "POST", path: "/v1/payment_intents/" + id + "/confirm", key: s.sk,
			body: map[string]any{"payment_method": card}, header: map[string]string{"Idempotency-Key": "order-7"}})
	}

	start := time.Now()
	first := confirm()
	require.Less(t, time.Since(start), slowWriteTimeout, "answered before the write time-out")
	requireStatus(t, first, http.StatusOK, keelpay.IntentProcessing)
	require.Equal(t, "outcome_unknown", lastError(first)["code"])

	// A retry with the key gets the answer the client got.
	replay := confirm()
	require.Equal(t, http.StatusOK, replay.Status)
	require.Equal(t, "true", replay.Header.Get("Idempotent-Replayed"))
	require.Equal(t, first.Raw, replay.Raw)
	// The intent says so too.
	read := b.getIntent(t, s, id)
	require.Equal(t, "processing", read.str("status"))
	require.Equal(t, "outcome_unknown", lastError(read)["code"], "%s", read.Raw)

	// The provider answers: the run that made the call commits it.
	close(slow.release)
	require.Eventually(t, func() bool {
		return b.getIntent(t, s, id).str("status") == string(keelpay.IntentSucceeded)
	}, 10*time.Second, 10*time.Millisecond)
	require.NotContains(t, b.getIntent(t, s, id).Body, "last_error")
	b.requireOneEvent(t, s, keelpay.EventPaymentIntentSucceeded, id)
	require.Equal(t, 1, b.sandbox.Charges(), "charged once")
	again := confirm()
	require.Equal(t, first.Raw, again.Raw, "the key keeps the answer the client got")
}

// TestConfirmAnsweredProcessingWhoseProviderWasUnavailable: the provider
// answers after the deadline that it did nothing. The client was told to
// wait for the webhook, so the attempt is closed as a failure with its
// event, not silently withdrawn.
func TestConfirmAnsweredProcessingWhoseProviderWasUnavailable(t *testing.T) {
	t.Parallel()
	slow := &slowProvider{release: make(chan struct{})}
	b := slowSetup(t, slow, true)
	s := b.shop(t, "app_shop")
	card := b.saveCard(t, s, sandbox.CardVisa)
	id := pi(t, b.createIntent(t, s, intentBody(s, 4200)))
	r := b.do(t, req{method: "POST", path: "/v1/payment_intents/" + id + "/confirm", key: s.sk,
		body: map[string]any{"payment_method": card}})
	requireStatus(t, r, http.StatusOK, keelpay.IntentProcessing)
	b.sandbox.SetUnavailable(true)
	close(slow.release)
	require.Eventually(t, func() bool {
		return b.getIntent(t, s, id).str("status") == string(keelpay.IntentRequiresPaymentMethod)
	}, 10*time.Second, 10*time.Millisecond)
	b.sandbox.SetUnavailable(false)
	require.Equal(t, "provider_error", lastError(b.getIntent(t, s, id))["code"])
	b.requireOneEvent(t, s, keelpay.EventPaymentIntentPaymentFailed, id)
	require.Zero(t, b.sandbox.Charges())
}

// TestRefundSendAnswersBeforeTheWriteTimeout: the same for a refund send:
// pending with outcome_unknown in time, kept for its key, and the outcome
// committed when the provider answers.
func TestRefundSendAnswersBeforeTheWriteTimeout(t *testing.T) {
	t.Parallel()
	slow := &slowProvider{release: make(chan struct{})}
	b := slowSetup(t, slow, false)
	s := b.shop(t, "app_shop")
	id := b.paid(t, s, sandbox.CardVisa)
	send := func() *response {
		return b.do(t, req{method: "POST", path: "/v1/refunds", key: s.sk, body: refundBody(id),
			header: map[string]string{"Idempotency-Key": "refund-7"}})
	}

	start := time.Now()
	first := send()
	require.Less(t, time.Since(start), slowWriteTimeout, "answered before the write time-out")
	require.Equal(t, http.StatusCreated, first.Status, "%s", first.Raw)
	require.Equal(t, "pending", first.str("status"))
	require.Equal(t, "outcome_unknown", first.Body["last_error"].(map[string]any)["code"])
	replay := send()
	require.Equal(t, "true", replay.Header.Get("Idempotent-Replayed"))
	require.Equal(t, first.Raw, replay.Raw)
	refundID := first.str("id")
	read := b.do(t, req{method: "GET", path: "/v1/refunds/" + refundID, key: s.sk})
	require.Equal(t, "pending", read.str("status"))
	require.Equal(t, "outcome_unknown", read.Body["last_error"].(map[string]any)["code"], "%s", read.Raw)

	close(slow.release)
	require.Eventually(t, func() bool {
		return b.do(t, req{method: "GET", path: "/v1/refunds/" + refundID, key: s.sk}).str("status") == "succeeded"
	}, 10*time.Second, 10*time.Millisecond)
	require.Len(t, b.events(t, s.id, keelpay.EventRefundSucceeded), 1)
	require.Nil(t, b.do(t, req{method: "GET", path: "/v1/refunds/" + refundID, key: s.sk}).Body["last_error"])
	require.Equal(t, 1, b.sandbox.Refunds())
	require.Equal(t, first.Raw, send().Raw, "the key keeps the answer the client got")
}

// TestConfirmPastItsDeadlineThatAsksFor3DS: the provider's late answer is
// a 3D Secure challenge: the intent moves on to requires_action, without
// the early answer's outcome_unknown.
func TestConfirmPastItsDeadlineThatAsksFor3DS(t *testing.T) {
	t.Parallel()
	slow := &slowProvider{release: make(chan struct{})}
	b := slowSetup(t, slow, true)
	s := b.shop(t, "app_shop")
	card := b.saveCard(t, s, sandbox.CardThreeDSecure)
	id := pi(t, b.createIntent(t, s, intentBody(s, 4200)))
	r := b.do(t, req{method: "POST", path: "/v1/payment_intents/" + id + "/confirm", key: s.sk,
		body: map[string]any{"payment_method": card}})
	requireStatus(t, r, http.StatusOK, keelpay.IntentProcessing)
	close(slow.release)
	require.Eventually(t, func() bool {
		return b.getIntent(t, s, id).str("status") == string(keelpay.IntentRequiresAction)
	}, 10*time.Second, 10*time.Millisecond)
	got := b.getIntent(t, s, id)
	require.NotContains(t, got.Body, "last_error", "%s", got.Raw)
	require.NotNil(t, got.Body["next_action"])
}
