package blob

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// countingConn counts the writes that reach the socket and their sizes.
type countingConn struct {
	net.Conn
	mu     sync.Mutex
	writes []int
}

func (c *countingConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	c.writes = append(c.writes, len(p))
	c.mu.Unlock()
	return c.Conn.Write(p)
}

// partSlices is a part as a gather list of slices of very different
// sizes (a block header, payloads, an entry header, the padding), and
// their concatenation.
func partSlices() (slices [][]byte, all []byte) {
	slices = [][]byte{bytes.Repeat([]byte{1}, 140), bytes.Repeat([]byte{2}, 1<<20), bytes.Repeat([]byte{3}, 12),
		bytes.Repeat([]byte{4}, 3<<20), bytes.Repeat([]byte{5}, 7)}
	for _, s := range slices {
		all = append(all, s...)
	}
	return slices, all
}

// countingDialer dials TCP and keeps every connection as a countingConn.
type countingDialer struct {
	mu    sync.Mutex
	conns []*countingConn
}

func (d *countingDialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	cc := &countingConn{Conn: c}
	d.mu.Lock()
	d.conns = append(d.conns, cc)
	d.mu.Unlock()
	return cc, nil
}

func (d *countingDialer) all() []*countingConn {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]*countingConn(nil), d.conns...)
}

func (c *countingConn) largest() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := 0
	for _, n := range c.writes {
		m = max(m, n)
	}
	return m
}

// TestWholeBodyWritesSendsTheBodyInOneWrite puts a 4 MiB bytes.Reader body
// through net/http to a real server: it arrives whole and left the client
// in two writes: the headers with the start of the body (net/http's 4 KiB
// write buffer), then the rest at once (net/http alone writes 32 KiB at a
// time).
func TestWholeBodyWritesSendsTheBodyInOneWrite(t *testing.T) {
	body := make([]byte, 4<<20)
	for i := range body {
		body[i] = byte(i * 7)
	}
	want := sha256.Sum256(body)
	var got [32]byte
	var gotLen int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		got, gotLen = sha256.Sum256(b), len(b)
	}))
	defer srv.Close()
	for _, whole := range []bool{false, true} {
		d := &countingDialer{}
		dial := DialFunc(d.DialContext)
		if whole {
			dial = WholeBodyWrites(d.DialContext)
		}
		tr := &http.Transport{DialContext: dial}
		req, err := http.NewRequest(http.MethodPut, srv.URL+"/x", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := (&http.Client{Transport: tr}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		tr.CloseIdleConnections()
		if resp.StatusCode != 200 || gotLen != len(body) || got != want {
			t.Fatalf("whole=%v: status %d, server got %d bytes (sha256 match %v)", whole, resp.StatusCode, gotLen, got == want)
		}
		conns := d.all()
		if len(conns) != 1 {
			t.Fatalf("whole=%v: %d connections", whole, len(conns))
		}
		largest := conns[0].largest()
		t.Logf("whole=%v: %d writes, largest %d bytes", whole, len(conns[0].writes), largest)
		if whole && (len(conns[0].writes) > 2 || largest < len(body)-4096) {
			t.Errorf("with WholeBodyWrites: %d writes, the largest %d bytes; want 2, the body but its first 4 KiB at most", len(conns[0].writes), largest)
		}
		if !whole && largest >= len(body) {
			t.Errorf("without WholeBodyWrites the body went in one write of %d bytes: the test no longer tells the two apart", largest)
		}
	}
}

// tcpPair is the client end of a real TCP connection whose other end is
// drained into a buffer, which received returns once the client is closed.
func tcpPair(t *testing.T) (client net.Conn, received func() []byte) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	drained := drainOne(t, ln)
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	return c, func() []byte { c.Close(); return drained() }
}

// drainOne accepts one connection on ln and reads it to its end (30 s at
// most); drained waits for that and returns what was read.
func drainOne(t *testing.T, ln net.Listener) (drained func() []byte) {
	// The listener is closed only once the connection is accepted: closing
	// it with the connection still in the accept queue resets it.
	t.Cleanup(func() { ln.Close() })
	var buf bytes.Buffer
	done := make(chan struct{})
	go func() {
		defer close(done)
		s, err := ln.Accept()
		ln.Close()
		if err != nil {
			return
		}
		defer s.Close()
		_ = s.SetDeadline(time.Now().Add(30 * time.Second))
		_, _ = io.Copy(&buf, s)
	}()
	return func() []byte { <-done; return buf.Bytes() }
}

func TestWholeWriteConnLimitsAndFallsBack(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789"), 10000)
	t.Run("longer than the limit", func(t *testing.T) {
		c, received := tcpPair(t)
		wc := &wholeWriteConn{Conn: c}
		lr := &io.LimitedReader{R: bytes.NewReader(data), N: 12345}
		n, err := wc.ReadFrom(lr)
		if !errors.Is(err, ErrBodyTooLong) || n != 12345 {
			t.Fatalf("ReadFrom = %d, %v; want 12345, ErrBodyTooLong", n, err)
		}
		if got := received(); !bytes.Equal(got, data[:12345]) {
			t.Fatalf("peer got %d bytes, want the first 12345", len(got))
		}
	})
	t.Run("exact", func(t *testing.T) {
		c, received := tcpPair(t)
		wc := &wholeWriteConn{Conn: c}
		lr := &io.LimitedReader{R: bytes.NewReader(data), N: int64(len(data))}
		if n, err := wc.ReadFrom(lr); err != nil || n != int64(len(data)) || lr.N != 0 {
			t.Fatalf("ReadFrom = %d, %v (left %d)", n, err, lr.N)
		}
		if got := received(); !bytes.Equal(got, data) {
			t.Fatalf("peer got %d bytes, want %d", len(got), len(data))
		}
	})
	t.Run("not a WriterTo", func(t *testing.T) {
		c, received := tcpPair(t)
		wc := &wholeWriteConn{Conn: c}
		lr := &io.LimitedReader{R: struct{ io.Reader }{bytes.NewReader(data)}, N: 5000}
		if n, err := wc.ReadFrom(lr); err != nil || n != 5000 {
			t.Fatalf("ReadFrom = %d, %v", n, err)
		}
		if got := received(); !bytes.Equal(got, data[:5000]) {
			t.Fatalf("peer got %d bytes, want the first 5000", len(got))
		}
	})
}

// A part given as a gather list (VectorReader) goes through net/http and
// WholeBodyWrites as its slices, none copied in 32 KiB pieces: one write
// per slice after the first 4 KiB (with the request headers); the server
// gets their concatenation. Without WholeBodyWrites the same body leaves in
// 32 KiB writes.
func TestWholeBodyWritesSendsAVectorAsItsSlices(t *testing.T) {
	slices, all := partSlices()
	want := sha256.Sum256(all)
	var got [32]byte
	var gotLen int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		got, gotLen = sha256.Sum256(b), len(b)
	}))
	defer srv.Close()
	for _, whole := range []bool{false, true} {
		var cc *countingConn
		count := func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			cc = &countingConn{Conn: c}
			return cc, nil
		}
		dial := DialFunc(count)
		if whole {
			dial = WholeBodyWrites(count)
		}
		tr := &http.Transport{DialContext: dial}
		body := NewVectorReader(slices)
		req, err := http.NewRequest(http.MethodPut, srv.URL+"/x", body)
		if err != nil {
			t.Fatal(err)
		}
		req.ContentLength = body.Size()
		resp, err := (&http.Client{Transport: tr}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		tr.CloseIdleConnections()
		if resp.StatusCode != 200 || gotLen != len(all) || got != want {
			t.Fatalf("whole=%v: status %d, server got %d bytes (sha256 match %v)", whole, resp.StatusCode, gotLen, got == want)
		}
		n := len(cc.writes)
		t.Logf("whole=%v: %d writes, largest %d bytes", whole, n, cc.largest())
		if whole && (n > len(slices)+1 || cc.largest() < 3<<20) {
			t.Errorf("with WholeBodyWrites: %d writes, the largest %d bytes; want at most %d, one the whole 3 MiB slice", n, cc.largest(), len(slices)+1)
		}
		if !whole && n < len(all)/(32<<10) {
			t.Errorf("without WholeBodyWrites only %d writes: the test no longer tells the two apart", n)
		}
	}
}
