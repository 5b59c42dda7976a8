package offloader

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/tierkeeper/tierkeeper/offloader/discovery"
	"github.com/tierkeeper/tierkeeper/offloader/policy"
)

// PlanOptions configure Plan.
type PlanOptions struct {
	Logger *slog.Logger
	// Now is the policy's clock. Default time.Now.
	Now func() time.Time
	// HTTPClient for the pressure source. Default: one with the pressure
	// timeout.
	HTTPClient *http.Client
}

// PlanResult is a dry run of the policy: what the service would do next.
type PlanResult struct {
	At     time.Time
	Scan   discovery.ScanStats
	Result policy.Result
	Report SnapshotReport
	// ReadErrors are managed ledgers that could not be read.
	ReadErrors map[string]string
	// BookieUsage is the ledger-disk usage read per bookie (pressure on).
	BookieUsage map[string]float64
}

// Plan connects to ZooKeeper, scans every managed ledger once, reads what
// makes the brokers offload topics themselves (namespace policies; with
// admin.url the broker's thresholds and topic policies) and evaluates the
// policy, changing nothing.
func Plan(ctx context.Context, c *Config, o PlanOptions) (*PlanResult, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	rules, err := c.PolicyRules()
	if err != nil {
		return nil, err
	}
	pc, err := c.Peers()
	if err != nil {
		return nil, err
	}
	peers, err := OpenPeers(ctx, pc, PeersOptions{Logger: o.Logger})
	if err != nil {
		return nil, err
	}
	defer peers.Close()
	d := discovery.New(peers.ZK, discovery.Options{Chroot: c.ZooKeeper.MLChroot, Concurrency: c.Discovery.Concurrency,
		NoWatches: true, Logger: o.Logger})
	scan, err := d.Scan(ctx)
	if err != nil {
		return nil, err
	}
	topics, readErrs := d.Snapshot()
	sn := &snapshotter{conn: peers.ZK, rules: rules, chroot: c.ZooKeeper.ConfigChroot, view: newBrokerView(peers.Admin, c, o.Logger), log: o.Logger}
	if c.Pressure.Threshold > 0 {
		if sn.ledgers, err = pc.openLedgers(ctx, peers.ZK, PeersOptions{Logger: o.Logger}); err != nil {
			return nil, fmt.Errorf("bookkeeper metadata (for pressure): %w", err)
		}
		if sn.src, err = c.PressureSource(o.HTTPClient); err != nil {
			return nil, err
		}
	}
	at := o.Now()
	snap, rep := sn.build(ctx, topics)
	res := &PlanResult{At: at, Scan: scan, Result: policy.Evaluate(snap, at, rules), Report: rep,
		ReadErrors: map[string]string{}, BookieUsage: snap.BookieUsage}
	for n, e := range readErrs {
		res.ReadErrors[n] = e.Error()
	}
	return res, nil
}
