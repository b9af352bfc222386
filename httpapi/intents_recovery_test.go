package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/provider"
	"github.com/keelpay/keelpay/provider/sandbox"
	"github.com/keelpay/keelpay/service"
)

func TestUnknownOutcomeIsResolvedByTheReconciler(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, number string
		status       keelpay.PaymentIntentStatus
		event        keelpay.EventType
		code         string
		charges      int
	}{
		{"resolves to succeeded", sandbox.CardOutcomeUnknown, keelpay.IntentSucceeded, keelpay.EventPaymentIntentSucceeded, "", 1},
		{"resolves to declined", sandbox.CardOutcomeUnknownDeclined, keelpay.IntentRequiresPaymentMethod, keelpay.EventPaymentIntentPaymentFailed, "card_declined", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			s := b.shop(t, "app_shop")
			intent := b.createIntent(t, s, intentBody(s, 1234))
			id := pi(t, intent)
			ctx := context.Background()

			r := b.confirmNew(t, s, intent, tc.number, nil)
			requireStatus(t, r, http.StatusOK, keelpay.IntentProcessing)
			require.Equal(t, "outcome_unknown", lastError(r)["code"])
			attempt := b.record(t, s, id)
			require.Equal(t, attempt.AttemptAt.Add(time.Minute), attempt.ReconcileAt)

			// The client must not charge again, nor cancel.
			again := b.confirmNew(t, s, intent, sandbox.CardVisa, nil)
			requireError(t, again, http.StatusConflict, "payment_intent_unexpected_state")
			require.Equal(t, "processing", again.details()["status"])
			c := b.do(t, req{method: "POST", path: "/v1/payment_intents/" + id + "/cancel", key: s.sk})
			requireError(t, c, http.StatusConflict, "payment_intent_not_cancelable")
			require.Equal(t, "processing", c.details()["status"])
			require.Empty(t, b.events(t, s.id, ""), "no event while the outcome is unknown")

			worker := b.worker(t)
			require.NoError(t, worker.Reconcile(ctx))
			require.Zero(t, b.record(t, s, id).ReconcileCount, "not due before a minute")

			// At one minute the provider does not know yet (it resolves
			// at two): the next check is at five minutes.
			b.clock.Advance(time.Minute)
			require.NoError(t, worker.Reconcile(ctx))
			rec := b.record(t, s, id)
			require.Equal(t, keelpay.IntentProcessing, rec.Status)
			require.Equal(t, 1, rec.ReconcileCount)
			require.Equal(t, attempt.AttemptAt.Add(5*time.Minute), rec.ReconcileAt)
			require.Equal(t, "outcome_unknown", lastError(b.getIntent(t, s, id))["code"])
			require.Empty(t, b.events(t, s.id, ""))

			b.clock.Advance(3 * time.Minute) // the sandbox knows now, but the next check is not due
			require.NoError(t, worker.Reconcile(ctx))
			require.Equal(t, 1, b.record(t, s, id).ReconcileCount)

			b.clock.Advance(time.Minute)
			require.NoError(t, worker.Reconcile(ctx))
			got := b.getIntent(t, s, id)
			require.Equal(t, string(tc.status), got.str("status"), "%s", got.Raw)
			obj := b.requireOneEvent(t, s, tc.event, id)
			if tc.code == "" {
				require.Nil(t, lastError(got))
				require.Len(t, obj["authorization_code"], 6)
			} else {
				require.Equal(t, tc.code, lastError(got)["code"])
				require.Equal(t, tc.code, obj["last_error"].(map[string]any)["code"])
			}

			// Once finished, nothing more happens.
			b.clock.Advance(48 * time.Hour)
			require.NoError(t, worker.Reconcile(ctx))
			require.NoError(t, b.worker(t).Reconcile(ctx))
			require.Len(t, b.events(t, s.id, ""), 1)
			require.Equal(t, tc.charges, b.sandbox.ChargeCount(attempt.AttemptID))
			require.Equal(t, tc.charges, b.sandbox.Charges())
		})
	}
}

// slowCharge holds every Charge until release is closed.
type slowCharge struct {
	provider.Provider
	release chan struct{}
}

func (p *slowCharge) Charge(ctx context.Context, r provider.ChargeRequest) (*provider.ChargeResult, error) {
	<-p.release
	return p.Provider.Charge(ctx, r)
}

// TestConcurrentConfirmsChargeOnce sends twenty confirms of one intent at
// once. The provider is held until nineteen answers are in: they are all
// 409 while the one attempt is still on its way, and the provider is
// charged once.
func TestConcurrentConfirmsChargeOnce(t *testing.T) {
	t.Parallel()
	for _, saved := range []bool{false, true} {
		name := map[bool]string{false: "new card", true: "saved card"}[saved]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			slow := &slowCharge{release: make(chan struct{})}
			b := setup(t, func(o *options) {
				o.wrap = func(p provider.Provider) provider.Provider { slow.Provider = p; return slow }
			})
			s := b.shop(t, "app_shop")
			var cardID string
			if saved {
				cardID = b.saveCard(t, s, sandbox.CardVisa)
			}
			intent := b.createIntent(t, s, intentBody(s, 999))
			id := pi(t, intent)

			const n = 20
			type result struct {
				status int
				code   string
				body   map[string]any
			}
			results := make(chan result, n)
			start := make(chan struct{})
			for range n {
				go func() {
					<-start
					var rq *http.Request
					if saved {
						rq = jsonRequest(b.srv.URL+"/v1/payment_intents/"+id+"/confirm", s.sk, map[string]any{"payment_method": cardID})
					} else {
						rq = jsonRequest(b.srv.URL+"/v1/payment_intents/"+id+"/confirm", s.pk,
							merge(cardFields(sandbox.CardVisa), map[string]any{"client_secret": intent.str("client_secret")}))
					}
					status, body := send(b.srv.Client(), rq)
					code := ""
					if e, ok := body["error"].(map[string]any); ok {
						code, _ = e["code"].(string)
					}
					results <- result{status, code, body}
				}()
			}
			close(start)
			var got []result
			timeout := time.After(10 * time.Second)
			for len(got) < n-1 {
				select {
				case r := <-results:
					got = append(got, r)
				case <-timeout:
					close(slow.release)
					t.Fatalf("only %d of %d confirms answered while one attempt was held: %v", len(got), n-1, got)
				}
			}
			for _, r := range got {
				require.Equal(t, http.StatusConflict, r.status, "%v", r.body)
				require.Equal(t, "payment_intent_unexpected_state", r.code)
				require.Equal(t, "processing", r.body["error"].(map[string]any)["details"].(map[string]any)["status"])
			}
			close(slow.release)
			winner := <-results
			require.Equal(t, http.StatusOK, winner.status, "%v", winner.body)
			require.Equal(t, "succeeded", winner.body["status"])

			require.Equal(t, 1, b.sandbox.Charges())
			require.Equal(t, 1, b.sandbox.ChargeCount(b.record(t, s, id).AttemptID))
			b.requireOneEvent(t, s, keelpay.EventPaymentIntentSucceeded, id)
		})
	}
}

func jsonRequest(url, key string, body any) *http.Request {
	data, err := json.Marshal(body)
	if err != nil {
		panic(err)
	}
	r, err := http.NewRequest("POST", url, bytes.NewReader(data))
	if err != nil {
		panic(err)
	}
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Authorization", "Bearer "+key)
	return r
}

// send is b.do for goroutines other than the test's: it reports failures
// in the result instead of stopping the test.
func send(c *http.Client, r *http.Request) (int, map[string]any) {
	resp, err := c.Do(r)
	if err != nil {
		return 0, map[string]any{"transport": err.Error()}
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil {
		return resp.StatusCode, map[string]any{"raw": string(raw)}
	}
	return resp.StatusCode, body
}

// crashing is a provider whose process dies at a chosen point of a
// charge: before the call reaches the provider, or after the provider
// answered and before the service could commit the outcome. The panic
// stands for the process dying: nothing after it runs.
type crashing struct {
	provider.Provider
	afterCall bool
}

func (p *crashing) Charge(ctx context.Context, r provider.ChargeRequest) (*provider.ChargeResult, error) {
	if p.afterCall {
		_, _ = p.Provider.Charge(ctx, r)
	}
	panic("the process died")
}

// TestCrashBetweenProviderAndCommit lets the process die around the
// provider call, then has a restarted process (a new Service on the same
// database and provider) run the reconciler: the attempt is finished from
// the provider's record, once, with one event.
func TestCrashBetweenProviderAndCommit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		number    string
		afterCall bool
		status    keelpay.PaymentIntentStatus
		event     keelpay.EventType
		code      string
		charges   int
	}{
		{"after the provider charged", sandbox.CardVisa, true, keelpay.IntentSucceeded, keelpay.EventPaymentIntentSucceeded, "", 1},
		{"after the provider declined", sandbox.CardDeclined, true, keelpay.IntentRequiresPaymentMethod, keelpay.EventPaymentIntentPaymentFailed, "card_declined", 0},
		{"before the call reached the provider", sandbox.CardVisa, false, keelpay.IntentRequiresPaymentMethod, keelpay.EventPaymentIntentPaymentFailed, "provider_error", 0},
		{"after a 3D Secure challenge started", sandbox.CardThreeDSecure, true, keelpay.IntentRequiresAction, "", "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			crash := &crashing{afterCall: tc.afterCall}
			b := setup(t, func(o *options) {
				o.wrap = func(p provider.Provider) provider.Provider { crash.Provider = p; return crash }
			})
			s := b.shop(t, "app_shop")
			intent := b.createIntent(t, s, intentBody(s, 3000))
			id := pi(t, intent)
			ctx := context.Background()

			requireError(t, b.confirmNew(t, s, intent, tc.number, nil), http.StatusInternalServerError, "internal_error")
			rec := b.record(t, s, id)
			require.Equal(t, keelpay.IntentProcessing, rec.Status, "the attempt was committed before the call")
			require.NotEmpty(t, rec.AttemptID)
			require.Empty(t, b.events(t, s.id, ""))
			requireError(t, b.confirmNew(t, s, intent, sandbox.CardVisa, nil), http.StatusConflict, "payment_intent_unexpected_state")

			restarted := b.worker(t)
			b.clock.Advance(time.Minute)
			require.NoError(t, restarted.Reconcile(ctx))
			require.NoError(t, restarted.Reconcile(ctx))
			got := b.getIntent(t, s, id)
			require.Equal(t, string(tc.status), got.str("status"), "%s", got.Raw)
			require.Equal(t, tc.charges, b.sandbox.ChargeCount(rec.AttemptID))
			require.Equal(t, tc.charges, b.sandbox.Charges())
			if tc.event == "" {
				require.Empty(t, b.events(t, s.id, ""))
				require.Equal(t, "three_d_secure", got.Body["next_action"].(map[string]any)["type"])
				// The buyer never answers: it expires as any challenge.
				b.clock.Advance(9 * time.Minute)
				require.NoError(t, restarted.Reconcile(ctx))
				got = b.getIntent(t, s, id)
				require.Equal(t, "authentication_expired", lastError(got)["code"])
				b.requireOneEvent(t, s, keelpay.EventPaymentIntentPaymentFailed, id)
				return
			}
			obj := b.requireOneEvent(t, s, tc.event, id)
			require.Len(t, b.events(t, s.id, ""), 1)
			if tc.code != "" {
				require.Equal(t, tc.code, lastError(got)["code"])
				require.Equal(t, tc.code, obj["last_error"].(map[string]any)["code"])
			}
		})
	}
}

func TestProviderUnavailableWithdrawsTheAttempt(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.shop(t, "app_shop")
	cardID := b.saveCard(t, s, sandbox.CardVisa)
	intent := b.createIntent(t, s, intentBody(s, 3000))
	id := pi(t, intent)
	before := b.getIntent(t, s, id)

	for _, tc := range []struct {
		set        func(bool)
		code       string
		retryAfter string
	}{
		{b.sandbox.SetUnavailable, "provider_api_unavailable", "30"},
		{b.sandbox.SetAccessPending, "platform_access_pending", "60"},
	} {
		tc.set(true)
		for _, r := range []*response{
			b.confirmSaved(t, s, id, cardID),
			b.confirmNew(t, s, intent, sandbox.CardVisa, nil),
			b.capture(t, s, b.session(t, s), sandbox.CardVisa),
		} {
			requireError(t, r, http.StatusServiceUnavailable, tc.code)
			require.Equal(t, tc.retryAfter, r.Header.Get("Retry-After"))
		}
		tc.set(false)
		// Nothing happened: the intent is as it was, and can be confirmed.
		got := b.getIntent(t, s, id)
		require.Equal(t, before.Raw, got.Raw)
	}
	require.Empty(t, b.events(t, s.id, keelpay.EventPaymentIntentPaymentFailed))
	requireStatus(t, b.confirmSaved(t, s, id, cardID), http.StatusOK, keelpay.IntentSucceeded)
	require.Equal(t, 1, b.sandbox.Charges())
}

// TestProviderUnavailableWithdrawsAFirstAttempt: the first confirm of an
// intent created with its card records its attempt without reading the
// intent; when the provider does nothing with it, the intent is put back
// as it was all the same, on both databases, and confirms afterwards.
func TestProviderUnavailableWithdrawsAFirstAttempt(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, b *bundle) {
		s := b.shop(t, "app_shop")
		cardID := b.saveCard(t, s, sandbox.CardVisa)
		body := intentBody(s, 3000)
		body["payment_method"] = cardID
		for _, named := range []bool{false, true} {
			id := pi(t, b.createIntent(t, s, body))
			before := b.record(t, s, id)
			confirm := func() *response {
				if named {
					return b.confirmSaved(t, s, id, cardID)
				}
				return b.do(t, req{method: "POST", path: "/v1/payment_intents/" + id + "/confirm", key: s.sk})
			}
			b.sandbox.SetUnavailable(true)
			requireError(t, confirm(), http.StatusServiceUnavailable, "provider_api_unavailable")
			b.sandbox.SetUnavailable(false)
			after := b.record(t, s, id)
			require.Equal(t, before.Version+2, after.Version, "the attempt, and its withdrawal")
			after.Version, after.UpdatedAt = before.Version, before.UpdatedAt
			if diff := cmp.Diff(before, after); diff != "" {
				t.Errorf("the intent after the withdrawn attempt (-before +after):\n%s", diff)
			}
			charges := b.sandbox.Charges()
			requireStatus(t, confirm(), http.StatusOK, keelpay.IntentSucceeded)
			require.Equal(t, charges+1, b.sandbox.Charges())
		}
		require.Empty(t, b.events(t, s.id, keelpay.EventPaymentIntentPaymentFailed))
	})
}

// cancelOnLookup cancels the worker's context as soon as the provider
// answered a look-up: the process is told to stop just after the provider
// spoke.
type cancelOnLookup struct {
	provider.Provider
	cancel context.CancelFunc
}

func (p *cancelOnLookup) LookupCharge(ctx context.Context, merchantID, attemptID string) (*provider.ChargeResult, error) {
	res, err := p.Provider.LookupCharge(ctx, merchantID, attemptID)
	p.cancel()
	return res, err
}

// TestRunRecordsTheAnswerAndStops runs the background work as production
// does (service.Service's workers) and stops it at the worst moment: the
// answer the provider gave is still recorded, once, and the workers stop.
func TestRunRecordsTheAnswerAndStops(t *testing.T) {
	t.Parallel()
	b := setup(t)
	s := b.shop(t, "app_shop")
	intent := b.createIntent(t, s, intentBody(s, 1234))
	id := pi(t, intent)
	requireStatus(t, b.confirmNew(t, s, intent, sandbox.CardOutcomeUnknown, nil), http.StatusOK, keelpay.IntentProcessing)
	b.clock.Advance(2 * time.Minute)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	worker := mustNew(service.New(service.Config{Clock: b.clock, Logger: discardLogger(), Storage: b.db,
		Provider:       &cancelOnLookup{Provider: hideNotifier{b.sandbox}, cancel: cancel},
		ExpireInterval: time.Hour, ReconcileInterval: time.Hour, Retention: service.RetentionConfig{Interval: time.Hour}}))
	require.NoError(t, worker.Start(ctx))

	done := make(chan struct{})
	go func() {
		<-ctx.Done()
		_ = worker.Stop(context.Background())
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its context was canceled")
	}
	require.Equal(t, "succeeded", b.getIntent(t, s, id).str("status"))
	b.requireOneEvent(t, s, keelpay.EventPaymentIntentSucceeded, id)
}
