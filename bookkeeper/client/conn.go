package client

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tierkeeper/tierkeeper/bookkeeper/wire"
	"github.com/tierkeeper/tierkeeper/internal/bkproto"
	"github.com/tierkeeper/tierkeeper/internal/tlsfiles"
)

// call is one read request waiting for its response.
type call struct {
	txn           uint64
	ledger, entry int64
	done          chan struct{} // closed when resp or err is set
	resp          *wire.Response
	frame         []byte        // the frame resp aliases
	sum           wire.FrameSum // frame's CRC-32C, taken as it arrived
	err           error
	abandoned     atomic.Bool // the caller gave up: do not send it
}

// conn is one connection to a bookie with pipelined reads.
type conn struct {
	c      *Client
	bookie string
	addr   string
	nc     net.Conn

	sendq chan *call    // to the writer; capacity = slots
	slots chan struct{} // in-flight bound

	v2 bool // Options.WireProtocol is WireV2

	mu      sync.Mutex
	pending map[uint64]*call
	// byEntry (v2, whose responses carry no txnId) lists the txns of the
	// pending calls for each entry, oldest first.
	byEntry map[entryKey][]uint64
	nextTxn uint64
	err     error         // set once when the connection fails
	dead    chan struct{} // closed with err

	lastFrame atomic.Int64 // UnixNano when the last complete frame arrived
	// sumFrames: the latest read was of a CRC32C ledger, whose digests
	// are checked from the CRC-32C its frames arrive with
	// (wire.ReadFrameSum); frames of other digest types would be hashed
	// for nothing. A connection shared by ledgers of both kinds follows
	// the latest read: a frame read the other way is checked the slow way
	// or hashed once too often, never checked wrongly.
	sumFrames atomic.Bool
}

// entryKey names an entry in a v2 response.
type entryKey struct{ ledger, entry int64 }

func newConn(c *Client, bookie, addr string, nc net.Conn) *conn {
	n := c.opts.MaxInFlightPerBookie
	k := &conn{
		c: c, bookie: bookie, addr: addr, nc: nc,
		v2:      c.opts.WireProtocol == WireV2,
		sendq:   make(chan *call, n),
		slots:   make(chan struct{}, n),
		pending: make(map[uint64]*call),
		byEntry: make(map[entryKey][]uint64),
		dead:    make(chan struct{}),
	}
	go k.writeLoop()
	go k.readLoop()
	return k
}

// broken reports whether the connection has failed.
func (k *conn) broken() bool {
	select {
	case <-k.dead:
		return true
	default:
		return false
	}
}

// fail closes the connection and fails every pending call with err.
func (k *conn) fail(err error) {
	k.mu.Lock()
	if k.err != nil {
		k.mu.Unlock()
		return
	}
	if why := tlsfiles.Explain(err, k.c.opts.TLS); why != "" {
		// TLS 1.3: a bookie that refuses the client's certificate says so
		// after the client's handshake has returned, on the first read.
		err = fmt.Errorf("%w: %w (%s)", ErrTLS, err, why)
	}
	k.err = fmt.Errorf("%w: bookie %s (%s): %w", ErrConnection, k.bookie, k.addr, err)
	pend := k.pending
	k.pending = nil
	close(k.dead)
	k.mu.Unlock()
	k.nc.Close()
	for _, cl := range pend {
		cl.err = k.err
		close(cl.done)
	}
	k.c.dropConn(k)
	k.c.m.connections.Dec()
	k.c.log.Debug("bookie connection closed", "bookie", k.bookie, "addr", k.addr, "err", err)
}

// read sends one read request and waits for its response, the timeout,
// ctx, or the connection's failure. The response aliases frame, which the
// caller may hand back to the frame pool once nothing refers to it.
// wantSum asks for the frame's CRC-32C (see conn.sumFrames).
func (k *conn) read(ctx context.Context, ledger, entry int64, wantSum bool) (resp *wire.Response, frame []byte, sum wire.FrameSum, err error) {
	if k.sumFrames.Load() != wantSum {
		k.sumFrames.Store(wantSum)
	}
	timer := time.NewTimer(k.c.opts.ReadTimeout)
	defer timer.Stop()
	select {
	case k.slots <- struct{}{}:
	case <-timer.C:
		return nil, nil, wire.FrameSum{}, fmt.Errorf("%w: bookie %s: no free request slot within %s", ErrTimeout, k.bookie, k.c.opts.ReadTimeout)
	case <-ctx.Done():
		return nil, nil, wire.FrameSum{}, ctx.Err()
	case <-k.dead:
		return nil, nil, wire.FrameSum{}, k.err
	}
	defer func() { <-k.slots }()

	cl := &call{ledger: ledger, entry: entry, done: make(chan struct{})}
	sent := time.Now().UnixNano()
	k.mu.Lock()
	if k.err != nil {
		k.mu.Unlock()
		return nil, nil, wire.FrameSum{}, k.err
	}
	k.nextTxn++
	cl.txn = k.nextTxn
	k.pending[cl.txn] = cl
	if k.v2 {
		key := entryKey{ledger, entry}
		k.byEntry[key] = append(k.byEntry[key], cl.txn)
	}
	k.mu.Unlock()
	k.c.m.inFlight.Inc()
	defer k.c.m.inFlight.Dec()
	// The queue can hold stale calls that timed out while the writer was
	// blocked (a bookie not reading its socket), so queueing may block too.
	select {
	case k.sendq <- cl:
	case <-timer.C:
		k.forget(cl)
		return nil, nil, wire.FrameSum{}, fmt.Errorf("%w: bookie %s: request not sent within %s", ErrTimeout, k.bookie, k.c.opts.ReadTimeout)
	case <-ctx.Done():
		k.forget(cl)
		return nil, nil, wire.FrameSum{}, ctx.Err()
	case <-k.dead:
		return nil, nil, wire.FrameSum{}, k.err
	}

	select {
	case <-cl.done:
		return cl.resp, cl.frame, cl.sum, cl.err
	case <-timer.C:
		k.forget(cl)
		if k.lastFrame.Load() < sent {
			// Not one frame arrived while this request waited: the
			// connection is stuck (e.g. half a frame and silence). Drop
			// it; the next read re-dials.
			k.fail(fmt.Errorf("no response frame for %s", k.c.opts.ReadTimeout))
		}
		return nil, nil, wire.FrameSum{}, fmt.Errorf("%w: bookie %s after %s", ErrTimeout, k.bookie, k.c.opts.ReadTimeout)
	case <-ctx.Done():
		k.forget(cl)
		return nil, nil, wire.FrameSum{}, ctx.Err()
	}
}

// forget drops a call whose caller gave up; a late response is discarded
// (readLoop gives its frame back). A call already off the pending set is
// being answered (readLoop matched its response, or fail is failing it):
// both close done right away, and the frame, nobody's now, goes back to
// the pool here instead of to the garbage collector.
func (k *conn) forget(cl *call) {
	cl.abandoned.Store(true)
	k.mu.Lock()
	_, pending := k.pending[cl.txn]
	delete(k.pending, cl.txn)
	if pending && k.v2 {
		k.dropTxnLocked(entryKey{cl.ledger, cl.entry}, cl.txn)
	}
	k.mu.Unlock()
	if !pending {
		<-cl.done
		if cl.frame != nil {
			k.c.frames.put(cl.frame)
		}
	}
}

// writeLoop sends queued requests, flushing when the queue runs empty. A
// write that blocks longer than ReadTimeout (the bookie stopped reading)
// fails the connection.
func (k *conn) writeLoop() {
	bw := bufio.NewWriterSize(deadlineWriter{k}, 32*1024)
	var buf []byte
	for {
		var cl *call
		select {
		case cl = <-k.sendq:
		case <-k.dead:
			return
		}
		if cl.abandoned.Load() {
			continue
		}
		if k.v2 {
			buf = wire.AppendReadRequestV2(buf[:0], cl.ledger, cl.entry)
		} else {
			buf = wire.AppendReadRequest(buf[:0], cl.txn, cl.ledger, cl.entry)
		}
		if _, err := bw.Write(buf); err != nil {
			k.fail(fmt.Errorf("write: %w", err))
			return
		}
		if len(k.sendq) == 0 {
			if err := bw.Flush(); err != nil {
				k.fail(fmt.Errorf("write: %w", err))
				return
			}
		}
	}
}

// deadlineWriter bounds every socket write by ReadTimeout.
type deadlineWriter struct{ k *conn }

func (w deadlineWriter) Write(p []byte) (int, error) {
	_ = w.k.nc.SetWriteDeadline(time.Now().Add(w.k.c.opts.ReadTimeout))
	return w.k.nc.Write(p)
}

func (k *conn) readLoop() {
	br := bufio.NewReaderSize(k.nc, 64*1024)
	for {
		var frame []byte
		var sum wire.FrameSum
		var err error
		if k.sumFrames.Load() {
			frame, sum, err = wire.ReadFrameSum(br, k.c.opts.MaxFrameSize, k.c.frames.get)
		} else {
			frame, err = wire.ReadFrame(br, k.c.opts.MaxFrameSize, k.c.frames.get)
		}
		if err != nil {
			if errors.Is(err, net.ErrClosed) && k.broken() {
				return
			}
			k.fail(fmt.Errorf("read frame: %w", err))
			return
		}
		k.lastFrame.Store(time.Now().UnixNano())
		var resp *wire.Response
		if k.v2 {
			resp, err = wire.DecodeReadResponseV2(frame)
		} else {
			resp, err = wire.DecodeResponse(frame)
		}
		if err != nil {
			// Without a txnId (v3) or the entry's ids (v2) the response
			// can not be matched; the stream can not be trusted any more.
			k.fail(err)
			return
		}
		k.mu.Lock()
		txn := resp.TxnID
		if k.v2 {
			// The oldest pending call for the entry: a bookie answers
			// one entry's reads alike, whichever it answers first.
			key := entryKey{resp.Read.LedgerID, resp.Read.EntryID}
			if q := k.byEntry[key]; len(q) > 0 {
				txn = q[0]
				k.dropTxnLocked(key, txn)
			}
		}
		cl, ok := k.pending[txn]
		if ok {
			delete(k.pending, txn)
		}
		k.mu.Unlock()
		if !ok {
			if k.v2 {
				k.c.log.Debug("dropping response to a request that timed out", "bookie", k.bookie, "ledger", resp.Read.LedgerID, "entry", resp.Read.EntryID)
			} else {
				k.c.log.Debug("dropping response to a request that timed out", "bookie", k.bookie, "txn", resp.TxnID)
			}
			k.c.frames.put(frame)
			continue
		}
		if resp.Operation != int32(bkproto.OperationType_READ_ENTRY) {
			cl.err = fmt.Errorf("%w: bookie %s answered operation %d to a read", ErrBadResponse, k.bookie, resp.Operation)
			k.c.frames.put(frame)
		} else {
			cl.resp, cl.frame, cl.sum = resp, frame, sum
		}
		close(cl.done)
	}
}

// dropTxnLocked removes txn from the v2 calls pending for key.
func (k *conn) dropTxnLocked(key entryKey, txn uint64) {
	q := k.byEntry[key]
	for i, t := range q {
		if t == txn {
			q = append(q[:i], q[i+1:]...)
			break
		}
	}
	if len(q) == 0 {
		delete(k.byEntry, key)
	} else {
		k.byEntry[key] = q
	}
}
