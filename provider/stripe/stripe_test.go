package stripe_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/stripe/stripe-go/v84/webhook"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/provider"
	"github.com/keelpay/keelpay/provider/stripe"
)

func charge(number string) provider.ChargeRequest {
	return provider.ChargeRequest{
		MerchantID: testAccount,
		AttemptID:  keelpay.NewID("att_"),
		NewCard:    &provider.SaveCardRequest{MerchantID: testAccount, Number: number, ExpMonth: 12, ExpYear: 2031, CVC: "123"},
		Amount:     2500,
		Currency:   "EUR",
	}
}

func TestLookupWhileSearchLags(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	r := charge(fakeCardSucceeds)
	res, err := e.p.Charge(ctx, r)
	require.NoError(t, err)
	require.Equal(t, provider.ChargeSucceeded, res.Status)

	// After a restart there is no hint, and the search does not show the
	// PaymentIntent yet: the idempotency key says Stripe has the attempt,
	// so it is pending, never unknown.
	restarted := e.restart(t)
	got, err := restarted.LookupCharge(ctx, testAccount, r.AttemptID)
	require.NoError(t, err)
	assert.Equal(t, provider.ChargePending, got.Status)
	err = restarted.Void(ctx, testAccount, r.AttemptID)
	assert.Equal(t, provider.KindOutcomeUnknown, provider.KindOf(err), "a void that cannot find the charge yet: %v", err)

	e.fake.advance(searchLag)
	got, err = restarted.LookupCharge(ctx, testAccount, r.AttemptID)
	require.NoError(t, err)
	assert.Equal(t, provider.ChargeSucceeded, got.Status)
	assert.Equal(t, res.OrderID, got.OrderID)
	assert.NotEmpty(t, got.AuthorizationCode)
}

func TestLookupAfterTheIdempotencyKeyExpired(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	r := charge(fakeCardSucceeds)
	res, err := e.p.Charge(ctx, r)
	require.NoError(t, err)
	never := keelpay.NewID("att_")

	e.fake.advance(25 * time.Hour)
	// The key is gone and, after a restart, so is the hint; the search,
	// consistent long since, finds it.
	restarted := e.restart(t)
	got, err := restarted.LookupCharge(ctx, testAccount, r.AttemptID)
	require.NoError(t, err)
	assert.Equal(t, provider.ChargeSucceeded, got.Status)
	assert.Equal(t, res.OrderID, got.OrderID)
	_, err = restarted.LookupCharge(ctx, testAccount, never)
	assert.ErrorIs(t, err, provider.ErrUnknownAttempt)
}

func TestChargeWhoseAnswerIsLost(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	r := charge(fakeCardLostAnswer)
	_, err := e.p.Charge(ctx, r)
	require.Equal(t, provider.KindOutcomeUnknown, provider.KindOf(err), "%v", err)
	require.Equal(t, 1, e.fake.chargeCount(r.AttemptID), "Stripe charged; only the answer was lost")

	got, err := e.p.LookupCharge(ctx, testAccount, r.AttemptID)
	require.NoError(t, err)
	assert.Equal(t, provider.ChargePending, got.Status, "charged but not searchable yet")

	// The answer gets through again: a repeat replays the first answer.
	e.fake.set(func(f *fakeStripe) { f.dropCards = map[string]bool{} })
	again, err := e.p.Charge(ctx, r)
	require.NoError(t, err)
	assert.Equal(t, provider.ChargeSucceeded, again.Status)
	assert.Equal(t, 1, e.fake.chargeCount(r.AttemptID))
	e.fake.advance(searchLag)
	got, err = e.p.LookupCharge(ctx, testAccount, r.AttemptID)
	require.NoError(t, err)
	assert.Equal(t, again.OrderID, got.OrderID)
}

func TestKeyProbe(t *testing.T) {
	e := newEnv(t)
	r := charge(fakeCardSucceeds)
	_, err := e.p.Charge(t.Context(), r)
	require.NoError(t, err)
	used, err := e.p.KeyUsed(t.Context(), testKey, r.AttemptID, false)
	require.NoError(t, err)
	assert.True(t, used)
	fresh := keelpay.NewID("att_")
	for range 2 {
		used, err = e.p.KeyUsed(t.Context(), testKey, fresh, false)
		require.NoError(t, err)
		assert.False(t, used, "the probe saves nothing under a new key")
	}
	e.fake.advance(24 * time.Hour)
	used, err = e.p.KeyUsed(t.Context(), testKey, r.AttemptID, false)
	require.NoError(t, err)
	assert.False(t, used, "Stripe keeps keys 24 hours")
}

func TestLookupWhenSearchFails(t *testing.T) {
	e := newEnv(t)
	e.fake.set(func(f *fakeStripe) { f.searchErr = true })
	_, err := e.p.LookupCharge(t.Context(), testAccount, keelpay.NewID("att_"))
	require.Error(t, err)
	assert.NotErrorIs(t, err, provider.ErrUnknownAttempt)
	assert.Equal(t, provider.KindUnavailable, provider.KindOf(err))
	err = e.p.Void(t.Context(), testAccount, keelpay.NewID("att_"))
	assert.NotErrorIs(t, err, provider.ErrUnknownAttempt)
}

func TestChargeSendsTheAttemptIDAsIdempotencyKeyAndMetadata(t *testing.T) {
	e := newEnv(t)
	r := charge(fakeCardSucceeds)
	res, err := e.p.Charge(t.Context(), r)
	require.NoError(t, err)
	e.fake.mu.Lock()
	defer e.fake.mu.Unlock()
	pi := e.fake.pis[res.OrderID]
	require.NotNil(t, pi)
	assert.Equal(t, r.AttemptID, pi.metadata[stripe.MetaAttempt])
	assert.Equal(t, testAccount, pi.metadata[stripe.MetaMerchant])
	assert.Equal(t, "eur", pi.currency)
	assert.Contains(t, e.fake.idem, testAccount+"|"+r.AttemptID)
	assert.Equal(t, "https://pay.example/stripe/return?account="+testAccount, pi.returnURL)
}

func TestCheckApplicationSetupErrors(t *testing.T) {
	for _, c := range []struct {
		name    string
		account fakeAccount
		id      string
		kind    provider.ErrorKind
		roles   []string
	}{
		{"another_account", fakeAccount{id: "acct_other", currency: "eur", chargesEnabled: true}, testAccount, provider.KindAppNotFound, nil},
		{"charges_not_enabled", fakeAccount{id: testAccount, currency: "eur"}, testAccount, provider.KindAccessPending, nil},
		{"missing_permissions", fakeAccount{id: testAccount, currency: "usd", chargesEnabled: true,
			forbidden: map[string]bool{"refunds:write": true, "customers:write": true}}, testAccount,
			provider.KindMissingRoles, []string{"customers:write", "refunds:write"}},
		{"cannot_read_the_account", fakeAccount{id: testAccount, currency: "usd", chargesEnabled: true,
			forbidden: map[string]bool{"account:read": true}}, testAccount, provider.KindMissingRoles, []string{"account:read"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFakeStripe(t)
			a := c.account
			f.addAccount("rk_test_case", &a)
			p, err := stripe.New(stripe.Config{APIURL: f.srv.URL, ReturnURL: "https://pay.example/r", RawCardData: true})
			require.NoError(t, err)
			_, err = p.CheckApplication(t.Context(), provider.Credentials{ClientID: c.id, ClientSecret: "rk_test_case"})
			require.Error(t, err)
			assert.Equal(t, c.kind, provider.KindOf(err), "%v", err)
			var pe *provider.Error
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, c.roles, pe.MissingRoles)
			// Nothing was learnt: the merchant cannot be charged.
			_, err = p.Charge(t.Context(), provider.ChargeRequest{MerchantID: c.id, AttemptID: "att_1"})
			assert.Equal(t, provider.KindInvalidRequest, provider.KindOf(err))
		})
	}
}

func TestCheckApplicationLearnsTheKeyAndCurrency(t *testing.T) {
	f := newFakeStripe(t)
	f.addAccount("rk_test_usd", &fakeAccount{id: "acct_usd", currency: "usd", chargesEnabled: true, rawCards: true})
	p, err := stripe.New(stripe.Config{APIURL: f.srv.URL, ReturnURL: "https://pay.example/r", RawCardData: true})
	require.NoError(t, err)
	app, err := p.CheckApplication(t.Context(), provider.Credentials{ClientID: "acct_usd", ClientSecret: "rk_test_usd"})
	require.NoError(t, err)
	assert.Equal(t, provider.Application{MerchantID: "acct_usd", Currency: "USD"}, *app)
	r := charge(fakeCardSucceeds)
	r.MerchantID, r.Currency = "acct_usd", "USD"
	res, err := p.Charge(t.Context(), r)
	require.NoError(t, err)
	assert.Equal(t, provider.ChargeSucceeded, res.Status)
}

// rateLimited answers every request 429, with Retry-After when given.
func rateLimited(retryAfter string) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if retryAfter != "" {
			w.Header().Set("Retry-After", retryAfter)
		}
		writeJSON(w, http.StatusTooManyRequests, map[string]any{"error": map[string]any{"type": "invalid_request_error", "code": "rate_limit", "message": "Too many requests."}})
	}))
}

func TestRateLimitIsUnavailableWithStripesRetryAfter(t *testing.T) {
	for _, c := range []struct {
		header string
		want   time.Duration
	}{{"7", 7 * time.Second}, {"", 0}} {
		srv := rateLimited(c.header)
		t.Cleanup(srv.Close)
		p, err := stripe.New(stripe.Config{APIURL: srv.URL, ReturnURL: "https://pay.example/r", RawCardData: true,
			Accounts: []stripe.Account{{ID: testAccount, Key: testKey}}})
		require.NoError(t, err)
		_, err = p.CheckApplication(t.Context(), provider.Credentials{ClientID: testAccount, ClientSecret: testKey})
		var pe *provider.Error
		require.ErrorAs(t, err, &pe)
		assert.Equal(t, provider.KindUnavailable, pe.Kind)
		assert.Equal(t, c.want, pe.RetryAfter)
		_, err = p.Charge(t.Context(), charge(fakeCardSucceeds))
		require.ErrorAs(t, err, &pe)
		assert.Equal(t, provider.KindUnavailable, pe.Kind, "a rate-limited charge did nothing")
		assert.Equal(t, c.want, pe.RetryAfter)
	}
}

func TestUnreachableStripe(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	p, err := stripe.New(stripe.Config{APIURL: url, ReturnURL: "https://pay.example/r",
		Accounts: []stripe.Account{{ID: testAccount, Key: testKey}}})
	require.NoError(t, err)
	_, err = p.CheckApplication(t.Context(), provider.Credentials{ClientID: testAccount, ClientSecret: testKey})
	assert.Equal(t, provider.KindUnavailable, provider.KindOf(err))
	_, err = p.LookupCharge(t.Context(), testAccount, "att_1")
	assert.Equal(t, provider.KindUnavailable, provider.KindOf(err))
}

func TestRawCardDataRefusedIsCardRejected(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/payment_intents/search" {
			writeJSON(w, 200, map[string]any{"object": "search_result", "data": []any{}, "has_more": false})
			return
		}
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": map[string]any{"type": "invalid_request_error",
			"message": "Sending credit card numbers directly to the Stripe API is generally unsafe. To enable raw card data APIs, contact Stripe."}})
	}))
	t.Cleanup(srv.Close)
	p, err := stripe.New(stripe.Config{APIURL: srv.URL, ReturnURL: "https://pay.example/r", RawCardData: true,
		Accounts: []stripe.Account{{ID: testAccount, Key: testKey}}})
	require.NoError(t, err)
	_, err = p.SaveCard(t.Context(), *charge(fakeCardSucceeds).NewCard)
	assert.Equal(t, provider.KindCardRejected, provider.KindOf(err))
	assert.ErrorContains(t, err, "raw card data")
	res, err := p.Charge(t.Context(), charge(fakeCardSucceeds))
	require.NoError(t, err)
	require.Equal(t, provider.ChargeFailed, res.Status)
	assert.Equal(t, provider.FailureCardRejected, res.Failure.Code)
	assert.Contains(t, res.Failure.Message, "raw card data")
}

func TestWebhookVerifiesTheSignature(t *testing.T) {
	e := newEnv(t)
	notes := make(chan [2]string, 4)
	e.p.SetNotifier(func(_ context.Context, m, a string) { notes <- [2]string{m, a} })
	body := []byte(`{"id":"evt_1","object":"event","type":"payment_intent.succeeded","api_version":"2020-01-01",
		"data":{"object":{"id":"pi_1","object":"payment_intent","metadata":{"keelpay_attempt_id":"att_x","keelpay_merchant_id":"` + testAccount + `"}}}}`)
	post := func(secret string, payload []byte) int {
		signed := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: payload, Secret: secret, Timestamp: time.Now()})
		res, err := http.Post(e.hook.URL, "application/json", bytes.NewReader(payload))
		require.NoError(t, err)
		_ = res.Body.Close()
		req, _ := http.NewRequest(http.MethodPost, e.hook.URL, bytes.NewReader(payload))
		req.Header.Set("Stripe-Signature", signed.Header)
		res, err = http.DefaultClient.Do(req)
		require.NoError(t, err)
		_ = res.Body.Close()
		return res.StatusCode
	}
	assert.Equal(t, http.StatusBadRequest, post("whsec_wrong", body), "a wrong secret")
	assert.Equal(t, http.StatusOK, post(testSecret, body))
	select {
	case n := <-notes:
		assert.Equal(t, [2]string{testAccount, "att_x"}, n)
	case <-time.After(30 * time.Second):
		t.Fatal("no notification")
	}
	// An event naming another merchant is not passed on.
	other := bytes.Replace(body, []byte(testAccount), []byte("acct_other"), 1)
	assert.Equal(t, http.StatusOK, post(testSecret, other))
	tampered := bytes.Replace(body, []byte("att_x"), []byte("att_y"), 1)
	signed := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: body, Secret: testSecret, Timestamp: time.Now()})
	req, _ := http.NewRequest(http.MethodPost, e.hook.URL, bytes.NewReader(tampered))
	req.Header.Set("Stripe-Signature", signed.Header)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	_ = res.Body.Close()
	assert.Equal(t, http.StatusBadRequest, res.StatusCode, "a body changed after signing")
	assert.Empty(t, notes)
}

func TestReturnRouteNotifies(t *testing.T) {
	e := newEnv(t)
	r := charge(fakeCard3DS)
	res, err := e.p.Charge(t.Context(), r)
	require.NoError(t, err)
	require.Equal(t, provider.ChargeRequiresAction, res.Status)
	require.True(t, strings.HasPrefix(res.ActionURL, e.fake.srv.URL+"/3ds/"), res.ActionURL)

	var got [][2]string
	e.p.SetNotifier(func(_ context.Context, m, a string) { got = append(got, [2]string{m, a}) })
	piID := res.ActionURL[strings.LastIndexByte(res.ActionURL, '/')+1:]
	rec := httptest.NewRecorder()
	e.p.ReturnHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/stripe/return?account="+testAccount+"&payment_intent="+piID, nil))
	assert.Equal(t, http.StatusOK, rec.Code)
	assert.Equal(t, [][2]string{{testAccount, r.AttemptID}}, got, "the return route notifies synchronously")

	got = nil
	rec = httptest.NewRecorder()
	e.p.ReturnHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/stripe/return?account="+testAccount+"&payment_intent=pi_unknown", nil))
	assert.Empty(t, got, "a PaymentIntent Stripe does not have notifies nothing")
}

func TestUnconfiguredMerchantDoesNothing(t *testing.T) {
	e := newEnv(t)
	_, err := e.p.LookupCharge(t.Context(), "acct_unknown", "att_1")
	assert.Equal(t, provider.KindInvalidRequest, provider.KindOf(err))
	assert.False(t, errors.Is(err, provider.ErrUnknownAttempt))
}

func TestVoidCancelsAnOpenChallenge(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	r := charge(fakeCard3DS)
	res, err := e.p.Charge(ctx, r)
	require.NoError(t, err)
	require.Equal(t, provider.ChargeRequiresAction, res.Status)
	e.fake.advance(searchLag)
	require.NoError(t, e.p.Void(ctx, testAccount, r.AttemptID))
	require.NoError(t, e.p.Void(ctx, testAccount, r.AttemptID), "voiding twice")
	got, err := e.p.LookupCharge(ctx, testAccount, r.AttemptID)
	require.NoError(t, err)
	assert.Equal(t, provider.ChargeFailed, got.Status)
	assert.True(t, got.Voided)
	assert.Equal(t, provider.FailureAuthenticationFailed, got.Failure.Code)
	assert.Error(t, e.fake.answer3DS(res.ActionURL, true), "a canceled PaymentIntent cannot be authenticated any more")
	assert.Equal(t, 0, e.fake.chargeCount(r.AttemptID))
}

func TestRefundSendsItsAttemptIDAsIdempotencyKeyAndMetadata(t *testing.T) {
	e := newEnv(t)
	ctx := t.Context()
	c := charge(fakeCardSucceeds)
	res, err := e.p.Charge(ctx, c)
	require.NoError(t, err)
	rr := provider.RefundRequest{MerchantID: testAccount, AttemptID: keelpay.NewID("rfatt_"), ChargeAttemptID: c.AttemptID,
		OrderID: res.OrderID, Amount: res.Amount, Currency: res.Currency}
	out, err := e.p.Refund(ctx, rr)
	require.NoError(t, err)
	require.Equal(t, provider.RefundSucceeded, out.Status)

	// A second send for the same charge is refused by Stripe: nothing is
	// left to refund.
	second := rr
	second.AttemptID = keelpay.NewID("rfatt_")
	out, err = e.p.Refund(ctx, second)
	require.NoError(t, err)
	assert.Equal(t, provider.RefundFailed, out.Status)
	assert.Equal(t, provider.FailureRefundRejected, out.Failure.Code)

	unknown := rr
	unknown.AttemptID, unknown.OrderID = keelpay.NewID("rfatt_"), "pi_unknown"
	out, err = e.p.Refund(ctx, unknown)
	require.NoError(t, err)
	assert.Equal(t, provider.RefundFailed, out.Status)
	assert.Equal(t, provider.FailureOrderNotFound, out.Failure.Code)

	e.fake.mu.Lock()
	defer e.fake.mu.Unlock()
	var found int
	for _, rf := range e.fake.refunds {
		if rf.metadata[stripe.MetaAttempt] == rr.AttemptID {
			found++
			assert.Equal(t, res.OrderID, rf.pi)
			assert.Equal(t, rr.Amount, rf.amount)
		}
	}
	assert.Equal(t, 1, found)
	assert.Contains(t, e.fake.idem, testAccount+"|"+rr.AttemptID)
}
