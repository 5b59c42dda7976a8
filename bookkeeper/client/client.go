package client

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tierkeeper/tierkeeper/bookkeeper/digest"
	"github.com/tierkeeper/tierkeeper/bookkeeper/wire"
	"github.com/tierkeeper/tierkeeper/internal/bkproto"
	tkmetrics "github.com/tierkeeper/tierkeeper/internal/metrics"
)

// Resolver maps a bookie id (an ensemble member in ledger metadata) to the
// host:port to connect to. *metadata.Store implements it.
type Resolver interface {
	ResolveBookie(ctx context.Context, id string) (string, error)
}

// ResolverFunc adapts a function to Resolver.
type ResolverFunc func(ctx context.Context, id string) (string, error)

// ResolveBookie calls f.
func (f ResolverFunc) ResolveBookie(ctx context.Context, id string) (string, error) {
	return f(ctx, id)
}

// Options configures a Client. Zero fields take the documented defaults.
type Options struct {
	// Resolver maps bookie ids to addresses. Required.
	Resolver Resolver
	// Dial opens connections. Default: net.Dialer with ConnectTimeout.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// ConnectTimeout bounds address resolution plus dialing (plus, with
	// TLS, the START_TLS exchange and the handshake). Default 5 s.
	ConnectTimeout time.Duration
	// TLS, when set, secures every bookie connection as BookKeeper's own
	// client does: a v3 START_TLS request, the bookie's plain EOK, then a
	// TLS handshake on the same connection (ServerName: the host of the
	// bookie's address unless TLS sets one). A bookie without TLS answers
	// EBADREQ and the dial fails with ErrTLS; tlsfiles.Files builds the
	// config from PEM files.
	TLS *tls.Config
	// ReadTimeout bounds one read request on one bookie, from queueing to
	// response; on expiry the read fails over to the next replica.
	// Default 5 s (BookKeeper's readEntryTimeout).
	ReadTimeout time.Duration
	// ReconnectDelay is how long a failed dial is remembered: reads to that
	// bookie fail at once (and go to other replicas) until it passes.
	// Default 1 s.
	ReconnectDelay time.Duration
	// MaxFrameSize bounds response frames. Default wire.DefaultMaxFrameSize
	// (a bookie's default 5 MiB nettyMaxFrameSizeBytes plus headers).
	MaxFrameSize int
	// WireProtocol is the protocol of the read requests: WireV2 (the
	// default, as Pulsar's brokers read: useV2WireProtocol) or WireV3. A
	// bookie answers a v2 read with the stored entry straight from its
	// buffers and a v3 read with a protobuf message it serializes into a
	// new heap buffer first: a copy of every entry and garbage for its
	// collector, on bookies that share their cores with the offloader.
	// Over TLS the START_TLS exchange is v3 either way.
	WireProtocol string
	// MaxInFlightPerBookie bounds requests outstanding on one connection.
	// Default 512.
	MaxInFlightPerBookie int
	// BusyRetries is how many times a read answered ETOOMANYREQUESTS is
	// retried on the same bookie before failing over. Default 5; negative
	// means none.
	BusyRetries int
	// BusyBackoff is the first back-off after ETOOMANYREQUESTS; it doubles
	// per retry up to BusyBackoffMax. Defaults 20 ms and 1 s.
	BusyBackoff    time.Duration
	BusyBackoffMax time.Duration
	// FailurePenalty is how long a bookie that failed a read (error,
	// timeout, corruption) is tried after the other replicas. Default 30 s.
	FailurePenalty time.Duration
	// Window is the most reads a Stream keeps in flight. Default 128.
	Window int
	// WindowBytes caps a Stream's window by expected bytes: the window is at
	// most WindowBytes / average entry size (from the metadata), at least 1.
	// Default 32 MiB (local bookies deliver full speed from about 8 MiB).
	WindowBytes int64
	// DigestType and Password are used for ledgers whose metadata records
	// neither (v1 metadata, ledgers written before BookKeeper 4.2). Metadata
	// that records them always wins.
	DigestType digest.Type
	Password   []byte
	// Logger receives connection and failover messages. Default: discard.
	Logger *slog.Logger
	// Registerer receives the client's metrics (tierkeeper_bookkeeper_*);
	// clients sharing a registerer share the series. Default: none.
	Registerer prometheus.Registerer
}

// The wire protocols of Options.WireProtocol.
const (
	WireV2 = "v2"
	WireV3 = "v3"
)

func (o *Options) defaults() {
	if o.WireProtocol == "" {
		o.WireProtocol = WireV2
	}
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = 5 * time.Second
	}
	if o.ReadTimeout <= 0 {
		o.ReadTimeout = 5 * time.Second
	}
	if o.ReconnectDelay <= 0 {
		o.ReconnectDelay = time.Second
	}
	if o.MaxFrameSize <= 0 {
		o.MaxFrameSize = wire.DefaultMaxFrameSize
	}
	if o.MaxInFlightPerBookie <= 0 {
		o.MaxInFlightPerBookie = 512
	}
	if o.BusyRetries == 0 {
		o.BusyRetries = 5
	}
	if o.BusyBackoff <= 0 {
		o.BusyBackoff = 20 * time.Millisecond
	}
	if o.BusyBackoffMax <= 0 {
		o.BusyBackoffMax = time.Second
	}
	if o.FailurePenalty <= 0 {
		o.FailurePenalty = 30 * time.Second
	}
	if o.Window <= 0 {
		o.Window = 128
	}
	if o.WindowBytes <= 0 {
		o.WindowBytes = 32 << 20
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.Dial == nil {
		d := &net.Dialer{Timeout: o.ConnectTimeout, KeepAlive: 30 * time.Second}
		o.Dial = d.DialContext
	}
}

type metrics struct {
	entries, bytes, failovers, digestErrors, busyRetries prometheus.Counter
	errors                                               *prometheus.CounterVec
	connections, inFlight                                prometheus.Gauge
}

// Error reasons for the read-errors counter (bounded label values).
var errorReasons = []string{"no_such_entry", "no_such_ledger", "busy", "timeout", "connection", "digest", "bad_response", "bookie_error"}

// newMetrics creates the tierkeeper_bookkeeper_* metrics on reg, reusing
// those another Client registered there (they then count together).
func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	f := tkmetrics.New(reg, "bookkeeper")
	m := &metrics{
		entries:      f.Counter("read_entries_total", "Entries read from bookies and verified."),
		bytes:        f.Counter("read_bytes_total", "Payload bytes of entries read from bookies and verified."),
		failovers:    f.Counter("read_failovers_total", "Reads retried on another replica after a replica failed."),
		digestErrors: f.Counter("digest_errors_total", "Entries whose digest or header did not verify (corruption on a replica)."),
		busyRetries:  f.Counter("busy_retries_total", "Reads retried after a bookie answered ETOOMANYREQUESTS."),
		errors: f.CounterVec("replica_errors_total", "Failed reads of one entry on one replica, by reason.",
			tkmetrics.Label{Name: "reason", Values: errorReasons}),
		connections: f.Gauge("connections", "Open bookie connections."),
		inFlight:    f.Gauge("requests_in_flight", "Read requests sent and not yet answered."),
	}
	return m, f.Err()
}

// Client reads ledger entries from bookies. It is safe for concurrent use;
// reads of many ledgers share its connections.
type Client struct {
	opts Options
	log  *slog.Logger
	m    *metrics

	mu      sync.Mutex
	conns   map[string]*conn     // by bookie id
	dialing map[string]*dialWait // dials in progress
	dialErr map[string]dialFail  // recent dial failures
	failed  map[string]time.Time // recent read failures (health)
	closed  bool

	frames *framePool // buffers of delivered frames (StreamOptions.ReuseBuffers)
}

type dialWait struct {
	done chan struct{}
	k    *conn
	err  error
}

type dialFail struct {
	at  time.Time
	err error
}

// New returns a Client. It connects lazily, on the first read from each
// bookie.
func New(opts Options) (*Client, error) {
	if opts.Resolver == nil {
		return nil, errors.New("client: Options.Resolver is required")
	}
	opts.defaults()
	if opts.WireProtocol != WireV2 && opts.WireProtocol != WireV3 {
		return nil, fmt.Errorf("client: Options.WireProtocol %q: want %q or %q", opts.WireProtocol, WireV2, WireV3)
	}
	m, err := newMetrics(opts.Registerer)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	return &Client{
		opts: opts, log: opts.Logger, m: m,
		conns: map[string]*conn{}, dialing: map[string]*dialWait{},
		dialErr: map[string]dialFail{}, failed: map[string]time.Time{},
		frames: newFramePool(opts.WindowBytes),
	}, nil
}

// Close closes every connection; reads in progress fail.
func (c *Client) Close() error {
	c.mu.Lock()
	c.closed = true
	conns := make([]*conn, 0, len(c.conns))
	for _, k := range c.conns {
		conns = append(conns, k)
	}
	c.mu.Unlock()
	for _, k := range conns {
		k.fail(ErrClosed)
	}
	return nil
}

// getConn returns the connection to bookie, dialing it if needed. Dials
// happen outside the lock; concurrent callers share one dial.
func (c *Client) getConn(ctx context.Context, bookie string) (*conn, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, ErrClosed
	}
	if k := c.conns[bookie]; k != nil && !k.broken() {
		c.mu.Unlock()
		return k, nil
	}
	if f, ok := c.dialErr[bookie]; ok && time.Since(f.at) < c.opts.ReconnectDelay {
		c.mu.Unlock()
		return nil, f.err
	}
	w := c.dialing[bookie]
	if w == nil {
		w = &dialWait{done: make(chan struct{})}
		c.dialing[bookie] = w
		go c.dial(bookie, w)
	}
	c.mu.Unlock()
	select {
	case <-w.done:
		return w.k, w.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// dial resolves and connects in the background (not bound to one caller's
// ctx, since others may share it), bounded by ConnectTimeout.
func (c *Client) dial(bookie string, w *dialWait) {
	ctx, cancel := context.WithTimeout(context.Background(), c.opts.ConnectTimeout)
	defer cancel()
	addr, err := c.opts.Resolver.ResolveBookie(ctx, bookie)
	var nc net.Conn
	if err == nil {
		nc, err = c.opts.Dial(ctx, "tcp", addr)
	}
	if err == nil && c.opts.TLS != nil {
		nc, err = startTLS(ctx, nc, addr, c.opts.TLS, c.opts.MaxFrameSize)
	}
	c.mu.Lock()
	delete(c.dialing, bookie)
	if err != nil {
		w.err = fmt.Errorf("%w: bookie %s: %w", ErrConnection, bookie, err)
		c.dialErr[bookie] = dialFail{time.Now(), w.err}
	} else if c.closed {
		nc.Close()
		w.err = ErrClosed
	} else {
		delete(c.dialErr, bookie)
		w.k = newConn(c, bookie, addr, nc)
		c.conns[bookie] = w.k
		c.m.connections.Inc()
	}
	c.mu.Unlock()
	if err != nil {
		c.log.Warn("cannot connect to bookie", "bookie", bookie, "err", err)
	} else if w.k != nil {
		c.log.Debug("connected to bookie", "bookie", bookie, "addr", addr)
	}
	close(w.done)
}

func (c *Client) dropConn(k *conn) {
	c.mu.Lock()
	if c.conns[k.bookie] == k {
		delete(c.conns, k.bookie)
	}
	c.mu.Unlock()
}

// order returns the write set with recently failed bookies moved last
// (keeping write-set order within each group).
func (c *Client) order(ws []string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.failed) == 0 {
		return ws
	}
	now := time.Now()
	good := make([]string, 0, len(ws))
	var bad []string
	for _, b := range ws {
		if t, ok := c.failed[b]; ok && now.Sub(t) < c.opts.FailurePenalty {
			bad = append(bad, b)
		} else {
			good = append(good, b)
		}
	}
	return append(good, bad...)
}

func (c *Client) markFailed(bookie string) {
	c.mu.Lock()
	c.failed[bookie] = time.Now()
	c.mu.Unlock()
}

func (c *Client) markHealthy(bookie string) {
	c.mu.Lock()
	if len(c.failed) > 0 {
		delete(c.failed, bookie)
	}
	c.mu.Unlock()
}

// Probe connects to bookie (with TLS when configured) and sends one read
// of entry 0 of ledger 0, which changes nothing on the bookie: any answer
// (the entry, ENOLEDGER, ENOENTRY) proves the connection works end to end;
// the error otherwise says what failed (dial, START_TLS, handshake, a
// certificate the bookie refused). Bounded by ConnectTimeout plus
// ReadTimeout.
func (c *Client) Probe(ctx context.Context, bookie string) (bkproto.StatusCode, error) {
	k, err := c.getConn(ctx, bookie)
	if err != nil {
		return 0, err
	}
	resp, _, _, err := k.read(ctx, 0, 0, false)
	if err != nil {
		return 0, err
	}
	return resp.EffectiveStatus(), nil
}
