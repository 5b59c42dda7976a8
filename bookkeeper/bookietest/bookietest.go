// Package bookietest is an in-process fake bookie speaking BookKeeper's v3
// protocol, for fault-injection tests of the reader: it serves stored
// entries, records every request (so tests can assert that nothing ever asks
// to fence), and lets a test decide per request to delay, fail, corrupt,
// drop, send garbage or cut the connection.
//
// It is a test double, not a bookie: it stores entries in memory, only
// serves READ_ENTRY (anything else gets EBADREQ) and does no journaling.
// Real-peer behaviour is covered by the compat suite against real bookies.
package bookietest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/tierkeeper/tierkeeper/bookkeeper/digest"
	"github.com/tierkeeper/tierkeeper/bookkeeper/metadata"
	"github.com/tierkeeper/tierkeeper/bookkeeper/wire"
	"github.com/tierkeeper/tierkeeper/internal/bkproto"
)

// Request is one request the fake received, as decoded by the generated
// protobuf code.
type Request struct {
	TxnID     uint64
	Version   bkproto.ProtocolVersion
	Operation bkproto.OperationType
	LedgerID  int64
	EntryID   int64
	// HasFlag and Flag report ReadRequest.flag (FENCE_LEDGER = 1 would fence).
	HasFlag   bool
	Flag      bkproto.ReadRequest_Flag
	MasterKey []byte
	// Raw is the frame body.
	Raw []byte
}

// Action is what the fake does with one request. The zero Action serves
// the entry (or ENOLEDGER/ENOENTRY when it is not stored).
type Action struct {
	// Delay waits before answering (the connection keeps serving others).
	Delay time.Duration
	// Status answers with this status in the ReadResponse instead of the entry.
	Status bkproto.StatusCode
	// TopLevel puts Status in Response.status instead (as the bookie does for
	// ETOOMANYREQUESTS and request-level errors).
	TopLevel bool
	// Corrupt flips one payload byte of the served entry.
	Corrupt bool
	// WrongEntry answers with the stored entry of entry+1 (a bookie bug).
	WrongEntry bool
	// NoResponse never answers this request.
	NoResponse bool
	// Close closes the connection instead of answering.
	Close bool
	// HalfAndClose writes the first half of the response frame, then closes.
	HalfAndClose bool
	// HalfAndStall writes the first half of the response frame and then
	// nothing more on this connection (it stays open).
	HalfAndStall bool
	// Garbage answers with a frame that is not a Response.
	Garbage bool
	// Oversized answers with a length prefix of 1 GiB (and nothing after it).
	Oversized bool
	// Mutate, if set, rewrites the encoded response frame (length prefix
	// included) before it is written; closeAfter closes the connection
	// after writing it. For fuzzing the reader with arbitrary corruption.
	Mutate func(frame []byte) (out []byte, closeAfter bool)
}

// Fault picks the Action for a request; nil serves everything normally.
type Fault func(r Request) Action

type key struct{ ledger, entry int64 }

// Bookie is a fake bookie listening on 127.0.0.1.
type Bookie struct {
	// Addr is the listening address, host:port.
	Addr string

	mu       sync.Mutex
	ln       net.Listener
	entries  map[key][]byte
	ledgers  map[int64]bool
	requests []Request
	fault    Fault
	conns    map[net.Conn]struct{}
	accepted int
	stopped  bool
	stopCh   chan struct{}
	wg       sync.WaitGroup
}

// Start starts a fake bookie; it is stopped when t ends.
func Start(t testing.TB) *Bookie {
	t.Helper()
	b := &Bookie{entries: map[key][]byte{}, ledgers: map[int64]bool{}, conns: map[net.Conn]struct{}{}}
	if err := b.listen("127.0.0.1:0"); err != nil {
		t.Fatalf("fake bookie: %v", err)
	}
	t.Cleanup(b.Stop)
	return b
}

func (b *Bookie) listen(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	b.mu.Lock()
	b.ln, b.Addr, b.stopped = ln, ln.Addr().String(), false
	b.stopCh = make(chan struct{})
	b.mu.Unlock()
	b.wg.Add(1)
	go b.accept(ln)
	return nil
}

// Put stores an entry exactly as a bookie stores it (header, digest,
// payload; see digest.Digester.Seal).
func (b *Bookie) Put(ledgerID, entryID int64, stored []byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.entries[key{ledgerID, entryID}] = bytes.Clone(stored)
	b.ledgers[ledgerID] = true
}

// Delete removes a stored entry (the ledger stays known: reads get ENOENTRY).
func (b *Bookie) Delete(ledgerID, entryID int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.entries, key{ledgerID, entryID})
}

// SetFault installs f (nil: serve normally).
func (b *Bookie) SetFault(f Fault) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.fault = f
}

// Requests returns a copy of every request received so far.
func (b *Bookie) Requests() []Request {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]Request(nil), b.requests...)
}

// Connections returns how many connections the fake has accepted.
func (b *Bookie) Connections() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.accepted
}

// Stop closes the listener and every connection (the bookie goes down).
func (b *Bookie) Stop() {
	b.mu.Lock()
	if b.stopped {
		b.mu.Unlock()
		return
	}
	b.stopped = true
	close(b.stopCh)
	b.ln.Close()
	for c := range b.conns {
		c.Close()
	}
	b.mu.Unlock()
	b.wg.Wait()
}

// Restart listens again on the same address after Stop.
func (b *Bookie) Restart() error {
	b.Stop()
	return b.listen(b.Addr)
}

func (b *Bookie) accept(ln net.Listener) {
	defer b.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		b.mu.Lock()
		if b.stopped {
			b.mu.Unlock()
			c.Close()
			return
		}
		b.conns[c] = struct{}{}
		b.accepted++
		b.mu.Unlock()
		b.wg.Add(1)
		go b.serve(c)
	}
}

// maxRequestFrame bounds request frames (a read request is ~30 bytes).
const maxRequestFrame = 1 << 20

func (b *Bookie) serve(c net.Conn) {
	defer b.wg.Done()
	var wmu sync.Mutex
	var handlers sync.WaitGroup
	defer func() {
		c.Close()
		handlers.Wait()
		b.mu.Lock()
		delete(b.conns, c)
		b.mu.Unlock()
	}()
	write := func(p []byte) error {
		wmu.Lock()
		defer wmu.Unlock()
		_, err := c.Write(p)
		return err
	}
	// stall blocks the connection's writes until the bookie stops or the
	// client closes the connection.
	stall := func() {
		wmu.Lock()
		defer wmu.Unlock()
		b.mu.Lock()
		stop := b.stopCh
		b.mu.Unlock()
		closed := make(chan struct{})
		go func() {
			var one [1]byte
			for {
				if _, err := c.Read(one[:]); err != nil {
					close(closed)
					return
				}
			}
		}()
		select {
		case <-stop:
		case <-closed:
		}
	}
	r := bufio.NewReader(c)
	for {
		body, err := wire.ReadFrame(r, maxRequestFrame, nil)
		if err != nil {
			return
		}
		var pr bkproto.Request
		var req Request
		if err := proto.Unmarshal(body, &pr); err == nil {
			req = Request{
				TxnID: pr.GetHeader().GetTxnId(), Version: pr.GetHeader().GetVersion(), Operation: pr.GetHeader().GetOperation(),
				LedgerID: pr.GetReadRequest().GetLedgerId(), EntryID: pr.GetReadRequest().GetEntryId(),
				HasFlag: pr.GetReadRequest() != nil && pr.GetReadRequest().Flag != nil, Flag: pr.GetReadRequest().GetFlag(),
				MasterKey: pr.GetReadRequest().GetMasterKey(), Raw: body,
			}
		} else if r, ok := decodeV2Read(body); ok {
			// As a real bookie: what is not a v3 Request is read as v2.
			req = r
		} else {
			return
		}
		b.mu.Lock()
		b.requests = append(b.requests, req)
		fault := b.fault
		stop := b.stopCh
		b.mu.Unlock()
		var act Action
		if fault != nil {
			act = fault(req)
		}
		handlers.Add(1)
		go func() {
			defer handlers.Done()
			if act.Delay > 0 {
				select {
				case <-time.After(act.Delay):
				case <-stop:
					return
				}
			}
			if !b.handle(write, stall, &pr, req, act) {
				c.Close()
			}
		}()
	}
}

// handle answers one request; false closes the connection.
func (b *Bookie) handle(write func([]byte) error, stall func(), pr *bkproto.Request, req Request, act Action) bool {
	switch {
	case act.NoResponse:
		return true
	case act.Close:
		return false
	case act.Garbage:
		return write(wire.AppendFrame(nil, []byte("\xff\xff\xff\xff garbage, not a protobuf Response"))) == nil
	case act.Oversized:
		_ = write(binary.BigEndian.AppendUint32(nil, 1<<30))
		return true
	}
	status := bkproto.StatusCode_EOK
	var body []byte
	if req.Operation != bkproto.OperationType_READ_ENTRY || (req.Version != bkproto.ProtocolVersion_VERSION_THREE && req.Version != bkproto.ProtocolVersion_VERSION_TWO) {
		status = bkproto.StatusCode_EBADREQ
	} else {
		want := req.EntryID
		if act.WrongEntry {
			want++
		}
		b.mu.Lock()
		stored, ok := b.entries[key{req.LedgerID, want}]
		known := b.ledgers[req.LedgerID]
		b.mu.Unlock()
		switch {
		case act.Status != bkproto.StatusCode_EOK:
			status = act.Status
		case !known:
			status = bkproto.StatusCode_ENOLEDGER
		case !ok:
			status = bkproto.StatusCode_ENOENTRY
		default:
			body = bytes.Clone(stored)
			if act.Corrupt && len(body) > 0 {
				body[len(body)-1] ^= 0x55
			}
		}
	}
	if req.Version == bkproto.ProtocolVersion_VERSION_TWO {
		return b.send(write, stall, wire.AppendReadResponseV2(nil, status, req.LedgerID, req.EntryID, body), act)
	}
	resp := &bkproto.Response{
		Header: &bkproto.BKPacketHeader{Version: bkproto.ProtocolVersion_VERSION_THREE.Enum(),
			Operation: pr.GetHeader().GetOperation().Enum(), TxnId: proto.Uint64(req.TxnID)},
		Status: bkproto.StatusCode_EOK.Enum(),
	}
	if act.TopLevel || req.Operation != bkproto.OperationType_READ_ENTRY {
		// A real bookie answers other operations (START_TLS without TLS
		// configured, ...) with a top-level status.
		resp.Status = status.Enum()
	} else {
		resp.ReadResponse = &bkproto.ReadResponse{Status: status.Enum(), LedgerId: proto.Int64(req.LedgerID),
			EntryId: proto.Int64(req.EntryID), Body: body}
		if status == bkproto.StatusCode_EOK {
			resp.ReadResponse.MaxLAC = proto.Int64(req.EntryID)
		}
	}
	msg, err := proto.Marshal(resp)
	if err != nil {
		return false
	}
	return b.send(write, stall, wire.AppendFrame(nil, msg), act)
}

// send writes one response frame as act says (mutated, cut in half, ...);
// false closes the connection.
func (b *Bookie) send(write func([]byte) error, stall func(), frame []byte, act Action) bool {
	if act.Mutate != nil {
		out, closeAfter := act.Mutate(frame)
		if err := write(out); err != nil || closeAfter {
			return false
		}
		return true
	}
	if act.HalfAndClose {
		_ = write(frame[:len(frame)/2])
		return false
	}
	if act.HalfAndStall {
		_ = write(frame[:len(frame)/2])
		stall() // hold the write lock: nothing else goes out on this connection
		return false
	}
	return write(frame) == nil
}

// Cluster is a set of fake bookies addressed by bookie id, with a resolver
// for the reader.
type Cluster struct {
	Bookies map[string]*Bookie
	IDs     []string
}

// StartCluster starts n fake bookies with ids "bookie-0" ... "bookie-<n-1>"
// (ids that are not addresses, so resolution is exercised).
func StartCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	c := &Cluster{Bookies: map[string]*Bookie{}}
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("bookie-%d", i)
		c.Bookies[id] = Start(t)
		c.IDs = append(c.IDs, id)
	}
	return c
}

// ErrUnknownBookie is returned by Cluster.ResolveBookie for an unknown id.
var ErrUnknownBookie = errors.New("bookietest: unknown bookie id")

// ResolveBookie maps a bookie id to its fake's address.
func (c *Cluster) ResolveBookie(_ context.Context, id string) (string, error) {
	if b, ok := c.Bookies[id]; ok {
		return b.Addr, nil
	}
	return "", fmt.Errorf("%w: %s", ErrUnknownBookie, id)
}

// Requests returns the requests received by every bookie.
func (c *Cluster) Requests() []Request {
	var all []Request
	for _, id := range c.IDs {
		all = append(all, c.Bookies[id].Requests()...)
	}
	return all
}

// Ledger describes a ledger to write into a Cluster.
type Ledger struct {
	LedgerID                   int64
	Ensemble, WriteQuorum, Ack int
	DigestType                 digest.Type
	Password                   []byte
	// Segments are the ensembles (bookie ids); nil uses the cluster's first
	// Ensemble bookies from entry 0.
	Segments []metadata.Segment
}

// Write stores payloads as entries 0..n-1 on the write-set bookies of each
// entry, as a BookKeeper writer would (cumulative lengths, LAC = entry-1,
// digests), and returns the CLOSED metadata describing it.
func (c *Cluster) Write(l Ledger, payloads [][]byte) (*metadata.LedgerMetadata, error) {
	if l.Ack == 0 {
		l.Ack = l.WriteQuorum
	}
	segs := l.Segments
	if segs == nil {
		segs = []metadata.Segment{{FirstEntryID: 0, Bookies: append([]string(nil), c.IDs[:l.Ensemble]...)}}
	}
	md := &metadata.LedgerMetadata{
		LedgerID: l.LedgerID, FormatVersion: 3, EnsembleSize: l.Ensemble, WriteQuorum: l.WriteQuorum, AckQuorum: l.Ack,
		State: metadata.StateClosed, LastEntryID: int64(len(payloads)) - 1, Segments: segs,
		HasPassword: true, DigestType: l.DigestType, Password: l.Password, Version: -1,
	}
	if err := md.Validate(); err != nil {
		return nil, err
	}
	d, err := digest.New(l.DigestType, l.Password)
	if err != nil {
		return nil, err
	}
	var length int64
	for i, p := range payloads {
		e := int64(i)
		length += int64(len(p))
		stored := d.Seal(digest.Header{LedgerID: l.LedgerID, EntryID: e, LastAddConfirmed: e - 1, Length: length}, p)
		ws, err := md.WriteSet(e)
		if err != nil {
			return nil, err
		}
		for _, id := range ws {
			b, ok := c.Bookies[id]
			if !ok {
				return nil, fmt.Errorf("%w: %s", ErrUnknownBookie, id)
			}
			b.Put(l.LedgerID, e, stored)
		}
	}
	md.Length = length
	return md, nil
}

// decodeV2Read decodes a v2 READENTRY request (header, ledgerId, entryId,
// then the master key when it fences), as a real bookie does after a
// frame fails to parse as v3.
func decodeV2Read(b []byte) (Request, bool) {
	if len(b) < 20 {
		return Request{}, false
	}
	hdr := binary.BigEndian.Uint32(b)
	if hdr>>24 != 2 || hdr>>16&0xff != 2 {
		return Request{}, false
	}
	flags := uint16(hdr)
	r := Request{
		Version: bkproto.ProtocolVersion_VERSION_TWO, Operation: bkproto.OperationType_READ_ENTRY,
		LedgerID: int64(binary.BigEndian.Uint64(b[4:])), EntryID: int64(binary.BigEndian.Uint64(b[12:])),
		HasFlag: flags != 0, Flag: bkproto.ReadRequest_Flag(flags), Raw: b,
	}
	if len(b) > 20 {
		r.MasterKey = b[20:]
	}
	return r, true
}
