package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tierkeeper/tierkeeper/bookkeeper/client"
	"github.com/tierkeeper/tierkeeper/bookkeeper/metadata"
	"github.com/tierkeeper/tierkeeper/internal/connflags"
	tkzk "github.com/tierkeeper/tierkeeper/internal/zk"
	"github.com/tierkeeper/tierkeeper/offloader/blob"
	blobclient "github.com/tierkeeper/tierkeeper/offloader/blob/client"
	"github.com/tierkeeper/tierkeeper/offloader/brokeradmin"
	"github.com/tierkeeper/tierkeeper/pulsar/mledger"
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

// client returns the admin client, or nil without --admin-url.
func (o *adminOptions) client(log *slog.Logger) (*brokeradmin.Client, error) {
	if o.url == "" {
		if o.tokenFile != "" || o.caFile != "" || o.certFile != "" || o.insecure {
			return nil, errors.New("--admin-token-file, --admin-ca-file, --admin-cert-file and --admin-insecure need --admin-url")
		}
		return nil, nil
	}
	cfg := brokeradmin.Config{URL: o.url, TokenFile: o.tokenFile, CAFile: o.caFile, CertFile: o.certFile, KeyFile: o.keyFile,
		InsecureSkipVerify: o.insecure, Timeout: blob.Duration(o.timeout)}
	if o.tokenFile == "" {
		cfg.Token = blob.Secret(os.Getenv(adminTokenEnv))
	}
	c, err := brokeradmin.New(cfg, brokeradmin.Options{Logger: log})
	if err != nil {
		return nil, fmt.Errorf("--admin-url: %w", err)
	}
	return c, nil
}

// mlOptions are the managed-ledger metadata flags.
type mlOptions struct {
	chroot string
}

func (o *mlOptions) addFlags(f *pflag.FlagSet) {
	f.StringVar(&o.chroot, "ml-chroot", "", "`path` prefix of Pulsar's metadata store in ZooKeeper (chroot of metadataStoreUrl)")
}

// env is what the offload, verify and status commands work on.
type env struct {
	log      *slog.Logger
	zk       *tkzk.Session
	ml       *mledger.Store
	ledgers  *metadata.Store
	bk       *client.Client
	store    blob.Store
	storeCfg blobclient.Config
	admin    *brokeradmin.Client
}

func (e *env) close() {
	if e.store != nil {
		e.store.Close()
	}
	if e.bk != nil {
		e.bk.Close()
	}
	if e.zk != nil {
		e.zk.Close()
	}
}

// envOptions says what openEnv opens.
type envOptions struct {
	zk       zkOptions
	ml       mlOptions
	store    storeOptions
	admin    adminOptions
	bk       connflags.BookKeeper
	needBK   bool // ledger metadata store and bookie client (set before addFlags)
	needBlob bool
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

// openEnv connects to ZooKeeper (bounded by the session timeout) and opens
// the stores the command needs, logging to the command's stderr (e.log).
// The store config is read first, so a bad file fails before any
// connection is made.
func openEnv(cmd *cobra.Command, g *globalOptions, o *envOptions) (*env, error) {
	ctx, log := cmd.Context(), g.logger(cmd.ErrOrStderr())
	e := &env{log: log}
	if o.needBlob {
		if o.store.path == "" {
			return nil, errors.New("--store is required (a blob store config file, docs/blobstores.md)")
		}
		cfg, err := blobclient.Load(o.store.path)
		if err != nil {
			return nil, fmt.Errorf("--store: %w", err)
		}
		e.storeCfg = cfg
	}
	admin, err := o.admin.client(log)
	if err != nil {
		return nil, err
	}
	bkTLS, err := o.bk.Config()
	if err != nil {
		return nil, err
	}
	e.admin = admin
	sess, root, err := g.connectZK(ctx, log)
	if err != nil {
		return nil, err
	}
	e.zk = sess
	// Writes (offload's) are fenced by a topic lease; the stores refuse
	// any that is not.
	e.ml = mledger.New(sess.Conn, &mledger.Options{Chroot: o.ml.chroot, Logger: log, RequireFence: true})
	if o.needBK {
		if o.zk.LedgersRoot != "" {
			root = o.zk.LedgersRoot
		}
		var mgr metadata.Manager
		if o.zk.Layout != "" {
			if mgr, err = metadata.ParseManager(o.zk.Layout); err != nil {
				e.close()
				return nil, fmt.Errorf("--layout: %w", err)
			}
		}
		e.ledgers, err = metadata.NewStore(ctx, sess.Conn, metadata.StoreOptions{Root: root, Manager: mgr, Logger: log, RequireFence: true})
		if err != nil {
			e.close()
			return nil, err
		}
		e.bk, err = client.New(client.Options{Resolver: e.ledgers, TLS: bkTLS, Logger: log})
		if err != nil {
			e.close()
			return nil, err
		}
	}
	if o.needBlob {
		e.store, err = blobclient.New(ctx, e.storeCfg, blobclient.Options{Logger: log})
		if err != nil {
			e.close()
			return nil, fmt.Errorf("--store %s: %w", o.store.path, err)
		}
	}
	return e, nil
}
