package offloader

import (
	"context"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tierkeeper/tierkeeper/offloader/blob"
	"github.com/tierkeeper/tierkeeper/offloader/discovery"
	"github.com/tierkeeper/tierkeeper/offloader/policy"
	"github.com/tierkeeper/tierkeeper/offloader/sweeper"
)

// newSweeper returns the configured sweeper of store, taking references
// from a fresh scan of the managed ledgers through conn at each sweep.
func newSweeper(c *Config, conn discovery.Conn, store blob.Store, dryRun bool, log *slog.Logger, reg prometheus.Registerer) *sweeper.Sweeper {
	refs := func(ctx context.Context) ([]policy.Topic, []string, error) {
		d := discovery.New(conn, discovery.Options{Chroot: c.ZooKeeper.MLChroot, Concurrency: c.Discovery.Concurrency,
			NoWatches: true, Logger: log})
		if _, err := d.Scan(ctx); err != nil {
			return nil, nil, err
		}
		topics, errs := d.Snapshot()
		var bad []string
		for n := range errs {
			bad = append(bad, n)
		}
		return topics, bad, nil
	}
	return sweeper.New(store, refs, sweeper.Options{Grace: c.Sweeper.Grace.D(), DryRun: dryRun || c.Sweeper.DryRun,
		Logger: log, Registerer: reg})
}

// Sweep runs one sweep of the configured store (see package sweeper).
func Sweep(ctx context.Context, c *Config, dryRun bool, log *slog.Logger) (sweeper.Result, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	pc, err := c.Peers()
	if err != nil {
		return sweeper.Result{}, err
	}
	peers, err := OpenPeers(ctx, pc, PeersOptions{Logger: log, Store: true})
	if err != nil {
		return sweeper.Result{}, err
	}
	defer peers.Close()
	return newSweeper(c, peers.ZK, peers.Store, dryRun, log, nil).Sweep(ctx)
}
