package blob

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// tlsServer is an HTTPS server (HTTP/2 enabled, so a client that offered
// h2 would get it) that records the SHA-256 and length of each PUT body.
type tlsServer struct {
	*httptest.Server
	mu   sync.Mutex
	sum  [32]byte
	size int
}

func newTLSServer(t *testing.T) *tlsServer {
	s := &tlsServer{}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		s.mu.Lock()
		s.sum, s.size = sha256.Sum256(b), len(b)
		s.mu.Unlock()
		_, _ = io.WriteString(w, r.Proto)
	}))
	s.EnableHTTP2 = true
	s.StartTLS()
	t.Cleanup(s.Close)
	return s
}

func (s *tlsServer) got() ([32]byte, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sum, s.size
}

// A part's body over https through a transport of BodyWrites arrives
// whole (as a gather list and as a bytes.Reader), over HTTP/1.1 although
// the server offers HTTP/2, and its 16 KiB TLS records leave in writes of
// up to 256 KiB; the same transport without BodyWrites writes every
// record on its own.
func TestBodyWritesOverTLSBatchesRecords(t *testing.T) {
	srv := newTLSServer(t)
	roots := srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	slices, all := partSlices()
	want := sha256.Sum256(all)
	bodies := map[string]func() (io.Reader, int64){
		"gather list": func() (io.Reader, int64) { v := NewVectorReader(slices); return v, v.Size() },
		"bytes":       func() (io.Reader, int64) { return bytes.NewReader(all), int64(len(all)) },
		// A body that cannot write itself, as the COS SDK's (it reads
		// the body through its CRC-64).
		"plain reader": func() (io.Reader, int64) { return struct{ io.Reader }{bytes.NewReader(all)}, int64(len(all)) },
	}
	for name, body := range bodies {
		for _, batched := range []bool{false, true} {
			d := &countingDialer{}
			tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}, ForceAttemptHTTP2: true, DialContext: d.DialContext}
			if batched {
				BodyWrites(tr)
			}
			r, size := body()
			req, err := http.NewRequest(http.MethodPut, srv.URL+"/x", r)
			if err != nil {
				t.Fatal(err)
			}
			req.ContentLength = size
			resp, err := (&http.Client{Transport: tr}).Do(req)
			if err != nil {
				t.Fatalf("%s, batched=%v: %v", name, batched, err)
			}
			proto, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			tr.CloseIdleConnections()
			sum, n := srv.got()
			if resp.StatusCode != 200 || n != len(all) || sum != want {
				t.Fatalf("%s, batched=%v: status %d, server got %d bytes of %d (sha256 match %v)", name, batched, resp.StatusCode, n, len(all), sum == want)
			}
			conns := d.all()
			if len(conns) != 1 {
				t.Fatalf("%s, batched=%v: %d connections, want 1", name, batched, len(conns))
			}
			writes, largest := len(conns[0].writes), conns[0].largest()
			t.Logf("%s, batched=%v: %d writes, the largest %d bytes", name, batched, writes, largest)
			records := len(all) / (16 << 10)
			if batched {
				if string(proto) != "HTTP/1.1" {
					t.Errorf("%s: the server saw %s; BodyWrites offers HTTP/1.1 alone", name, proto)
				}
				// The handshake's few writes, then the records in batches.
				if limit := len(all)/tlsBatchBytes + 8; writes > limit || largest > tlsBatchCap {
					t.Errorf("%s with BodyWrites: %d writes, the largest %d bytes; want at most %d, none over %d", name, writes, largest, limit, tlsBatchCap)
				}
			} else if writes < records {
				t.Errorf("%s without BodyWrites: %d writes for %d records: the test no longer tells the two apart", name, writes, records)
			}
		}
	}
}

// tlsPair listens for TLS on 127.0.0.1, hands the listener to serve
// (which accepts in the background) and returns a client connection to it
// made by a transport of BodyWrites.
func tlsPair(t *testing.T, serve func(net.Listener)) net.Conn {
	t.Helper()
	srv := httptest.NewUnstartedServer(nil)
	srv.StartTLS()
	roots := srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	cfg := srv.TLS.Clone()
	srv.Close()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	serve(ln)
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: "example.com"}}
	BodyWrites(tr)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := tr.DialTLSContext(ctx, "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// tlsPeer dials a TLS listener through a transport of BodyWrites and
// returns the client connection and what the server decrypted once the
// client closed.
func tlsPeer(t *testing.T) (net.Conn, func() []byte) {
	t.Helper()
	var drained func() []byte
	c := tlsPair(t, func(ln net.Listener) { drained = drainOne(t, ln) })
	return c, func() []byte { c.Close(); return drained() }
}

func TestTLSBodyConnLimitsAndFallsBack(t *testing.T) {
	data := bytes.Repeat([]byte("0123456789"), 100000)
	cases := []struct {
		name string
		r    func() io.Reader
		n    int64
		err  error
	}{
		{"longer than the limit", func() io.Reader { return NewVectorReader([][]byte{data[:300000], data[300000:]}) }, 456789, ErrBodyTooLong},
		{"exact", func() io.Reader { return bytes.NewReader(data) }, int64(len(data)), nil},
		{"not a WriterTo", func() io.Reader { return struct{ io.Reader }{bytes.NewReader(data)} }, 50000, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, received := tlsPeer(t)
			rf, ok := c.(io.ReaderFrom)
			if !ok {
				t.Fatalf("%T is not an io.ReaderFrom: net/http would copy bodies through 32 KiB", c)
			}
			lr := &io.LimitedReader{R: tc.r(), N: tc.n}
			n, err := rf.ReadFrom(lr)
			if n != tc.n || !errors.Is(err, tc.err) || (tc.err == nil && err != nil) {
				t.Fatalf("ReadFrom = %d, %v; want %d, %v", n, err, tc.n, tc.err)
			}
			if got := received(); !bytes.Equal(got, data[:tc.n]) {
				t.Fatalf("peer decrypted %d bytes, want the first %d", len(got), tc.n)
			}
		})
	}
}

// A server that accepts the connection and never answers the handshake:
// the dial ends after the transport's TLSHandshakeTimeout and says so.
func TestBodyWritesBoundsTheHandshake(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	tr := &http.Transport{TLSHandshakeTimeout: 200 * time.Millisecond}
	BodyWrites(tr)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	_, err = tr.DialTLSContext(ctx, "tcp", ln.Addr().String())
	if err == nil || !strings.Contains(err.Error(), "no answer within 200ms") {
		t.Fatalf("dial = %v; want the handshake's timeout named", err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Fatalf("the dial took %s", d)
	}
}

// failingConn fails every write after the first ok bytes.
type failingConn struct {
	net.Conn
	ok int
}

var errSend = errors.New("send failed")

func (c *failingConn) Write(p []byte) (int, error) {
	if len(p) > c.ok {
		n := c.ok
		c.ok = 0
		return n, errSend
	}
	c.ok -= len(p)
	return len(p), nil
}

// Records kept while gathering are reported written; when sending them
// fails, release says so and every later write fails with it: the TLS
// stream above has lost records.
func TestRecordBatcherFailsAfterALostBatch(t *testing.T) {
	b := &recordBatcher{Conn: &failingConn{ok: 100}}
	if n, err := b.Write(make([]byte, 50)); n != 50 || err != nil {
		t.Fatalf("a write straight through = %d, %v", n, err)
	}
	b.gather()
	for range 3 {
		if n, err := b.Write(make([]byte, 40)); n != 40 || err != nil {
			t.Fatalf("a kept write = %d, %v", n, err)
		}
	}
	if err := b.release(); !errors.Is(err, errSend) {
		t.Fatalf("release = %v, want the send's error", err)
	}
	if _, err := b.Write(make([]byte, 1)); !errors.Is(err, errSend) {
		t.Fatalf("a write after the lost batch = %v, want the send's error", err)
	}
}

// A gather list of odd slices (entry headers, payloads with tails, a few
// bytes of padding) leaves as full 16 KiB records but the last: the peer,
// reading one record at a time as Go's TLS does, gets the body in pieces
// of 16 KiB, the pieces a contiguous body gives it. Written slice by slice
// (and with crypto/tls's small first records) the pieces would follow the
// slices.
func TestTLSBodyConnWritesFullRecords(t *testing.T) {
	var got []byte
	var reads []int
	done := make(chan error, 1)
	c := tlsPair(t, func(ln net.Listener) {
		t.Cleanup(func() { ln.Close() })
		go func() {
			s, err := ln.Accept()
			ln.Close()
			if err != nil {
				done <- err
				return
			}
			defer s.Close()
			_ = s.SetDeadline(time.Now().Add(30 * time.Second))
			buf := make([]byte, 256<<10)
			for {
				n, err := s.Read(buf)
				if n > 0 {
					reads = append(reads, n)
					got = append(got, buf[:n]...)
				}
				if err == io.EOF {
					done <- nil
					return
				}
				if err != nil {
					done <- err
					return
				}
			}
		}()
	})
	fill := func(n int, v byte) []byte { return bytes.Repeat([]byte{v}, n) }
	slices := net.Buffers{fill(40, 1), fill(12, 2), fill(1<<20+5, 3), fill(12, 4), fill(100<<10, 5), fill(3, 6),
		fill(16<<10, 7), fill(0, 8), fill(12, 9), fill(40000, 10), fill(7, 11)}
	var want []byte
	for _, s := range slices {
		want = append(want, s...)
	}
	bw, ok := c.(BuffersWriter)
	if !ok {
		t.Fatalf("%T has no WriteBuffers", c)
	}
	if n, err := bw.WriteBuffers(slices); err != nil || n != int64(len(want)) {
		t.Fatalf("WriteBuffers = %d, %v; want %d", n, err, len(want))
	}
	c.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("peer decrypted %d bytes, want %d (same bytes: false)", len(got), len(want))
	}
	for i, n := range reads[:len(reads)-1] {
		if n != 16<<10 {
			t.Fatalf("record %d of %d carried %d bytes, want %d (all: %v)", i, len(reads), n, 16<<10, reads)
		}
	}
	if last, wantLast := reads[len(reads)-1], len(want)%(16<<10); last != wantLast {
		t.Fatalf("last record carried %d bytes, want %d", last, wantLast)
	}
}
