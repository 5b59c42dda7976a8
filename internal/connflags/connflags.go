// Package connflags is the one command-line flag set for secured
// ZooKeeper (TLS to the secure client port, digest authentication) and TLS
// to the bookies, shared by every command that takes --zk. The flags map
// onto the same internal/zk and bookkeeper/client options the offloader's
// config file sets (zookeeper.tls, zookeeper.digest, bookkeeper.tls),
// through internal/tlsfiles.
package connflags

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/tierkeeper/tierkeeper/internal/tlsfiles"
	"github.com/tierkeeper/tierkeeper/internal/zk"
)

// ErrFlags is wrapped by the errors of flags that cannot be used
// together or whose files cannot be used.
var ErrFlags = errors.New("invalid connection flags")

// ZooKeeper are the --zk-tls* and --zk-digest-file flags.
type ZooKeeper struct {
	TLS                    bool
	CAFile                 string
	CertFile               string
	KeyFile                string
	NoHostnameVerification bool
	// DigestFile holds "user:password" (one trailing newline ignored):
	// never a password on the command line, where ps shows it.
	DigestFile string
}

// AddFlags adds the flags to f.
func (z *ZooKeeper) AddFlags(f *pflag.FlagSet) {
	f.BoolVar(&z.TLS, "zk-tls", false, "connect to ZooKeeper with TLS (--zk names the secureClientPort); on when a --zk-tls-* file is given")
	f.StringVar(&z.CAFile, "zk-tls-ca", "", "PEM `file` of the CAs that signed the ZooKeeper servers' certificates (default: system roots)")
	f.StringVar(&z.CertFile, "zk-tls-cert", "", "PEM client certificate `file` for ZooKeeper (servers with ssl.clientAuth=need)")
	f.StringVar(&z.KeyFile, "zk-tls-key", "", "PEM client key `file` for ZooKeeper")
	f.BoolVar(&z.NoHostnameVerification, "zk-tls-no-hostname-verification", false, "accept a ZooKeeper certificate the CA signed whatever names it holds (zookeeper.ssl.hostnameVerification=false)")
	f.StringVar(&z.DigestFile, "zk-digest-file", "", "`file` holding user:password for ZooKeeper digest authentication (never printed)")
}

func (z *ZooKeeper) tlsOn() bool {
	return z.TLS || z.CAFile != "" || z.CertFile != "" || z.KeyFile != ""
}

// Apply sets o's TLS and Digest from the flags. Errors name the flag and
// the file, never the digest.
func (z *ZooKeeper) Apply(o *zk.Options) error {
	if z.NoHostnameVerification && !z.tlsOn() {
		return fmt.Errorf("%w: --zk-tls-no-hostname-verification needs --zk-tls", ErrFlags)
	}
	if z.tlsOn() {
		tc, err := files("--zk-tls", z.CAFile, z.CertFile, z.KeyFile, z.NoHostnameVerification)
		if err != nil {
			return err
		}
		o.TLS = tc
	}
	if z.DigestFile != "" {
		b, err := os.ReadFile(z.DigestFile)
		if err != nil {
			return fmt.Errorf("%w: --zk-digest-file: %w", ErrFlags, err)
		}
		d := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
		if u, pw, ok := strings.Cut(d, ":"); !ok || u == "" || pw == "" || strings.ContainsAny(d, "\n") {
			return fmt.Errorf("%w: --zk-digest-file %s: want one line user:password", ErrFlags, z.DigestFile)
		}
		o.Digest = d
	}
	return nil
}

// Connect opens a ZooKeeper session with opts secured by the flags. A TLS
// handshake failure names the flags' files.
func (z *ZooKeeper) Connect(ctx context.Context, servers []string, opts zk.Options) (*zk.Session, error) {
	if err := z.Apply(&opts); err != nil {
		return nil, err
	}
	return z.connect(ctx, servers, opts)
}

// connect opens the session with opts already secured (Apply).
func (z *ZooKeeper) connect(ctx context.Context, servers []string, opts zk.Options) (*zk.Session, error) {
	s, err := zk.Connect(ctx, servers, opts)
	if errors.Is(err, zk.ErrTLS) {
		err = fmt.Errorf("%w [%s]", err, z.Describe())
	}
	return s, err
}

// Describe names the TLS flags in use (for a failed handshake's error).
func (z *ZooKeeper) Describe() string {
	var p []string
	for _, f := range []struct{ name, v string }{{"--zk-tls-ca", z.CAFile}, {"--zk-tls-cert", z.CertFile}, {"--zk-tls-key", z.KeyFile}} {
		if f.v != "" {
			p = append(p, f.name+" "+f.v)
		}
	}
	if len(p) == 0 {
		p = append(p, "--zk-tls with the system roots")
	}
	if z.NoHostnameVerification {
		p = append(p, "--zk-tls-no-hostname-verification")
	}
	return strings.Join(p, ", ")
}

// BookKeeper are the --bk-tls* flags. As BookKeeper's client, hostname
// verification is off: the chain is checked against the CA.
type BookKeeper struct {
	TLS      bool
	CAFile   string
	CertFile string
	KeyFile  string
	// Wire is --bk-wire, the reads' wire protocol (v2 or v3).
	Wire string
}

// AddFlags adds the flags to f.
func (b *BookKeeper) AddFlags(f *pflag.FlagSet) {
	f.BoolVar(&b.TLS, "bk-tls", false, "connect to the bookies with TLS (START_TLS, as the broker's bookkeeperTLS* settings); on when a --bk-tls-* file is given")
	f.StringVar(&b.CAFile, "bk-tls-ca", "", "PEM `file` of the CAs that signed the bookies' certificates (bookkeeperTLSTrustCertsFilePath; default: system roots)")
	f.StringVar(&b.CertFile, "bk-tls-cert", "", "PEM client certificate `file` for bookies with tlsClientAuthentication (bookkeeperTLSCertificateFilePath)")
	f.StringVar(&b.KeyFile, "bk-tls-key", "", "PEM client key `file` for the bookies (bookkeeperTLSKeyFilePath)")
	f.StringVar(&b.Wire, "bk-wire", "v2", "wire `protocol` of the bookie reads: v2 (as Pulsar's brokers read; the bookie sends each entry from its own buffers) or v3 (protobuf; the bookie copies each entry into a message first)")
}

// Config returns the bookie TLS configuration, nil without TLS.
func (b *BookKeeper) Config() (*tls.Config, error) {
	if !b.TLS && b.CAFile == "" && b.CertFile == "" && b.KeyFile == "" {
		return nil, nil
	}
	return files("--bk-tls", b.CAFile, b.CertFile, b.KeyFile, true)
}

// files loads the PEM files of the flags prefix-ca, -cert and -key.
func files(prefix, ca, cert, key string, skipHost bool) (*tls.Config, error) {
	if (cert == "") != (key == "") {
		return nil, fmt.Errorf("%w: %s-cert and %s-key go together", ErrFlags, prefix, prefix)
	}
	tc, err := tlsfiles.Files{CAFile: ca, CertFile: cert, KeyFile: key, SkipHostnameVerification: skipHost}.Config()
	if err != nil {
		if ca != "" {
			if _, cerr := (tlsfiles.Files{CAFile: ca}).Config(); cerr != nil {
				return nil, fmt.Errorf("%w: %s-ca %s: %w", ErrFlags, prefix, ca, cerr)
			}
		}
		return nil, fmt.Errorf("%w: %s-cert %s / %s-key %s: %w", ErrFlags, prefix, cert, prefix, key, err)
	}
	return tc, nil
}
