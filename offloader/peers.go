package offloader

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	bkclient "github.com/tierkeeper/tierkeeper/bookkeeper/client"
	"github.com/tierkeeper/tierkeeper/bookkeeper/metadata"
	tzk "github.com/tierkeeper/tierkeeper/internal/zk"
	"github.com/tierkeeper/tierkeeper/offloader/blob"
	"github.com/tierkeeper/tierkeeper/offloader/blob/client"
	"github.com/tierkeeper/tierkeeper/offloader/brokeradmin"
	"github.com/tierkeeper/tierkeeper/offloader/pipeline"
	"github.com/tierkeeper/tierkeeper/pulsar/mledger"
)

// PeersConfig says how to reach the peers the offloader works with:
// ZooKeeper (Pulsar's managed ledgers and BookKeeper's ledger metadata),
// the bookies, the object store and the broker admin API. Config.Peers
// builds it from the service config, the commands from their flags; every
// file it names (TLS, digest, store config) is read before, so OpenPeers
// only connects.
type PeersConfig struct {
	// ZKServers are the ZooKeeper servers (host:port) and ZKRoot the path
	// after them in the address (the ledgers root or a chroot; "" none),
	// as tzk.ParseServiceURI splits an address.
	ZKServers []string
	ZKRoot    string
	// ZKOptions are the session's timeouts, TLS and digest credentials.
	ZKOptions tzk.Options
	// ZKTLSFrom names where the ZooKeeper TLS settings come from (flags,
	// files); a failed handshake's error says it.
	ZKTLSFrom string
	// MLChroot is the chroot of Pulsar's metadataStoreUrl, if any.
	MLChroot string
	// LedgersRoot overrides ZKRoot as the BookKeeper ledgers root (both
	// empty: /ledgers).
	LedgersRoot string
	// Layout overrides the ledger layout ZooKeeper records (zero: read it).
	Layout metadata.Manager
	// BookieTLS secures the bookie connections (nil: plain).
	BookieTLS *tls.Config
	// BookieWire is the bookie client's wire protocol (bkclient.WireV2
	// or WireV3; "": the client's default, v2), unless PeersOptions.Bookies
	// sets one.
	BookieWire string
	// Store is the object store (nil: none).
	Store *client.Config
	// StoreName names the store in errors (default "store").
	StoreName string
	// Admin is the broker admin API (nil: none).
	Admin *brokeradmin.Config
	// AdminName names the admin API in errors (default "admin").
	AdminName string
}

// PeersOptions say which peers OpenPeers opens besides the ZooKeeper
// session and the managed-ledger store (always), and the admin client
// (when configured: it connects to nothing until used).
type PeersOptions struct {
	Logger *slog.Logger
	// Registerer receives the stores' and the bookie client's metrics
	// (nil: none).
	Registerer prometheus.Registerer
	// Ledgers opens BookKeeper's ledger metadata store.
	Ledgers bool
	// Bookies opens the bookie client (and the ledger metadata store) with
	// these options; Resolver, TLS, Logger and Registerer are filled in.
	Bookies *bkclient.Options
	// Store opens the object store of PeersConfig.Store.
	Store bool
	// StoreOptions are passed to the blob client (Logger and Registerer
	// are filled in).
	StoreOptions client.Options
	// Fenced makes the managed-ledger and ledger metadata stores refuse
	// every write that does not carry a topic lease's fence.
	Fenced bool
	// Timeout bounds each open after the session (reading the ledgers
	// root, the store's setup). Default: the session's connect timeout,
	// else 10s.
	Timeout time.Duration
}

// Peers are the open peers. Close closes those OpenPeers opened.
type Peers struct {
	ZK *tzk.Session
	ML *mledger.Store
	// Ledgers is BookKeeper's ledger metadata (PeersOptions.Ledgers or
	// Bookies), BK the bookie client (Bookies).
	Ledgers *metadata.Store
	BK      *bkclient.Client
	// Store is the object store (PeersOptions.Store).
	Store blob.Store
	// Admin is the broker admin client (nil without PeersConfig.Admin).
	Admin *brokeradmin.Client
	cfg   PeersConfig
	log   *slog.Logger
}

// OpenPeers opens the peers o asks for, each within its bound: the admin
// client first (it only checks its config), then the ZooKeeper session
// (ZKOptions.ConnectTimeout), the ledger metadata and the bookie client,
// and the store (Timeout each). An error says which peer failed and what
// it waited for; whatever was opened is closed again.
func OpenPeers(ctx context.Context, pc PeersConfig, o PeersOptions) (*Peers, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if pc.ZKOptions.Logger == nil {
		pc.ZKOptions.Logger = o.Logger
	}
	p := &Peers{cfg: pc, log: o.Logger}
	var err error
	if p.Admin, err = pc.openAdmin(o.Logger); err != nil {
		return nil, err
	}
	if p.ZK, err = pc.connect(ctx); err != nil {
		return nil, err
	}
	p.ML = mledger.New(p.ZK, &mledger.Options{Chroot: pc.MLChroot, Logger: o.Logger, Registerer: o.Registerer, RequireFence: o.Fenced})
	if o.Ledgers || o.Bookies != nil {
		if p.Ledgers, err = pc.openLedgers(ctx, p.ZK, o); err != nil {
			p.Close()
			return nil, p.ZKFailed(err)
		}
	}
	if o.Bookies != nil {
		if p.BK, err = pc.openBookies(p.Ledgers, o); err != nil {
			p.Close()
			return nil, err
		}
	}
	if o.Store {
		if p.Store, err = pc.openStore(ctx, o); err != nil {
			p.Close()
			return nil, err
		}
	}
	return p, nil
}

// OpenStore opens the object store of pc alone (OpenPeers without the
// session), within o.Timeout; the error names it.
func OpenStore(ctx context.Context, pc PeersConfig, o PeersOptions) (blob.Store, error) {
	return pc.openStore(ctx, o)
}

// Close closes the store, the bookie client and the session.
func (p *Peers) Close() {
	if p.Store != nil {
		p.Store.Close()
	}
	if p.BK != nil {
		p.BK.Close()
	}
	if p.ZK != nil {
		p.ZK.Close()
	}
}

// ZKFailed names the ZooKeeper servers in err when err says ZooKeeper can
// no longer serve (unreachable, session lost).
func (p *Peers) ZKFailed(err error) error { return p.ZK.Failed(err) }

// timeout is PeersOptions.Timeout or its default.
func (pc *PeersConfig) timeout(o PeersOptions) time.Duration {
	switch {
	case o.Timeout > 0:
		return o.Timeout
	case pc.ZKOptions.ConnectTimeout > 0:
		return pc.ZKOptions.ConnectTimeout
	}
	return 10 * time.Second
}

// connect opens the ZooKeeper session, bounded by ZKOptions.ConnectTimeout
// (its error names the servers and the bound).
func (pc *PeersConfig) connect(ctx context.Context) (*tzk.Session, error) {
	s, err := tzk.Connect(ctx, pc.ZKServers, pc.ZKOptions)
	if errors.Is(err, tzk.ErrTLS) && pc.ZKTLSFrom != "" {
		err = fmt.Errorf("%w [%s]", err, pc.ZKTLSFrom)
	}
	return s, err
}

// ledgersRoot is the BookKeeper ledgers root (metadata.NewStore defaults
// an empty one).
func (pc *PeersConfig) ledgersRoot() string {
	if pc.LedgersRoot != "" {
		return pc.LedgersRoot
	}
	return pc.ZKRoot
}

// openLedgers opens BookKeeper's ledger metadata store (reading the
// layout within Timeout).
func (pc *PeersConfig) openLedgers(ctx context.Context, conn *tzk.Session, o PeersOptions) (*metadata.Store, error) {
	d := pc.timeout(o)
	cctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	st, err := metadata.NewStore(cctx, conn, metadata.StoreOptions{Root: pc.ledgersRoot(), Manager: pc.Layout, Logger: o.Logger, RequireFence: o.Fenced})
	if err != nil && cctx.Err() != nil && ctx.Err() == nil {
		return nil, fmt.Errorf("bookkeeper ledger metadata (waited up to %s): %w", d, err)
	}
	return st, err
}

// openBookies makes the bookie client (it connects on first use, each
// connection bounded by its connect timeout).
func (pc *PeersConfig) openBookies(ledgers *metadata.Store, o PeersOptions) (*bkclient.Client, error) {
	bo := bkclient.Options{}
	if o.Bookies != nil {
		bo = *o.Bookies
	}
	bo.Resolver, bo.TLS, bo.Logger, bo.Registerer = ledgers, pc.BookieTLS, o.Logger, o.Registerer
	if bo.WireProtocol == "" {
		bo.WireProtocol = pc.BookieWire
	}
	return bkclient.New(bo)
}

// openStore opens the object store within Timeout; the error names it.
func (pc *PeersConfig) openStore(ctx context.Context, o PeersOptions) (blob.Store, error) {
	name := pc.StoreName
	if name == "" {
		name = "store"
	}
	if pc.Store == nil {
		return nil, fmt.Errorf("%s: not configured", name)
	}
	d := pc.timeout(o)
	cctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	so := o.StoreOptions
	so.Logger, so.Registerer = o.Logger, o.Registerer
	st, err := client.New(cctx, *pc.Store, so)
	if err != nil {
		if cctx.Err() != nil && ctx.Err() == nil {
			return nil, fmt.Errorf("%s (waited up to %s): %w", name, d, err)
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return st, nil
}

// openAdmin makes the broker admin client (nil without one configured);
// every call it makes is bounded by its timeout.
func (pc *PeersConfig) openAdmin(log *slog.Logger) (*brokeradmin.Client, error) {
	if pc.Admin == nil {
		return nil, nil
	}
	name := pc.AdminName
	if name == "" {
		name = "admin"
	}
	c, err := brokeradmin.New(*pc.Admin, brokeradmin.Options{Logger: log})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return c, nil
}

// Peers is how to reach the config's peers: zookeeper (with its TLS and
// digest), bookkeeper, store and admin.
func (c *Config) Peers() (PeersConfig, error) {
	pc, err := c.peersBase()
	if err != nil {
		return PeersConfig{}, err
	}
	if pc.ZKOptions, err = c.zkOptions(nil); err != nil {
		return PeersConfig{}, err
	}
	if pc.BookieTLS, err = c.bookieTLS(); err != nil {
		return PeersConfig{}, err
	}
	return pc, nil
}

// peersBase is Peers without the TLS and digest settings (Check reads
// those in the check they belong to).
func (c *Config) peersBase() (PeersConfig, error) {
	servers, root, err := tzk.ParseServiceURI(c.ZooKeeper.Servers)
	if err != nil {
		return PeersConfig{}, err
	}
	pc := PeersConfig{ZKServers: servers, ZKRoot: root, MLChroot: c.ZooKeeper.MLChroot, LedgersRoot: c.BookKeeper.LedgersRoot,
		BookieWire: c.BookKeeper.WireProtocol}
	if c.Store.IsSet() {
		sc := c.Store.Client()
		pc.Store = &sc
	}
	pc.Admin = c.Admin.brokerConfig()
	return pc, nil
}

// brokerConfig is the admin client's config, nil without admin.url.
func (a Admin) brokerConfig() *brokeradmin.Config {
	if a.URL == "" {
		return nil
	}
	return &brokeradmin.Config{URL: a.URL, Token: a.Token, CAFile: a.CAFile, CertFile: a.CertFile,
		KeyFile: a.KeyFile, InsecureSkipVerify: a.InsecureSkipVerify, Timeout: blob.Duration(a.Timeout)}
}

// PipelineDeps are the pipeline's dependencies on these peers (the admin
// client as its Broker when there is one).
func (p *Peers) PipelineDeps() pipeline.Deps {
	d := pipeline.Deps{ML: p.ML, Store: p.Store, Logger: p.log}
	if p.Ledgers != nil {
		d.Ledgers = p.Ledgers
	}
	if p.BK != nil {
		d.Bookies = p.BK
	}
	if p.Admin != nil {
		d.Broker = p.Admin
	}
	return d
}

// Driver is the driver metadata an offload to the store records for
// brokers (name: aws-s3, S3, aliyun-oss; "" the store's default).
func (p *Peers) Driver(name string) (mledger.Driver, error) {
	if p.cfg.Store == nil {
		return mledger.Driver{}, errors.New("no store configured")
	}
	return pipeline.DriverForStore(*p.cfg.Store, name)
}
