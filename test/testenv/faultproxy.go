package testenv

import (
	"encoding/binary"
	"net"
	"slices"
	"sync"
	"testing"
	"time"
)

// ZooKeeper request opcodes, for FaultProxy.PartitionAfterZKRequest.
const (
	ZKOpCreate  int32 = 1
	ZKOpDelete  int32 = 2
	ZKOpSetData int32 = 5
	ZKOpMulti   int32 = 14
)

// FaultProxy is a TCP proxy on 127.0.0.1 in front of one server, for fault
// injection (the only in-process stand-in the tests use; the server behind
// it is real). It can
//
//   - Partition: stop forwarding in both directions, as a network that
//     drops every packet does. Nothing is lost or closed: TCP would
//     retransmit, so the bytes (and closes) wait and are delivered by Heal,
//     in order. Neither side sees an error; the client notices only by its
//     own timeouts, and a ZooKeeper server expires the session.
//   - Cut: close every connection now and refuse new ones until Heal (a
//     reset, or a server that went away).
//   - PartitionAfterZKRequest: partition right after a ZooKeeper request
//     with one of the given opcodes has been forwarded to the server, so
//     the server applies it and its reply is held (a write that succeeded
//     but whose answer was lost).
//
// New connections are accepted while partitioned (their bytes wait too).
// Everything stops when the test ends.
//
// A ZooKeeper session that is to survive a Cut needs SessionTimeout at
// least ReconnectSessionTimeout.
type FaultProxy struct {
	// Addr is the proxy's address ("127.0.0.1:port"); Target the server's.
	Addr, Target string

	ln net.Listener

	mu       sync.Mutex
	cond     *sync.Cond
	held     bool
	cut      bool
	closed   bool
	conns    map[*proxyConn]struct{}
	accepted int
	trigger  *zkTrigger
}

// ReconnectSessionTimeout is the ZooKeeper session timeout for a test that
// cuts a session's connection and expects the same session back after
// Heal. go-zookeeper sleeps 1 s before it redials its only server, and the
// client gives the session up one session timeout after the disconnect
// (internal/zk): at 2 s a reconnect that took over a second on a loaded
// machine (the server busy with the suite's other tests) lost the session.
// 5 s leaves 4 s for the redial and the server's answer.
const ReconnectSessionTimeout = 5 * time.Second

type zkTrigger struct {
	ops  []int32
	done chan struct{}
}

// proxyConn is one client connection and its connection to the target.
type proxyConn struct {
	client, server net.Conn
	closed         bool
}

// StartFaultProxy listens on 127.0.0.1 and forwards every connection to
// target. It stops with t.
func StartFaultProxy(t testing.TB, target string) *FaultProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("fault proxy: %v", err)
	}
	p := &FaultProxy{Addr: ln.Addr().String(), Target: target, ln: ln, conns: map[*proxyConn]struct{}{}}
	p.cond = sync.NewCond(&p.mu)
	t.Cleanup(p.close)
	go p.accept()
	return p
}

func (p *FaultProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.cut || p.closed {
			p.mu.Unlock()
			c.Close()
			continue
		}
		p.mu.Unlock()
		s, err := net.Dial("tcp", p.Target)
		if err != nil {
			c.Close()
			continue
		}
		pc := &proxyConn{client: c, server: s}
		p.mu.Lock()
		if p.cut || p.closed {
			p.mu.Unlock()
			c.Close()
			s.Close()
			continue
		}
		p.conns[pc] = struct{}{}
		p.accepted++
		p.mu.Unlock()
		go p.pump(pc, c, s, &zkFrames{})
		go p.pump(pc, s, c, nil)
	}
}

// pump copies src to dst chunk by chunk, each chunk waiting while the
// proxy is partitioned. frames, on the client-to-server direction, follows
// ZooKeeper's request framing for PartitionAfterZKRequest.
func (p *FaultProxy) pump(pc *proxyConn, src, dst net.Conn, frames *zkFrames) {
	defer p.drop(pc)
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		chunk := buf[:n]
		for len(chunk) > 0 {
			upto, fired := len(chunk), (*zkTrigger)(nil)
			if frames != nil {
				upto, fired = p.nextRequest(frames, chunk)
			}
			if !p.wait(pc) {
				return
			}
			// The partition starts before the request's last byte is
			// written: its reply, read after the server has the request,
			// then always waits (fired after the write, a reply could slip
			// through on a busy machine).
			if fired != nil {
				p.fire(fired)
			}
			if _, werr := dst.Write(chunk[:upto]); werr != nil {
				return
			}
			chunk = chunk[upto:]
		}
		if err != nil {
			// EOF or error: the close is delivered like data, once healed.
			p.wait(pc)
			return
		}
	}
}

// nextRequest returns how much of chunk to forward before the next check:
// up to the end of the first request that ends in it (all of chunk when
// none does), and the armed trigger when that request matches it.
func (p *FaultProxy) nextRequest(f *zkFrames, chunk []byte) (int, *zkTrigger) {
	end, op := f.feed(chunk)
	if end < 0 {
		return len(chunk), nil
	}
	p.mu.Lock()
	tr := p.trigger
	p.mu.Unlock()
	if tr != nil && slices.Contains(tr.ops, op) {
		return end, tr
	}
	return end, nil
}

// fire starts the partition of trigger tr (once, if still armed).
func (p *FaultProxy) fire(tr *zkTrigger) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.trigger == tr {
		p.trigger, p.held = nil, true
		close(tr.done)
	}
}

// wait blocks while the proxy is partitioned; false when the connection
// was closed meanwhile.
func (p *FaultProxy) wait(pc *proxyConn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.held && !pc.closed && !p.closed {
		p.cond.Wait()
	}
	return !pc.closed && !p.closed
}

func (p *FaultProxy) drop(pc *proxyConn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !pc.closed {
		pc.closed = true
		pc.client.Close()
		pc.server.Close()
		delete(p.conns, pc)
	}
	p.cond.Broadcast()
}

// Partition holds every byte in both directions (and any close) until
// Heal.
func (p *FaultProxy) Partition() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.held = true
}

// Cut closes every connection and refuses new ones until Heal.
func (p *FaultProxy) Cut() {
	p.mu.Lock()
	p.cut = true
	p.mu.Unlock()
	p.dropAll()
}

// dropAll closes every connection.
func (p *FaultProxy) dropAll() {
	p.mu.Lock()
	conns := make([]*proxyConn, 0, len(p.conns))
	for pc := range p.conns {
		conns = append(conns, pc)
	}
	p.mu.Unlock()
	for _, pc := range conns {
		p.drop(pc)
	}
}

// Heal ends a partition or a cut: what was held is delivered and new
// connections are forwarded again. A pending PartitionAfterZKRequest is
// disarmed.
func (p *FaultProxy) Heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.held, p.cut, p.trigger = false, false, nil
	p.cond.Broadcast()
}

// Partitioned reports whether bytes are being held.
func (p *FaultProxy) Partitioned() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.held
}

// Connections returns how many connections are open now and how many were
// accepted in all.
func (p *FaultProxy) Connections() (open, accepted int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns), p.accepted
}

// PartitionAfterZKRequest arms a partition that starts right after the
// next ZooKeeper request (on any connection) with one of opcodes has been
// forwarded whole to the server: the server applies it, its reply and
// everything after are held until Heal. The channel is closed when it
// fires.
func (p *FaultProxy) PartitionAfterZKRequest(opcodes ...int32) <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	tr := &zkTrigger{ops: opcodes, done: make(chan struct{})}
	p.trigger = tr
	return tr.done
}

func (p *FaultProxy) close() {
	p.ln.Close()
	p.mu.Lock()
	p.closed = true
	p.cond.Broadcast()
	p.mu.Unlock()
	p.dropAll()
}

// zkFrames follows the client-to-server byte stream of a ZooKeeper
// connection: length-prefixed frames, the first being the connect request
// (no header), the others a request header (xid, opcode) and body.
type zkFrames struct {
	started bool // the connect request is done
	lenBuf  [4]byte
	nLen    int
	left    int // payload bytes still to come in the current frame
	head    [8]byte
	nHead   int
	inFrame bool
}

// feed consumes b up to and including the end of the first frame that
// ends in it, and returns that offset and the frame's opcode (-1 for the
// connect request); end is -1 when no frame ends in b (all consumed).
func (f *zkFrames) feed(b []byte) (end int, op int32) {
	i := 0
	for i < len(b) {
		if !f.inFrame {
			n := copy(f.lenBuf[f.nLen:], b[i:])
			f.nLen += n
			i += n
			if f.nLen < 4 {
				return -1, 0
			}
			f.left = int(int32(binary.BigEndian.Uint32(f.lenBuf[:])))
			f.nLen, f.nHead, f.inFrame = 0, 0, true
			if f.left <= 0 {
				f.inFrame = false
				continue
			}
		}
		n := min(f.left, len(b)-i)
		if f.nHead < len(f.head) {
			f.nHead += copy(f.head[f.nHead:], b[i:i+n])
		}
		f.left -= n
		i += n
		if f.left == 0 {
			f.inFrame = false
			op := int32(-1)
			if f.started && f.nHead >= 8 {
				op = int32(binary.BigEndian.Uint32(f.head[4:8]))
			}
			f.started = true
			return i, op
		}
	}
	return -1, 0
}
