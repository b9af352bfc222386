package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay/internal/faultproxy"
	"github.com/keelpay/keelpay/keyring"
	"github.com/keelpay/keelpay/keyring/keyringtest"
	"github.com/keelpay/keelpay/provider/sandbox"
	"github.com/keelpay/keelpay/storage/postgres/postgrestest"
	"github.com/keelpay/keelpay/webhooks"
)

// pauseFor is how long each pause of the paused-server test lasts, and
// longPause the pause inside a delivery claim, which holds what the claim
// locked for 30 s. The paused server's idle transaction time-out is raised
// above both (it would end the stalled transaction and hide what the test
// looks for).
const (
	pauseFor  = 8 * time.Second
	longPause = 30 * time.Second
)

// receipts records when each webhook delivery arrived.
type receipts struct {
	mu  sync.Mutex
	at  []time.Time
	ids map[string]bool
}

func (r *receipts) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	r.at = append(r.at, time.Now())
	r.ids[req.Header.Get(webhooks.HeaderID)] = true
	r.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// perSecond counts the deliveries that arrived in each whole second from
// start to end.
func (r *receipts) perSecond(start, end time.Time) []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	counts := make([]int, int(end.Sub(start)/time.Second))
	for _, at := range r.at {
		if i := int(at.Sub(start) / time.Second); !at.Before(start) && i < len(counts) {
			counts[i]++
		}
	}
	return counts
}

func (r *receipts) missing(ids []string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, id := range ids {
		if !r.ids[id] {
			out = append(out, id)
		}
	}
	return out
}

// A pause is a window during which one server did nothing.
type pause struct {
	how        string
	start, end time.Time
}

// TestPausedServerDoesNotStopOthersWebhooks runs three reference servers on
// one PostgreSQL schema with payments streaming through two of them, and
// pauses the third again and again: with SIGSTOP at random moments, by
// stalling its database connections at a random moment, and by stalling
// them just before the end (Sync) of one of its delivery claims' pipelines (the moment a
// claim holds the most). The two others must deliver webhooks in every
// second of every pause, and once the third runs again every event must
// be delivered.
//
// It is not parallel: its servers and load would slow the tests beside it,
// and their load would blur its per-second counts.
func TestPausedServerDoesNotStopOthersWebhooks(t *testing.T) {
	schema := postgrestest.NewSchema(t)
	dsn := dsnIn(t, postgrestest.DSN(t), schema)
	key := []string{"KEELPAY_ENCRYPTION_KEY=" + keyring.Format(keyringtest.Key())}
	owner := start(t, t.TempDir(), key, "-addr", "127.0.0.1:0", "-db", dsn)
	other := start(t, t.TempDir(), key, "-addr", "127.0.0.1:0", "-db", dsn, "-sandbox-url", owner.URL)
	// The paused server's connections go through a fault proxy, and carry
	// an application name by which the test finds them in the database.
	app := "keelpay_paused_" + schema
	u, err := url.Parse(dsn)
	require.NoError(t, err)
	q := u.Query()
	q.Set("application_name", app)
	q.Set("idle_in_transaction_session_timeout", "60000")
	// Statements are sent unnamed, each with its text (pgx's cache_describe), so that the
	// proxy can tell a claim's pipeline from the others (stallInClaim).
	q.Set("default_query_exec_mode", "cache_describe")
	u.RawQuery = q.Encode()
	pausedDSN, proxy := throughProxy(t, u.String())
	paused := start(t, t.TempDir(), key, "-addr", "127.0.0.1:0", "-db", pausedDSN, "-sandbox-url", owner.URL)
	t.Cleanup(func() { _ = paused.Cmd.Process.Signal(syscall.SIGCONT); proxy.Resume() })

	rec := &receipts{ids: map[string]bool{}}
	hooks := httptest.NewServer(rec)
	t.Cleanup(hooks.Close)
	servers := []*started{owner, other, paused}
	shops := make([]shop, len(servers))
	for i, s := range servers {
		shops[i] = setupShop(t, s, fmt.Sprintf("app_paused_%d", i), hooks.URL+"/hooks")
	}

	// The load: payments confirmed on every server, each on its own store,
	// the paused one only while it runs (a request to it would hang). Each
	// worker makes at most 10 payments a second: a steady stream, not a
	// flood.
	var pausing sync.RWMutex // held by a pause; read-held by a payment on the paused server
	stop := make(chan struct{})
	loadErrs := make(chan error, 100)
	var load sync.WaitGroup
	for w := range 3 {
		load.Go(func() {
			pace := time.NewTicker(100 * time.Millisecond)
			defer pace.Stop()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				case <-pace.C:
				}
				n := (w + i) % len(servers)
				if n == 2 {
					if !pausing.TryRLock() {
						continue
					}
				}
				err := payOnce(servers[n], shops[n], 1000+i)
				if n == 2 {
					pausing.RUnlock()
				}
				if err != nil {
					select {
					case loadErrs <- fmt.Errorf("server %d: %w", n, err):
					default:
					}
					return
				}
			}
		})
	}
	stopLoad := sync.OnceFunc(func() { close(stop); load.Wait() })
	defer stopLoad()

	// The first pause starts in a steady stream of deliveries.
	eventually(t, 20*time.Second, func() string {
		if c := rec.perSecond(time.Now().Add(-time.Second), time.Now()); c[0] == 0 {
			return "no webhook arrived in the last second"
		}
		return ""
	})

	db, err := pgx.Connect(t.Context(), postgrestest.DSN(t))
	require.NoError(t, err)
	t.Cleanup(func() { db.Close(context.Background()) })

	var pauses []pause
	// A random moment: the pauses land anywhere in the servers' work.
	moment := func() { time.Sleep(time.Duration(300+rand.IntN(1700)) * time.Millisecond) }
	hold := func(how string, length time.Duration, begin, end func()) {
		t.Helper()
		pausing.Lock()
		defer pausing.Unlock()
		begin()
		p := pause{how: how, start: time.Now()}
		time.Sleep(length) // the fault's length, not a wait for work
		p.end = time.Now()
		end()
		pauses = append(pauses, p)
	}
	for i := range 3 {
		moment()
		hold(fmt.Sprintf("SIGSTOP %d", i+1), pauseFor,
			func() { require.NoError(t, paused.Cmd.Process.Signal(syscall.SIGSTOP)) },
			func() { require.NoError(t, paused.Cmd.Process.Signal(syscall.SIGCONT)) })
	}

	moment()
	hold("stalled connections", pauseFor, proxy.Stall, proxy.Resume)
	moment()
	// A payment of the paused server's own gives its dispatcher deliveries
	// to claim, and a result to record with its next claim. It runs on its
	// own: once the stall fires it may wait for the resume.
	nudge := func(i int) { go func() { _ = payOnce(paused, shops[2], 5000+i) }() }
	hold("stalled inside a claim's transaction", longPause, func() { stallInClaim(t, proxy, db, app, nudge) }, proxy.Resume)

	for _, p := range pauses {
		counts := rec.perSecond(p.start, p.end)
		t.Logf("%s, %v: webhooks per second %v", p.how, p.end.Sub(p.start).Round(time.Second), counts)
		for i, c := range counts {
			if c == 0 {
				t.Errorf("%s: no webhook delivered in second %d of the pause; per second: %v", p.how, i+1, counts)
				break
			}
		}
	}

	stopLoad()
	select {
	case err := <-loadErrs:
		t.Fatalf("payments on the servers that ran: %v", err)
	default:
	}
	// Every event of every store is delivered once the paused server
	// runs again: what it had claimed, it delivers itself.
	var ids []string
	for i, sh := range shops {
		for _, e := range listAll(t, servers[i%2], sh.sk, "/v1/events") {
			ids = append(ids, e["id"].(string))
		}
	}
	require.NotEmpty(t, ids)
	eventually(t, 60*time.Second, func() string {
		if m := rec.missing(ids); len(m) > 0 {
			return fmt.Sprintf("%d of %d events not delivered, such as %s", len(m), len(ids), m[0])
		}
		return ""
	})
}

// payOnce creates a payment intent on s for sh and confirms it with a
// card that succeeds: one payment_intent.succeeded webhook.
func payOnce(s *started, sh shop, amount int) error {
	intent, err := send("POST", s.URL+"/v1/payment_intents", sh.sk, intentBody(amount))
	if err != nil {
		return err
	}
	if intent.Status != http.StatusCreated {
		return fmt.Errorf("create: %d %v", intent.Status, intent.Body)
	}
	r, err := send("POST", s.URL+"/v1/payment_intents/"+intent.Str("id")+"/confirm", sh.pk, confirmBody(intent, sandbox.CardVisa))
	if err != nil {
		return err
	}
	if r.Str("status") != "succeeded" {
		return fmt.Errorf("confirm: %d %v", r.Status, r.Body)
	}
	return nil
}

// syncMessage ends a pipeline of PostgreSQL's extended query protocol
// ('S', its length 4). A delivery claim, with the results it records, is
// one pipeline, which runs as one implicit transaction that the database
// commits when it reads the Sync: until then the claim's statements have
// run and hold the rows they leased.
var syncMessage = []byte("S\x00\x00\x00\x04")

// claimText begins the text of the claim of due deliveries, which the
// paused server sends with each claim (default_query_exec_mode=cache_describe).
var claimText = []byte("WITH RECURSIVE pending_stores")

// stallInClaim stalls the proxy in front of the server whose connections
// carry application name app just before the Sync of one of its delivery
// claims (nudge(i) makes a payment on that server, so that its dispatcher
// has deliveries to claim and results to record): the claim's statement
// has run and its transaction is open in the database, which waits for
// the rest of the pipeline (wait event ClientRead). It checks in
// pg_stat_activity that the statement it stopped after is the claim
// (whose text begins as claimText; the database keeps only the start of a
// long statement's text) and that it leased rows (it has a transaction
// id), and tries again when it did not.
func stallInClaim(t *testing.T, proxy *faultproxy.Proxy, db *pgx.Conn, app string, nudge func(int)) {
	t.Helper()
	// The stall lands on the Sync of a pipeline that carries the claim's
	// text. Each try makes a payment of this server's own first: its
	// delivery's result rides with a later claim, whose pipeline then
	// holds rows (the record's and the claim's). A claim that holds none
	// (a poll that found nothing, the others having claimed it) is let go
	// and the stall armed again.
	quiet := 0
	for i := range 100 {
		fired := proxy.StallBeforeAfter(claimText, syncMessage) // arming again replaces the trigger
		nudge(i)
		select {
		case <-fired:
		case <-time.After(10 * time.Second):
			// No claim came (the nudge answered 429 by the admission
			// limits of a loaded machine, say): try again.
			if quiet++; quiet == 5 {
				t.Fatal("the paused server sent no claim in 50 s")
			}
			continue
		}
		// What was let through before the Sync runs in a moment.
		deadline := time.Now().Add(time.Second)
		for time.Now().Before(deadline) {
			var inClaim, heldRows bool
			require.NoError(t, db.QueryRow(t.Context(), `SELECT coalesce(bool_or(true), false), coalesce(bool_or(backend_xid IS NOT NULL), false)
				FROM pg_stat_activity WHERE application_name = $1 AND wait_event = 'ClientRead'
				AND query LIKE 'WITH RECURSIVE pending_stores%'`, app).Scan(&inClaim, &heldRows))
			if heldRows {
				return
			}
			if inClaim && i >= 9 {
				// The servers that take the payments claim every due
				// delivery first, so this server's claims often lease
				// nothing: after ten tries, a claim stalled with its
				// transaction open but no rows of its own will do.
				t.Logf("the stalled claim leased no rows (try %d)", i+1)
				return
			}
			time.Sleep(20 * time.Millisecond) // polls the database's view, not background work of ours
		}
		proxy.Resume()
	}
	t.Fatal("no stall landed in a delivery claim")
}
