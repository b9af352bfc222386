package faultproxy

import (
	"errors"
	"io"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// quiet is how long a test watches a stalled connection to see that nothing
// crosses it. Seeing nothing proves only that nothing came in that window;
// the tests then check that the held bytes do arrive after Resume.
const quiet = 300 * time.Millisecond

// patience bounds every wait for something that must happen.
const patience = 10 * time.Second

// target is a TCP server whose accepted connections the test gets to drive.
type target struct {
	ln    net.Listener
	conns chan net.Conn
}

func newTarget(t *testing.T) *target {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	tg := &target{ln: ln, conns: make(chan net.Conn, 16)}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			tg.conns <- c
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		for {
			select {
			case c := <-tg.conns:
				_ = c.Close()
			default:
				return
			}
		}
	})
	return tg
}

// accepted returns the next connection the target accepted.
func (tg *target) accepted(t *testing.T) net.Conn {
	t.Helper()
	select {
	case c := <-tg.conns:
		t.Cleanup(func() { _ = c.Close() })
		return c
	case <-time.After(patience):
		t.Fatal("the target accepted no connection")
		return nil
	}
}

// noneAccepted checks that the target accepts no connection for a while.
func (tg *target) noneAccepted(t *testing.T) {
	t.Helper()
	select {
	case c := <-tg.conns:
		_ = c.Close()
		t.Fatal("the target accepted a connection")
	case <-time.After(quiet):
	}
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, patience)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func send(t *testing.T, c net.Conn, s string) {
	t.Helper()
	require.NoError(t, c.SetWriteDeadline(time.Now().Add(patience)))
	_, err := c.Write([]byte(s))
	require.NoError(t, err)
}

func receive(t *testing.T, c net.Conn, want string) {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(patience)))
	got := make([]byte, len(want))
	_, err := io.ReadFull(c, got)
	require.NoError(t, err)
	require.Equal(t, want, string(got))
}

// nothing checks that nothing arrives on c for a while and that c is still
// open: the read times out rather than ending.
func nothing(t *testing.T, c net.Conn) {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(quiet)))
	buf := make([]byte, 1)
	n, err := c.Read(buf)
	require.Zero(t, n, "a byte crossed the stalled proxy")
	var ne net.Error
	require.True(t, errors.As(err, &ne) && ne.Timeout(), "the read should time out, got %v", err)
}

// ended checks that c's peer closed or reset the connection.
func ended(t *testing.T, c net.Conn) {
	t.Helper()
	require.NoError(t, c.SetReadDeadline(time.Now().Add(patience)))
	_, err := io.ReadAll(c)
	if err != nil {
		var ne net.Error
		require.False(t, errors.As(err, &ne) && ne.Timeout(), "the connection stayed open")
		require.True(t, errors.Is(err, syscall.ECONNRESET), "unexpected error: %v", err)
	}
}

func TestForwardsBothWays(t *testing.T) {
	t.Parallel()
	tg := newTarget(t)
	p := New(t, tg.ln.Addr().String())

	c := dial(t, p.Addr())
	s := tg.accepted(t)
	send(t, c, "hello")
	receive(t, s, "hello")
	send(t, s, "world")
	receive(t, c, "world")

	// An orderly close on one side reaches the other.
	require.NoError(t, c.Close())
	ended(t, s)
}

func TestStallHoldsOpenConnections(t *testing.T) {
	t.Parallel()
	tg := newTarget(t)
	p := New(t, tg.ln.Addr().String())

	c := dial(t, p.Addr())
	s := tg.accepted(t)
	send(t, c, "before")
	receive(t, s, "before")

	p.Stall()
	send(t, c, "up")
	send(t, s, "down")
	nothing(t, s)
	nothing(t, c)

	p.Resume()
	receive(t, s, "up")
	receive(t, c, "down")
	send(t, c, "after")
	receive(t, s, "after")
}

func TestStallHoldsNewConnections(t *testing.T) {
	t.Parallel()
	tg := newTarget(t)
	p := New(t, tg.ln.Addr().String())

	p.Stall()
	// The client's connect succeeds (the proxy's kernel accepts it), but
	// nothing reaches the target, not even the connection.
	c := dial(t, p.Addr())
	send(t, c, "startup")
	tg.noneAccepted(t)
	nothing(t, c)

	p.Resume()
	s := tg.accepted(t)
	receive(t, s, "startup")
	send(t, s, "ready")
	receive(t, c, "ready")
}

func TestDownClosesAndRefuses(t *testing.T) {
	t.Parallel()
	tg := newTarget(t)
	p := New(t, tg.ln.Addr().String())

	c := dial(t, p.Addr())
	s := tg.accepted(t)
	send(t, c, "x")
	receive(t, s, "x")

	p.Down()
	ended(t, c)
	ended(t, s)
	_, err := net.DialTimeout("tcp", p.Addr(), patience)
	require.Error(t, err)
	require.True(t, errors.Is(err, syscall.ECONNREFUSED), "want connection refused, got %v", err)

	require.NoError(t, p.Up())
	c2 := dial(t, p.Addr())
	s2 := tg.accepted(t)
	send(t, c2, "again")
	receive(t, s2, "again")
}

func TestDownEndsStalledConnections(t *testing.T) {
	t.Parallel()
	tg := newTarget(t)
	p := New(t, tg.ln.Addr().String())

	c := dial(t, p.Addr())
	s := tg.accepted(t)
	p.Stall()
	send(t, c, "held")
	pending := dial(t, p.Addr()) // accepted, waiting for the stall to end

	p.Down()
	ended(t, c)
	ended(t, s)
	ended(t, pending)

	// Still stalled after Up: a new connection is held.
	require.NoError(t, p.Up())
	c2 := dial(t, p.Addr())
	send(t, c2, "y")
	tg.noneAccepted(t)
	p.Resume()
	receive(t, tg.accepted(t), "y")
}

func TestCloseEndsEverything(t *testing.T) {
	t.Parallel()
	tg := newTarget(t)
	p, err := Listen(tg.ln.Addr().String())
	require.NoError(t, err)

	c := dial(t, p.Addr())
	s := tg.accepted(t)
	p.Stall()
	send(t, c, "held")

	require.NoError(t, p.Close()) // returns only once its goroutines ended
	ended(t, c)
	ended(t, s)
	_, err = net.DialTimeout("tcp", p.Addr(), patience)
	require.Error(t, err)
	require.NoError(t, p.Close(), "a second Close is harmless")
}

func TestStallBeforeAPattern(t *testing.T) {
	t.Parallel()
	tg := newTarget(t)
	p := New(t, tg.ln.Addr().String())

	c := dial(t, p.Addr())
	s := tg.accepted(t)
	fired := p.StallBefore([]byte("COMMIT"))
	send(t, c, "no pattern here")
	receive(t, s, "no pattern here")
	select {
	case <-fired:
		t.Fatal("fired without its pattern")
	default:
	}

	send(t, c, "BEGIN;UPDATE;COMMIT;")
	select {
	case <-fired:
	case <-time.After(patience):
		t.Fatal("the pattern did not stall the proxy")
	}
	receive(t, s, "BEGIN;UPDATE;") // what precedes the pattern went through
	nothing(t, s)
	send(t, s, "answer")
	nothing(t, c) // a stall like any other: both directions
	p.Resume()
	receive(t, s, "COMMIT;")
	receive(t, c, "answer")

	// One shot: the pattern passes freely afterwards.
	send(t, c, "COMMIT again")
	receive(t, s, "COMMIT again")
}
