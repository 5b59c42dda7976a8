package zk

import (
	"context"
	"crypto/sha1"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	gozk "github.com/go-zookeeper/zk"

	"github.com/tierkeeper/tierkeeper/internal/tlsfiles"
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
	// ErrTLS is returned by Connect, at once, when a TLS handshake fails
	// in a way retrying cannot fix: the server's certificate is not
	// trusted or not for the name dialed, or the server refused ours.
	ErrTLS = errors.New("TLS handshake failed")
	// ErrAuth is returned by Connect when the server refuses the
	// credentials (Options.Digest) or does not answer their submission
	// within the connect timeout.
	ErrAuth = errors.New("authentication failed")
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
	// MaxBufferSize bounds the size of one reply the client accepts (a
	// child listing, a znode's data); a larger one drops the connection
	// and fails the read with ErrReplyTooLarge. Default
	// DefaultMaxBufferSize.
	MaxBufferSize int
	// Logger receives go-zookeeper's log lines at debug level and session
	// state changes at info/warn. Default: discard.
	Logger *slog.Logger
	// TLS, when set, connects with TLS (ZooKeeper's secureClientPort):
	// every dial does the handshake, bounded by ConnectTimeout, with
	// ServerName set to the host dialed unless TLS sets one
	// (tlsfiles.Files builds it from PEM files).
	TLS *tls.Config
	// Digest is "user:password" for ZooKeeper's digest authentication. It
	// is sent after the session is established and again after every
	// reconnect (go-zookeeper re-submits it before any queued request);
	// znodes created with Session.ACL are then restricted to that
	// identity. It never appears in logs or errors.
	Digest string
}

// DigestUser returns the user of a "user:password" digest ("" if none).
func DigestUser(digest string) string {
	u, _, _ := strings.Cut(digest, ":")
	return u
}

// ErrBadDigest is returned by Connect for a digest that is not
// user:password.
var ErrBadDigest = errors.New("digest credentials must be user:password")

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
	user      string        // digest user, "" without authentication
	digestID  string        // user:base64(sha1(user:password)), the ACL id
	maxBuf    int           // Options.MaxBufferSize
	hub       *watchHub     // OnWatchEvent's subscribers
}

// addAuth submits digest credentials, bounded by ctx (go-zookeeper's
// AddAuth waits for the answer without a bound).
func addAuth(ctx context.Context, conn *gozk.Conn, digest string) error {
	_, err := Do(ctx, func() (struct{}, error) { return struct{}{}, conn.AddAuth("digest", []byte(digest)) })
	if errors.Is(err, context.DeadlineExceeded) {
		return errors.New("no answer to the credentials within the connect timeout")
	}
	return err
}

// User returns the digest user the session authenticated as, "" when it
// did not authenticate.
func (s *Session) User() string { return s.user }

// ACL returns the ACL for znodes tierkeeper creates: without
// authentication open to all (ZooKeeper's OPEN_ACL_UNSAFE, as Pulsar and
// BookKeeper create theirs by default); with it, every permission for the
// session's digest identity (every replica configured with the same
// credentials; not a TLS client certificate's x509 identity, which
// ZooKeeper's "auth" scheme would add) and read for everyone (lease
// holders are replica ids, shown to operators, never secrets).
func (s *Session) ACL() []gozk.ACL {
	if s.user == "" {
		return gozk.WorldACL(gozk.PermAll)
	}
	return append([]gozk.ACL{{Perms: gozk.PermAll, Scheme: "digest", ID: s.digestID}}, gozk.WorldACL(gozk.PermRead)...)
}

// digestID is the digest ACL id of "user:password" credentials.
func digestID(digest string) string {
	if digest == "" {
		return ""
	}
	user, pw, _ := strings.Cut(digest, ":")
	return user + ":" + digestHash(user, pw)
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
	if opts.MaxBufferSize <= 0 {
		opts.MaxBufferSize = DefaultMaxBufferSize
	}
	lg := opts.Logger
	if lg == nil {
		lg = slog.New(slog.DiscardHandler)
	}
	list := SplitServers(servers)
	if len(list) == 0 {
		return nil, fmt.Errorf("zookeeper: %w", ErrNoServers)
	}
	if u, pw, ok := strings.Cut(opts.Digest, ":"); opts.Digest != "" && (!ok || u == "" || pw == "") {
		return nil, fmt.Errorf("zookeeper: %w", ErrBadDigest)
	}
	name := strings.Join(list, ",")
	tlsFail := make(chan error, 1)
	cl := &clientLog{l: lg, tlsFail: tlsFail}
	heard := &atomic.Int64{}
	dial := func(network, addr string, timeout time.Duration) (net.Conn, error) {
		c, err := net.DialTimeout(network, addr, timeout)
		if err != nil {
			return nil, err
		}
		if opts.TLS != nil {
			tc := tls.Client(c, tlsfiles.ForAddr(opts.TLS, addr))
			// go-zookeeper's dial timeout is 1 s; a JVM server's first
			// handshakes can take longer, so the handshake has the connect
			// timeout (Connect gives up then anyway).
			_ = c.SetDeadline(time.Now().Add(opts.ConnectTimeout))
			if err := tc.Handshake(); err != nil {
				c.Close()
				if errors.Is(err, io.EOF) {
					err = fmt.Errorf("%w (the server closed the connection: is %s the secureClientPort?)", err, addr)
				}
				err = fmt.Errorf("TLS handshake with %s: %w", addr, err)
				if tlsfiles.Permanent(err) {
					select {
					case tlsFail <- err:
					default:
					}
				}
				return nil, err
			}
			_ = c.SetDeadline(time.Time{})
			c = tc
		}
		return heardConn{Conn: c, at: heard}, nil
	}
	// go-zookeeper's default host provider dials resolved IP addresses;
	// with TLS the server's certificate is checked against the name
	// configured, so the names are dialed.
	hosts := gozk.HostProvider(&gozk.DNSHostProvider{})
	if opts.TLS != nil {
		hosts = &namedHosts{}
	}
	hub := &watchHub{}
	conn, events, err := gozk.Connect(list, opts.SessionTimeout, gozk.WithLogger(cl), gozk.WithLogInfo(true), gozk.WithDialer(dial),
		gozk.WithHostProvider(hosts), gozk.WithMaxBufferSize(opts.MaxBufferSize), gozk.WithEventCallback(hub.dispatch))
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
					heard: heard, user: DigestUser(opts.Digest), digestID: digestID(opts.Digest),
					maxBuf: opts.MaxBufferSize, hub: hub}
				if opts.Digest != "" {
					if err := addAuth(wait, conn, opts.Digest); err != nil {
						go conn.Close()
						if ctx.Err() != nil {
							return nil, fmt.Errorf("zookeeper %s: no session: %w", name, ctx.Err())
						}
						return nil, fmt.Errorf("zookeeper %s: %w: digest user %q: %w", name, ErrAuth, s.user, err)
					}
				}
				go s.watch(events)
				return s, nil
			case gozk.StateAuthFailed:
				go conn.Close()
				return nil, fmt.Errorf("zookeeper %s: %w", name, gozk.ErrAuthFailed)
			}
		case err := <-tlsFail:
			go conn.Close()
			return nil, fmt.Errorf("zookeeper %s: %w: %w (%s)", name, ErrTLS, err, tlsfiles.Explain(err, opts.TLS))
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

// Failed names the session's servers in err when err says ZooKeeper can no
// longer serve (Unavailable); other errors are returned as they are.
func (s *Session) Failed(err error) error {
	if Unavailable(err) {
		return fmt.Errorf("zookeeper %s: %w", s.servers, err)
	}
	return err
}

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
	// tlsFail receives a TLS alert the server sent after the client's
	// handshake returned (TLS 1.3: a refused or missing client
	// certificate shows on the first read).
	tlsFail chan<- error
	// the last oversized reply (buffer.go)
	tooLarge   string
	tooLargeAt time.Time
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
		if strings.Contains(msg, "remote error: tls:") && c.tlsFail != nil {
			select {
			case c.tlsFail <- errors.New(strings.TrimPrefix(msg, "authentication failed: ")):
			default:
			}
		}
	case strings.HasPrefix(msg, tooLargePrefix):
		c.noteTooLarge(msg)
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

// ErrNoAccess is returned by CheckWritable when a znode's ACL does not
// let this client write it.
var ErrNoAccess = errors.New("znode not writable with these credentials")

// ACLGetter reads a znode's ACL; *zk.Conn and *Session implement it.
type ACLGetter interface {
	GetACL(path string) ([]gozk.ACL, *gozk.Stat, error)
}

// CheckWritable reads path's ACL (changing nothing) and returns nil when
// it lets a client authenticated with digest ("user:password", or "" for
// none) create children and write data: a world or "auth" entry, or a
// digest entry of exactly these credentials. Otherwise an error wrapping
// ErrNoAccess says what the ACL grants (digest hashes left out) and, when
// it names this user with another password, that the password is wrong.
// zk.ErrNoNode when path does not exist.
func CheckWritable(ctx context.Context, c ACLGetter, path, digest string) error {
	type res struct{ acl []gozk.ACL }
	r, err := Do(ctx, func() (res, error) {
		acl, _, err := c.GetACL(path)
		return res{acl}, err
	})
	if err != nil {
		return fmt.Errorf("read the ACL of %s: %w", path, err)
	}
	const need = gozk.PermWrite | gozk.PermCreate
	user := DigestUser(digest)
	mine := digestID(digest)
	var granted []string
	sameUser := false
	for _, a := range r.acl {
		ok := a.Perms&need == need
		switch {
		case a.Scheme == "world" && a.ID == "anyone" && ok:
			return nil
		case a.Scheme == "digest" && mine != "" && a.ID == mine && ok:
			return nil
		case a.Scheme == "digest":
			u, _, _ := strings.Cut(a.ID, ":")
			if u == user && ok {
				sameUser = true
			}
			granted = append(granted, fmt.Sprintf("digest:%s:<hash> perms %d", u, a.Perms))
		default:
			granted = append(granted, fmt.Sprintf("%s:%s perms %d", a.Scheme, a.ID, a.Perms))
		}
	}
	who := "an unauthenticated client"
	if digest != "" {
		who = fmt.Sprintf("digest user %q", user)
	}
	hint := ""
	if sameUser {
		hint = fmt.Sprintf(": the ACL names digest user %q with another password (wrong password?)", user)
	}
	return fmt.Errorf("%s: %w by %s (ACL: %s)%s", path, ErrNoAccess, who, strings.Join(granted, ", "), hint)
}

// digestHash is ZooKeeper's digest of a password:
// base64(SHA-1("user:password")).
func digestHash(user, pw string) string {
	sum := sha1.Sum([]byte(user + ":" + pw))
	return base64.StdEncoding.EncodeToString(sum[:])
}

// namedHosts is a go-zookeeper HostProvider that hands out the servers as
// configured (host names, resolved at each dial), in turn.
type namedHosts struct {
	mu      sync.Mutex
	servers []string
	curr    int
	last    int
}

func (h *namedHosts) Init(servers []string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.servers = append([]string(nil), servers...)
	h.curr, h.last = -1, -1
	return nil
}

func (h *namedHosts) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.servers)
}

func (h *namedHosts) Next() (string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.curr = (h.curr + 1) % len(h.servers)
	retryStart := h.curr == h.last
	if h.last == -1 {
		h.last = 0
	}
	return h.servers[h.curr], retryStart
}

func (h *namedHosts) Connected() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.last = h.curr
}

var _ gozk.HostProvider = (*namedHosts)(nil)
