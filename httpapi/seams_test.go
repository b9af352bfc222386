package httpapi_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/httpapi"
	"github.com/keelpay/keelpay/payments"
	"github.com/keelpay/keelpay/provider"
	"github.com/keelpay/keelpay/storage"
)

// The seams of Idempotency-Key: a process that dies between the work and
// the stored response, a provider call cut off by a crash, and a client
// that hangs up. Each test here failed before the key's record was
// written in the transactions of the work it guards.

// diesBeforeStoring is httpapi's storage when its process dies right after
// the handler's work committed and before httpapi stored the response: the
// response store (outside any transaction) never happens, and the key
// stays locked by the dead run.
type diesBeforeStoring struct {
	storage.Storage
	mu   sync.Mutex
	dead bool
}

func (d *diesBeforeStoring) IdempotencyComplete(ctx context.Context, p storage.IdempotencyCompleteParams) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.dead {
		return errors.New("the process died")
	}
	return d.Storage.IdempotencyComplete(ctx, p)
}

func (d *diesBeforeStoring) IdempotencyRelease(ctx context.Context, storeID, key, token string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.dead {
		return errors.New("the process died")
	}
	return d.Storage.IdempotencyRelease(ctx, storeID, key, token)
}

func (d *diesBeforeStoring) die(dead bool) {
	d.mu.Lock()
	d.dead = dead
	d.mu.Unlock()
}

func keyed(method, path, sk, key string, body any) req {
	return req{method: method, path: path, key: sk, body: body, header: map[string]string{"Idempotency-Key": key}}
}

// TestRetriedCreateAfterCrashMakesNoSecondObject: the intent and its key's
// response commit together, so a retry after the dead run's lock lapsed is
// a replay, not a second intent.
func TestRetriedCreateAfterCrashMakesNoSecondObject(t *testing.T) {
	t.Parallel()
	dies := &diesBeforeStoring{}
	b := setup(t, func(o *options) {
		o.wrapStorage = func(s storage.Storage) storage.Storage { dies.Storage = s; return dies }
	})
	s := b.shop(t, "app_shop")
	for _, rq := range []req{
		keyed("POST", "/v1/payment_intents", s.sk, "create-1", intentBody(s, 2500)),
		keyed("POST", "/v1/card_sessions", s.sk, "session-1", map[string]any{
			"customer": customerJSON(), "page_origins": []string{"https://shop.example"}}),
	} {
		dies.die(true)
		first := b.do(t, rq)
		require.Equal(t, http.StatusCreated, first.Status, "%s", first.Raw)
		dies.die(false)
		b.clock.Advance(httpapi.IdempotencyLockTimeout + time.Second)

		retry := b.do(t, rq)
		requireReplay(t, first, retry)
	}
	list := b.do(t, req{method: "GET", path: "/v1/payment_intents", key: s.sk})
	require.Len(t, list.Body["data"], 1, "one intent for one key")
}

// TestRetriedConfirmAfterCrashAnswersTheSame: a confirm's outcome and its
// key's response commit together; a retry gets the first answer, not 409
// payment_intent_unexpected_state (which a client could take for "not
// charged" and pay again).
func TestRetriedConfirmAfterCrashAnswersTheSame(t *testing.T) {
	t.Parallel()
	dies := &diesBeforeStoring{}
	b := setup(t, func(o *options) {
		o.wrapStorage = func(s storage.Storage) storage.Storage { dies.Storage = s; return dies }
	})
	s := b.shop(t, "app_shop")
	card := b.saveCard(t, s, "4242424242424242")
	for _, tc := range []struct{ card, status string }{
		{card, string(keelpay.IntentSucceeded)},
		{b.saveCard(t, s, "4000000000003220"), string(keelpay.IntentRequiresAction)},
		{b.saveCard(t, s, "4000000000000002"), string(keelpay.IntentRequiresPaymentMethod)},
		{b.saveCard(t, s, "4000000000000259"), string(keelpay.IntentProcessing)},
	} {
		pi := b.createIntent(t, s, intentBody(s, 2500)).str("id")
		rq := keyed("POST", "/v1/payment_intents/"+pi+"/confirm", s.sk, "confirm-"+pi, map[string]any{"payment_method": tc.card})
		dies.die(true)
		first := b.do(t, rq)
		dies.die(false)
		require.Equal(t, http.StatusOK, first.Status, "%s", first.Raw)
		require.Equal(t, tc.status, first.str("status"))
		b.clock.Advance(httpapi.IdempotencyLockTimeout + time.Second)
		requireReplay(t, first, b.do(t, rq))
		require.LessOrEqual(t, b.sandbox.ChargeCount(b.record(t, s, pi).AttemptID), 1)
	}
}

// TestRetriedSetupAfterCrashRotatesOnce: a change with the secret key
// stores its answer with the change, so a retry after a crash hands out
// the webhook secret that change issued instead of rotating again (which
// would leave the client with a secret that signs nothing).
func TestRetriedSetupAfterCrashRotatesOnce(t *testing.T) {
	t.Parallel()
	dies := &diesBeforeStoring{}
	b := setup(t, func(o *options) {
		o.wrapStorage = func(s storage.Storage) storage.Storage { dies.Storage = s; return dies }
	})
	s := b.shop(t, "app_shop")
	body := setupBody("app_shop", "https://store.example/hooks")
	body["rotate_webhook_secret"] = true
	rq := keyed("POST", "/v1/setup", s.sk, "rotate-1", body)
	dies.die(true)
	first := b.do(t, rq)
	dies.die(false)
	require.Equal(t, http.StatusOK, first.Status, "%s", first.Raw)
	b.clock.Advance(httpapi.IdempotencyLockTimeout + time.Second)
	requireReplay(t, first, b.do(t, rq))
	st, err := b.db.StoreGetByID(context.Background(), s.id)
	require.NoError(t, err)
	require.Equal(t, first.str("webhook_secret"), st.WebhookSecret, "the secret in the answer is the one that signs")
}

// TestRetriedBulkReplayAfterCrashAnswersTheSame: a bulk replay commits
// its answer with what it queued; a retry after a crash reports those
// counts instead of finding nothing left to queue.
func TestRetriedBulkReplayAfterCrashAnswersTheSame(t *testing.T) {
	t.Parallel()
	dies := &diesBeforeStoring{}
	b := setup(t, func(o *options) {
		o.wrapStorage = func(s storage.Storage) storage.Storage { dies.Storage = s; return dies }
	})
	s := b.hookStore(t, "app_shop")
	s.rec.SetStatus(http.StatusServiceUnavailable)
	for range 3 {
		b.insertEvent(t, s.id)
	}
	b.failAll(t, b.dispatcher)
	rq := keyed("POST", "/v1/events/redeliver", s.key, "replay-1", map[string]any{})
	dies.die(true)
	first := b.do(t, rq)
	dies.die(false)
	require.Equal(t, http.StatusOK, first.Status, "%s", first.Raw)
	require.EqualValues(t, 3, first.Body["queued"])
	b.clock.Advance(httpapi.IdempotencyLockTimeout + time.Second)
	requireReplay(t, first, b.do(t, rq))
}

// crashOnce stands for a process that dies after the provider did its
// work and before the outcome was committed: once armed, the next call
// returns from the provider and then panics, as a crash ends the run and
// loses the provider's answer.
type crashOnce struct {
	provider.Provider
	mu    sync.Mutex
	armed bool
}

func (c *crashOnce) arm() {
	c.mu.Lock()
	c.armed = true
	c.mu.Unlock()
}

func (c *crashOnce) crashIfArmed() {
	c.mu.Lock()
	armed := c.armed
	c.armed = false
	c.mu.Unlock()
	if armed {
		panic("the process died after the provider answered")
	}
}

func (c *crashOnce) Charge(ctx context.Context, r provider.ChargeRequest) (*provider.ChargeResult, error) {
	res, err := c.Provider.Charge(ctx, r)
	c.crashIfArmed()
	return res, err
}

func (c *crashOnce) Refund(ctx context.Context, r provider.RefundRequest) (*provider.RefundResult, error) {
	res, err := c.Provider.Refund(ctx, r)
	c.crashIfArmed()
	return res, err
}

// TestRetriedConfirmResumesItsAttempt: the attempt is the key's recovery
// point. A retry carries that attempt to its end by asking the provider
// about it, and never makes a second one; until the first call could no
// longer be under way it answers 409 idempotency_key_in_use.
func TestRetriedConfirmResumesItsAttempt(t *testing.T) {
	t.Parallel()
	crash := &crashOnce{armed: true}
	b := setup(t, func(o *options) {
		o.wrap = func(p provider.Provider) provider.Provider { crash.Provider = p; return crash }
	})
	s := b.shop(t, "app_shop")
	card := b.saveCard(t, s, "4242424242424242")
	pi := b.createIntent(t, s, intentBody(s, 2500)).str("id")
	rq := keyed("POST", "/v1/payment_intents/"+pi+"/confirm", s.sk, "confirm-1", map[string]any{"payment_method": card})

	requireError(t, b.do(t, rq), http.StatusInternalServerError, "internal_error")
	attempt := b.record(t, s, pi).AttemptID
	require.Equal(t, 1, b.sandbox.ChargeCount(attempt), "the sandbox charged")
	require.Equal(t, keelpay.IntentProcessing, b.record(t, s, pi).Status)

	early := b.do(t, rq)
	requireError(t, early, http.StatusConflict, "idempotency_key_in_use")
	require.NotEmpty(t, early.Header.Get("Retry-After"))

	b.clock.Advance(payments.CallTimeoutMax)
	resumed := b.do(t, rq)
	require.Equal(t, http.StatusOK, resumed.Status, "%s", resumed.Raw)
	require.Empty(t, resumed.Header.Get("Idempotent-Replayed"))
	require.Equal(t, string(keelpay.IntentSucceeded), resumed.str("status"))
	require.Equal(t, attempt, b.record(t, s, pi).AttemptID, "no second attempt")
	require.Equal(t, 1, b.sandbox.ChargeCount(attempt))
	require.Equal(t, 1, b.sandbox.Charges(), "one charge in all")
	requireReplay(t, resumed, b.do(t, rq))
	b.requireOneEvent(t, s, keelpay.EventPaymentIntentSucceeded, pi)
}

// gatedRefund holds a refund at the provider until released, or until
// the context of the call ends.
type gatedRefund struct {
	provider.Provider
	entered chan struct{}
	release chan struct{}
}

func (g *gatedRefund) Refund(ctx context.Context, r provider.RefundRequest) (*provider.RefundResult, error) {
	select {
	case g.entered <- struct{}{}:
	default: // only the first call is watched
	}
	select {
	case <-g.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return g.Provider.Refund(ctx, r)
}

// TestHangUpIsNotAStoredError: a refund whose client hangs up while the
// provider is paying out runs to its end; nothing is stored as a 500, and a
// retry with the same key gets the real outcome.
func TestHangUpIsNotAStoredError(t *testing.T) {
	t.Parallel()
	gate := &gatedRefund{entered: make(chan struct{}, 1), release: make(chan struct{})}
	requestGone := make(chan context.Context, 1)
	b := setup(t, func(o *options) {
		o.wrap = func(p provider.Provider) provider.Provider { gate.Provider = p; return gate }
		o.wrapHandler = func(h http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/v1/refunds" {
					select {
					case requestGone <- r.Context():
					default: // only the first request is watched
					}
				}
				h.ServeHTTP(w, r)
			})
		}
	})
	s := b.shop(t, "app_shop")
	pi := b.paid(t, s, "4242424242424242")
	body := fmt.Sprintf(`{"payment_intent":%q,"reason":"Returned within 30 days"}`, pi)

	// A raw client: it sends the request with Expect: 100-continue and
	// the body, then hangs up without reading the answer.
	conn, err := net.Dial("tcp", strings.TrimPrefix(b.srv.URL, "http://"))
	require.NoError(t, err)
	_, err = fmt.Fprintf(conn, "POST /v1/refunds HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"+
		"Content-Type: application/json\r\nIdempotency-Key: refund-1\r\nExpect: 100-continue\r\nContent-Length: %d\r\n\r\n",
		s.sk, len(body))
	require.NoError(t, err)
	status, err := bufio.NewReader(conn).ReadString('\n')
	require.NoError(t, err)
	require.Contains(t, status, "100 Continue")
	_, err = conn.Write([]byte(body))
	require.NoError(t, err)
	reqCtx := <-requestGone
	<-gate.entered
	require.NoError(t, conn.Close())
	<-reqCtx.Done() // the server saw the hang-up
	close(gate.release)

	// The retry waits while the first run is still at work, then gets its
	// outcome.
	var retry *response
	for {
		retry = b.do(t, keyed("POST", "/v1/refunds", s.sk, "refund-1", []byte(body)))
		if retry.errCode() != "idempotency_key_in_use" {
			break
		}
	}
	require.Equal(t, http.StatusCreated, retry.Status, "%s", retry.Raw)
	require.Equal(t, "true", retry.Header.Get("Idempotent-Replayed"))
	require.Equal(t, string(keelpay.RefundSucceeded), retry.str("status"))
	require.Equal(t, 1, b.sandbox.Refunds(), "paid out once")
	require.NotContains(t, b.logs.String(), "context canceled")
}

// TestRetriedRefundResumesItsSend: the recorded send is the key's recovery
// point; a retry looks the send up by its attempt id instead of sending
// again, and answers 201 with the refund as the first run would have.
func TestRetriedRefundResumesItsSend(t *testing.T) {
	t.Parallel()
	crash := &crashOnce{}
	b := setup(t, func(o *options) {
		o.wrap = func(p provider.Provider) provider.Provider { crash.Provider = p; return crash }
	})
	s := b.shop(t, "app_shop")
	pi := b.paid(t, s, "4242424242424242")
	crash.arm()
	rq := keyed("POST", "/v1/refunds", s.sk, "refund-1", refundBody(pi))

	requireError(t, b.do(t, rq), http.StatusInternalServerError, "internal_error")
	require.Equal(t, 1, b.sandbox.Refunds(), "the sandbox paid out")
	requireError(t, b.do(t, rq), http.StatusConflict, "idempotency_key_in_use")

	b.clock.Advance(provider.CallTimeoutDefault)
	resumed := b.do(t, rq)
	require.Equal(t, http.StatusCreated, resumed.Status, "%s", resumed.Raw)
	require.Equal(t, string(keelpay.RefundSucceeded), resumed.str("status"))
	require.EqualValues(t, 1, resumed.Body["attempts"], "no second send")
	require.Equal(t, 1, b.sandbox.Refunds(), "paid out once")
	requireReplay(t, resumed, b.do(t, rq))
}
