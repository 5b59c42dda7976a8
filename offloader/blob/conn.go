package blob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
)

// DialFunc dials a network connection (http.Transport.DialContext).
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// ErrBodyTooLong is returned by a connection of WholeBodyWrites when a
// request body holds more bytes than its Content-Length.
var ErrBodyTooLong = errors.New("request body longer than its Content-Length")

// WholeBodyWrites wraps dial (nil: a plain net.Dialer) so that a plain
// HTTP request body that can write itself (io.WriterTo: a VectorReader,
// the gather list of a part whose payloads lie in the bookie frames they
// were read into, or a bytes.Reader) goes to the socket without a copy: a
// VectorReader's slices in one writev, a bytes.Reader in one write.
// Without it net/http copies every body through a 32 KiB buffer: a memmove
// of every byte sent and one write system call per 32 KiB. Other bodies
// take the connection's own path (sendfile for files, else the 32 KiB
// copy). A TLS connection is written by crypto/tls above this one, which
// it does not change.
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
	if lr, ok := r.(*io.LimitedReader); ok {
		if wt, ok := lr.R.(io.WriterTo); ok {
			lw := &limitWriter{w: c.Conn, n: lr.N}
			n, err := wt.WriteTo(lw)
			lr.N -= n
			return n, err
		}
	}
	if rf, ok := c.Conn.(io.ReaderFrom); ok {
		return rf.ReadFrom(r)
	}
	return io.Copy(writerOnly{c.Conn}, r)
}

// writerOnly hides the ReaderFrom of the connection from io.Copy.
type writerOnly struct{ io.Writer }

// limitWriter writes at most n bytes to w; more is ErrBodyTooLong (the
// bytes up to the limit are written).
type limitWriter struct {
	w io.Writer
	n int64
}

// WriteBuffers implements BuffersWriter: bufs in one writev when w is a
// socket (net.Buffers.WriteTo), cut at the limit.
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
	n, err := bufs.WriteTo(l.w)
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
