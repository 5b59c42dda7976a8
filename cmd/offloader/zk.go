package main

import (
	"context"
	"fmt"
	"log/slog"

	tkzk "github.com/tierkeeper/tierkeeper/internal/zk"
)

// connectZK parses --zk and opens a session, waiting at most
// --zk-connect-timeout, with the --zk-tls* and --zk-digest-file settings. It returns the path after the servers (the ledgers
// root or a chroot; "" when --zk names none).
func (g *globalOptions) connectZK(ctx context.Context, log *slog.Logger) (*tkzk.Session, string, error) {
	servers, path, err := tkzk.ParseServiceURI(g.ZK)
	if err != nil {
		return nil, "", fmt.Errorf("--zk: %w", err)
	}
	s, err := g.ZKSecure.Connect(ctx, servers, tkzk.Options{SessionTimeout: g.ZKSessionTimeout, ConnectTimeout: g.ZKConnectTimeout, Logger: log})
	if err != nil {
		return nil, "", err
	}
	return s, path, nil
}

// zkFailed names the ZooKeeper servers in err when err says ZooKeeper can
// no longer serve the command (unreachable, session lost).
func zkFailed(s *tkzk.Session, err error) error {
	if tkzk.Unavailable(err) {
		return fmt.Errorf("zookeeper %s: %w", s.Servers(), err)
	}
	return err
}
