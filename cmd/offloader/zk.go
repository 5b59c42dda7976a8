package main

import (
	"context"
	"log/slog"

	tkzk "github.com/tierkeeper/tierkeeper/internal/zk"
	"github.com/tierkeeper/tierkeeper/offloader"
)

// zkPeers is ZooKeeper in the peers' config (connflags.ZKServer.Session:
// --zk parsed, its timeouts, the --zk-tls* and --zk-digest-file files
// read).
func (g *globalOptions) zkPeers() (offloader.PeersConfig, error) {
	servers, root, zo, err := g.Session()
	if err != nil {
		return offloader.PeersConfig{}, err
	}
	return offloader.PeersConfig{ZKServers: servers, ZKRoot: root, ZKOptions: zo, ZKTLSFrom: g.ZKSecure.Describe()}, nil
}

// connectZK opens a ZooKeeper session (offloader.OpenPeers), waiting at
// most --zk-connect-timeout. It returns the path after the servers (the
// ledgers root or a chroot; "" when --zk names none).
func (g *globalOptions) connectZK(ctx context.Context, log *slog.Logger) (*tkzk.Session, string, error) {
	pc, err := g.zkPeers()
	if err != nil {
		return nil, "", err
	}
	p, err := offloader.OpenPeers(ctx, pc, offloader.PeersOptions{Logger: log})
	if err != nil {
		return nil, "", err
	}
	return p.ZK, pc.ZKRoot, nil
}
