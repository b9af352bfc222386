package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/internal/faultproxy"
	"github.com/keelpay/keelpay/keyring"
	"github.com/keelpay/keelpay/keyring/keyringtest"
	"github.com/keelpay/keelpay/provider/httpprovider"
	"github.com/keelpay/keelpay/provider/sandbox"
	"github.com/keelpay/keelpay/storage/postgres"
	"github.com/keelpay/keelpay/storage/postgres/postgrestest"
)

// stallCluster is three reference servers on one PostgreSQL schema: the
// owner of the sandbox; n2, which charges through the owner; and n1, which
// reaches the owner through a proxy that can hold its charges on the way
// (a request sitting in a stalled network) and reaches PostgreSQL through a
// fault proxy that can stop forwarding (a partition). n1's sessions end a
// transaction left idle for two seconds, so that a stalled n1 holds its
// row locks only that long.
type stallCluster struct {
	owner, n1, n2 *started
	db            *postgres.DB
	pg            *faultproxy.Proxy
	shop          shop
	card          string
	// hold makes the proxy hold n1's next charge: it is sent on the
	// channel when it arrives and forwarded when release is closed.
	hold    atomic.Pointer[heldRequest]
	clients sync.WaitGroup
}

type heldRequest struct {
	arrived chan struct{}
	release chan struct{}
}

func newStallCluster(t *testing.T) *stallCluster {
	t.Helper()
	schema := postgrestest.NewSchema(t)
	dsn := dsnIn(t, postgrestest.DSN(t), schema)
	key := []string{"KEELPAY_ENCRYPTION_KEY=" + keyring.Format(keyringtest.Key())}
	c := &stallCluster{db: postgrestest.Open(t, schema)}
	c.owner = start(t, t.TempDir(), key, "-addr", "127.0.0.1:0", "-db", dsn)
	c.n2 = start(t, t.TempDir(), key, "-addr", "127.0.0.1:0", "-db", dsn, "-sandbox-url", c.owner.URL)

	ownerURL, err := url.Parse(c.owner.URL)
	require.NoError(t, err)
	toOwner := httputil.NewSingleHostReverseProxy(ownerURL)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h := c.hold.Load(); h != nil && r.URL.Path == httpprovider.PathPrefix+"charge" && c.hold.CompareAndSwap(h, nil) {
			close(h.arrived)
			<-h.release
		}
		toOwner.ServeHTTP(w, r)
	}))
	t.Cleanup(proxy.Close)

	u, err := url.Parse(dsn)
	require.NoError(t, err)
	c.pg = faultproxy.New(t, u.Host)
	u.Host = c.pg.Addr()
	q := u.Query()
	q.Set("idle_in_transaction_session_timeout", "2000")
	u.RawQuery = q.Encode()
	c.n1 = start(t, t.TempDir(), key, "-addr", "127.0.0.1:0", "-db", u.String(), "-sandbox-url", proxy.URL)

	c.shop = setupShop(t, c.owner, "app_stall", "http://127.0.0.1:9/hooks")
	session := must(t, "POST", c.owner.URL+"/v1/card_sessions", c.shop.sk,
		map[string]any{"customer": customer, "page_origins": []string{"https://shop.example"}})
	require.Equal(t, http.StatusCreated, session.Status, "%v", session.Body)
	card := must(t, "POST", c.owner.URL+"/v1/card_sessions/"+session.Str("id")+"/cards", c.shop.pk, map[string]any{
		"client_secret": session.Str("client_secret"), "number": sandbox.CardVisa, "exp_month": 12, "exp_year": 2035, "cvc": "123"})
	require.Equal(t, http.StatusCreated, card.Status, "%v", card.Body)
	c.card = card.Str("id")
	// A client cut off by the test's end is not the test's failure.
	t.Cleanup(c.clients.Wait)
	return c
}

func (c *stallCluster) intent(t *testing.T) string {
	t.Helper()
	r := must(t, "POST", c.owner.URL+"/v1/payment_intents", c.shop.sk, intentBody(4200))
	require.Equal(t, http.StatusCreated, r.Status, "%v", r.Body)
	return r.Str("id")
}

// confirm confirms intent on s with the saved card and key.
func (c *stallCluster) confirm(s *started, intent, key string) (reply, error) {
	return send("POST", s.URL+"/v1/payment_intents/"+intent+"/confirm", c.shop.sk,
		map[string]any{"payment_method": c.card}, "Idempotency-Key", key)
}

// confirmOnN1 starts a confirm on n1 in the background: n1 may be stopped
// or stalled while it runs, so its answer (or error) comes later.
func (c *stallCluster) confirmOnN1(intent, key string) <-chan error {
	done := make(chan error, 1)
	c.clients.Go(func() {
		_, err := send("POST", c.n1.URL+"/v1/payment_intents/"+intent+"/confirm", c.shop.sk,
			map[string]any{"payment_method": c.card}, "Idempotency-Key", key)
		done <- err
	})
	return done
}

// retryOnN2 retries key on n2 as a client does: again after a network
// error, a 5xx or 409 idempotency_key_in_use, moving n2's clock past the
// key's lock each time.
func (c *stallCluster) retryOnN2(t *testing.T, intent, key string) reply {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		advanceClock(t, c.n2, 61)
		r, err := c.confirm(c.n2, intent, key)
		if err == nil && r.Status < 500 && r.Code() != "idempotency_key_in_use" {
			return r
		}
		require.True(t, time.Now().Before(deadline), "the retry of %s kept failing: %v %v", key, err, r.Body)
	}
}

func sendSignal(t *testing.T, s *started, sig syscall.Signal) {
	t.Helper()
	require.NoError(t, s.Cmd.Process.Signal(sig))
}

// requireMoneyRule waits (moving n2's clock so that its reconciler looks
// up what is due) until every charge the sandbox made belongs to a
// succeeded intent or was voided with the intent saying so, and every
// intent is settled: succeeded, or failed without a charge. It fails if
// that does not happen within a minute.
func (c *stallCluster) requireMoneyRule(t *testing.T, intents []string) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(time.Minute)
	for {
		advanceClock(t, c.n2, 61)
		problem := c.moneyProblem(ctx, t, intents)
		if problem == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the money rule does not hold: %s", problem)
		}
		time.Sleep(200 * time.Millisecond) // the reconciler runs every 5 s
	}
}

func (c *stallCluster) moneyProblem(ctx context.Context, t *testing.T, intents []string) string {
	st := sandboxStats(t, c.owner)
	accounted := map[string]bool{} // charged attempts the intents account for
	for _, id := range intents {
		pi, err := c.db.PaymentIntentGet(ctx, c.shop.id, id)
		require.NoError(t, err)
		switch pi.Status {
		case keelpay.IntentSucceeded:
			if st.ChargesByAttempt[pi.AttemptID] != 1 || st.VoidedByAttempt[pi.AttemptID] != 0 {
				return fmt.Sprintf("%s succeeded with attempt %s: %d charges, %d voided", id, pi.AttemptID,
					st.ChargesByAttempt[pi.AttemptID], st.VoidedByAttempt[pi.AttemptID])
			}
			accounted[pi.AttemptID] = true
		case keelpay.IntentProcessing, keelpay.IntentRequiresAction:
			return fmt.Sprintf("%s is still %s", id, pi.Status)
		}
		for _, v := range pi.VoidedCharges {
			if st.VoidedByAttempt[v.AttemptID] != 1 {
				return fmt.Sprintf("%s lists %s as voided; the sandbox does not", id, v.AttemptID)
			}
			accounted[v.AttemptID] = true
		}
	}
	for attempt, n := range st.ChargesByAttempt {
		if n > 0 && !accounted[attempt] {
			return fmt.Sprintf("attempt %s charged (%d voided) belongs to no succeeded intent and no intent lists its void",
				attempt, st.VoidedByAttempt[attempt])
		}
	}
	return ""
}

// TestStalledConfirmIsNotReportedAsFailed stops n1 (SIGSTOP) while its
// charge is on its way to the provider, past the key's lock. The client
// retries the key on n2, which takes the key over; the provider does not
// know the attempt yet, and the attempt's reach is over, so n2 closes it
// as provider_error. Then n1 resumes and the charge reaches the provider
// after all. The reconciler finds that charge and voids it, the intent
// lists the void, and the client's next confirm charges once.
func TestStalledConfirmIsNotReportedAsFailed(t *testing.T) {
	t.Parallel()
	c := newStallCluster(t)
	intent := c.intent(t)

	h := &heldRequest{arrived: make(chan struct{}), release: make(chan struct{})}
	c.hold.Store(h)
	first := c.confirmOnN1(intent, "order-1")
	<-h.arrived
	sendSignal(t, c.n1, syscall.SIGSTOP)
	rec, err := c.db.PaymentIntentGet(context.Background(), c.shop.id, intent)
	require.NoError(t, err)
	require.Equal(t, keelpay.IntentProcessing, rec.Status)
	attempt := rec.AttemptID

	r := c.retryOnN2(t, intent, "order-1")
	require.Equal(t, http.StatusOK, r.Status, "%v", r.Body)
	require.Equal(t, "requires_payment_method", r.Str("status"), "%v", r.Body)
	require.Equal(t, "provider_error", r.Body["last_error"].(map[string]any)["code"])

	close(h.release)
	sendSignal(t, c.n1, syscall.SIGCONT)
	require.NoError(t, <-first)
	st := sandboxStats(t, c.owner)
	require.Equal(t, 1, st.ChargesByAttempt[attempt], "the held charge reached the provider")

	c.requireMoneyRule(t, []string{intent})
	got := must(t, "GET", c.n2.URL+"/v1/payment_intents/"+intent, c.shop.sk, nil)
	voided, _ := got.Body["voided_charges"].([]any)
	require.Len(t, voided, 1, "%v", got.Body)
	require.Equal(t, attempt, voided[0].(map[string]any)["attempt"])

	// The documented retry after provider_error charges once.
	again, err := c.confirm(c.n2, intent, "order-1-again")
	require.NoError(t, err)
	require.Equal(t, "succeeded", again.Str("status"), "%v", again.Body)
	c.requireMoneyRule(t, []string{intent})
	st = sandboxStats(t, c.owner)
	require.Equal(t, 2, st.Charges)
	require.Equal(t, 1, st.Voids)
}

// TestServerStalledAtRandomMomentsOfAConfirm stops n1 at a random moment
// of a confirm, with SIGSTOP or by stalling its PostgreSQL connections,
// while the client retries the same key on n2; then n1 resumes. Whatever
// moment it was, every charge belongs to a succeeded intent or was voided
// with the intent saying so, and after the client's documented retries
// every intent is paid exactly once.
func TestServerStalledAtRandomMomentsOfAConfirm(t *testing.T) {
	t.Parallel()
	c := newStallCluster(t)
	// The moment is drawn within a confirm's usual length on n1: the
	// shortest of three.
	var intents []string
	length := time.Hour
	for i := range 3 {
		warm := c.intent(t)
		began := time.Now()
		r, err := c.confirm(c.n1, warm, fmt.Sprintf("warm-up-%d", i))
		require.NoError(t, err)
		require.Equal(t, "succeeded", r.Str("status"), "%v", r.Body)
		length = min(length, time.Since(began))
		intents = append(intents, warm)
	}
	seen := map[string]int{}
	for round := range 12 {
		intent := c.intent(t)
		intents = append(intents, intent)
		key := fmt.Sprintf("order-%d", round)
		sigstop := round%2 == 0
		done := c.confirmOnN1(intent, key)
		// A random moment of the confirm: its request, its transactions,
		// its provider call or its answer.
		time.Sleep(rand.N(length))
		if sigstop {
			sendSignal(t, c.n1, syscall.SIGSTOP)
		} else {
			c.pg.Stall()
		}
		r := c.retryOnN2(t, intent, key)
		require.Contains(t, []int{http.StatusOK, http.StatusConflict}, r.Status, "round %d: %v", round, r.Body)
		seen[fmt.Sprintf("%d %s%s replayed=%s", r.Status, r.Str("status"), r.Code(), r.Header.Get("Idempotent-Replayed"))]++
		if sigstop {
			sendSignal(t, c.n1, syscall.SIGCONT)
		} else {
			c.pg.Resume()
		}
		if err := <-done; err != nil {
			// n1's answer may be lost with the connection PostgreSQL
			// ended; the request's outcome is in the database either way.
			var ne net.Error
			require.ErrorAs(t, err, &ne, "round %d", round)
		}
	}
	// The client's documented retries: an intent whose attempt failed is
	// confirmed again with a new key, until each has succeeded.
	c.requireMoneyRule(t, intents)
	for _, id := range intents {
		got := must(t, "GET", c.n2.URL+"/v1/payment_intents/"+id, c.shop.sk, nil)
		if got.Str("status") == "requires_payment_method" {
			r, err := c.confirm(c.n2, id, id+"-again")
			require.NoError(t, err)
			require.Equal(t, "succeeded", r.Str("status"), "%v", r.Body)
		}
	}
	c.requireMoneyRule(t, intents)
	st := sandboxStats(t, c.owner)
	for _, id := range intents {
		pi, err := c.db.PaymentIntentGet(context.Background(), c.shop.id, id)
		require.NoError(t, err)
		require.Equal(t, keelpay.IntentSucceeded, pi.Status, id)
	}
	require.Equal(t, len(intents), st.Charges-st.Voids, "each intent paid once: %+v", st)
	t.Logf("a confirm took %v; the retries on n2 answered %v; %d intents, %d charges, %d voided late",
		length, seen, len(intents), st.Charges, st.Voids)
}
