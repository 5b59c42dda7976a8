package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tierkeeper/tierkeeper/bookkeeper/client"
	"github.com/tierkeeper/tierkeeper/internal/connflags"
	"github.com/tierkeeper/tierkeeper/offloader"
	"github.com/tierkeeper/tierkeeper/offloader/blob"
	blobclient "github.com/tierkeeper/tierkeeper/offloader/blob/client"
	"github.com/tierkeeper/tierkeeper/offloader/brokeradmin"
)

// storeOptions are the flags that name the object store.
type storeOptions struct {
	path string
}

func (o *storeOptions) addFlags(f *pflag.FlagSet) {
	f.StringVar(&o.path, "store", "", "blob store config `file` (YAML or JSON, docs/blobstores.md)")
}

// adminOptions are the broker admin API flags.
type adminOptions struct {
	url, tokenFile, caFile, certFile, keyFile string
	insecure                                  bool
	timeout                                   time.Duration
}

// adminTokenEnv holds the admin token when no token file is given (kept out
// of the command line, where ps shows it).
const adminTokenEnv = "TIERKEEPER_ADMIN_TOKEN"

func (o *adminOptions) addFlags(f *pflag.FlagSet) {
	f.StringVar(&o.url, "admin-url", "", "broker admin `URL` (http(s)://broker:8080); topics are unloaded after a commit so brokers read the new metadata at once")
	f.StringVar(&o.tokenFile, "admin-token-file", "", "`file` holding the admin JWT (else $"+adminTokenEnv+")")
	f.StringVar(&o.caFile, "admin-ca-file", "", "PEM `file` of CAs trusted for an https admin URL")
	f.StringVar(&o.certFile, "admin-cert-file", "", "PEM client certificate `file` (TLS authentication)")
	f.StringVar(&o.keyFile, "admin-key-file", "", "PEM client key `file`")
	f.BoolVar(&o.insecure, "admin-insecure", false, "accept any admin server certificate (tests only)")
	f.DurationVar(&o.timeout, "admin-timeout", brokeradmin.DefaultTimeout, "bound of every admin call")
}

// config is the admin client's config, nil without --admin-url.
func (o *adminOptions) config() (*brokeradmin.Config, error) {
	if o.url == "" {
		if o.tokenFile != "" || o.caFile != "" || o.certFile != "" || o.insecure {
			return nil, errors.New("--admin-token-file, --admin-ca-file, --admin-cert-file and --admin-insecure need --admin-url")
		}
		return nil, nil
	}
	cfg := &brokeradmin.Config{URL: o.url, TokenFile: o.tokenFile, CAFile: o.caFile, CertFile: o.certFile, KeyFile: o.keyFile,
		InsecureSkipVerify: o.insecure, Timeout: blob.Duration(o.timeout)}
	if o.tokenFile == "" {
		cfg.Token = blob.Secret(os.Getenv(adminTokenEnv))
	}
	return cfg, nil
}

// mlOptions are the managed-ledger metadata flags.
type mlOptions struct {
	chroot string
}

func (o *mlOptions) addFlags(f *pflag.FlagSet) {
	f.StringVar(&o.chroot, "ml-chroot", "", "`path` prefix of Pulsar's metadata store in ZooKeeper (chroot of metadataStoreUrl)")
}

// env is what the offload, verify and status commands work on: the
// peers and the command's logger.
type env struct {
	peers *offloader.Peers
	log   *slog.Logger
}

func (e *env) close() { e.peers.Close() }

// envOptions are the flags of a command's peers.
type envOptions struct {
	zk       zkOptions
	ml       mlOptions
	store    storeOptions
	admin    adminOptions
	bk       connflags.BookKeeper
	needBK   bool // ledger metadata store and bookie client (set before addFlags)
	needBlob bool
	// registerer, if set, receives the peers' metrics (the bookie
	// client's and the store's).
	registerer prometheus.Registerer
}

// addFlags adds the flags of ZooKeeper, the managed-ledger chroot, the
// store, bookie TLS (with needBK) and, with admin, the broker admin API.
func (o *envOptions) addFlags(f *pflag.FlagSet, admin bool) {
	o.zk.addFlags(f)
	o.ml.addFlags(f)
	o.store.addFlags(f)
	if o.needBK {
		o.bk.AddFlags(f)
	}
	if admin {
		o.admin.addFlags(f)
	}
}

// peersConfig turns the flags into the peers' config, reading every file
// they name (store config, TLS, digest) first, so bad input fails before
// any connection is made.
func (o *envOptions) peersConfig(g *globalOptions) (offloader.PeersConfig, error) {
	var pc offloader.PeersConfig
	if o.needBlob {
		if o.store.path == "" {
			return pc, errors.New("--store is required (a blob store config file, docs/blobstores.md)")
		}
		cfg, err := blobclient.Load(o.store.path)
		if err != nil {
			return pc, fmt.Errorf("--store: %w", err)
		}
		pc.Store, pc.StoreName = &cfg, "--store "+o.store.path
	}
	var err error
	if pc.Admin, err = o.admin.config(); err != nil {
		return pc, err
	}
	pc.AdminName = "--admin-url"
	if pc.BookieTLS, err = o.bk.Config(); err != nil {
		return pc, err
	}
	pc.BookieWire = o.bk.Wire
	if err := o.zk.apply(g, &pc); err != nil {
		return pc, err
	}
	pc.MLChroot = o.ml.chroot
	return pc, nil
}

// openEnv opens the peers the command needs (offloader.OpenPeers, each
// bounded in time), logging to the command's stderr (e.log). Writes
// (offload's) are fenced by a topic lease; the stores refuse any that is
// not.
func openEnv(cmd *cobra.Command, g *globalOptions, o *envOptions) (*env, error) {
	pc, err := o.peersConfig(g)
	if err != nil {
		return nil, err
	}
	log := g.logger(cmd.ErrOrStderr())
	po := offloader.PeersOptions{Logger: log, Store: o.needBlob, Fenced: true, Registerer: o.registerer}
	if o.needBK {
		po.Bookies = &client.Options{}
	}
	p, err := offloader.OpenPeers(cmd.Context(), pc, po)
	if err != nil {
		return nil, err
	}
	return &env{peers: p, log: log}, nil
}
