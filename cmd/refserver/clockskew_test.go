package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay/events"
	"github.com/keelpay/keelpay/provider/httpprovider"
	"github.com/keelpay/keelpay/storage/postgres/postgrestest"
	"github.com/keelpay/keelpay/webhooks"
)

// The clock-skew test runs three reference servers on one PostgreSQL
// schema whose machines' clocks disagree, through the test hook
// KEELPAY_TEST_CLOCK_SKEW_FILE (libfaketime cannot do it: see
// clockskew.go): the owner of the sandbox two minutes ahead, one server
// two minutes behind, and one whose clock jumps four minutes forward and
// then eight back during the run. Under the crash test's keyed payment
// load (3D Secure answered, refunds, webhook tests) and a receiver that
// fails every first delivery, it asserts that keelpay acts on one clock:
//
//   - no idempotency key is taken over while the request holding it still
//     runs: a webhook test held by a slow receiver keeps its key, and the
//     same key sent to a server whose clock is ahead is 409
//     idempotency_key_in_use;
//   - no delivery's lease is taken while its attempt still runs: the
//     receiver never has two deliveries of one event at once;
//   - no webhook is sent before its schedule: a retry arrives no sooner
//     than its delay (events.RetryDelay) after the attempt before it;
//   - no attempt is closed while it can still reach the provider: the
//     charges of the two servers that do not own the sandbox reach it
//     chargeDelay late, across a pass of every reconciler, and no intent
//     ends closed as never charged (provider_error), which no card of the
//     load does;
//   - no double charge: the crash test's checks, at most one charge per
//     intent, all of them of succeeded intents.
//
// -short skips it; it takes about a minute and a quarter.

// Timing of the clock-skew test.
const (
	// skewLoadFor is how long the payment load runs at least: past the
	// first retry delay (events.RetryDelay), so that the retries of the
	// first payments' events arrive during the load, on time.
	skewLoadFor = 70 * time.Second
	// holdFor is how long the receiver holds a keyed webhook test's
	// delivery: longer than a poll of every dispatcher (a lease taken
	// early would show), shorter than the attempt time-out.
	holdFor = 3 * time.Second
	// chargeDelay is how late a charge reaches the sandbox from the two
	// servers that do not own it: longer than a pass of the reconcilers
	// (service.ReconcileIntervalDefault, 5 s), so that one looks the
	// attempt up before its charge arrives; shorter than the confirm's
	// answer time-out.
	chargeDelay = 6 * time.Second
	// retrySlack is how much sooner than its delay after the attempt
	// before a retry may arrive: the delay counts from the attempt's start
	// on the database's clock, the receiver sees its arrival on this
	// machine's. Clocks two minutes apart miss it by a minute or more.
	retrySlack = 5 * time.Second
)

// skewReceiver answers the deliveries of the clock-skew test, after the
// recorder has recorded and verified them: it holds the first delivery of
// each event sent to /hold for holdFor, fails the first one of each event
// sent to /hooks during the load (so that a retry is scheduled), and
// answers 204 to the rest. It notes every arrival and every delivery that arrived while
// another of the same event was being answered.
type skewReceiver struct {
	held      chan string // the event id of each /hold delivery being held
	failFirst atomic.Bool // during the load only: afterwards every delivery is answered 204

	mu       sync.Mutex
	inFlight map[string]int
	arrivals map[string][]time.Time // /hooks deliveries by event id
	overlaps []string
}

func (r *skewReceiver) respond(w http.ResponseWriter, req *http.Request) {
	id := req.Header.Get(webhooks.HeaderID)
	now := time.Now()
	r.mu.Lock()
	if r.inFlight[id] > 0 {
		r.overlaps = append(r.overlaps, fmt.Sprintf("%s (%s) at %s", id, req.URL.Path, now.Format("15:04:05.000")))
	}
	r.inFlight[id]++
	first := len(r.arrivals[id]) == 0
	r.arrivals[id] = append(r.arrivals[id], now)
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.inFlight[id]--
		r.mu.Unlock()
	}()
	switch {
	case req.URL.Path == "/hold" && first:
		select {
		case r.held <- id:
		default:
		}
		select {
		case <-time.After(holdFor):
		case <-req.Context().Done():
			return
		}
		w.WriteHeader(http.StatusNoContent)
	case req.URL.Path == "/hooks" && first && r.failFirst.Load():
		w.WriteHeader(http.StatusServiceUnavailable)
	default:
		w.WriteHeader(http.StatusNoContent)
	}
}

// early returns the retries of /hooks deliveries that arrived before
// cutoff and sooner after the attempt before them than their delay allows.
func (r *skewReceiver) early(cutoff time.Time) (early []string, retries int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for id, at := range r.arrivals {
		for k := 1; k < len(at) && k < events.MaxAttempts && !at[k].After(cutoff); k++ {
			retries++
			if gap := at[k].Sub(at[k-1]); gap < events.RetryDelay(k)-retrySlack {
				early = append(early, fmt.Sprintf("%s: attempt %d %v after attempt %d, its delay is %v", id, k+1, gap.Round(time.Millisecond), k, events.RetryDelay(k)))
			}
		}
	}
	slices.Sort(early)
	return early, retries
}

// setSkew writes the offset a server's test hook reads, in one rename so
// that the server never reads half of it.
func setSkew(t *testing.T, path, offset string) {
	t.Helper()
	tmp := path + ".tmp"
	require.NoError(t, os.WriteFile(tmp, []byte(offset+"\n"), 0o600))
	require.NoError(t, os.Rename(tmp, path))
}

// slowCharges is a proxy in front of a sandbox that delays every charge by
// chargeDelay, as a slow network would.
func slowCharges(t *testing.T, sandboxURL string) string {
	t.Helper()
	target, err := url.Parse(sandboxURL)
	require.NoError(t, err)
	proxy := httputil.NewSingleHostReverseProxy(target)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == httpprovider.PathPrefix+"charge" {
			select {
			case <-time.After(chargeDelay):
			case <-r.Context().Done():
				return
			}
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func TestClockSkewPostgreSQL(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("the clock-skew test runs a payment load for a minute or more; run it without -short")
	}
	schema := postgrestest.NewSchema(t) // skips when KEELPAY_TEST_POSTGRES is not set
	dsn := dsnIn(t, postgrestest.DSN(t), schema)
	skews := t.TempDir()
	skewFile := func(name, offset string) []string {
		path := filepath.Join(skews, name)
		setSkew(t, path, offset)
		return []string{"KEELPAY_TEST_CLOCK_SKEW_FILE=" + path}
	}
	ahead := newNodeEnv(t, "ahead", t.TempDir(), skewFile("ahead", "2m"), "-db", dsn)
	slow := slowCharges(t, ahead.url)
	behind := newNodeEnv(t, "behind", t.TempDir(), skewFile("behind", "-2m"), "-db", dsn, "-sandbox-url", slow)
	jumperEnv := skewFile("jumper", "0s")
	jumper := newNodeEnv(t, "jumper", t.TempDir(), jumperEnv, "-db", dsn, "-sandbox-url", slow)
	jumperSkew := filepath.Join(skews, "jumper")

	c := newCrash(t, dsn, []*node{ahead, behind, jumper}, nil)
	rcv := &skewReceiver{held: make(chan string, 8), inFlight: map[string]int{}, arrivals: map[string][]time.Time{}}
	rcv.failFirst.Store(true)
	c.rec.SetResponder(rcv.respond)
	// The keyed webhook tests go to stores of their own (one per phase,
	// each within the webhook tests' rate limit), whose deliveries are
	// held.
	secrets := []string{c.shops[0].whsec, c.shops[1].whsec}
	var keyShops []shop
	for i := range 3 {
		s := setupShop(t, &started{URL: ahead.url}, fmt.Sprintf("app_clock_keys_%d", i), c.rec.URL()+"/hold")
		keyShops = append(keyShops, s)
		secrets = append(secrets, s.whsec)
	}
	require.NoError(t, c.rec.SetSecrets(secrets...))

	// keyHeld sends a webhook test with a key to holder and, while the
	// receiver holds its delivery, the same key to taker, whose clock is
	// ahead of holder's: the key is still held.
	var takeovers []string
	checks := 0
	keyHeld := func(s shop, holder, taker *node) {
		checks++
		key := fmt.Sprintf("clock-key-%d", checks)
		type result struct {
			r   reply
			err error
		}
		done := make(chan result, 1)
		go func() {
			r, err := send("POST", holder.url+"/v1/webhooks/test", s.sk, nil, "Idempotency-Key", key)
			done <- result{r, err}
		}()
		var id string
		select {
		case id = <-rcv.held:
		case res := <-done:
			t.Errorf("key %s on %s: answered %d %v before its delivery was held (%v)", key, holder.name, res.r.Status, res.r.Body, res.err)
			return
		case <-time.After(time.Minute):
			// Not Fatal: the load's workers are running.
			t.Errorf("key %s on %s: its delivery never arrived", key, holder.name)
			return
		}
		r, err := send("POST", taker.url+"/v1/webhooks/test", s.sk, nil, "Idempotency-Key", key)
		held := <-done
		if err != nil || held.err != nil {
			t.Errorf("key %s: no answer: %v, %v", key, err, held.err)
			return
		}
		if r.Status != http.StatusConflict || r.Code() != "idempotency_key_in_use" {
			takeovers = append(takeovers, fmt.Sprintf("key %s held by %s (event %s) was answered by %s: %d %v", key, holder.name, id, taker.name, r.Status, r.Body))
		}
		if held.r.Status != http.StatusAccepted || held.r.Str("id") != id {
			takeovers = append(takeovers, fmt.Sprintf("key %s on %s (event %s) ended %d %v", key, holder.name, id, held.r.Status, held.r.Body))
		}
	}

	begin := time.Now()
	payments := c.load(func() {
		keyHeld(keyShops[0], behind, ahead)
		keyHeld(keyShops[0], jumper, ahead)
		keyHeld(keyShops[0], behind, jumper)
		setSkew(t, jumperSkew, "4m") // the jumper's clock jumps forward, ahead of all
		keyHeld(keyShops[1], ahead, jumper)
		keyHeld(keyShops[1], behind, jumper)
		setSkew(t, jumperSkew, "-4m") // and back, behind all
		keyHeld(keyShops[2], jumper, behind)
		keyHeld(keyShops[2], jumper, ahead)
		if rest := skewLoadFor - time.Since(begin); rest > 0 {
			<-time.After(rest)
		}
	})
	cutoff := time.Now()
	rcv.failFirst.Store(false)
	t.Logf("%v: load done, %d payments, %d keys held and sent again", time.Since(begin).Round(time.Millisecond), payments, checks)

	for _, s := range takeovers {
		t.Errorf("key taken over while held: %s", s)
	}
	rcv.mu.Lock()
	overlaps := slices.Clone(rcv.overlaps)
	rcv.mu.Unlock()
	for _, o := range overlaps {
		t.Errorf("lease taken while its attempt ran: a delivery of event %s arrived while another was being answered", o)
	}
	early, retries := rcv.early(cutoff)
	for _, e := range early[:min(len(early), 10)] {
		t.Errorf("webhook sent before its schedule: %s", e)
	}
	t.Logf("%d retries arrived during the load, %d of them early; %d overlapping deliveries", retries, len(early), len(overlaps))

	// The crash test's end: every key asked again, 48 hours on, every
	// attempt, refund and delivery over; charges, refunds and answers
	// checked.
	c.finish(t, begin)
	closed := 0
	for _, s := range c.shops {
		for _, pi := range listAll(t, &started{URL: ahead.url}, s.sk, "/v1/payment_intents") {
			if le, _ := pi["last_error"].(map[string]any); le != nil && le["code"] == "provider_error" {
				closed++
				if closed <= 10 {
					t.Errorf("attempt closed while it could still reach the provider: intent %s is %v with last_error %v", pi["id"], pi["status"], le)
				}
			}
		}
	}
	t.Logf("%v: done; %d attempts closed as never charged", time.Since(begin).Round(time.Millisecond), closed)
}
