package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/keelpay/keelpay/internal/faultproxy"
)

// A PostgreSQL cluster of its own for a test: a primary and one standby
// that streams from it, in a temporary directory, each on a free port of
// 127.0.0.1, so that a test can kill the primary and promote the standby.
//
// What it relies on, from PostgreSQL 15's documentation:
//
//   - a standby is a base backup of the primary (pg_basebackup) started
//     with standby.signal and primary_conninfo, which pg_basebackup -R
//     writes; it replays the WAL the primary streams to it
//     (https://www.postgresql.org/docs/15/warm-standby.html#STREAMING-REPLICATION,
//     https://www.postgresql.org/docs/15/app-pgbasebackup.html). initdb's
//     pg_hba.conf lets replication connections from 127.0.0.1 in with the
//     method of -A (https://www.postgresql.org/docs/15/app-initdb.html);
//   - with synchronous_standby_names set ('*': any standby) and
//     synchronous_commit on, a commit returns only once the standby has
//     flushed it, so no commit acknowledged by the primary is lost when the
//     standby takes over; with an asynchronous standby the last commits
//     may be lost
//     (https://www.postgresql.org/docs/15/warm-standby.html#SYNCHRONOUS-REPLICATION,
//     https://www.postgresql.org/docs/15/runtime-config-replication.html#GUC-SYNCHRONOUS-STANDBY-NAMES,
//     https://www.postgresql.org/docs/15/runtime-config-wal.html#GUC-SYNCHRONOUS-COMMIT);
//   - the standby accepts read-only connections (hot standby, on by
//     default) and becomes a primary when promoted (pg_promote(), which
//     waits for the promotion by default)
//     (https://www.postgresql.org/docs/15/hot-standby.html,
//     https://www.postgresql.org/docs/15/warm-standby.html#STANDBY-SERVER-OPERATION,
//     https://www.postgresql.org/docs/15/functions-admin.html#FUNCTIONS-RECOVERY-CONTROL);
//   - failover itself is not done by PostgreSQL: something outside it
//     finds the primary gone and promotes a standby, here the test
//     (https://www.postgresql.org/docs/15/warm-standby-failover.html,
//     https://www.postgresql.org/docs/15/high-availability.html).
//
// The server refuses to run as root, so its processes run as the
// operating system's postgres user, in a directory that user owns.

// pgBin is where Debian puts PostgreSQL 15's programs.
const pgBin = "/usr/lib/postgresql/15/bin"

// pgCluster is a primary and its standby.
type pgCluster struct {
	dir              string
	uid, gid         uint32
	primary, standby *pgServer
	// replication carries the standby's stream from the primary, so that
	// a test can hold the stream back (lag) before it kills the primary.
	replication *faultproxy.Proxy
}

// pgServer is one postmaster of a pgCluster.
type pgServer struct {
	name string
	data string
	port int

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
}

// newPGCluster starts a primary and a streaming standby of it, the
// standby synchronous when sync is true, and stops both when the test
// ends. It skips the test when PostgreSQL 15's programs or the postgres
// user are missing.
func newPGCluster(t *testing.T, sync bool) *pgCluster {
	t.Helper()
	if _, err := os.Stat(filepath.Join(pgBin, "postgres")); err != nil {
		t.Skipf("PostgreSQL 15's programs are not in %s: %v", pgBin, err)
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		t.Skipf("no postgres user to run PostgreSQL as: %v", err)
	}
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	gid, _ := strconv.ParseUint(u.Gid, 10, 32)
	// Not t.TempDir: the postgres user must reach it.
	dir, err := os.MkdirTemp("", "keelpay-pgcluster-")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o755))
	require.NoError(t, os.Chown(dir, int(uid), int(gid)))
	c := &pgCluster{dir: dir, uid: uint32(uid), gid: uint32(gid)}

	c.primary = &pgServer{name: "primary", data: filepath.Join(dir, "primary"), port: freePort(t)}
	c.run(t, filepath.Join(pgBin, "initdb"), "-D", c.primary.data, "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8")
	c.start(t, c.primary)

	c.standby = &pgServer{name: "standby", data: filepath.Join(dir, "standby"), port: freePort(t)}
	c.run(t, filepath.Join(pgBin, "pg_basebackup"), "-h", "127.0.0.1", "-p", strconv.Itoa(c.primary.port), "-U", "postgres",
		"-D", c.standby.data, "-R", "-X", "stream", "-c", "fast", "--no-sync")
	// The standby streams through a proxy: its primary_conninfo, which
	// pg_basebackup -R wrote to postgresql.auto.conf, is replaced by a
	// later line of the same file (the last setting of a parameter counts,
	// https://www.postgresql.org/docs/15/config-setting.html#CONFIG-SETTING-CONFIGURATION-FILE).
	c.replication = faultproxy.New(t, fmt.Sprintf("127.0.0.1:%d", c.primary.port))
	host, port, err := net.SplitHostPort(c.replication.Addr())
	require.NoError(t, err)
	auto, err := os.OpenFile(filepath.Join(c.standby.data, "postgresql.auto.conf"), os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = fmt.Fprintf(auto, "primary_conninfo = 'host=%s port=%s user=postgres application_name=standby'\n", host, port)
	require.NoError(t, errors.Join(err, auto.Close()))
	c.start(t, c.standby)

	// The primary sees the standby streaming; only then is it made
	// synchronous (before, every commit would wait for it). The standby
	// was copied before, so it does not wait for a standby of its own
	// once promoted.
	want := "async"
	if sync {
		c.exec(t, c.primary, `ALTER SYSTEM SET synchronous_standby_names = '*'`)
		c.exec(t, c.primary, `ALTER SYSTEM SET synchronous_commit = 'on'`)
		c.exec(t, c.primary, `SELECT pg_reload_conf()`)
		want = "sync"
	}
	eventually(t, 30*time.Second, func() string {
		var state string
		err := c.queryRow(c.primary, `SELECT coalesce(max(sync_state), '') FROM pg_stat_replication WHERE state = 'streaming'`, &state)
		if err != nil || state != want {
			return fmt.Sprintf("the standby is not streaming %s yet (%q, %v)", want, state, err)
		}
		return ""
	})
	return c
}

// freePort returns a port of 127.0.0.1 that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// command is name with args, run as the postgres user.
func (c *pgCluster) command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Dir = c.dir
	cmd.Env = append(os.Environ(), "LC_ALL=C.UTF-8", "TZ=UTC")
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential: &syscall.Credential{Uid: c.uid, Gid: c.gid},
		// A group of its own: the cleanup kills what the postmaster left.
		Setpgid: true,
	}
	return cmd
}

// run runs a PostgreSQL program to its end.
func (c *pgCluster) run(t *testing.T, name string, args ...string) {
	t.Helper()
	out, err := c.command(name, args...).CombinedOutput()
	require.NoError(t, err, "%s %s: %s", filepath.Base(name), strings.Join(args, " "), out)
}

// start starts s's postmaster in the foreground of a process of its own
// (so that kill signals the postmaster itself) and waits until it
// accepts connections.
func (c *pgCluster) start(t *testing.T, s *pgServer) {
	t.Helper()
	cmd := c.command(filepath.Join(pgBin, "postgres"), "-D", s.data, "-p", strconv.Itoa(s.port),
		"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=",
		"-c", "fsync=on", "-c", "max_connections=100", "-c", "log_min_messages=fatal")
	log, err := os.Create(filepath.Join(c.dir, s.name+".log"))
	require.NoError(t, err)
	cmd.Stdout, cmd.Stderr = log, log
	require.NoError(t, cmd.Start())
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); log.Close(); close(done) }()
	s.mu.Lock()
	s.cmd, s.done = cmd, done
	s.mu.Unlock()
	t.Cleanup(func() {
		// The whole group: backends orphaned by a killed postmaster too.
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	})
	eventually(t, 30*time.Second, func() string {
		select {
		case <-done:
			out, _ := os.ReadFile(log.Name())
			t.Fatalf("the %s exited: %s", s.name, out)
		default:
		}
		var one int
		if err := c.queryRow(s, `SELECT 1`, &one); err != nil {
			return fmt.Sprintf("the %s does not accept connections yet: %v", s.name, err)
		}
		return ""
	})
}

// kill kills s's postmaster with SIGKILL, as a machine that dies, and
// waits until it has exited. Its backends find the postmaster gone and
// exit by themselves.
func (c *pgCluster) kill(t *testing.T, s *pgServer) {
	t.Helper()
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.mu.Unlock()
	if s == c.primary {
		// What the stream held back never arrives. The stream is cut
		// first: a stalled proxy's link whose server end closes by
		// itself is never let go.
		c.replication.Down()
	}
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	<-done
}

// lag holds back the WAL the primary streams to the standby from now on,
// as a standby that fell behind: an asynchronous standby misses the
// commits made meanwhile; with a synchronous one, commits wait for it.
func (c *pgCluster) lag() { c.replication.Stall() }

// promote makes the standby a primary and waits until it accepts writes.
func (c *pgCluster) promote(t *testing.T) {
	t.Helper()
	c.exec(t, c.standby, `SELECT pg_promote()`)
	eventually(t, 30*time.Second, func() string {
		var recovery bool
		if err := c.queryRow(c.standby, `SELECT pg_is_in_recovery()`, &recovery); err != nil || recovery {
			return fmt.Sprintf("the standby is not promoted yet (in recovery %v, %v)", recovery, err)
		}
		return ""
	})
}

// dsn is the URL of s's postgres database.
func (s *pgServer) dsn() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", s.port)
}

// DSN is the multi-host URL of the cluster for keelpay: both servers,
// the one that accepts writes chosen at each connection.
func (c *pgCluster) DSN() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d,127.0.0.1:%d/postgres?sslmode=disable&target_session_attrs=read-write&connect_timeout=5",
		c.primary.port, c.standby.port)
}

// exec runs one statement on s.
func (c *pgCluster) exec(t *testing.T, s *pgServer, sql string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.dsn())
	require.NoError(t, err, "%s", s.name)
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql)
	require.NoError(t, err, "%s: %s", s.name, sql)
}

// queryRow scans the one row of sql on s into dest.
func (c *pgCluster) queryRow(s *pgServer, sql string, dest ...any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.dsn())
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	return conn.QueryRow(ctx, sql).Scan(dest...)
}
