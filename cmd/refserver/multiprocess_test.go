package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/keyring"
	"github.com/keelpay/keelpay/keyring/keyringtest"
	"github.com/keelpay/keelpay/provider/httpprovider"
	"github.com/keelpay/keelpay/provider/sandbox"
	"github.com/keelpay/keelpay/storage/postgres/postgrestest"
	"github.com/keelpay/keelpay/webhooks"
	"github.com/keelpay/keelpay/webhooks/webhookstest"
)

// shop is a store set up through a reference server.
type shop struct {
	id, sk, pk, whsec string
}

func setupShop(t *testing.T, s *started, clientID, webhookURL string) shop {
	t.Helper()
	r := must(t, "POST", s.URL+"/v1/setup", "", map[string]any{
		"client_id": clientID, "client_secret": "secret_" + strings.TrimPrefix(clientID, "app_"), "webhook_url": webhookURL})
	require.Equal(t, http.StatusCreated, r.Status, "%v", r.Body)
	return shop{id: r.Str("id"), sk: r.Str("secret_key"), pk: r.Str("publishable_key"), whsec: r.Str("webhook_secret")}
}

var customer = map[string]any{"id": "cus_mp", "name": "Multi Process", "email": "mp@shop.example", "phone": "+358401234567"}

func intentBody(amount int) map[string]any {
	return map[string]any{"amount": amount, "currency": "EUR", "customer": customer}
}

// confirmBody confirms intent (a create's reply) with a new card, as the
// browser does with the publishable key.
func confirmBody(intent reply, number string) map[string]any {
	return map[string]any{"client_secret": intent.Str("client_secret"), "number": number, "exp_month": 12, "exp_year": 2035, "cvc": "123"}
}

// listAll reads every object of a list endpoint, page by page.
func listAll(t *testing.T, s *started, key, path string) []map[string]any {
	t.Helper()
	var all []map[string]any
	after := ""
	for {
		u := s.URL + path + "?limit=100"
		if after != "" {
			u += "&starting_after=" + after
		}
		r := must(t, "GET", u, key, nil)
		require.Equal(t, http.StatusOK, r.Status, "%v", r.Body)
		data, _ := r.Body["data"].([]any)
		for _, o := range data {
			all = append(all, o.(map[string]any))
		}
		if more, _ := r.Body["has_more"].(bool); !more || len(data) == 0 {
			return all
		}
		after = all[len(all)-1]["id"].(string)
	}
}

func sandboxStats(t *testing.T, owner *started) sandbox.Stats {
	t.Helper()
	resp, err := client.Get(owner.URL + httpprovider.PathPrefix + "stats")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var st sandbox.Stats
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&st))
	return st
}

func advanceClock(t *testing.T, s *started, seconds int) {
	t.Helper()
	r := must(t, "POST", s.URL+"/sandbox/clock", "", map[string]any{"advance_seconds": seconds})
	require.Equal(t, http.StatusOK, r.Status, "%v", r.Body)
}

// TestSandboxURLChargesThroughTheOwner runs a server that owns the sandbox
// and one that uses it (each on its own SQLite file, so it needs no
// PostgreSQL): charges, 3D Secure challenges and their look-ups cross
// over HTTP.
func TestSandboxURLChargesThroughTheOwner(t *testing.T) {
	t.Parallel()
	owner := start(t, t.TempDir(), []string{"KEELPAY_ADDR=127.0.0.1:0"})
	other := start(t, t.TempDir(), []string{"KEELPAY_ADDR=127.0.0.1:0", "KEELPAY_SANDBOX_URL=" + owner.URL})
	require.Contains(t, other.Banner, "the sandbox at "+owner.URL)
	for _, path := range []string{httpprovider.PathPrefix + "stats", "/sandbox/3ds/3ds_x"} {
		require.Equal(t, http.StatusNotFound, must(t, "GET", other.URL+path, "", nil).Status, "only the owner serves %s", path)
	}

	s := setupShop(t, other, "app_remote", "http://127.0.0.1:9/hooks")
	intent := must(t, "POST", other.URL+"/v1/payment_intents", s.sk, intentBody(2500))
	require.Equal(t, http.StatusCreated, intent.Status)
	r := must(t, "POST", other.URL+"/v1/payment_intents/"+intent.Str("id")+"/confirm", s.pk, confirmBody(intent, sandbox.CardVisa))
	require.Equal(t, "succeeded", r.Str("status"), "%v", r.Body)
	require.Equal(t, 1, sandboxStats(t, owner).Charges)

	// 3D Secure: the challenge is the owner's page. The owner's database
	// does not have this intent, so the other server learns the outcome
	// by looking the attempt up when the challenge's wait is over.
	intent = must(t, "POST", other.URL+"/v1/payment_intents", s.sk, intentBody(2500))
	r = must(t, "POST", other.URL+"/v1/payment_intents/"+intent.Str("id")+"/confirm", s.pk, confirmBody(intent, sandbox.CardThreeDSecure))
	require.Equal(t, "requires_action", r.Str("status"), "%v", r.Body)
	challenge := r.Body["next_action"].(map[string]any)["url"].(string)
	require.True(t, strings.HasPrefix(challenge, owner.URL+"/sandbox/3ds/"), challenge)
	require.Equal(t, http.StatusOK, must(t, "POST", challenge, "", url.Values{"result": {"complete"}}).Status)
	advanceClock(t, other, 601)
	r = must(t, "GET", other.URL+"/v1/payment_intents/"+intent.Str("id"), s.sk, nil)
	require.Equal(t, "succeeded", r.Str("status"), "%v", r.Body)
	require.Equal(t, 2, sandboxStats(t, owner).Charges)
}

// eventually polls cond, in the test's goroutine, until it reports
// nothing left to wait for (""), and fails the test with its last report
// after timeout.
func eventually(t *testing.T, timeout time.Duration, cond func() string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		waiting := cond()
		if waiting == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", timeout, waiting)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// dsnIn returns dsn with search_path set to schema: every reference server
// started with it works in that schema.
func dsnIn(t *testing.T, dsn, schema string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	require.NoError(t, err)
	require.Contains(t, []string{"postgres", "postgresql"}, u.Scheme, "%s must be a postgres:// URL to be given to the reference server", postgrestest.EnvDSN)
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// TestSeveralServersShareOnePostgreSQLDatabase runs three reference servers
// on one database: the owner of the sandbox and two that use it. It proves
// the limits across processes, then runs payments (some with 3D Secure),
// refunds and webhook tests spread over the servers, kills one of the
// servers that use the sandbox with SIGKILL halfway, and checks that
// nothing was lost or done twice: every event delivered at least once, no
// intent charged twice, every object whose creation was answered 2xx still
// there.
func TestSeveralServersShareOnePostgreSQLDatabase(t *testing.T) {
	t.Parallel()
	schema := postgrestest.NewSchema(t)
	dsn := dsnIn(t, postgrestest.DSN(t), schema)
	// Every server on the database has the same encryption key, and so
	// does the test's own connection (postgrestest.Open).
	key := []string{"KEELPAY_ENCRYPTION_KEY=" + keyring.Format(keyringtest.Key())}
	owner := start(t, t.TempDir(), key, "-addr", "127.0.0.1:0", "-db", dsn)
	a := start(t, t.TempDir(), key, "-addr", "127.0.0.1:0", "-db", dsn, "-sandbox-url", owner.URL)
	// b reaches the sandbox through a proxy that, once told to, passes
	// b's charges on to the owner (which makes them) and keeps the answers
	// back: b is killed while it waits for one, with the attempt recorded
	// and the card charged, the moment a crash can hurt most.
	ownerURL, err := url.Parse(owner.URL)
	require.NoError(t, err)
	toOwner := httputil.NewSingleHostReverseProxy(ownerURL)
	var withhold atomic.Bool
	withheld := make(chan struct{})
	var withheldOnce sync.Once
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != httpprovider.PathPrefix+"charge" || !withhold.Load() {
			toOwner.ServeHTTP(w, r)
			return
		}
		toOwner.ServeHTTP(httptest.NewRecorder(), r)
		withheldOnce.Do(func() { close(withheld) })
		<-r.Context().Done() // b is gone
	}))
	t.Cleanup(proxy.Close)
	b := start(t, t.TempDir(), key, "-addr", "127.0.0.1:0", "-db", dsn, "-sandbox-url", proxy.URL)
	db := postgrestest.Open(t, schema)
	ctx := t.Context()

	rec := webhookstest.NewRecorder(t, "")
	shops := []shop{setupShop(t, owner, "app_mp_one", rec.URL()+"/hooks"), setupShop(t, b, "app_mp_two", rec.URL()+"/hooks")}
	require.NoError(t, rec.SetSecrets(shops[0].whsec, shops[1].whsec))

	var mu sync.Mutex // guards what follows
	intents := map[string]shop{}
	succeeded := map[string]bool{} // intents the client saw succeed
	refunds := map[string]shop{}
	events := map[string]shop{}
	commit := func(m map[string]shop, id string, s shop) {
		mu.Lock()
		defer mu.Unlock()
		m[id] = s
	}

	// Limits hold across processes, because they are counted in the
	// database. Setup: 5 per minute per client id.
	for i, s := range []*started{owner, a, b, owner, a, b} {
		r := must(t, "POST", s.URL+"/v1/setup", "", map[string]any{
			"client_id": "app_mp_limit", "client_secret": "secret_mp_limit", "webhook_url": "http://127.0.0.1:9/hooks"})
		require.Equal(t, []int{201, 409, 409, 409, 409, 429}[i], r.Status, "setup %d: %v", i+1, r.Body)
	}
	// Webhook tests: 10 per minute per store.
	for i := range 11 {
		r := must(t, "POST", []*started{owner, a, b}[i%3].URL+"/v1/webhooks/test", shops[0].sk, nil)
		if i < 10 {
			require.Equal(t, http.StatusAccepted, r.Status, "test %d: %v", i+1, r.Body)
			commit(events, r.Str("id"), shops[0])
		} else {
			require.Equal(t, "rate_limited", r.Code())
			require.NotEmpty(t, r.Header.Get("Retry-After"))
		}
	}
	// An idempotency key is replayed by another process.
	r := must(t, "POST", owner.URL+"/v1/payment_intents", shops[0].sk, intentBody(700), "Idempotency-Key", "order-700")
	require.Equal(t, http.StatusCreated, r.Status)
	replay := must(t, "POST", a.URL+"/v1/payment_intents", shops[0].sk, intentBody(700), "Idempotency-Key", "order-700")
	require.Equal(t, http.StatusCreated, replay.Status)
	require.Equal(t, "true", replay.Header.Get("Idempotent-Replayed"))
	require.Equal(t, r.Str("id"), replay.Str("id"))
	require.Equal(t, "idempotency_key_reused",
		must(t, "POST", b.URL+"/v1/payment_intents", shops[0].sk, intentBody(701), "Idempotency-Key", "order-700").Code())
	commit(intents, r.Str("id"), shops[0])

	// One charge per intent: 20 confirms at once over two servers.
	intent := must(t, "POST", owner.URL+"/v1/payment_intents", shops[0].sk, intentBody(2000))
	commit(intents, intent.Str("id"), shops[0])
	statuses := make(chan string, 20)
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			r, err := send("POST", []*started{owner, a}[i%2].URL+"/v1/payment_intents/"+intent.Str("id")+"/confirm", shops[0].pk, confirmBody(intent, sandbox.CardVisa))
			if err != nil {
				t.Error(err)
				return
			}
			statuses <- fmt.Sprintf("%d %s%s", r.Status, r.Str("status"), r.Code())
		})
	}
	wg.Wait()
	close(statuses)
	count := map[string]int{}
	for s := range statuses {
		count[s]++
	}
	require.Equal(t, map[string]int{"200 succeeded": 1, "409 payment_intent_unexpected_state": 19}, count)
	succeeded[intent.Str("id")] = true
	// One send per refund: 6 sends at once over two servers.
	replies := make(chan reply, 6)
	for i := range 6 {
		wg.Go(func() {
			r, err := send("POST", []*started{a, b}[i%2].URL+"/v1/refunds", shops[0].sk, map[string]any{"payment_intent": intent.Str("id"), "reason": "twice?"})
			if err != nil {
				t.Error(err)
				return
			}
			replies <- r
		})
	}
	wg.Wait()
	close(replies)
	created := 0
	for r := range replies {
		switch r.Status {
		case http.StatusCreated:
			created++
			require.Equal(t, "succeeded", r.Str("status"))
			commit(refunds, r.Str("id"), shops[0])
		default:
			require.Contains(t, []string{"refund_in_progress", "refund_exists"}, r.Code(), "%v", r.Body)
		}
	}
	require.Equal(t, 1, created)

	// The load: payments over every live server, each created on one and
	// confirmed on the next, a tenth with 3D Secure started on a (not the
	// owner) and completed on the owner's page, a third refunded on a
	// third server. Halfway, the proxy starts withholding b's charges and
	// b is killed on the first; the other requests b had in flight get no
	// answer, and the rest of the load goes to the survivors.
	const payments, workers = 90, 12
	alive := []*started{owner, a, b}
	servers := func(i int) []*started {
		mu.Lock()
		defer mu.Unlock()
		out := make([]*started, 0, 3)
		for j := range alive {
			out = append(out, alive[(i+j)%len(alive)])
		}
		return out
	}
	// b also sends a webhook test, whose delivery it claims itself and
	// the recorder keeps waiting: b dies holding its lease.
	heldTest := make(chan string, 1)
	holdTests := func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(webhooks.HeaderEventType) != string(keelpay.EventWebhookTest) {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		select {
		case heldTest <- r.Header.Get(webhooks.HeaderID):
		default:
		}
		<-r.Context().Done()
	}
	var heldID string
	killed := make(chan struct{})
	kill := func() {
		defer close(killed)
		withhold.Store(true)
		rec.SetResponder(holdTests)
		defer rec.SetResponder(nil)
		go func() { _, _ = send("POST", b.URL+"/v1/webhooks/test", shops[1].sk, nil) }()
		timeout := time.After(10 * time.Second)
		select {
		case <-withheld:
		case <-timeout:
			t.Error("b made no charge to withhold")
			return
		}
		select {
		case heldID = <-heldTest:
		case <-timeout:
			t.Error("b's webhook test was not delivered")
			return
		}
		if err := b.Cmd.Process.Kill(); err != nil {
			t.Error(err)
		}
		mu.Lock()
		alive = alive[:2]
		mu.Unlock()
	}
	// noAnswer is nil for a request b did not answer (it was killed):
	// what it did is not known to the client, so nothing is expected of
	// it. The survivors always answer.
	noAnswer := func(s *started, err error) error {
		if s == b {
			return nil
		}
		return err
	}
	pay := func(i int) error {
		ss := shops[i%2]
		srv := servers(i)
		intent, err := send("POST", srv[0].URL+"/v1/payment_intents", ss.sk, intentBody(1000+i))
		if err != nil {
			return noAnswer(srv[0], err)
		}
		if intent.Status != http.StatusCreated {
			return fmt.Errorf("create: %d %v", intent.Status, intent.Body)
		}
		id := intent.Str("id")
		commit(intents, id, ss)
		number, confirmOn := sandbox.CardVisa, srv[1]
		if i%10 == 3 {
			number, confirmOn = sandbox.CardThreeDSecure, a
		}
		r, err := send("POST", confirmOn.URL+"/v1/payment_intents/"+id+"/confirm", ss.pk, confirmBody(intent, number))
		if err != nil {
			return noAnswer(confirmOn, err) // an attempt b recorded is the reconciler's now
		}
		if number == sandbox.CardThreeDSecure {
			if r.Str("status") != "requires_action" {
				return fmt.Errorf("3D Secure confirm: %d %v", r.Status, r.Body)
			}
			challenge := r.Body["next_action"].(map[string]any)["url"].(string)
			if !strings.HasPrefix(challenge, owner.URL+"/sandbox/3ds/") {
				return fmt.Errorf("the challenge %s is not the owner's", challenge)
			}
			if page, err := send("POST", challenge, "", url.Values{"result": {"complete"}}); err != nil || page.Status != http.StatusOK {
				return fmt.Errorf("3D Secure answer: %v %v", page.Status, err)
			}
			// The owner's sandbox notifies the owner, which finishes the
			// intent that a started.
			for deadline := time.Now().Add(10 * time.Second); r.Str("status") != "succeeded"; {
				if time.Now().After(deadline) {
					return fmt.Errorf("3D Secure intent %s still %s", id, r.Str("status"))
				}
				time.Sleep(10 * time.Millisecond)
				if r, err = send("GET", a.URL+"/v1/payment_intents/"+id, ss.sk, nil); err != nil {
					return err
				}
			}
		}
		if r.Str("status") != "succeeded" {
			return fmt.Errorf("confirm: %d %v", r.Status, r.Body)
		}
		mu.Lock()
		succeeded[id] = true
		mu.Unlock()
		if i%3 != 0 {
			return nil
		}
		refundOn := srv[len(srv)-1]
		rf, err := send("POST", refundOn.URL+"/v1/refunds", ss.sk, map[string]any{"payment_intent": id, "reason": "returned"})
		if err != nil {
			return noAnswer(refundOn, err)
		}
		if rf.Status != http.StatusCreated || rf.Str("status") != "succeeded" {
			return fmt.Errorf("refund: %d %v", rf.Status, rf.Body)
		}
		commit(refunds, rf.Str("id"), ss)
		return nil
	}
	jobs := make(chan int)
	var killOnce sync.Once
	begin := time.Now()
	for range workers {
		wg.Go(func() {
			for i := range jobs {
				if i == payments/2 {
					go killOnce.Do(kill)
				}
				if err := pay(i); err != nil {
					t.Errorf("payment %d: %v", i, err)
				}
			}
		})
	}
	for i := range payments {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	<-killed
	require.Error(t, b.Cmd.Wait(), "b was killed")
	t.Logf("load: %d payments in %v; %d intents, %d succeeded as seen by the client, %d refunds, %d webhook tests committed",
		payments, time.Since(begin).Round(time.Millisecond), len(intents), len(succeeded), len(refunds), len(events))

	// What b left behind: attempts and refund sends recorded but not
	// finished (the reconcilers' first look-up is 1 minute after the
	// attempt), and deliveries b had claimed (its leases last 60 s).
	// Both are scheduled on the service clock, so moving the clock of
	// every live process 2 minutes on makes them due now: owner first, as
	// the sandbox keeps its time on the owner's clock.
	counts, err := db.PaymentIntentCounts(ctx)
	require.NoError(t, err)
	require.Positive(t, counts.ByStatus[keelpay.IntentProcessing], "b left the attempt whose charge was withheld")
	// b's webhook test stays b's until its lease lapses: nobody records an
	// attempt of it.
	r = must(t, "GET", a.URL+"/v1/events/"+heldID, shops[1].sk, nil)
	require.Equal(t, http.StatusOK, r.Status, "%v", r.Body)
	require.Equal(t, map[string]any{"status": "pending", "attempts": 0.0},
		map[string]any{"status": r.Body["delivery"].(map[string]any)["status"], "attempts": r.Body["delivery"].(map[string]any)["attempts"]})
	t.Logf("b left %d intents processing; %d deliveries received so far", counts.ByStatus[keelpay.IntentProcessing], len(rec.Deliveries()))
	advanceClock(t, owner, 120)
	advanceClock(t, a, 120)

	// Every event in the database delivered at least once (and recorded
	// as such), every attempt and refund send finished.
	delivered := func() map[string]bool {
		ids := map[string]bool{}
		for _, d := range rec.Deliveries() {
			if d.Err == nil {
				ids[d.Header.Get(webhooks.HeaderID)] = true
			}
		}
		return ids
	}
	eventually(t, time.Minute, func() string {
		counts, err := db.PaymentIntentCounts(ctx)
		require.NoError(t, err)
		if open := counts.ByStatus[keelpay.IntentProcessing] + counts.ByStatus[keelpay.IntentRequiresAction]; open > 0 {
			return fmt.Sprintf("%d intents with an open attempt", open)
		}
		pending, err := db.RefundListReconcileDue(ctx, time.Now().Add(24*time.Hour), 10)
		require.NoError(t, err)
		if len(pending) > 0 {
			return fmt.Sprintf("%d pending refunds", len(pending))
		}
		got := delivered()
		var missing []string
		for _, s := range shops {
			for _, e := range listAll(t, a, s.sk, "/v1/events") {
				if id := e["id"].(string); !got[id] || e["delivery"].(map[string]any)["status"] != "succeeded" {
					missing = append(missing, id)
				}
			}
		}
		if len(missing) > 0 {
			return fmt.Sprintf("events not delivered: %v", missing)
		}
		return ""
	})

	// No intent charged twice: the sandbox counts the charges of every
	// attempt id; each succeeded intent has exactly one, and there are no
	// others.
	stats := sandboxStats(t, owner)
	var succeededNow int
	for _, s := range shops {
		for _, o := range listAll(t, a, s.sk, "/v1/payment_intents") {
			if o["status"] != "succeeded" {
				continue
			}
			succeededNow++
			pi, err := db.PaymentIntentGet(ctx, s.id, o["id"].(string))
			require.NoError(t, err)
			require.Equal(t, 1, stats.ChargesByAttempt[pi.AttemptID], "charges of %s", pi.ID)
		}
	}
	require.Equal(t, succeededNow, stats.Charges, "charges made")
	require.Len(t, stats.ChargesByAttempt, succeededNow)
	require.Zero(t, stats.Voids)
	require.GreaterOrEqual(t, succeededNow, len(succeeded))

	// Every object whose creation was answered 2xx is there, read through
	// a server that did not create it necessarily; what the client saw
	// succeed is still succeeded; every refund that paid out is one the
	// database has as succeeded.
	for id, s := range intents {
		r := must(t, "GET", a.URL+"/v1/payment_intents/"+id, s.sk, nil)
		require.Equal(t, http.StatusOK, r.Status, id)
		if succeeded[id] {
			require.Equal(t, "succeeded", r.Str("status"), id)
		}
	}
	for id, s := range refunds {
		r := must(t, "GET", owner.URL+"/v1/refunds/"+id, s.sk, nil)
		require.Equal(t, http.StatusOK, r.Status, id)
		require.Equal(t, "succeeded", r.Str("status"), id)
	}
	for id, s := range events {
		require.Equal(t, http.StatusOK, must(t, "GET", a.URL+"/v1/events/"+id, s.sk, nil).Status, id)
	}
	refunded, all := 0, 0
	for _, s := range shops {
		for _, e := range listAll(t, a, s.sk, "/v1/events") {
			all++
			if e["type"] == string(keelpay.EventRefundSucceeded) {
				refunded++
			}
		}
	}
	t.Logf("%d events, %d deliveries; %d intents succeeded, %d charges, %d refunds", all, len(rec.Deliveries()), succeededNow, stats.Charges, stats.Refunds)
	sent := 0
	for _, d := range rec.Deliveries() {
		if d.Header.Get(webhooks.HeaderID) == heldID {
			sent++
		}
	}
	require.Equal(t, 2, sent, "b's webhook test: b's attempt, then one after its lease lapsed")
	require.Equal(t, refunded, stats.Refunds, "refunds paid out")
	require.GreaterOrEqual(t, refunded, len(refunds))
}
