package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay"
	"github.com/keelpay/keelpay/keyring/keyringtest"
	"github.com/keelpay/keelpay/provider/sandbox"
	"github.com/keelpay/keelpay/storage/postgres/postgrestest"
)

// The overload test measures the payment rate a reference server sustains
// (keyed create and confirm flows from a few connections), then offers ten
// times that rate from hundreds of connections for a bounded time and
// checks that the server sheds what it cannot take in time instead of
// queueing it: every answer is 2xx or a 429/503 with Retry-After, nothing
// answered 2xx is lost, a shed request did none of its work, nothing is
// charged twice, and the server's peak memory stays under a ceiling. It
// logs the admitted requests' p99 and the share shed; it asserts no time.
//
// KEELPAY_OVERLOAD_SECONDS sets the burst's length (default 20); -short
// skips the test.

// TestOverloadSQLite runs the overload test on one SQLite file.
func TestOverloadSQLite(t *testing.T) {
	t.Parallel()
	seconds := overloadSeconds(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "keelpay.db")
	runOverload(t, db, seconds, start(t, dir, append([]string{"KEELPAY_ADDR=127.0.0.1:0"}, crashKey...), "-db", db))
}

// TestOverloadPostgreSQL runs the overload test on a PostgreSQL schema of
// its own.
func TestOverloadPostgreSQL(t *testing.T) {
	t.Parallel()
	seconds := overloadSeconds(t)
	schema := postgrestest.NewSchema(t)
	dsn := dsnIn(t, postgrestest.DSN(t), schema)
	runOverload(t, dsn, seconds, start(t, t.TempDir(), append([]string{"KEELPAY_ADDR=127.0.0.1:0"}, crashKey...), "-db", dsn))
}

func overloadSeconds(t *testing.T) int {
	t.Helper()
	if testing.Short() {
		t.Skip("the overload test loads a server for half a minute or more; run it without -short")
	}
	if v := os.Getenv("KEELPAY_OVERLOAD_SECONDS"); v != "" {
		n, err := strconv.Atoi(v)
		require.NoError(t, err, "KEELPAY_OVERLOAD_SECONDS")
		return n
	}
	return 20
}

// Bounds of the load.
const (
	// overloadMeasureWorkers closed-loop flows measure the sustainable
	// rate: enough to fill the SQLite writer's commit batches and the
	// PostgreSQL pool, so the measured rate is the server's, not the
	// test's round trips.
	overloadMeasureWorkers = 16
	overloadMeasureTime    = 3 * time.Second
	// overloadMaxFlows is the most flows the burst keeps open at once:
	// each is a connection of its own while it waits. Past it the test
	// waits for a flow to end before it starts the next (and says so).
	overloadMaxFlows = 800
	// overloadConnBytes is what an open connection costs the server: a
	// goroutine's stack, net/http's 4 KiB read and write buffers, the
	// request and response objects.
	overloadConnBytes = 40 << 10
	// overloadWorkBytes is what the requests admitted at once (at most
	// twice each class's limit, waiting ones included) hold, with the
	// garbage the collector lets grow between two collections (as much
	// again as the live heap, at GOGC=100). Measured on two cores: the
	// peak was 40 to 55 MiB over the idle RSS with the limits, 80 to 100
	// MiB without them.
	overloadWorkBytes = 40 << 20
	// overloadSQLiteCacheBytes is the most one SQLite connection's page
	// cache takes in the process (docs/operating.md, SQLite: up to 2 MB
	// of pages, about twice that with the pure-Go SQLite).
	overloadSQLiteCacheBytes = 4 << 20
)

// overloadAnswer is one answered request of the load.
type overloadAnswer struct {
	kind       string // create or confirm
	key        string // the flow's metadata key
	status     int
	retryAfter string
	intent     string // the intent's id (a confirm's, or a created one)
	state      string // the intent's status in a 2xx answer
	elapsed    time.Duration
}

type overload struct {
	t        *testing.T
	s        *started
	sh       shop
	customer map[string]any
	card     string
	client   *http.Client

	mu       sync.Mutex
	answers  []overloadAnswer
	noAnswer []string
}

func runOverload(t *testing.T, dsn string, seconds int, s *started) {
	ctx := t.Context()
	o := &overload{t: t, s: s, client: &http.Client{
		Timeout: 30 * time.Second,
		Transport: &http.Transport{
			MaxIdleConns:        overloadMaxFlows,
			MaxIdleConnsPerHost: overloadMaxFlows,
			IdleConnTimeout:     time.Minute,
		},
	}}
	t.Cleanup(o.client.CloseIdleConnections)
	o.sh = setupShop(t, s, "app_overload", "http://127.0.0.1:9/hooks")
	o.customer = map[string]any{"id": "cus_overload", "name": "Over Load", "email": "ol@shop.example", "phone": "+358401234567"}
	session := must(t, "POST", s.URL+"/v1/card_sessions", o.sh.sk,
		map[string]any{"customer": o.customer, "page_origins": []string{"https://shop.example"}}, "Idempotency-Key", "overload-session")
	require.Equal(t, http.StatusCreated, session.Status, "%v", session.Body)
	card := must(t, "POST", s.URL+"/v1/card_sessions/"+session.Str("id")+"/cards", o.sh.pk, map[string]any{
		"client_secret": session.Str("client_secret"), "number": sandbox.CardVisa, "exp_month": 12, "exp_year": 2035, "cvc": "123"})
	require.Equal(t, http.StatusCreated, card.Status, "%v", card.Body)
	o.card = card.Str("id")
	// The ceiling of the server's peak memory: what it holds before the
	// load, each connection the burst may open, the admitted work and,
	// on SQLite, the page cache of the writer and of every reader
	// (sqlite.Config.Readers: max(4, 2*GOMAXPROCS)). A queue without a
	// bound (the server before admission limits held every request of
	// the burst) goes past it.
	idle := rss(t, s, "VmRSS:")
	ceiling := idle + overloadMaxFlows*overloadConnBytes + overloadWorkBytes
	if !strings.HasPrefix(dsn, "postgres://") {
		ceiling += int64(1+max(4, 2*runtime.GOMAXPROCS(0))) * overloadSQLiteCacheBytes
	}

	// The sustainable rate: closed-loop flows from a few connections.
	var measured atomic.Int64
	var next atomic.Int64
	var wg sync.WaitGroup
	stop := time.Now().Add(overloadMeasureTime)
	for range overloadMeasureWorkers {
		wg.Go(func() {
			for time.Now().Before(stop) {
				if o.flow(fmt.Sprintf("m%d", next.Add(1))) {
					measured.Add(1)
				}
			}
		})
	}
	wg.Wait()
	rate := float64(measured.Load()) / overloadMeasureTime.Seconds()
	require.Positive(t, rate, "no flow succeeded while the rate was measured: %v", o.statuses(0))
	measuredAnswers := len(o.answers)

	// The burst: ten times that rate, each flow on its own goroutine and
	// connection, started on schedule whether or not the earlier ones
	// were answered.
	burst := 10 * rate
	var open atomic.Int64
	var peakOpen int64
	var started, saturated int
	slots := make(chan struct{}, overloadMaxFlows)
	begin := time.Now()
	end := begin.Add(time.Duration(seconds) * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	for now := range tick.C {
		if now.After(end) {
			break
		}
		for started < int(burst*now.Sub(begin).Seconds()) && time.Now().Before(end) {
			select {
			case slots <- struct{}{}:
			default:
				saturated++
				slots <- struct{}{}
			}
			started++
			peakOpen = max(peakOpen, open.Add(1))
			key := fmt.Sprintf("b%d", started)
			wg.Go(func() {
				defer func() { open.Add(-1); <-slots }()
				o.flow(key)
			})
		}
	}
	tick.Stop()
	wg.Wait()
	elapsed := time.Since(begin)
	hwm := rss(t, s, "VmHWM:")

	// Every attempt ends (a confirm whose outcome is not known yet is
	// settled by the reconciler), then the books are checked.
	db, err := openStorage(ctx, dsn, keyringtest.Keyring(), nil)
	require.NoError(t, err)
	defer db.Close()
	eventually(t, time.Minute, func() string {
		counts, err := db.PaymentIntentCounts(ctx)
		require.NoError(t, err)
		if n := counts.ByStatus[keelpay.IntentProcessing]; n > 0 {
			return fmt.Sprintf("%d intents processing", n)
		}
		return ""
	})
	stats := sandboxStats(t, s)
	intents := map[string]map[string]any{}
	byKey := map[string][]string{}
	for _, pi := range listAll(t, s, o.sh.sk, "/v1/payment_intents") {
		id := pi["id"].(string)
		intents[id] = pi
		md, _ := pi["metadata"].(map[string]any)
		key, _ := md["key"].(string)
		byKey[key] = append(byKey[key], id)
	}

	failures := map[string]int{}
	fail := func(kind, format string, args ...any) {
		failures[kind]++
		if failures[kind] <= 5 {
			t.Errorf(kind+": "+format, args...)
		}
	}
	for _, k := range o.noAnswer {
		fail("no answer", "%s", k)
	}
	var admitted []time.Duration
	shed, burstAnswers := 0, 0
	type steps struct{ create, confirm []overloadAnswer }
	flows := map[string]*steps{}
	for i, a := range o.answers {
		f := flows[a.key]
		if f == nil {
			f = &steps{}
			flows[a.key] = f
		}
		if a.kind == "create" {
			f.create = append(f.create, a)
		} else {
			f.confirm = append(f.confirm, a)
		}
		burst := i >= measuredAnswers
		if burst {
			burstAnswers++
		}
		switch {
		case a.status == http.StatusTooManyRequests || a.status == http.StatusServiceUnavailable:
			if burst {
				shed++
			}
			if n, err := strconv.Atoi(a.retryAfter); err != nil || n < 1 {
				fail("shed without Retry-After", "%s %s answered %d with Retry-After %q", a.kind, a.key, a.status, a.retryAfter)
			}
		case a.status < 300:
			if burst {
				admitted = append(admitted, a.elapsed)
			}
		default:
			fail("neither admitted nor shed", "%s %s answered %d", a.kind, a.key, a.status)
		}
	}
	completed := 0
	for key, f := range flows {
		ids := byKey[key]
		if len(ids) > 1 {
			fail("two intents for one key", "key %s made %v", key, ids)
		}
		// The 2xx answer of each step, if it had one: it must hold.
		// Without one, every send was shed, before any work: no intent
		// for the create, no attempt for the confirm.
		var okCreate, okConfirm *overloadAnswer
		for i := range f.create {
			if f.create[i].status < 300 {
				okCreate = &f.create[i]
			}
		}
		for i := range f.confirm {
			if f.confirm[i].status < 300 {
				okConfirm = &f.confirm[i]
			}
		}
		if okCreate == nil && len(ids) > 0 {
			fail("shed create made an intent", "key %s: every create was shed (%d), yet it made %v", key, len(f.create), ids)
		}
		if okConfirm == nil && len(f.confirm) > 0 {
			if st := intents[f.confirm[0].intent]["status"]; st != string(keelpay.IntentRequiresPaymentMethod) {
				fail("shed confirm changed its intent", "intent %s of key %s: every confirm was shed (%d), yet it is %v", f.confirm[0].intent, key, len(f.confirm), st)
			}
		}
		for _, a := range []*overloadAnswer{okCreate, okConfirm} {
			if a == nil {
				continue
			}
			pi := intents[a.intent]
			if pi == nil {
				fail("answered intent lost", "%s %s answered %d with intent %s, which does not exist", a.kind, key, a.status, a.intent)
			} else if statusRank(pi["status"].(string)) < statusRank(a.state) {
				fail("answered status lost", "%s %s answered intent %s %s; it is now %s", a.kind, key, a.intent, a.state, pi["status"])
			}
		}
		if okConfirm != nil && okConfirm.state == string(keelpay.IntentSucceeded) && strings.HasPrefix(key, "b") {
			completed++
		}
	}

	// Charges: at most one per intent, and only for succeeded intents.
	owned := map[string]bool{}
	succeeded := 0
	for id, pi := range intents {
		got, err := db.PaymentIntentGet(ctx, o.sh.id, id)
		require.NoError(t, err)
		n := stats.ChargesByAttempt[got.AttemptID]
		if got.AttemptID == "" {
			n = 0
		}
		if got.Status == keelpay.IntentSucceeded {
			succeeded++
			owned[got.AttemptID] = true
			if n != 1 {
				fail("succeeded intent not charged once", "intent %s (attempt %s) charged %d times", id, got.AttemptID, n)
			}
		} else if n > 0 {
			fail("charge of an intent not succeeded", "intent %s is %v, charged %d times", id, pi["status"], n)
		}
	}
	for attempt, n := range stats.ChargesByAttempt {
		if !owned[attempt] {
			fail("charge of no succeeded intent", "attempt %s charged %d times", attempt, n)
		}
	}

	slices.Sort(admitted)
	p := func(q float64) time.Duration {
		if len(admitted) == 0 {
			return 0
		}
		return admitted[min(len(admitted)-1, int(q*float64(len(admitted))))].Round(time.Millisecond)
	}
	t.Logf("sustainable: %.0f flows/s (%d flows in %v from %d connections); burst: %.0f flows/s offered for %v (%d flows started, %d of them after waiting for one of the %d open flows to end; at most %d open)",
		rate, measured.Load(), overloadMeasureTime, overloadMeasureWorkers, burst, elapsed.Round(time.Millisecond), started, saturated, overloadMaxFlows, peakOpen)
	t.Logf("burst answers: %d, shed %d (%.1f%%); admitted: %d, p50 %v, p99 %v, max %v; flows that ended succeeded: %d (%.0f/s); statuses %v",
		burstAnswers, shed, 100*float64(shed)/float64(max(burstAnswers, 1)), len(admitted), p(0.5), p(0.99), p(1),
		completed, float64(completed)/elapsed.Seconds(), o.statuses(measuredAnswers))
	t.Logf("intents: %d, %d succeeded; sandbox charges: %d (%d voided); server RSS before the load %.1f MiB, peak (VmHWM) %.1f MiB, ceiling %.1f MiB",
		len(intents), succeeded, stats.Charges, stats.Voids, float64(idle)/(1<<20), float64(hwm)/(1<<20), float64(ceiling)/(1<<20))
	if len(failures) > 0 {
		t.Logf("failed assertions (count by kind): %v", failures)
	}
	if shed == 0 {
		t.Error("at ten times the sustainable rate nothing was shed: the server queued every request")
	}
	if hwm >= ceiling {
		t.Errorf("the server's peak RSS is %.1f MiB, over the ceiling of %.1f MiB", float64(hwm)/(1<<20), float64(ceiling)/(1<<20))
	}
}

// flow creates an intent and confirms it with the saved card, each with
// an Idempotency-Key, as a shop's server does; it records every answer
// and reports whether the flow ended succeeded. A shed step is sent again
// with its key after its Retry-After, as a client should, up to
// overloadSends times; then the flow gives up.
func (o *overload) flow(key string) bool {
	created, ok := o.step("create", key, "", "/v1/payment_intents", map[string]any{
		"amount": 1000, "currency": "EUR", "customer": o.customer, "metadata": map[string]string{"key": key}})
	if !ok || created.status != http.StatusCreated {
		return false
	}
	confirmed, ok := o.step("confirm", key, created.intent, "/v1/payment_intents/"+created.intent+"/confirm",
		map[string]any{"payment_method": o.card})
	return ok && confirmed.status == http.StatusOK && confirmed.state == string(keelpay.IntentSucceeded)
}

// overloadSends is how many times a flow sends a step that is shed.
const overloadSends = 3

func (o *overload) step(kind, key, intent, path string, body any) (overloadAnswer, bool) {
	for send := 1; ; send++ {
		a, ok := o.post(kind, key, intent, path, body)
		if !ok || send == overloadSends || (a.status != http.StatusTooManyRequests && a.status != http.StatusServiceUnavailable) {
			return a, ok
		}
		n, err := strconv.Atoi(a.retryAfter)
		if err != nil {
			return a, ok // reported by the checks
		}
		// The wait the server asked for, not a wait for background work.
		time.Sleep(time.Duration(n) * time.Second)
	}
}

// post sends one keyed POST with the secret key on o's own client, whose
// pool keeps a connection per open flow.
func (o *overload) post(kind, key, intent, path string, body any) (overloadAnswer, bool) {
	data, _ := json.Marshal(body) // maps of strings and numbers
	req, err := http.NewRequest("POST", o.s.URL+path, bytes.NewReader(data))
	if err != nil {
		panic(err) // the server's own URL
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+o.sh.sk)
	req.Header.Set("Idempotency-Key", key+"-"+kind)
	begin := time.Now()
	resp, err := o.client.Do(req)
	if err != nil {
		o.mu.Lock()
		o.noAnswer = append(o.noAnswer, fmt.Sprintf("%s %s: %v", kind, key, err))
		o.mu.Unlock()
		return overloadAnswer{}, false
	}
	defer resp.Body.Close()
	var pi struct {
		ID     string `json:"id"`
		Status string `json:"status"`
	}
	decodeErr := json.NewDecoder(resp.Body).Decode(&pi)
	a := overloadAnswer{kind: kind, key: key, status: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After"),
		intent: intent, elapsed: time.Since(begin)}
	if resp.StatusCode < 300 {
		if decodeErr != nil {
			o.mu.Lock()
			o.noAnswer = append(o.noAnswer, fmt.Sprintf("%s %s: %d, body: %v", kind, key, resp.StatusCode, decodeErr))
			o.mu.Unlock()
			return a, false
		}
		a.intent, a.state = pi.ID, pi.Status
	}
	o.mu.Lock()
	o.answers = append(o.answers, a)
	o.mu.Unlock()
	return a, true
}

// statuses counts the answers from index from on by kind and status.
func (o *overload) statuses(from int) map[string]int {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := map[string]int{}
	for _, a := range o.answers[from:] {
		n[a.kind+" "+strconv.Itoa(a.status)]++
	}
	return n
}

// statusRank orders an intent's statuses: an intent only moves to a
// higher rank (succeeded and canceled are both final).
func statusRank(s string) int {
	switch keelpay.PaymentIntentStatus(s) {
	case keelpay.IntentRequiresPaymentMethod:
		return 0
	case keelpay.IntentRequiresAction:
		return 1
	case keelpay.IntentProcessing:
		return 2
	}
	return 3
}

// rss reads a memory figure of the server process from /proc/PID/status,
// in bytes: VmHWM is the peak resident set size, VmRSS the current one
// (proc(5), /proc/pid/status: "VmHWM: Peak resident set size ('high water
// mark')", "VmRSS: Resident set size").
func rss(t *testing.T, s *started, field string) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.Cmd.Process.Pid))
	require.NoError(t, err)
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, field); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			require.NoError(t, err, line)
			return kb << 10
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, s.Cmd.Process.Pid)
	return 0
}
