package zk

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	gozk "github.com/go-zookeeper/zk"
)

// Defaults of Options.
const (
	DefaultSessionTimeout = 30 * time.Second
	DefaultConnectTimeout = 10 * time.Second
)

// Sentinel errors. Errors of this package wrap one of these, a
// go-zookeeper error or a context error.
var (
	// ErrNoServers is returned by Connect for an empty server list.
	ErrNoServers = errors.New("no ZooKeeper server address given")
	// ErrConnectTimeout is returned by Connect when no session is
	// established within Options.ConnectTimeout.
	ErrConnectTimeout = errors.New("no session within the connect timeout")
	// ErrSessionLost is Session.Err once the session is gone: expired by
	// the server, or disconnected for longer than the session timeout.
	ErrSessionLost = errors.New("session lost")
	// ErrClosed is Session.Err after Close.
	ErrClosed = errors.New("session closed")
)

// Options configures Connect. The zero value gives the defaults.
type Options struct {
	// SessionTimeout is the session timeout asked of the server (it
	// negotiates it into its [2, 20] × tickTime range). Default 30 s.
	SessionTimeout time.Duration
	// ConnectTimeout bounds the wait for the first session: every server
	// tried, each dial bounded by 1 s, with go-zookeeper's 1 s pause after
	// each round. Default 10 s. The caller's ctx bounds it too.
	ConnectTimeout time.Duration
	// Logger receives go-zookeeper's log lines at debug level and session
	// state changes at info/warn. Default: discard.
	Logger *slog.Logger
}

// Session is an established ZooKeeper session. The embedded *zk.Conn
// serves requests (and recipes such as zk.NewLock); Session adds the
// session's fate. It is safe for concurrent use.
type Session struct {
	*gozk.Conn

	servers string
	log     *slog.Logger
	cl      *clientLog

	lost      chan struct{}
	closeOnce sync.Once
	mu        sync.Mutex
	err       error
	requested time.Duration // session timeout asked for
	heard     *atomic.Int64 // unix nanos of the last bytes read from a server
}

// Connect opens a session to servers (host:port, each entry may hold a
// comma-separated list) and waits until it is established, ctx ends or
// opts.ConnectTimeout passes. The caller closes the Session.
func Connect(ctx context.Context, servers []string, opts Options) (*Session, error) {
	if opts.SessionTimeout <= 0 {
		opts.SessionTimeout = DefaultSessionTimeout
	}
	if opts.ConnectTimeout <= 0 {
		opts.ConnectTimeout = DefaultConnectTimeout
	}
	lg := opts.Logger
	if lg == nil {
		lg = slog.New(slog.DiscardHandler)
	}
	list := SplitServers(servers)
	if len(list) == 0 {
		return nil, fmt.Errorf("zookeeper: %w", ErrNoServers)
	}
	name := strings.Join(list, ",")
	cl := &clientLog{l: lg}
	heard := &atomic.Int64{}
	dial := func(network, addr string, timeout time.Duration) (net.Conn, error) {
		c, err := net.DialTimeout(network, addr, timeout)
		if err != nil {
			return nil, err
		}
		return heardConn{Conn: c, at: heard}, nil
	}
	conn, events, err := gozk.Connect(list, opts.SessionTimeout, gozk.WithLogger(cl), gozk.WithLogInfo(true), gozk.WithDialer(dial))
	if err != nil {
		return nil, fmt.Errorf("zookeeper %s: %w", name, err)
	}
	wait, cancel := context.WithTimeout(ctx, opts.ConnectTimeout)
	defer cancel()
	reachedServer := false
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				return nil, fmt.Errorf("zookeeper %s: client closed while connecting", name)
			}
			switch ev.State {
			case gozk.StateConnected:
				reachedServer = true
			case gozk.StateHasSession:
				s := &Session{Conn: conn, servers: name, log: lg, cl: cl, lost: make(chan struct{}), requested: opts.SessionTimeout,
					heard: heard}
				go s.watch(events)
				return s, nil
			case gozk.StateAuthFailed:
				go conn.Close()
				return nil, fmt.Errorf("zookeeper %s: %w", name, gozk.ErrAuthFailed)
			}
		case <-wait.Done():
			// Close waits up to 1 s for a server to acknowledge; there is none.
			go conn.Close()
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("zookeeper %s: no session: %w", name, err)
			}
			why := cl.lastFailure()
			switch {
			case why != "":
				why = "last attempt: " + why
			case reachedServer:
				why = "a server accepted the connection but established no session (not ZooKeeper, or overloaded?)"
			default:
				why = "no server answered"
			}
			return nil, fmt.Errorf("zookeeper %s: %w (%s): %s", name, ErrConnectTimeout, opts.ConnectTimeout, why)
		}
	}
}

// SessionTimeout returns the session timeout: the one the server
// negotiated when known, else the one asked for, whichever is shorter.
func (s *Session) SessionTimeout() time.Duration {
	if neg := s.cl.negotiated(); neg > 0 && neg < s.requested {
		return neg
	}
	return s.requested
}

// LastHeard returns when a server last sent this client anything (a reply,
// a ping's answer, a watch event). The client pings every third of the
// session timeout, so on a healthy session it is never older than that
// plus a round trip. The server expires the session one session timeout
// after it last heard from the client, which is about when the client last
// heard from it: time since LastHeard is how close the session may be to
// expiring, known before the client notices a disconnection (which takes
// two thirds of the session timeout on a connection that went silent).
func (s *Session) LastHeard() time.Time { return time.Unix(0, s.heard.Load()) }

// heardConn records the time of every read that returned bytes.
type heardConn struct {
	net.Conn
	at *atomic.Int64
}

func (c heardConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 {
		c.at.Store(time.Now().UnixNano())
	}
	return n, err
}

// Servers returns the server list as connected, comma-separated.
func (s *Session) Servers() string { return s.servers }

// Lost is closed when the session is lost or closed.
func (s *Session) Lost() <-chan struct{} { return s.lost }

// Err returns nil while the session lives, then why it ended: an error
// wrapping ErrSessionLost (with zk.ErrSessionExpired when the server said
// so) or ErrClosed.
func (s *Session) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Close ends the session (its ephemeral nodes go at once) and the client.
func (s *Session) Close() { s.end(fmt.Errorf("zookeeper %s: %w", s.servers, ErrClosed)) }

// end records why the session ended (the first reason wins), wakes Lost
// and closes the client, so that it does not go on with a new session.
func (s *Session) end(err error) {
	first := false
	s.mu.Lock()
	if s.err == nil {
		s.err, first = err, true
	}
	s.mu.Unlock()
	if !first {
		return
	}
	close(s.lost)
	s.closeOnce.Do(s.Conn.Close)
}

// watch follows the client's state until its event channel closes.
func (s *Session) watch(events <-chan gozk.Event) {
	var expire <-chan time.Time
	var timer *time.Timer
	var timeout time.Duration
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				s.end(fmt.Errorf("zookeeper %s: %w", s.servers, ErrClosed))
				return
			}
			if ev.Type != gozk.EventSession {
				continue
			}
			switch ev.State {
			case gozk.StateDisconnected:
				if s.Err() != nil {
					continue // Close (or a loss already reported) disconnects
				}
				if timer == nil {
					timeout = s.SessionTimeout()
					s.log.Warn("zookeeper disconnected; session lost unless reconnected in time", "servers", s.servers, "within", timeout)
					timer = time.NewTimer(timeout)
					expire = timer.C
				}
			case gozk.StateHasSession:
				if timer != nil {
					timer.Stop()
					timer, expire = nil, nil
					s.log.Info("zookeeper reconnected", "server", ev.Server)
				}
			case gozk.StateExpired:
				s.log.Warn("zookeeper session expired", "servers", s.servers)
				s.end(fmt.Errorf("zookeeper %s: %w: %w", s.servers, ErrSessionLost, gozk.ErrSessionExpired))
			case gozk.StateAuthFailed:
				s.end(fmt.Errorf("zookeeper %s: %w: %w", s.servers, ErrSessionLost, gozk.ErrAuthFailed))
			}
		case <-expire:
			timer, expire = nil, nil
			s.log.Warn("zookeeper disconnected for longer than the session timeout", "servers", s.servers, "timeout", timeout)
			s.end(fmt.Errorf("zookeeper %s: %w: disconnected for longer than the %s session timeout", s.servers, ErrSessionLost, timeout))
		}
	}
}

// SplitServers flattens host:port entries that may each hold a
// comma-separated list, dropping blanks.
func SplitServers(servers []string) []string {
	var list []string
	for _, s := range servers {
		for _, p := range strings.Split(s, ",") {
			if p = strings.TrimSpace(p); p != "" {
				list = append(list, p)
			}
		}
	}
	return list
}

// clientLog routes go-zookeeper's log lines to slog at debug level and
// remembers what Connect needs: the last connection failure and the
// negotiated session timeout.
type clientLog struct {
	l    *slog.Logger
	mu   sync.Mutex
	fail string
	neg  time.Duration
}

var negotiatedRE = regexp.MustCompile(`^authenticated: id=\d+, timeout=(\d+)$`)

func (c *clientLog) Printf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	c.l.Debug("zookeeper client", "msg", msg)
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case strings.HasPrefix(msg, "failed to connect to "):
		// "failed to connect to host:port: <dial error>"; the dial error names the server.
		_, c.fail, _ = strings.Cut(strings.TrimPrefix(msg, "failed to connect to "), ": ")
	case strings.HasPrefix(msg, "authentication failed: "):
		c.fail = msg
	case negotiatedRE.MatchString(msg):
		if ms, err := strconv.Atoi(negotiatedRE.FindStringSubmatch(msg)[1]); err == nil && ms > 0 {
			c.neg = time.Duration(ms) * time.Millisecond
		}
	}
}

func (c *clientLog) lastFailure() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.fail
}

func (c *clientLog) negotiated() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.neg
}
