package main

import (
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/internal/sendid"
	"github.com/keelpay/keelpay/keyring"
	"github.com/keelpay/keelpay/keyring/keyringtest"
	"github.com/keelpay/keelpay/provider/sandbox"
	"github.com/keelpay/keelpay/refunds"
	"github.com/keelpay/keelpay/storage"
	"github.com/keelpay/keelpay/storage/postgres/postgrestest"
	"github.com/keelpay/keelpay/webhooks"
	"github.com/keelpay/keelpay/webhooks/webhookstest"
)

// The crash test drives a mixed load with an Idempotency-Key on every POST
// while reference servers are killed with SIGKILL and restarted on the same
// database, retries every request that got no answer with its key, and then
// checks that nothing was done twice, lost or answered differently.
//
// KEELPAY_CRASH_KILLS sets the number of kills (default 20 on SQLite, 10 on
// PostgreSQL); -short skips the test.

// crashKills returns the number of kills to make.
func crashKills(t *testing.T, def int) int {
	t.Helper()
	if testing.Short() {
		t.Skip("the crash test kills servers for a minute or more; run it without -short")
	}
	if v := os.Getenv("KEELPAY_CRASH_KILLS"); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(t, err, "KEELPAY_CRASH_KILLS")
		return n
	}
	return def
}

// TestCrashSQLite kills the one server that owns a SQLite database and its
// sandbox at least 20 times under load.
func TestCrashSQLite(t *testing.T) {
	t.Parallel()
	kills := crashKills(t, 20)
	dir := t.TempDir()
	db := filepath.Join(dir, "keelpay.db")
	owner := newNode(t, "owner", dir, "-db", db)
	c := newCrash(t, db, []*node{owner}, []*node{owner})
	c.run(t, kills)
	for _, path := range []string{db, filepath.Join(dir, "keelpay.sandbox.db")} {
		require.Equal(t, "ok", integrityCheck(t, path), path)
	}
}

// TestCrashPostgreSQL runs three servers on one schema and kills one of the
// two that do not own the sandbox at least 10 times under load.
func TestCrashPostgreSQL(t *testing.T) {
	t.Parallel()
	kills := crashKills(t, 10)
	schema := postgrestest.NewSchema(t)
	dsn := dsnIn(t, postgrestest.DSN(t), schema)
	owner := newNode(t, "owner", t.TempDir(), "-db", dsn)
	a := newNode(t, "a", t.TempDir(), "-db", dsn, "-sandbox-url", owner.url)
	b := newNode(t, "b", t.TempDir(), "-db", dsn, "-sandbox-url", owner.url)
	c := newCrash(t, dsn, []*node{owner, a, b}, []*node{a, b})
	c.run(t, kills)
}

// integrityCheck returns PRAGMA integrity_check of a SQLite file.
func integrityCheck(t *testing.T, path string) string {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	defer db.Close()
	var res string
	require.NoError(t, db.QueryRow("PRAGMA integrity_check").Scan(&res))
	return res
}

// node is a reference server that keeps its address across restarts.
type node struct {
	name string
	dir  string
	env  []string
	args []string
	url  string

	mu    sync.Mutex
	cur   *started
	ready chan struct{} // closed while cur is up
	kills int
}

// newNode starts a server in dir with args on a free port of its own.
func newNode(t *testing.T, name, dir string, args ...string) *node {
	t.Helper()
	return newNodeEnv(t, name, dir, nil, args...)
}

// newNodeEnv is newNode with env added to crashKey.
func newNodeEnv(t *testing.T, name, dir string, env []string, args ...string) *node {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	n := &node{name: name, dir: dir, env: append(slices.Clone(crashKey), env...), args: append([]string{"-addr", addr}, args...), url: "http://" + addr}
	n.cur = start(t, dir, n.env, n.args...)
	require.Equal(t, n.url, n.cur.URL)
	n.ready = make(chan struct{})
	close(n.ready)
	return n
}

// up returns a channel that is closed once the node is up.
func (n *node) up() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.ready
}

// crash kills the node with SIGKILL and starts it again on the same
// address and database. Requests wait for it meanwhile.
func (n *node) crash(t *testing.T) {
	t.Helper()
	n.mu.Lock()
	n.ready = make(chan struct{})
	cur := n.cur
	n.kills++
	n.mu.Unlock()
	require.NoError(t, cur.Cmd.Process.Kill())
	require.Error(t, cur.Cmd.Wait(), "%s was killed", n.name)
	next := start(t, n.dir, n.env, n.args...)
	require.Equal(t, n.url, next.URL)
	n.mu.Lock()
	n.cur = next
	close(n.ready)
	n.mu.Unlock()
}

// answer is one answer to a keyed request.
type answer struct {
	status   int
	id       string // the object's id
	class    string // a confirm's outcome: the intent's status or the error's code
	code     string // error.code
	replayed bool   // Idempotent-Replayed: true
	phase    string // "load", "parked" (after the key's lock lapsed) or "replay"
	node     string
	body     map[string]any
	sent     time.Time // when the request was sent
}

func (a answer) String() string {
	s := strconv.Itoa(a.status)
	if a.id != "" {
		s += " " + a.id
	}
	if a.class != "" {
		s += " " + a.class
	} else if a.code != "" {
		s += " " + a.code
	}
	if a.replayed {
		s += " (replayed)"
	}
	return s + " [" + a.phase + " on " + a.node + "]"
}

// keyed is everything sent with one Idempotency-Key.
type keyed struct {
	kind string // create, confirm, refund, webhook_test, card_session, card
	key  string
	path string
	auth string
	body any

	sends    int // requests sent
	noAnswer int // of which got no answer
	inUse    int // of which got 409 idempotency_key_in_use
	parked   bool
	answers  []answer
}

// crash is one run of the crash test.
type crash struct {
	t       *testing.T
	dsn     string
	nodes   []*node // owner first
	victims []*node
	rec     *webhookstest.Recorder
	shops   []crashShop

	// faults, when set, is run beside the load instead of the kills of
	// victims; the load stops when it returns (the failover test).
	faults func(t *testing.T)
	// retry5xx: a 5xx answer counts as no answer and is sent again (with
	// the database away the servers answer 5xx, which stores nothing for
	// the key).
	retry5xx bool
	// lossy: commits acknowledged to the client may have been lost (an
	// asynchronous standby took over), so the checks that an answer's work
	// is there are logged, not failed; the money checks still fail.
	lossy bool

	stop     atomic.Bool
	requests atomic.Int64
	mu       sync.Mutex
	keys     map[string]*keyed
	order    []*keyed
	// onAnswer, when set, sees every answer, under mu.
	onAnswer func(answer)
}

type crashShop struct {
	shop
	customer map[string]any
	cards    map[string]string // card id by test card number
}

// crashCards are the cards confirmed in turn, all saved first.
var crashCards = []string{
	sandbox.CardVisa, sandbox.CardRefundOutcomeUnknown, sandbox.CardThreeDSecure, sandbox.CardVisa,
	sandbox.CardOutcomeUnknown, sandbox.CardDeclined, sandbox.CardRefundOutcomeUnknown,
	sandbox.CardOutcomeUnknownDeclined, sandbox.CardVisa,
}

// crashKey is the encryption key of every server of a crash test, and of
// the test's own look at the database afterwards.
// refundMaxSends is how many sends a refund makes at most.
const refundMaxSends = refunds.MaxSends

var crashKey = []string{"KEELPAY_ENCRYPTION_KEY=" + keyring.Format(keyringtest.Key())}

func newCrash(t *testing.T, dsn string, nodes, victims []*node) *crash {
	t.Helper()
	c := &crash{t: t, dsn: dsn, nodes: nodes, victims: victims, keys: map[string]*keyed{}}
	c.rec = webhookstest.NewRecorder(t, "")
	var secrets []string
	for i := range 2 {
		s := setupShop(t, &started{URL: nodes[i%len(nodes)].url}, fmt.Sprintf("app_crash_%d", i), c.rec.URL()+"/hooks")
		secrets = append(secrets, s.whsec)
		cs := crashShop{shop: s, cards: map[string]string{},
			customer: map[string]any{"id": fmt.Sprintf("cus_crash_%d", i), "name": "Crash Test", "email": "crash@shop.example", "phone": "+358401234567"}}
		for _, number := range slices.Compact(slices.Sorted(slices.Values(crashCards))) {
			key := fmt.Sprintf("setup-%d-%s", i, number)
			session, ok := c.post(0, "card_session", key+"-session", "/v1/card_sessions", s.sk,
				map[string]any{"customer": cs.customer, "page_origins": []string{"https://shop.example"}}, "setup")
			require.True(t, ok && session.status == http.StatusCreated, "card session: %v", session)
			card, ok := c.post(0, "card", key+"-card", "/v1/card_sessions/"+session.id+"/cards", s.pk, map[string]any{
				"client_secret": session.body["client_secret"], "number": number, "exp_month": 12, "exp_year": 2035, "cvc": "123"}, "setup")
			require.True(t, ok && card.status == http.StatusCreated, "card %s: %v", number, card)
			cs.cards[number] = card.id
		}
		c.shops = append(c.shops, cs)
	}
	require.NoError(t, c.rec.SetSecrets(secrets...))
	return c
}

// post sends a keyed POST to the node at index at (or the next one up)
// until it gets an answer, and records every answer under the key. A 409
// idempotency_key_in_use (a killed request still holds the key's lock)
// parks the key for after the load: ok is false.
func (c *crash) post(at int, kind, key, path, auth string, body any, phase string) (answer, bool) {
	c.mu.Lock()
	k := c.keys[key]
	if k == nil {
		k = &keyed{kind: kind, key: key, path: path, auth: auth, body: body}
		c.keys[key] = k
		c.order = append(c.order, k)
	}
	c.mu.Unlock()
	for try := 0; ; try++ {
		n := c.nodes[(at+try)%len(c.nodes)]
		<-n.up()
		c.requests.Add(1)
		sent := time.Now()
		r, err := send("POST", n.url+path, auth, body, "Idempotency-Key", key)
		c.mu.Lock()
		k.sends++
		if err != nil {
			k.noAnswer++
			c.mu.Unlock()
			continue
		}
		a := answer{status: r.Status, code: r.Code(), replayed: r.Header.Get("Idempotent-Replayed") == "true", phase: phase, node: n.name, body: r.Body, sent: sent}
		if r.Status < 300 {
			a.id = r.Str("id")
		}
		if kind == "confirm" {
			a.class = a.code
			if r.Status < 300 {
				a.class = r.Str("status")
			}
		}
		if c.onAnswer != nil {
			c.onAnswer(a)
		}
		if c.retry5xx && r.Status >= 500 {
			k.noAnswer++
			c.mu.Unlock()
			// A client's pause before it sends the request again.
			time.Sleep(20 * time.Millisecond)
			continue
		}
		if r.Status == http.StatusConflict && a.code == "idempotency_key_in_use" {
			k.inUse++
			k.parked = true
			c.mu.Unlock()
			return a, false
		}
		k.parked = false
		k.answers = append(k.answers, a)
		c.mu.Unlock()
		return a, true
	}
}

// flow is one payment: create, confirm with a saved card (3D Secure
// answered on the owner's page), perhaps a refund and a webhook test.
func (c *crash) flow(i int) {
	s := c.shops[i%len(c.shops)]
	at := rand.IntN(len(c.nodes))
	k := fmt.Sprintf("k%d", i)
	number := crashCards[i%len(crashCards)]
	if i%5 == 0 {
		c.post(at, "webhook_test", k+"-test", "/v1/webhooks/test", s.sk, nil, "load")
	}
	body := map[string]any{
		"amount": 1000 + i, "currency": "EUR", "customer": s.customer, "reference": k + "-create",
		"metadata": map[string]string{"key": k + "-create"}}
	if i%2 == 0 {
		// Created with its card: the confirm records its attempt in the
		// one write that also checks the intent and the card.
		body["payment_method"] = s.cards[number]
	}
	created, ok := c.post(at, "create", k+"-create", "/v1/payment_intents", s.sk, body, "load")
	if !ok || created.status != http.StatusCreated {
		return
	}
	confirmed, ok := c.post(at+1, "confirm", k+"-confirm", "/v1/payment_intents/"+created.id+"/confirm", s.sk,
		map[string]any{"payment_method": s.cards[number]}, "load")
	if !ok {
		return
	}
	switch confirmed.class {
	case "requires_action":
		next, _ := confirmed.body["next_action"].(map[string]any)
		challenge, _ := next["url"].(string)
		if challenge == "" {
			return
		}
		// The page is the sandbox's, not the API: it takes no key, and a
		// second answer is refused with 409 (the first one stands).
		for {
			<-c.nodes[0].up()
			c.requests.Add(1)
			if _, err := send("POST", challenge, "", url.Values{"result": {"complete"}}); err == nil {
				return
			}
		}
	case "succeeded":
		if i%2 == 0 {
			c.post(at+2, "refund", k+"-refund", "/v1/refunds", s.sk, map[string]any{
				"payment_intent": created.id, "reason": "crash test", "metadata": map[string]string{"key": k + "-refund"}}, "load")
		}
	}
}

// run drives the load while it kills victims kills times at random moments
// 1 to 4 seconds apart, then finishes and checks everything.
func (c *crash) run(t *testing.T, kills int) {
	begin := time.Now()
	payments := c.load(func() {
		if c.faults != nil {
			c.faults(t)
			return
		}
		for range kills {
			<-time.After(time.Second + rand.N(3*time.Second))
			c.victims[rand.IntN(len(c.victims))].crash(t)
		}
	})
	loadTime := time.Since(begin)
	all := c.finish(t, begin)

	var totalKills int
	for _, n := range c.nodes {
		totalKills += n.kills
	}
	var keys, retried, noAnswers, parked int
	for _, k := range all {
		keys++
		noAnswers += k.noAnswer
		if k.noAnswer > 0 {
			retried++
		}
		if k.inUse > 0 {
			parked++
		}
	}
	t.Logf("load: %v, %d kills, %d payments, %d requests, %d keys; %d keys retried after %d requests without an answer; %d keys parked on idempotency_key_in_use",
		loadTime.Round(time.Millisecond), totalKills, payments, c.requests.Load(), keys, retried, noAnswers, parked)
}

// load runs the flows on 4 workers until during returns, and returns how
// many payments it started.
func (c *crash) load(during func()) int64 {
	const workers = 4
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for !c.stop.Load() {
				c.flow(int(next.Add(1)))
			}
		})
	}
	during()
	c.stop.Store(true)
	wg.Wait()
	return next.Load()
}

// finish answers the keys parked on a lock, asks every key again, moves the
// sandbox clock 48 hours on, waits until every attempt, refund and
// delivery is over and checks what the load left behind. It returns every
// key.
func (c *crash) finish(t *testing.T, begin time.Time) []*keyed {
	ctx := t.Context()
	// Every key still held by a killed request: its lock lapses a minute
	// after it was taken on the service clock.
	for round := 0; ; round++ {
		var parked []*keyed
		c.mu.Lock()
		for _, k := range c.order {
			if k.parked {
				parked = append(parked, k)
			}
		}
		c.mu.Unlock()
		if len(parked) == 0 {
			break
		}
		require.Less(t, round, 3, "%d keys still in use after %d minutes on the clock", len(parked), round)
		c.advance(t, 61)
		for _, k := range parked {
			c.post(0, k.kind, k.key, k.path, k.auth, k.body, "parked")
		}
	}
	// Every key is asked again: the answer must be the first one's replay.
	c.mu.Lock()
	all := slices.Clone(c.order)
	c.mu.Unlock()
	for i, k := range all {
		// Keys are kept for requests with the secret key; the browser's
		// (publishable key) requests send one but are not replayed.
		if len(k.answers) > 0 && strings.HasPrefix(k.auth, "sk_") {
			c.post(i, k.kind, k.key, k.path, k.auth, k.body, "replay")
		}
	}

	t.Logf("%v: load done, parked keys answered and every key replayed", time.Since(begin).Round(time.Millisecond))

	// 48 hours on: every unknown outcome resolves, every challenge
	// expires, every delivery is due.
	c.advance(t, 48*3600)
	db, err := openStorage(ctx, c.dsn, keyringtest.Keyring(), nil)
	require.NoError(t, err)
	defer db.Close()
	var events []map[string]any
	eventually(t, 2*time.Minute, func() string {
		counts, err := db.PaymentIntentCounts(ctx)
		require.NoError(t, err)
		if open := counts.ByStatus[keelpay.IntentProcessing] + counts.ByStatus[keelpay.IntentRequiresAction]; open > 0 {
			return fmt.Sprintf("%d intents with an open attempt", open)
		}
		pending, err := db.RefundListReconcileDue(ctx, time.Now().Add(100*24*time.Hour), 10)
		require.NoError(t, err)
		if len(pending) > 0 {
			return fmt.Sprintf("%d refunds pending", len(pending))
		}
		events = events[:0]
		var open []string
		for _, s := range c.shops {
			for _, e := range listAll(t, &started{URL: c.nodes[0].url}, s.sk, "/v1/events") {
				events = append(events, e)
				if st := e["delivery"].(map[string]any)["status"]; st != "succeeded" && st != "failed" {
					open = append(open, e["id"].(string))
				}
			}
		}
		if len(open) > 0 {
			return fmt.Sprintf("%d of %d deliveries not finished: %v", len(open), len(events), open[:min(len(open), 5)])
		}
		return ""
	})
	t.Logf("%v: every attempt, refund and delivery finished", time.Since(begin).Round(time.Millisecond))
	c.check(t, db, events)
	return all
}

// advance moves the sandbox clock of every node, owner first.
func (c *crash) advance(t *testing.T, seconds int) {
	t.Helper()
	for _, n := range c.nodes {
		advanceClock(t, &started{URL: n.url}, seconds)
	}
}

// check asserts what the load must leave behind, reporting every failure.
func (c *crash) check(t *testing.T, db storage.Storage, events []map[string]any) {
	ctx := t.Context()
	owner := &started{URL: c.nodes[0].url}
	stats := sandboxStats(t, owner)

	// Objects per key: the intents by the key that created them.
	byKey := map[string][]string{}
	intents := map[string]map[string]any{}
	type owned struct{ store, id string }
	var all []owned
	for _, s := range c.shops {
		for _, o := range listAll(t, owner, s.sk, "/v1/payment_intents") {
			md, _ := o["metadata"].(map[string]any)
			key, _ := md["key"].(string)
			id := o["id"].(string)
			byKey[key] = append(byKey[key], id)
			intents[id] = o
			all = append(all, owned{s.id, id})
		}
	}
	perKey := map[int]int{}
	failures := map[string]int{}
	lost := map[string]int{}
	fail := func(kind, format string, args ...any) {
		if c.lossy && lossyKinds[kind] {
			lost[kind]++
			if lost[kind] <= 10 {
				t.Logf("(asynchronous standby) "+kind+": "+format, args...)
			}
			return
		}
		failures[kind]++
		if failures[kind] <= 10 {
			t.Errorf(kind+": "+format, args...)
		}
	}
	for _, k := range c.order {
		if k.kind != "create" {
			continue
		}
		ids := byKey[k.key]
		perKey[len(ids)]++
		first := "none"
		if len(k.answers) > 0 {
			first = k.answers[0].String()
		}
		if len(ids) > 1 {
			fail("two objects for one key", "key %s made %d intents %v; sends %d (%d without answer, %d idempotency_key_in_use), first answer %s", k.key, len(ids), ids, k.sends, k.noAnswer, k.inUse, first)
		}
		if len(k.answers) > 0 && k.answers[0].status == http.StatusCreated && !slices.Contains(ids, k.answers[0].id) {
			fail("answered object missing", "key %s answered %s, but its intents are %v", k.key, first, ids)
		}
	}

	// Every later answer is the first one again: same status, same
	// object, the same outcome for a confirm; a replay says so.
	for _, k := range c.order {
		if len(k.answers) == 0 {
			continue
		}
		first := k.answers[0]
		if first.status == http.StatusTooManyRequests {
			continue // rate limited: nothing was started, nothing is kept
		}
		for _, a := range k.answers[1:] {
			if a.status != first.status || a.id != first.id || a.class != first.class {
				fail("different answer", "%s key %s: first answer %s, later answer %s (sends %d, %d without answer, %d idempotency_key_in_use)", k.kind, k.key, first, a, k.sends, k.noAnswer, k.inUse)
			} else if a.phase == "replay" && first.status < 300 && !a.replayed {
				fail("not a replay", "%s key %s: first answer %s, later answer %s without Idempotent-Replayed", k.kind, k.key, first, a)
			}
		}
		if k.kind == "confirm" && k.noAnswer > 0 && first.status == http.StatusConflict {
			id := strings.Split(k.path, "/")[3]
			fail("retried confirm refused", "key %s (intent %s) was retried after %d sends without an answer and answered %s; the intent ended %v",
				k.key, id, k.noAnswer, first, intents[id]["status"])
		}
		if k.kind == "confirm" && first.class == "succeeded" {
			id := strings.Split(k.path, "/")[3]
			if intents[id]["status"] != "succeeded" {
				fail("answered succeeded, ended otherwise", "key %s: intent %s answered succeeded, ended %v", k.key, id, intents[id]["status"])
			}
		}
	}

	// Work lost with an asynchronous standby leaves the provider's side
	// of it behind: the charge of an intent that vanished with it, the
	// payout of a refund of such an intent. Those, and only those, are
	// let pass beside the voids: a charge or payout more is money taken
	// twice for an intent that is there.
	// A key counts whatever it was answered: a confirm or refund cut off
	// by the kill (a 5xx, or no answer) may have reached the provider
	// before its intent vanished.
	lostCharges, lostPayouts := 0, 0
	for _, k := range c.order {
		if !c.lossy || len(k.answers)+k.noAnswer == 0 {
			continue
		}
		switch k.kind {
		case "confirm":
			declined := len(k.answers) > 0 && k.answers[0].status < 300 && k.answers[0].class == "requires_payment_method"
			if _, ok := intents[strings.Split(k.path, "/")[3]]; !ok && !declined {
				lostCharges++
			}
		case "refund":
			body, _ := k.body.(map[string]any)
			if _, ok := intents[fmt.Sprint(body["payment_intent"])]; !ok {
				lostPayouts++
			}
		}
	}

	// Charges: exactly one per succeeded intent, none for any other.
	chargesPerIntent := map[int]int{}
	ownedAttempts := map[string]bool{}
	sendsOf := map[string]*keelpay.PaymentIntent{}
	succeeded := 0
	var refunds []*keelpay.Refund
	for _, o := range all {
		pi, err := db.PaymentIntentGet(ctx, o.store, o.id)
		require.NoError(t, err)
		n := stats.ChargesByAttempt[pi.AttemptID]
		if pi.Status == keelpay.IntentSucceeded {
			succeeded++
			chargesPerIntent[n]++
			ownedAttempts[pi.AttemptID] = true
			if n != 1 {
				fail("charges of a succeeded intent", "intent %s (attempt %s) charged %d times", pi.ID, pi.AttemptID, n)
			}
			r, err := db.RefundGetByIntent(ctx, o.store, o.id)
			if err == nil {
				refunds = append(refunds, r)
			} else if !errors.Is(err, storage.ErrNotFound) {
				require.NoError(t, err)
			}
		} else if n > 0 {
			fail("charged intent not succeeded", "intent %s (attempt %s) is %s but its attempt charged %d times", pi.ID, pi.AttemptID, pi.Status, n)
		}
		// Every send an intent (or its refund) could have made: the ids
		// derived from it at each of its versions, and from its charge
		// for each send of its refund. A charge or payout of
		// a send of an intent that is still there, beside its own, is
		// money taken or paid twice, whatever was lost with the standby.
		for v := int64(0); v <= pi.Version; v++ {
			sendsOf[sendid.For("att_", pi.ID, v)] = pi
		}
		if pi.AttemptID != "" {
			for n := int64(1); n <= refundMaxSends; n++ {
				sendsOf[sendid.For("rfatt_", pi.AttemptID, n)] = pi
			}
		}
	}
	var orphans []string
	for attempt, n := range stats.ChargesByAttempt {
		if !ownedAttempts[attempt] {
			orphans = append(orphans, fmt.Sprintf("%s×%d", attempt, n))
		}
	}
	sort.Strings(orphans)
	for attempt, n := range stats.ChargesByAttempt {
		if pi := sendsOf[attempt]; pi != nil && !ownedAttempts[attempt] && stats.VoidedByAttempt[attempt] < n {
			fail("second charge of an intent", "intent %s (%s, attempt %s) was charged by its earlier attempt %s as well, not voided", pi.ID, pi.Status, pi.AttemptID, attempt)
		}
	}
	if len(orphans) > stats.Voids+lostCharges {
		fail("charges of no succeeded intent", "%d charged attempts belong to no succeeded intent (%d voids, %d charged intents lost with the standby): %v", len(orphans), stats.Voids, lostCharges, orphans)
	}

	// Refunds: each send paid out at most once, a refund that paid out is
	// succeeded, and one that did not is not.
	// A payout is attributed to the intent whose charge it returns (the
	// ids of refund sends derive from the charge). An intent paid back
	// twice is money paid out twice; one paid back by a send its refund
	// does not name was refused or lost on keelpay's side while the money
	// went back. An intent with a payout and no refund at all lost its
	// refund with the standby (an asynchronous one only).
	refundOf := map[string]*keelpay.Refund{}
	for _, r := range refunds {
		refundOf[r.PaymentIntentID] = r
	}
	payouts := map[string][]string{}
	for attempt, n := range stats.RefundsByAttempt {
		if n > 1 {
			fail("refund paid twice", "refund send %s paid out %d times", attempt, n)
		}
		if pi := sendsOf[attempt]; pi != nil {
			payouts[pi.ID] = append(payouts[pi.ID], attempt)
		}
	}
	for id, sends := range payouts {
		r := refundOf[id]
		switch {
		case len(sends) > 1:
			fail("second payout of an intent", "intent %s was paid back by %d sends: %v", id, len(sends), sends)
		case r == nil && !c.lossy:
			fail("payout without a refund", "intent %s was paid back by send %s and has no refund", id, sends[0])
		case r != nil && r.AttemptID != sends[0]:
			fail("payout its refund does not name", "intent %s was paid back by send %s; its refund %s is %s with send %s", id, sends[0], r.ID, r.Status, r.AttemptID)
		}
	}
	paid := 0
	for _, r := range refunds {
		n := stats.RefundsByAttempt[r.AttemptID]
		switch {
		case r.Status == keelpay.RefundSucceeded && n != 1:
			fail("succeeded refund not paid once", "refund %s (send %s) is succeeded, paid out %d times", r.ID, r.AttemptID, n)
		case r.Status != keelpay.RefundSucceeded && n > 0:
			fail("paid-out refund not succeeded", "refund %s (send %s) is %s, but paid out %d times", r.ID, r.AttemptID, r.Status, n)
		}
		if r.Status == keelpay.RefundSucceeded {
			paid++
		}
	}
	// Every refund answered 201 is there, made by its key.
	storeOf := map[string]string{}
	for _, s := range c.shops {
		storeOf[s.sk] = s.id
	}
	for _, k := range c.order {
		if k.kind != "refund" || len(k.answers) == 0 || k.answers[0].status != http.StatusCreated {
			continue
		}
		r, err := db.RefundGet(ctx, storeOf[k.auth], k.answers[0].id)
		if err != nil {
			fail("answered object missing", "key %s answered %s: %v", k.key, k.answers[0], err)
		} else if r.Metadata["key"] != k.key {
			fail("refund of another key", "key %s answered refund %s, whose key is %q", k.key, r.ID, r.Metadata["key"])
		}
	}
	// What no surviving intent accounts for belongs to intents that
	// vanished with an asynchronous standby: a payout returns a charge,
	// so there are no more such payouts than such charges, and none at
	// all when nothing was lost.
	unattributed := func(sends map[string]int) (n int) {
		for attempt := range sends {
			if sendsOf[attempt] == nil {
				n++
			}
		}
		return n
	}
	if strayPayouts, strayCharges := unattributed(stats.RefundsByAttempt), unattributed(stats.ChargesByAttempt); strayPayouts > strayCharges || (!c.lossy && strayPayouts > 0) {
		fail("refunds paid out", "%d payouts belong to no intent that is here (%d charges of none; %d refund keys of intents lost with the standby)", strayPayouts, strayCharges, lostPayouts)
	}
	if paid > stats.Refunds {
		fail("refunds paid out", "%d refunds succeeded, the sandbox paid out %d", paid, stats.Refunds)
	}

	// Every event delivered at least once, verified.
	got := map[string]bool{}
	for _, d := range c.rec.Deliveries() {
		if d.Err == nil {
			got[d.Header.Get(webhooks.HeaderID)] = true
		}
	}
	for _, e := range events {
		if id := e["id"].(string); !got[id] {
			fail("event not delivered", "event %s (%v) never reached the receiver; delivery %v", id, e["type"], e["delivery"])
		}
	}
	t.Logf("objects per create key: %v; charges per succeeded intent: %v; %d intents, %d succeeded, %d charges, %d voids, %d refunds (%d paid out), %d events, %d deliveries",
		perKey, chargesPerIntent, len(all), succeeded, stats.Charges, stats.Voids, len(refunds), stats.Refunds, len(events), len(c.rec.Deliveries()))
	if len(failures) > 0 {
		t.Logf("failed assertions (count by kind): %v", failures)
	}
	if len(lost) > 0 {
		t.Logf("acknowledged work lost with the asynchronous standby (count by kind): %v", lost)
	}
}

// lossyKinds are the checks of acknowledged work, which an asynchronous
// standby that takes over may break (see crash.lossy).
var lossyKinds = map[string]bool{
	"answered object missing": true, "different answer": true, "not a replay": true,
	"answered succeeded, ended otherwise": true, "retried confirm refused": true,
	"refund of another key": true,
}
