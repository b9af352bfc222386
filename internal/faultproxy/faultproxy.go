// Package faultproxy is a TCP proxy for tests that puts network faults
// between a client and a server it does not control, such as a keelpay
// server and its PostgreSQL database.
//
// A [Proxy] listens on a loopback port and forwards every connection to a
// target address. The test points the client at [Proxy.Addr] instead of the
// target (for PostgreSQL, a DSN whose host and port are the proxy's) and then
// chooses what the network does:
//
//   - [Proxy.Stall] stops forwarding bytes in both directions on every open
//     connection and every new one, while keeping all sockets open. Neither
//     side sees an error: reads wait, writes fill the socket buffers. This is
//     what a partitioned network or a peer paused with SIGSTOP looks like.
//   - [Proxy.Resume] forwards again; bytes written during the stall flow on
//     in order, as they would once a partition heals.
//   - [Proxy.Down] closes every open connection and refuses new ones, as a
//     database server that stopped would.
//   - [Proxy.Up] accepts connections again, on the same address.
//   - [Proxy.StallBefore] stalls at a chosen point of what a client sends:
//     the bytes before a pattern reach the server, the rest waits, as if
//     the client had been paused right there.
//
// Stall and Down are independent: a stalled proxy that goes down and up
// again is still stalled.
//
//	p := faultproxy.New(t, "127.0.0.1:5432")
//	dsn := "postgres://postgres@" + p.Addr() + "/test"
//	// ... start the client with dsn ...
//	p.Stall()
//	// ... the client's queries hang ...
//	p.Resume()
package faultproxy

import (
	"bytes"
	"errors"
	"net"
	"sync"
	"testing"
	"time"
)

// A Proxy forwards TCP connections from its own address to a target. It is
// safe for concurrent use.
type Proxy struct {
	target string
	addr   string

	mu      sync.Mutex
	cond    *sync.Cond // signalled when stalled, down or closed change
	ln      net.Listener
	stalled bool
	down    bool
	closed  bool
	trigger *trigger // armed by StallBefore; nil when none
	conns   map[*link]struct{}
	wg      sync.WaitGroup
}

// A trigger is a stall armed by StallBefore or StallBeforeAfter.
type trigger struct {
	pattern []byte
	// after, when set, must have been seen (in this read or an earlier
	// one, on any connection) before pattern counts; seen records it.
	after []byte
	seen  bool
	fired chan struct{}
}

// A link is one proxied connection: the accepted client side and, once
// dialled, the target side.
type link struct {
	client net.Conn
	server net.Conn
	gone   bool // closed by Down or Close; guarded by Proxy.mu
}

// New starts a proxy on 127.0.0.1 and a port of the system's choosing that
// forwards to target (host:port). The target is dialled for each accepted
// connection, so it need not be reachable yet. The proxy is closed when the
// test ends.
func New(t testing.TB, target string) *Proxy {
	t.Helper()
	p, err := Listen(target)
	if err != nil {
		t.Fatalf("faultproxy: %v", err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// Listen is [New] for callers without a testing.TB: the caller must call
// [Proxy.Close].
func Listen(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{
		target: target,
		addr:   ln.Addr().String(),
		ln:     ln,
		conns:  make(map[*link]struct{}),
	}
	p.cond = sync.NewCond(&p.mu)
	p.wg.Add(1)
	go p.accept(ln)
	return p, nil
}

// Addr is the proxy's address, host:port, for the client to dial. It stays
// the same across [Proxy.Down] and [Proxy.Up].
func (p *Proxy) Addr() string { return p.addr }

// Stall stops forwarding bytes in both directions, on open connections and
// on those accepted while stalled, without closing anything. Connections
// accepted while stalled are not dialled to the target until [Proxy.Resume].
func (p *Proxy) Stall() {
	p.mu.Lock()
	p.stalled = true
	p.mu.Unlock()
}

// Resume ends a [Proxy.Stall]: the bytes held back are forwarded, in order,
// and forwarding goes on.
func (p *Proxy) Resume() {
	p.mu.Lock()
	p.stalled = false
	p.cond.Broadcast()
	p.mu.Unlock()
}

// StallBefore arms a one-shot stall: the next time a client sends bytes
// that contain pattern, the proxy forwards what precedes the pattern, then
// stalls as [Proxy.Stall] does, holding the pattern and what follows it
// until [Proxy.Resume]. The returned channel is closed once the stall has
// begun. Only client-to-target bytes are searched, one read at a time, so
// the pattern should be short enough to arrive in one piece (a protocol
// message the client writes at once). Arming again replaces an armed
// trigger that has not fired; a stall already in force leaves it armed
// until after Resume.
func (p *Proxy) StallBefore(pattern []byte) <-chan struct{} {
	return p.StallBeforeAfter(nil, pattern)
}

// StallBeforeAfter is [Proxy.StallBefore] for the first pattern a client
// sends after it sent after (in the same read, or a later one): a stall
// before the end of one kind of message sequence, such as the Sync that
// ends a pipeline holding a given statement. A nil after is StallBefore.
func (p *Proxy) StallBeforeAfter(after, pattern []byte) <-chan struct{} {
	fired := make(chan struct{})
	p.mu.Lock()
	p.trigger = &trigger{pattern: bytes.Clone(pattern), after: bytes.Clone(after), fired: fired}
	p.mu.Unlock()
	return fired
}

// Down closes every open connection and stops listening, so that new
// connections are refused. It is a no-op if the proxy is already down.
func (p *Proxy) Down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.down || p.closed {
		return
	}
	p.down = true
	_ = p.ln.Close()
	p.dropLocked()
}

// Up listens on the proxy's address again after [Proxy.Down]. It fails only
// if the address could not be bound again (another process took the port).
func (p *Proxy) Up() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.down || p.closed {
		return nil
	}
	var (
		ln  net.Listener
		err error
	)
	// The port was released a moment ago; binding it again normally works
	// at once (Go listens with SO_REUSEADDR), a few tries cover the rest.
	for range 50 {
		ln, err = net.Listen("tcp", p.addr)
		if err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		return err
	}
	p.ln = ln
	p.down = false
	p.cond.Broadcast()
	p.wg.Add(1)
	go p.accept(ln)
	return nil
}

// Close closes the listener and every connection and waits for the proxy's
// goroutines to end.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	if !p.down {
		_ = p.ln.Close()
	}
	p.dropLocked()
	p.mu.Unlock()
	p.wg.Wait()
	return nil
}

// dropLocked closes every open connection and wakes the goroutines that
// wait on a stall so that they see it.
func (p *Proxy) dropLocked() {
	for l := range p.conns {
		l.gone = true
		// A reset rather than an orderly close: the peer of a stopped
		// server sees its connection fail, not a clean end of stream.
		if tc, ok := l.client.(*net.TCPConn); ok {
			_ = tc.SetLinger(0)
		}
		_ = l.client.Close()
		if l.server != nil {
			_ = l.server.Close()
		}
		delete(p.conns, l)
	}
	p.cond.Broadcast()
}

func (p *Proxy) accept(ln net.Listener) {
	defer p.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// A transient accept failure (too many open files); keep going.
			time.Sleep(10 * time.Millisecond)
			continue
		}
		p.mu.Lock()
		if p.closed || p.down {
			p.mu.Unlock()
			_ = c.Close()
			continue
		}
		l := &link{client: c}
		p.conns[l] = struct{}{}
		p.wg.Add(1)
		p.mu.Unlock()
		go p.serve(l)
	}
}

// match reports where an armed trigger's pattern starts in chunk, and then
// disarms it and stalls the proxy; tr is nil when nothing matched.
func (p *Proxy) match(chunk []byte) (i int, tr *trigger) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.trigger == nil || p.stalled {
		return 0, nil
	}
	from := 0
	if tr := p.trigger; len(tr.after) > 0 && !tr.seen {
		a := bytes.Index(chunk, tr.after)
		if a < 0 {
			return 0, nil
		}
		tr.seen = true
		from = a + len(tr.after)
	}
	i = bytes.Index(chunk[from:], p.trigger.pattern)
	if i < 0 {
		return 0, nil
	}
	i += from
	tr, p.trigger = p.trigger, nil
	p.stalled = true
	return i, tr
}

// wait blocks while the proxy is stalled and reports whether l is still
// open.
func (p *Proxy) wait(l *link) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.stalled && !l.gone {
		p.cond.Wait()
	}
	return !l.gone
}

func (p *Proxy) serve(l *link) {
	defer p.wg.Done()
	if !p.wait(l) {
		return
	}
	server, err := net.DialTimeout("tcp", p.target, 10*time.Second)
	p.mu.Lock()
	if err != nil || l.gone {
		delete(p.conns, l)
		p.mu.Unlock()
		_ = l.client.Close()
		if server != nil {
			_ = server.Close()
		}
		return
	}
	l.server = server
	p.mu.Unlock()

	done := make(chan struct{}, 2)
	go p.pipe(l, l.server, l.client, true, done)
	go p.pipe(l, l.client, l.server, false, done)
	<-done
	// One direction ended: end the connection as a whole, then wait for
	// the other direction's goroutine.
	p.mu.Lock()
	delete(p.conns, l)
	p.mu.Unlock()
	_ = l.client.Close()
	_ = l.server.Close()
	<-done
}

// pipe copies src to dst, holding each chunk it read while the proxy is
// stalled. While it holds a chunk it reads nothing more, so the rest waits
// in the kernel's socket buffers and the sender eventually blocks.
func (p *Proxy) pipe(l *link, dst, src net.Conn, fromClient bool, done chan<- struct{}) {
	defer func() { done <- struct{}{} }()
	buf := make([]byte, 32*1024)
	for {
		n, err := src.Read(buf)
		if n > 0 && fromClient {
			if i, tr := p.match(buf[:n]); tr != nil {
				// Forward what precedes the pattern, then hold the rest.
				if _, werr := dst.Write(buf[:i]); werr != nil {
					close(tr.fired)
					return
				}
				close(tr.fired)
				n = copy(buf, buf[i:n])
			}
		}
		if n > 0 {
			if !p.wait(l) {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return // io.EOF or a closed connection alike end the link
		}
	}
}
