package client_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/client"
	"github.com/keelpay/keelpay/provider/sandbox"
)

// sameKey checks that the tries all carry one non-empty key and returns it.
func sameKey(t *testing.T, tries []try) string {
	t.Helper()
	if len(tries) == 0 {
		t.Fatal("no tries")
	}
	k := tries[0].IdempotencyKey
	for i, tr := range tries {
		if tr.IdempotencyKey == "" || tr.IdempotencyKey != k {
			t.Errorf("try %d: Idempotency-Key %q, want %q for every try of the call", i+1, tr.IdempotencyKey, k)
		}
	}
	return k
}

// TestRetryRules: each answer the docs call repeatable is repeated after
// the wait the docs give, every try of one call with the same
// Idempotency-Key, and the next call with a new one.
func TestRetryRules(t *testing.T) {
	kp, store := kit(t)
	create := &client.PaymentIntentParams{Amount: 1000, Currency: "EUR", Customer: store.Customer}
	backoff := client.WithBackoff(100*time.Millisecond, 250*time.Millisecond)
	for _, tc := range []struct {
		name   string
		faults []fault
		waits  []time.Duration
	}{
		{"429 waits Retry-After", []fault{answer(429, "rate_limited", 2)}, []time.Duration{2 * time.Second}},
		{"503 waits Retry-After", []fault{answer(503, "provider_api_unavailable", 30), answer(503, "platform_access_pending", 60)},
			[]time.Duration{30 * time.Second, 60 * time.Second}},
		{"500 backs off, capped", []fault{answer(500, "internal_error", 0), answer(500, "internal_error", 0), answer(500, "internal_error", 0)},
			[]time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 250 * time.Millisecond}},
		{"a connection dropped before the server backs off", []fault{drop, drop},
			[]time.Duration{100 * time.Millisecond, 200 * time.Millisecond}},
		{"409 idempotency_key_in_use waits Retry-After", []fault{answer(409, "idempotency_key_in_use", 1)}, []time.Duration{time.Second}},
		{"409 refund_in_progress waits Retry-After", []fault{answer(409, "refund_in_progress", 5)}, []time.Duration{5 * time.Second}},
		{"409 setup_conflict repeats at once", []fault{answer(409, "setup_conflict", 0)}, []time.Duration{0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			px := newProxy(t, kp.URL)
			var sl sleeps
			c := newClient(t, px.URL, store.SecretKey, &sl, backoff)
			px.inject(tc.faults...)
			pi, err := c.CreatePaymentIntent(ctx, create)
			if err != nil {
				t.Fatal(err)
			}
			tries := px.recorded()
			if len(tries) != len(tc.faults)+1 || pi.Response.Attempts != len(tries) || tries[len(tries)-1].ServerStatus != http.StatusCreated {
				t.Errorf("tries = %+v, attempts %d", tries, pi.Response.Attempts)
			}
			key := sameKey(t, tries)
			if pi.Response.IdempotencyKey != key {
				t.Errorf("response key %q, sent %q", pi.Response.IdempotencyKey, key)
			}
			if got := sl.get(); !slices.Equal(got, tc.waits) {
				t.Errorf("waits = %v, want %v", got, tc.waits)
			}
			// The next call is another operation: a new key.
			if _, err := c.CreatePaymentIntent(ctx, create); err != nil {
				t.Fatal(err)
			}
			tries = px.recorded()
			if last := tries[len(tries)-1].IdempotencyKey; last == "" || last == key {
				t.Errorf("second call's key %q, first %q", last, key)
			}
		})
	}
}

// TestRetryGivesUp: after MaxAttempts tries the last answer is the error.
func TestRetryGivesUp(t *testing.T) {
	kp, store := kit(t)
	px := newProxy(t, kp.URL)
	var sl sleeps
	c := newClient(t, px.URL, store.SecretKey, &sl, client.WithMaxAttempts(3), client.WithBackoff(time.Second, 10*time.Second))
	px.inject(answer(500, "internal_error", 0), answer(500, "internal_error", 0), answer(500, "internal_error", 0))
	_, err := c.GetPaymentIntent(context.Background(), "pi_x")
	var cerr *client.Error
	if !errors.As(err, &cerr) || cerr.StatusCode != 500 || cerr.Attempts != 3 || keelpay.ErrorCode(err) != keelpay.CodeInternalError {
		t.Errorf("err = %v", err)
	}
	if got, want := sl.get(), []time.Duration{time.Second, 2 * time.Second}; !slices.Equal(got, want) {
		t.Errorf("waits = %v, want %v", got, want)
	}
	if n := len(px.recorded()); n != 3 {
		t.Errorf("%d tries, want 3", n)
	}

	// Network errors too; the error wraps the transport's.
	px.inject(drop, drop, drop)
	_, err = c.GetPaymentIntent(context.Background(), "pi_x")
	if err == nil || errors.As(err, &cerr) || len(px.recorded()) != 6 {
		t.Errorf("err = %v after %d tries", err, len(px.recorded()))
	}
}

// TestNoRetry: the answers the docs say not to repeat are returned after
// one try.
func TestNoRetry(t *testing.T) {
	kp, store := kit(t)
	for _, f := range []struct {
		status int
		code   string
		ra     int
	}{
		{400, "invalid_request", 0},
		{401, "invalid_api_key", 0},
		{404, "payment_intent_not_found", 0},
		{409, "payment_intent_unexpected_state", 0},
		{409, "store_already_enabled", 0},
		{413, "request_too_large", 0},
		{415, "unsupported_media_type", 0},
		{422, "idempotency_key_reused", 0},
		{422, "card_rejected", 0},
		{503, "platform_certificate_mismatch", 0}, // 503 without Retry-After
		{429, "rate_limited", 3600},               // longer than MaxRetryAfter
		{502, "", 0},                              // not keelpay's answer
	} {
		px := newProxy(t, kp.URL)
		var sl sleeps
		c := newClient(t, px.URL, store.SecretKey, &sl)
		px.inject(answer(f.status, f.code, f.ra))
		_, err := c.CreatePaymentIntent(context.Background(), &client.PaymentIntentParams{Amount: 1, Currency: "EUR", Customer: store.Customer})
		var cerr *client.Error
		if !errors.As(err, &cerr) || cerr.StatusCode != f.status || string(cerr.Err.Code) != f.code || cerr.Attempts != 1 ||
			cerr.Err.RetryAfter != time.Duration(f.ra)*time.Second {
			t.Errorf("%d %s: err = %v", f.status, f.code, err)
		}
		if n := len(px.recorded()); n != 1 || len(sl.get()) != 0 {
			t.Errorf("%d %s: %d tries, waits %v", f.status, f.code, n, sl.get())
		}
	}
}

// TestContextStopsWaiting: a context that ends while the client waits to
// repeat a call ends the call at once, with both the context's error and
// the last answer.
func TestContextStopsWaiting(t *testing.T) {
	kp, store := kit(t)
	px := newProxy(t, kp.URL)
	c := newClient(t, px.URL, store.SecretKey, nil) // a real sleep
	px.inject(answer(503, "provider_api_unavailable", 30))
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.CreatePaymentIntent(ctx, &client.PaymentIntentParams{Amount: 1, Currency: "EUR", Customer: store.Customer})
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("took %v", took)
	}
	if !errors.Is(err, context.DeadlineExceeded) || keelpay.ErrorCode(err) != keelpay.CodeProviderAPIUnavailable {
		t.Errorf("err = %v", err)
	}
	if n := len(px.recorded()); n != 1 {
		t.Errorf("%d tries", n)
	}
}

// TestRealRateLimit: the server's own 429 on the eleventh webhook test of
// a minute is repeated after its Retry-After, and returned once the
// attempts are spent.
func TestRealRateLimit(t *testing.T) {
	kp, store := kit(t)
	var sl sleeps
	c := newClient(t, kp.URL, store.SecretKey, &sl, client.WithMaxAttempts(2))
	for i := range 10 {
		if _, err := c.SendTestWebhook(context.Background(), nil); err != nil {
			t.Fatalf("test %d: %v", i+1, err)
		}
	}
	_, err := c.SendTestWebhook(context.Background(), nil)
	var kerr *keelpay.Error
	if !errors.As(err, &kerr) || kerr.Code != keelpay.CodeRateLimited || kerr.RetryAfter <= 0 {
		t.Fatalf("err = %v", err)
	}
	if got := sl.get(); len(got) != 1 || got[0] != kerr.RetryAfter {
		t.Errorf("waits = %v, Retry-After %v", got, kerr.RetryAfter)
	}
}

// TestCrashBetweenTries: the first try of a confirm reaches the server,
// which charges the card and answers, but the answer is lost on its way
// back. The client repeats the call with the same key and gets the stored
// answer: the card is charged once.
func TestCrashBetweenTries(t *testing.T) {
	ctx := context.Background()
	kp, store := kit(t)
	px := newProxy(t, kp.URL)
	var sl sleeps
	c := newClient(t, px.URL, store.SecretKey, &sl)
	card := store.SaveCard(t, sandbox.CardVisa)
	pi, err := c.CreatePaymentIntent(ctx, &client.PaymentIntentParams{Amount: 4200, Currency: "EUR", Customer: store.Customer, PaymentMethod: card})
	if err != nil {
		t.Fatal(err)
	}
	before := kp.Sandbox.Stats().Charges

	px.inject(lose)
	n := len(px.recorded())
	confirmed, err := c.ConfirmPaymentIntent(ctx, pi.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	tries := px.recorded()[n:]
	if len(tries) != 2 || tries[0].ServerStatus != http.StatusOK || tries[0].Status != 0 || tries[1].Status != http.StatusOK {
		t.Fatalf("tries = %+v", tries)
	}
	sameKey(t, tries)
	if confirmed.Status != keelpay.IntentSucceeded || !confirmed.Response.IdempotentReplayed || confirmed.Response.Attempts != 2 {
		t.Errorf("confirm = %+v, response %+v", confirmed, confirmed.Response)
	}
	if got := kp.Sandbox.Stats().Charges - before; got != 1 {
		t.Errorf("%d charges, want 1", got)
	}
	if got, err := c.GetPaymentIntent(ctx, pi.ID); err != nil || got.Status != keelpay.IntentSucceeded {
		t.Errorf("intent = %+v, %v", got, err)
	}
	if got := sl.get(); len(got) != 1 || got[0] != client.DefaultBackoffInitial {
		t.Errorf("waits = %v", got)
	}

	// The same for a refund: sent once.
	refundsBefore := kp.Sandbox.Stats().Refunds
	px.inject(lose)
	n = len(px.recorded())
	ref, err := c.CreateRefund(ctx, &client.RefundParams{PaymentIntent: pi.ID, Reason: "returned"})
	if err != nil {
		t.Fatal(err)
	}
	tries = px.recorded()[n:]
	if len(tries) != 2 || tries[0].ServerStatus != http.StatusCreated || tries[0].Status != 0 {
		t.Fatalf("refund tries = %+v", tries)
	}
	sameKey(t, tries)
	if !ref.Response.IdempotentReplayed || ref.Response.StatusCode != http.StatusCreated || ref.Attempts != 1 {
		t.Errorf("refund = %+v, response %+v", ref, ref.Response)
	}
	if got := kp.Sandbox.Stats().Refunds - refundsBefore; got != 1 {
		t.Errorf("%d refunds paid out, want 1", got)
	}
}

// TestConcurrentSameKey: two calls with one Idempotency-Key at once (an
// order confirmed from two tabs). Whichever comes second is answered 409
// idempotency_key_in_use while the first runs, waits its Retry-After and
// gets the first one's answer: both see the intent succeeded, and the
// card is charged once.
func TestConcurrentSameKey(t *testing.T) {
	ctx := context.Background()
	kp, store := kit(t)
	// A real wait, shortened: Retry-After is at least a second.
	short := func(ctx context.Context, d time.Duration) error {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(min(d, 100*time.Millisecond)):
			return nil
		}
	}
	c := newClient(t, kp.URL, store.SecretKey, nil, client.WithSleep(short), client.WithMaxAttempts(20))
	card := store.SaveCard(t, sandbox.CardVisa)
	before := kp.Sandbox.Stats().Charges
	const n = 4
	for i := range 3 {
		pi, err := c.CreatePaymentIntent(ctx, &client.PaymentIntentParams{Amount: 100, Currency: "EUR", Customer: store.Customer, PaymentMethod: card})
		if err != nil {
			t.Fatal(err)
		}
		results := make(chan *client.PaymentIntent, n)
		for range n {
			go func() {
				got, err := c.ConfirmPaymentIntent(ctx, pi.ID, &client.ConfirmParams{IdempotencyKey: fmt.Sprintf("confirm-%d", i)})
				if err == nil && got.Status != keelpay.IntentSucceeded {
					err = fmt.Errorf("status %s", got.Status)
				}
				if err != nil {
					t.Errorf("confirm %d: %v", i, err)
				}
				results <- got
			}()
		}
		// One call did the work; the others got its stored answer.
		fresh := 0
		for range n {
			if got := <-results; got != nil && !got.Response.IdempotentReplayed {
				fresh++
			}
		}
		if fresh != 1 {
			t.Errorf("confirm %d: %d answers not replayed, want 1", i, fresh)
		}
	}
	if got := kp.Sandbox.Stats().Charges - before; got != 3 {
		t.Errorf("%d charges, want 3", got)
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Duration{
		"":                              0,
		"3":                             3 * time.Second,
		"-1":                            0,
		"soon":                          0,
		"Fri, 27 Nov 2026 08:00:10 GMT": 10 * time.Second,
		"Fri, 27 Nov 2026 07:00:00 GMT": 0,
	} {
		if got := client.ParseRetryAfter(in, now); got != want {
			t.Errorf("ParseRetryAfter(%q) = %v, want %v", in, got, want)
		}
	}
}

// TestReal503: the server's own 503 (a provider that does not answer
// setup) is repeated after its Retry-After with the same key, and
// returned once the attempts are spent.
func TestReal503(t *testing.T) {
	kp, _ := kit(t)
	px := newProxy(t, kp.URL)
	var sl sleeps
	c := newClient(t, px.URL, "", &sl, client.WithMaxAttempts(3))
	_, err := c.Setup(context.Background(), &client.SetupParams{ClientID: "app_down_unavailable", ClientSecret: "secret_down_unavailable",
		WebhookURL: kp.Webhooks.URL() + "/"})
	var cerr *client.Error
	if !errors.As(err, &cerr) || cerr.StatusCode != http.StatusServiceUnavailable || cerr.Err.Code != keelpay.CodeProviderAPIUnavailable ||
		cerr.Err.RetryAfter != 30*time.Second || cerr.Attempts != 3 {
		t.Fatalf("err = %v", err)
	}
	tries := px.recorded()
	if len(tries) != 3 || tries[2].ServerStatus != http.StatusServiceUnavailable {
		t.Errorf("tries = %+v", tries)
	}
	sameKey(t, tries)
	if got, want := sl.get(), []time.Duration{30 * time.Second, 30 * time.Second}; !slices.Equal(got, want) {
		t.Errorf("waits = %v, want %v", got, want)
	}
}
