package connflags

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/spf13/pflag"

	"github.com/tierkeeper/tierkeeper/internal/zk"
)

// ZKServer is --zk (servers, with an optional root path, or a metadata
// service URI), its two timeouts and the secured-ZooKeeper flags: what a
// command that opens a ZooKeeper session takes. The field names are the
// flags', so a command's options can embed it.
type ZKServer struct {
	ZK               string
	ZKSessionTimeout time.Duration
	ZKConnectTimeout time.Duration
	ZKSecure         ZooKeeper
}

// AddFlags adds --zk (default def, help usage), --zk-session-timeout,
// --zk-connect-timeout and the ZooKeeper flags to f.
func (s *ZKServer) AddFlags(f *pflag.FlagSet, def, usage string) {
	f.StringVar(&s.ZK, "zk", def, usage)
	f.DurationVar(&s.ZKSessionTimeout, "zk-session-timeout", 30*time.Second, "ZooKeeper session timeout")
	f.DurationVar(&s.ZKConnectTimeout, "zk-connect-timeout", 10*time.Second, "how long to wait for a ZooKeeper session before giving up")
	s.ZKSecure.AddFlags(f)
}

// Validate checks that both timeouts are positive.
func (s *ZKServer) Validate() error {
	if s.ZKConnectTimeout <= 0 || s.ZKSessionTimeout <= 0 {
		return fmt.Errorf("--zk-connect-timeout %s and --zk-session-timeout %s: both must be positive", s.ZKConnectTimeout, s.ZKSessionTimeout)
	}
	return nil
}

// Session is the session the flags describe: --zk parsed into the servers
// and the path after them (a ledgers root or a chroot; "" when --zk names
// none), and the options (the two timeouts; TLS and digest read from the
// flags' files).
func (s *ZKServer) Session() (servers []string, path string, opts zk.Options, err error) {
	servers, path, err = zk.ParseServiceURI(s.ZK)
	if err != nil {
		return nil, "", opts, fmt.Errorf("--zk: %w", err)
	}
	opts = zk.Options{SessionTimeout: s.ZKSessionTimeout, ConnectTimeout: s.ZKConnectTimeout}
	if err := s.ZKSecure.Apply(&opts); err != nil {
		return nil, "", opts, err
	}
	return servers, path, opts, nil
}

// Connect opens the session the flags describe (Session) within
// --zk-connect-timeout. It returns the path after the servers.
func (s *ZKServer) Connect(ctx context.Context, log *slog.Logger) (*zk.Session, string, error) {
	servers, path, opts, err := s.Session()
	if err != nil {
		return nil, "", err
	}
	opts.Logger = log
	sess, err := s.ZKSecure.connect(ctx, servers, opts)
	if err != nil {
		return nil, "", err
	}
	return sess, path, nil
}
