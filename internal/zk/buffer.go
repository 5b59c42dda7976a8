package zk

import (
	"errors"
	"fmt"
	"strings"
	"time"

	gozk "github.com/go-zookeeper/zk"
	"github.com/tierkeeper/tierkeeper/internal/units"
)

// DefaultMaxBufferSize is Options.MaxBufferSize's default: 16 MiB. A
// child listing costs 4 bytes plus the name per child, so one namespace of
// 100 000 topics with names of up to 160 bytes fits.
const DefaultMaxBufferSize = 16 << 20

// ErrReplyTooLarge is wrapped by a read whose reply was larger than
// Options.MaxBufferSize: the client dropped the connection on receiving it
// (the session survives, every request in flight on it failed).
var ErrReplyTooLarge = errors.New("reply larger than the client's max buffer size")

// tooLargePrefix starts go-zookeeper's log line for a reply over its
// WithMaxBufferSize bound.
const tooLargePrefix = "recv loop terminated: received packet from server with length "

// noteTooLarge records msg when it is the client's oversized-reply line.
// The caller holds c.mu.
func (c *clientLog) noteTooLarge(msg string) {
	if strings.HasPrefix(msg, tooLargePrefix) {
		c.tooLarge, c.tooLargeAt = strings.TrimPrefix(msg, "recv loop terminated: "), time.Now()
	}
}

// tooLargeSince is the oversized-reply line logged at or after t, if any.
func (c *clientLog) tooLargeSince(t time.Time) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tooLarge == "" || c.tooLargeAt.Before(t) {
		return ""
	}
	return c.tooLarge
}

// explain turns the connection-closed error of a read of path that began
// at start into ErrReplyTooLarge when the client dropped the connection for
// an oversized reply meanwhile; other errors pass unchanged.
func (s *Session) explain(op, path string, start time.Time, err error) error {
	if err == nil || !errors.Is(err, gozk.ErrConnectionClosed) {
		return err
	}
	why := s.cl.tooLargeSince(start)
	if why == "" {
		return err
	}
	return fmt.Errorf("zookeeper %s %s: %w (limit %s: %s): raise the client's max buffer size "+
		"(offloader: zookeeper.max_buffer_size), and jute.maxbuffer on the ZooKeeper servers and Pulsar brokers to match",
		op, path, ErrReplyTooLarge, units.FormatBytes(int64(s.maxBuf)), why)
}

// Get is zk.Conn.Get with an oversized reply reported as ErrReplyTooLarge.
func (s *Session) Get(path string) ([]byte, *gozk.Stat, error) {
	start := time.Now()
	b, st, err := s.Conn.Get(path)
	return b, st, s.explain("get", path, start, err)
}

// GetW is zk.Conn.GetW with an oversized reply reported as ErrReplyTooLarge.
func (s *Session) GetW(path string) ([]byte, *gozk.Stat, <-chan gozk.Event, error) {
	start := time.Now()
	b, st, ch, err := s.Conn.GetW(path)
	return b, st, ch, s.explain("get", path, start, err)
}

// Children is zk.Conn.Children with an oversized reply reported as
// ErrReplyTooLarge.
func (s *Session) Children(path string) ([]string, *gozk.Stat, error) {
	start := time.Now()
	c, st, err := s.Conn.Children(path)
	return c, st, s.explain("list", path, start, err)
}

// ChildrenW is zk.Conn.ChildrenW with an oversized reply reported as
// ErrReplyTooLarge.
func (s *Session) ChildrenW(path string) ([]string, *gozk.Stat, <-chan gozk.Event, error) {
	start := time.Now()
	c, st, ch, err := s.Conn.ChildrenW(path)
	return c, st, ch, s.explain("list", path, start, err)
}
