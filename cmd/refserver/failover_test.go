package main

import (
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay/webhooks"
)

// The failover test runs three reference servers under the crash test's
// keyed load of payments and refunds on a PostgreSQL primary with a
// streaming standby (pgcluster_test.go), kills the primary with SIGKILL at
// a random moment and promotes the standby, as the operator's failover
// tooling would. The servers are given both hosts in one DSN with
// target_session_attrs=read-write: pgx tries the hosts in order and keeps
// a connection only to a server that accepts writes
// (https://pkg.go.dev/github.com/jackc/pgx/v5/pgconn#ParseConfig, which
// follows libpq's
// https://www.postgresql.org/docs/15/libpq-connect.html#LIBPQ-MULTIPLE-HOSTS
// and target_session_attrs,
// https://www.postgresql.org/docs/15/libpq-connect.html#LIBPQ-CONNECT-TARGET-SESSION-ATTRS),
// so each server finds the promoted standby by itself, without a restart.
// The standby's stream is held back for a moment before the kill (a
// standby that fell behind), and the test promotes it half a second to two
// seconds after the kill, as failover tooling that has to notice the
// primary is gone.
//
// Then the crash test's checks: every charge of the sandbox belongs to a
// succeeded intent (or was voided), no intent that was charged ended
// otherwise, every key asked again answers as it first answered (or
// completes, for a request whose first answer was a 5xx while the database
// was away), and with a synchronous standby nothing acknowledged is lost.
// Every event reaches the receiver, those of payments made after the
// failover too. The time from the kill to the first 2xx is logged.
//
// With an asynchronous standby, commits the primary acknowledged may be
// missing on the standby. keelpay refuses to start on such a primary
// unless KEELPAY_POSTGRES_ALLOW_ASYNC_STANDBY=1, which this test sets, and
// then promises only the money rules: a confirm or a refund retried after
// its attempt was lost reproduces the attempt's id, and with it the
// provider's idempotency key, so the provider answers with the first
// charge or payout instead of making a second one. The checks of
// acknowledged work are logged for it, not failed, and a charge or payout
// of an intent that vanished with the old primary is let pass; a second
// one for an intent that is there fails.
//
// It needs PostgreSQL 15's programs and root (to run them as the postgres
// user), takes about half a minute per case, and runs only with
// KEELPAY_TEST_FAILOVER=1 (CI sets it).

func TestFailoverSynchronousStandby(t *testing.T) { failover(t, true) }

func TestFailoverAsynchronousStandby(t *testing.T) { failover(t, false) }

func failover(t *testing.T, synchronous bool) {
	if os.Getenv("KEELPAY_TEST_FAILOVER") != "1" {
		t.Skip("the failover test runs its own PostgreSQL primary and standby (PostgreSQL 15, as root); set KEELPAY_TEST_FAILOVER=1 to run it")
	}
	if testing.Short() {
		t.Skip("the failover test takes minutes; run it without -short")
	}
	cl := newPGCluster(t, synchronous)
	dsn := cl.DSN()
	var env []string
	if !synchronous {
		// A server refuses a primary whose standby its commits do not
		// wait for, saying why and how to accept the risk.
		cmd := exec.Command(refserver, "-addr", "127.0.0.1:0", "-db", dsn)
		cmd.Env = append(os.Environ(), crashKey...)
		out, err := cmd.CombinedOutput()
		require.Error(t, err, "a server started on a primary with an asynchronous standby: %s", out)
		require.Contains(t, string(out), "keelpay's commits do not wait for any of them")
		require.Contains(t, string(out), "KEELPAY_POSTGRES_ALLOW_ASYNC_STANDBY=1")
		env = []string{"KEELPAY_POSTGRES_ALLOW_ASYNC_STANDBY=1"}
	}
	owner := newNodeEnv(t, "owner", t.TempDir(), env, "-db", dsn)
	a := newNodeEnv(t, "a", t.TempDir(), env, "-db", dsn, "-sandbox-url", owner.url)
	b := newNodeEnv(t, "b", t.TempDir(), env, "-db", dsn, "-sandbox-url", owner.url)
	nodes := []*node{owner, a, b}
	c := newCrash(t, dsn, nodes, nil)
	c.retry5xx = true
	c.lossy = !synchronous

	var (
		mu                             sync.Mutex
		killed, promoted, firstOK      time.Time
		seenBeforeKill                 map[string]bool
		firstOKAnswer                  answer
		mode                           = map[bool]string{true: "synchronous", false: "asynchronous"}[synchronous]
		answeredAfterKill, failedAfter int
	)
	c.onAnswer = func(a answer) {
		mu.Lock()
		defer mu.Unlock()
		if killed.IsZero() || a.sent.Before(killed) {
			return
		}
		answeredAfterKill++
		if a.status >= 500 {
			failedAfter++
		}
		if a.status < 300 && firstOK.IsZero() {
			firstOK, firstOKAnswer = time.Now(), a
		}
	}
	c.faults = func(t *testing.T) {
		<-time.After(time.Second + rand.N(3*time.Second))
		ids := map[string]bool{}
		for _, d := range c.rec.Deliveries() {
			ids[d.Header.Get(webhooks.HeaderID)] = true
		}
		// The standby falls behind for a moment before the primary dies:
		// what the primary committed meanwhile is not on the standby
		// (asynchronous), or was not acknowledged (synchronous).
		cl.lag()
		<-time.After(100*time.Millisecond + rand.N(400*time.Millisecond))
		mu.Lock()
		seenBeforeKill = ids
		killed = time.Now()
		mu.Unlock()
		cl.kill(t, cl.primary)
		// Failover tooling takes a moment to find the primary gone.
		<-time.After(500*time.Millisecond + rand.N(1500*time.Millisecond))
		cl.promote(t)
		mu.Lock()
		promoted = time.Now()
		mu.Unlock()
		eventually(t, time.Minute, func() string {
			mu.Lock()
			defer mu.Unlock()
			if firstOK.IsZero() {
				return "no 2xx since the primary was killed"
			}
			return ""
		})
		// The load goes on for a while on the new primary.
		<-time.After(3 * time.Second)
	}
	c.run(t, 0)

	mu.Lock()
	t.Logf("%s standby: primary killed; standby promoted %v after the kill; first 2xx %v after the kill (%s); %d answers to requests sent after the kill, %d of them 5xx",
		mode, promoted.Sub(killed).Round(time.Millisecond), firstOK.Sub(killed).Round(time.Millisecond), firstOKAnswer, answeredAfterKill, failedAfter)
	mu.Unlock()

	// The servers found the new primary by themselves: none was
	// restarted, each still runs and answers.
	for _, n := range nodes {
		require.Zero(t, n.kills, "%s was restarted", n.name)
		require.NoError(t, n.cur.Cmd.Process.Signal(syscall.Signal(0)), "%s still runs", n.name)
		r := must(t, "GET", n.url+"/v1/payment_intents?limit=1", c.shops[0].sk, nil)
		require.Equal(t, http.StatusOK, r.Status, "%s answers on the new primary: %v", n.name, r.Body)
	}

	// Deliveries resumed: events first delivered after the promotion,
	// which the check above found every one of delivered.
	var resumed int
	for _, d := range c.rec.Deliveries() {
		if d.Err == nil && d.Received.After(promoted) && !seenBeforeKill[d.Header.Get(webhooks.HeaderID)] {
			resumed++
		}
	}
	require.Positive(t, resumed, "no event reached the receiver after the failover")
	t.Logf("%d deliveries of events new since the kill arrived after the promotion", resumed)
}
