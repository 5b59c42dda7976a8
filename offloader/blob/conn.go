package blob

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// DialFunc dials a network connection (http.Transport.DialContext).
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// ErrBodyTooLong is returned by a connection of WholeBodyWrites when a
// request body holds more bytes than its Content-Length.
var ErrBodyTooLong = errors.New("request body longer than its Content-Length")

// tlsBatchBytes is the plaintext a connection of BodyWrites gathers, as
// TLS records, before one system call: 16 records of 16 KiB.
const tlsBatchBytes = 256 << 10

// tlsBatchCap holds tlsBatchBytes of plaintext as records: each adds a
// header, a tag and (TLS 1.3) its type, under 64 bytes.
const tlsBatchCap = tlsBatchBytes + tlsBatchBytes/(16<<10)*64

// defaultTLSHandshakeTimeout bounds a handshake of BodyWrites when the
// transport sets none (net/http's DefaultTransport's value).
const defaultTLSHandshakeTimeout = 10 * time.Second

// BodyWrites sets t's dialers so that request bodies reach the socket
// without net/http's copies, over http:// and https:// alike:
//   - http:// connections are WholeBodyWrites of t.DialContext;
//   - https:// connections (t.DialTLSContext) are made over
//     t.DialContext with t.TLSClientConfig (read at each dial, so options
//     applied later count), HTTP/1.1 only, the handshake bounded by
//     t.TLSHandshakeTimeout (10 s when zero). A body that can write itself
//     (io.WriterTo, such as a VectorReader) is encrypted straight from its
//     slices, not copied through a 32 KiB buffer first, as full 16 KiB
//     records (see tlsBodyConn.WriteBuffers; no small first records), and
//     the records of one write (crypto/tls writes every record in its own
//     system call) leave in system calls of up to 256 KiB.
//
// Requests through a proxy take net/http's own path.
func BodyWrites(t *http.Transport) {
	dial := DialFunc(t.DialContext)
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	t.DialContext = WholeBodyWrites(dial)
	t.DialTLSContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		cfg := &tls.Config{}
		if t.TLSClientConfig != nil {
			cfg = t.TLSClientConfig.Clone()
		}
		if cfg.ServerName == "" {
			host, _, err := net.SplitHostPort(addr)
			if err != nil {
				host = addr
			}
			cfg.ServerName = host
		}
		// Our connection is not a *tls.Conn, so net/http would not speak
		// HTTP/2 on it: offer HTTP/1.1 alone.
		cfg.NextProtos = []string{"http/1.1"}
		// Full records from the first byte: small first records help a
		// browser render early, not a store receiving a part.
		cfg.DynamicRecordSizingDisabled = true
		timeout := t.TLSHandshakeTimeout
		if timeout <= 0 {
			timeout = defaultTLSHandshakeTimeout
		}
		raw, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		b := &recordBatcher{Conn: raw}
		tc := tls.Client(b, cfg)
		hctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		if err := tc.HandshakeContext(hctx); err != nil {
			_ = raw.Close()
			if hctx.Err() != nil && ctx.Err() == nil {
				return nil, fmt.Errorf("TLS handshake with %s: no answer within %s: %w", addr, timeout, err)
			}
			return nil, fmt.Errorf("TLS handshake with %s: %w", addr, err)
		}
		return &tlsBodyConn{Conn: tc, batch: b}, nil
	}
}

// WholeBodyWrites wraps dial (nil: a plain net.Dialer) so that a plain
// HTTP request body that can write itself (io.WriterTo: a VectorReader,
// the gather list of a part whose payloads lie in the bookie frames they
// were read into, or a bytes.Reader) goes to the socket without a copy: a
// VectorReader's slices in one writev, a bytes.Reader in one write.
// Without it net/http copies every body through a 32 KiB buffer: a memmove
// of every byte sent and one write system call per 32 KiB. Other bodies
// take the connection's own path (sendfile for files, else the 32 KiB
// copy). BodyWrites does the same for TLS connections.
func WholeBodyWrites(dial DialFunc) DialFunc {
	if dial == nil {
		dial = (&net.Dialer{}).DialContext
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &wholeWriteConn{Conn: c}, nil
	}
}

// wholeWriteConn is a connection whose ReadFrom (which net/http's transport
// calls with the request body, limited to its Content-Length) lets a body
// that is an io.WriterTo write itself.
type wholeWriteConn struct{ net.Conn }

func (c *wholeWriteConn) ReadFrom(r io.Reader) (int64, error) {
	if n, ok, err := writeWholeBody(c.Conn, r); ok {
		return n, err
	}
	if rf, ok := c.Conn.(io.ReaderFrom); ok {
		return rf.ReadFrom(r)
	}
	return io.Copy(writerOnly{c.Conn}, r)
}

// writeWholeBody lets r, when it is a body that can write itself limited
// to its Content-Length, write itself to w (ok); else it writes nothing.
func writeWholeBody(w io.Writer, r io.Reader) (n int64, ok bool, err error) {
	lr, isLimited := r.(*io.LimitedReader)
	if !isLimited {
		return 0, false, nil
	}
	wt, isWriterTo := lr.R.(io.WriterTo)
	if !isWriterTo {
		return 0, false, nil
	}
	lw := &limitWriter{w: w, n: lr.N}
	n, err = wt.WriteTo(lw)
	lr.N -= n
	return n, true, err
}

// tlsRecordBytes is the most plaintext one TLS record carries (RFC 8446,
// 5.1), the size crypto/tls cuts a write into.
const tlsRecordBytes = 16 << 10

// tlsBodyConn is a TLS connection of BodyWrites: each Write (and each
// gather list of WriteBuffers) is encrypted record by record into batch,
// which sends the records in system calls of up to tlsBatchBytes and has
// sent them all when the call returns.
type tlsBodyConn struct {
	*tls.Conn
	batch *recordBatcher
	// stage fills the record that spans two slices of a gather list
	// (tlsRecordBytes, made at the first such record).
	stage []byte
}

func (c *tlsBodyConn) Write(p []byte) (int, error) {
	c.batch.gather()
	n, err := c.Conn.Write(p)
	if ferr := c.batch.release(); err == nil && ferr != nil {
		err = ferr
	}
	return n, err
}

// WriteBuffers implements BuffersWriter: the slices encrypted in order
// as full records, their records sent in as few system calls as
// tlsBatchBytes allows.
//
// crypto/tls ends a record with every Write, so writing the slices one
// by one would give a part's gather list a record for each entry header
// (12 bytes) and one for each payload's tail: many small records, each
// with its own seal, tag and header, and a stream whose records no longer
// start at multiples of 16 KiB. The peer reads one record at a time (Go's
// TLS does), so a store then writes the part to disk in pieces of odd
// sizes at odd offsets (versitygw on XFS wrote a 1 GiB object in 1.4-1.8
// times the disk writes of a contiguous body, and completed it in up to
// 1.36 times the time). Instead, every record but the list's last
// is full: the whole records of a slice go from the slice itself, and
// only a record that spans slices is copied together in stage (at most
// 16 KiB per slice boundary).
func (c *tlsBodyConn) WriteBuffers(bufs net.Buffers) (int64, error) {
	c.batch.gather()
	var n int64
	var err error
	write := func(p []byte) bool {
		var k int
		k, err = c.Conn.Write(p)
		n += int64(k)
		return err == nil
	}
	staged := 0
	for _, b := range bufs {
		if staged > 0 {
			k := copy(c.stage[staged:], b)
			staged += k
			b = b[k:]
			if staged < tlsRecordBytes {
				continue
			}
			if !write(c.stage) {
				break
			}
			staged = 0
		}
		whole := len(b) - len(b)%tlsRecordBytes
		if whole > 0 && !write(b[:whole]) {
			break
		}
		if rest := b[whole:]; len(rest) > 0 {
			if c.stage == nil {
				c.stage = make([]byte, tlsRecordBytes)
			}
			staged = copy(c.stage, rest)
		}
	}
	if err == nil && staged > 0 {
		write(c.stage[:staged])
	}
	if ferr := c.batch.release(); err == nil && ferr != nil {
		err = ferr
	}
	return n, err
}

// ReadFrom lets a body that can write itself do so (see wholeWriteConn);
// any other body (the COS SDK's, which computes its CRC-64 as it is read)
// is copied through a buffer of up to tlsBatchBytes, each piece one Write
// and so one system call.
func (c *tlsBodyConn) ReadFrom(r io.Reader) (int64, error) {
	if n, ok, err := writeWholeBody(c, r); ok {
		return n, err
	}
	size := int64(tlsBatchBytes)
	if lr, ok := r.(*io.LimitedReader); ok && lr.N < size {
		size = max(lr.N, 1)
	}
	return io.CopyBuffer(writerOnly{c}, r, make([]byte, size))
}

// recordBatcher sits under a tls.Conn. Between gather and release it
// keeps the records written to it and sends them tlsBatchCap at a time;
// otherwise (the handshake, alerts, close_notify) writes go straight
// through. A failed send fails every later write: records were reported
// sent that were not.
type recordBatcher struct {
	net.Conn
	mu  sync.Mutex
	on  bool
	buf []byte
	err error
}

func (b *recordBatcher) gather() {
	b.mu.Lock()
	b.on = true
	if b.buf == nil {
		b.buf = make([]byte, 0, tlsBatchCap)
	}
	b.mu.Unlock()
}

// release sends what is kept and writes straight through again.
func (b *recordBatcher) release() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.on = false
	return b.sendLocked()
}

func (b *recordBatcher) sendLocked() error {
	if b.err != nil {
		return b.err
	}
	for len(b.buf) > 0 {
		n, err := b.Conn.Write(b.buf)
		b.buf = b.buf[:copy(b.buf, b.buf[n:])]
		if err != nil {
			b.err = err
			return err
		}
	}
	return nil
}

func (b *recordBatcher) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.err != nil {
		return 0, b.err
	}
	if !b.on {
		return b.Conn.Write(p)
	}
	if len(b.buf)+len(p) > cap(b.buf) {
		if err := b.sendLocked(); err != nil {
			return 0, err
		}
	}
	if len(p) > cap(b.buf) {
		n, err := b.Conn.Write(p)
		if err != nil {
			b.err = err
		}
		return n, err
	}
	b.buf = append(b.buf, p...)
	return len(p), nil
}

// writerOnly hides the ReaderFrom of the connection from io.Copy.
type writerOnly struct{ io.Writer }

// limitWriter writes at most n bytes to w; more is ErrBodyTooLong (the
// bytes up to the limit are written).
type limitWriter struct {
	w io.Writer
	n int64
}

// WriteBuffers implements BuffersWriter: bufs in one call to w when w
// takes gather lists, else in one writev when w is a socket
// (net.Buffers.WriteTo), cut at the limit.
func (l *limitWriter) WriteBuffers(bufs net.Buffers) (int64, error) {
	size := VectorLen(bufs)
	over := size - l.n
	if over > 0 {
		left := l.n
		for i, b := range bufs {
			if int64(len(b)) >= left {
				bufs[i] = b[:left]
				bufs = bufs[:i+1]
				break
			}
			left -= int64(len(b))
		}
	}
	var n int64
	var err error
	if bw, ok := l.w.(BuffersWriter); ok {
		n, err = bw.WriteBuffers(bufs)
	} else {
		n, err = bufs.WriteTo(l.w)
	}
	l.n -= n
	if err == nil && over > 0 {
		err = fmt.Errorf("%w: %d bytes more", ErrBodyTooLong, over)
	}
	return n, err
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if int64(len(p)) <= l.n {
		n, err := l.w.Write(p)
		l.n -= int64(n)
		return n, err
	}
	n, err := l.w.Write(p[:l.n])
	l.n -= int64(n)
	if err == nil {
		err = fmt.Errorf("%w: %d bytes more", ErrBodyTooLong, len(p)-n)
	}
	return n, err
}
