package offloader

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	bkclient "github.com/tierkeeper/tierkeeper/bookkeeper/client"
	tzk "github.com/tierkeeper/tierkeeper/internal/zk"
	"github.com/tierkeeper/tierkeeper/offloader/discovery"
	"github.com/tierkeeper/tierkeeper/offloader/pipeline"
	"github.com/tierkeeper/tierkeeper/offloader/policy"
	"github.com/tierkeeper/tierkeeper/offloader/scrub"
	"github.com/tierkeeper/tierkeeper/pulsar/mledger"
)

// ScrubOptions tune Scrub.
type ScrubOptions struct {
	// Topics are topic names (persistent://tenant/ns/topic) or
	// managed-ledger names; All takes every managed ledger instead.
	Topics []string
	All    bool
	// Deep compares every entry with BookKeeper while it has the ledger.
	Deep bool
	// DryRun checks and reports; it writes nothing (no lease taken).
	DryRun bool
	// NoReoffload leaves a repaired ledger for the service's next policy
	// round instead of offloading it again at once.
	NoReoffload bool
	// LedgersPerSecond bounds the check rate (0: Config.Scrub's).
	LedgersPerSecond float64
	// TrimWithoutReload finishes interrupted BookKeeper deletions without
	// a broker admin URL (only safe when no broker has the topics loaded
	// with bookkeeper-first reads).
	TrimWithoutReload bool
	// Verbose reports every ledger, not only those that are not ok.
	Verbose bool
	// Registerer receives the scrub metrics (benchmarks). Default none.
	Registerer prometheus.Registerer
}

// Scrub checks the committed ledgers of the given managed ledgers (or
// all) once, as the service does every scrub.interval, and, unless
// DryRun, repairs under each topic's lease those whose objects are
// missing or wrong while BookKeeper still has them (context cleared, topic
// reloaded, then offloaded again at once unless NoReoffload), and finishes
// interrupted BookKeeper deletions. A topic leased by a service replica is
// checked and left to that replica. See package scrub.
func Scrub(ctx context.Context, c *Config, o ScrubOptions, log *slog.Logger) (*scrub.Report, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if !o.All && len(o.Topics) == 0 {
		return nil, errors.New("scrub: name topics or --all")
	}
	drv, err := c.driver()
	if err != nil {
		return nil, err
	}
	pc, err := c.Peers()
	if err != nil {
		return nil, err
	}
	peers, err := OpenPeers(ctx, pc, PeersOptions{Logger: log, Bookies: &bkclient.Options{}, Store: true})
	if err != nil {
		return nil, err
	}
	defer peers.Close()
	sess, ml, ledgers, store := peers.ZK, peers.ML, peers.Ledgers, peers.Store
	d := peers.PipelineDeps()
	base := pipeline.Options{Driver: drv, PartsInFlight: max(1, c.Scheduler.PartsInFlight/c.Scheduler.LedgersInFlight)}
	offl, err := pipeline.New(d, base)
	if err != nil {
		return nil, err
	}
	var trim *pipeline.Pipeline // finishes interrupted deletions (a mark is set: the lag is past)
	if d.Broker != nil || o.TrimWithoutReload {
		to := base
		to.Trim, to.TrimWithoutReload = true, o.TrimWithoutReload
		if trim, err = pipeline.New(d, to); err != nil {
			return nil, err
		}
	}
	rate := o.LedgersPerSecond
	if rate == 0 {
		rate = c.Scrub.LedgersPerSecond
	}
	sc, err := scrub.New(scrub.Deps{ML: ml, Ledgers: ledgers, Store: store, Verifier: offl, Broker: d.Broker, Logger: log,
		Registerer: o.Registerer}, scrub.Options{Deep: o.Deep, LedgersPerSecond: rate, CallTimeout: c.Scrub.LedgerTimeout.D()})
	if err != nil {
		return nil, err
	}
	names, err := scrubNames(ctx, c, sess, o)
	if err != nil {
		return nil, err
	}
	var leases *zkLeases
	if !o.DryRun {
		leases = newZKLeases(sess, c.Leases.Root, c.Leases.ID, log)
		defer leases.close()
	}
	rep := scrub.NewReport(sc.Bucket(), o.DryRun, o.Deep, time.Now())
	for _, name := range names {
		if ctx.Err() != nil {
			break
		}
		fs, err := sc.CheckTopic(ctx, name, nil)
		rep.Topics++
		if err != nil {
			rep.Add(fs, o.Verbose)
			rep.Errors = append(rep.Errors, fmt.Sprintf("%s: %v", name, err))
			continue
		}
		fs, errs := scrubWrite(ctx, sc, offl, trim, leases, name, fs, o)
		rep.Add(fs, o.Verbose)
		for _, f := range fs {
			switch f.Action {
			case "reoffloaded":
				rep.Reoffloaded++
			case "trimmed":
				rep.Trimmed++
			}
		}
		rep.Errors = append(rep.Errors, errs...)
	}
	rep.Finish(time.Now())
	if ctx.Err() != nil {
		return rep, ctx.Err()
	}
	if n := rep.Problems(); n > 0 {
		return rep, fmt.Errorf("%w: %d ledgers lost, mismatched, unchecked or still to repair (see the findings)", ErrScrubProblems, n)
	}
	return rep, nil
}

// ErrScrubProblems is returned by Scrub (with its report) when a ledger is
// lost, mismatched, could not be checked, or still needs a repair.
var ErrScrubProblems = errors.New("scrub found problems")

// scrubNames resolves the managed ledgers to scrub.
func scrubNames(ctx context.Context, c *Config, sess *tzk.Session, o ScrubOptions) ([]string, error) {
	if !o.All {
		out := make([]string, 0, len(o.Topics))
		for _, t := range o.Topics {
			if strings.Contains(t, "://") {
				n, err := mledger.MLNameForTopic(t)
				if err != nil {
					return nil, err
				}
				out = append(out, n)
				continue
			}
			if _, err := mledger.ParseMLName(t); err != nil {
				return nil, err
			}
			out = append(out, t)
		}
		return out, nil
	}
	d := discovery.New(sess, discovery.Options{Chroot: c.ZooKeeper.MLChroot, Concurrency: c.Discovery.Concurrency, NoWatches: true})
	if _, err := d.Scan(ctx); err != nil {
		return nil, err
	}
	topics, _ := d.Snapshot()
	return committedTopics(topics), nil
}

// committedTopics are the managed ledgers of topics with a committed
// ledger.
func committedTopics(topics []policy.Topic) []string {
	var out []string
	for _, t := range topics {
		for _, l := range t.Ledgers {
			if l.State == mledger.StateOffloaded || l.State == mledger.StateOffloadedBKDeleted {
				out = append(out, t.ML)
				break
			}
		}
	}
	return out
}

// scrubWrite does the writes fs ask for on managed ledger name, under its
// lease: repairs (then the re-offload, unless o.NoReoffload) and finished
// trims. Without writes to do, or in a dry run, it returns fs as they are.
func scrubWrite(ctx context.Context, sc *scrub.Scrubber, offl, trim *pipeline.Pipeline, leases *zkLeases, name string,
	fs []scrub.Finding, o ScrubOptions) ([]scrub.Finding, []string) {
	var repair, leftover []int64
	for _, f := range fs {
		switch f.Verdict {
		case scrub.VerdictRepair:
			repair = append(repair, f.LedgerID)
		case scrub.VerdictTrimLeftover:
			leftover = append(leftover, f.LedgerID)
		}
	}
	if len(repair)+len(leftover) == 0 {
		return fs, nil
	}
	mark := func(ids []int64, action string) {
		for i := range fs {
			for _, id := range ids {
				if fs[i].LedgerID == id && fs[i].Action == "" {
					fs[i].Action = action
				}
			}
		}
	}
	if o.DryRun {
		mark(append(repair, leftover...), "dry-run")
		return fs, nil
	}
	lease, holder, err := leases.TryAcquire(ctx, name)
	if err != nil || lease == nil {
		why := "leased by " + holder
		if err != nil {
			why = "lease: " + err.Error()
		}
		mark(append(repair, leftover...), "not done: "+why)
		return fs, []string{fmt.Sprintf("%s: %s", name, why)}
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		lease.Release(rctx)
	}()
	ctx = lease.Fence(ctx) // every repair write is fenced by the topic's lease
	var errs []string
	if len(repair) > 0 {
		fresh, err := sc.Repair(ctx, name, repair)
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", name, err))
		}
		var again []int64
		for _, f := range fresh {
			for i := range fs {
				if fs[i].LedgerID == f.LedgerID {
					fs[i] = f
				}
			}
			if f.Repaired {
				again = append(again, f.LedgerID)
			}
		}
		if len(again) > 0 && !o.NoReoffload {
			tr, err := offl.RunTopic(ctx, name, again)
			if err != nil {
				errs = append(errs, fmt.Sprintf("%s: offload again: %v", name, err))
			}
			for _, lr := range tr.Ledgers {
				if lr.Err == nil && (lr.Outcome == pipeline.OutcomeOffloaded || lr.Outcome == pipeline.OutcomeAdopted) {
					for i := range fs {
						if fs[i].LedgerID == lr.LedgerID {
							fs[i].Action = "reoffloaded"
						}
					}
				}
			}
		}
	}
	if len(leftover) > 0 {
		if trim == nil {
			mark(leftover, "not done: finishing a BookKeeper deletion needs admin.url (the broker must reload first)")
			errs = append(errs, fmt.Sprintf("%s: %d interrupted BookKeeper deletions left: no admin.url", name, len(leftover)))
		} else {
			tr, err := trim.RunTopic(ctx, name, leftover)
			if err != nil {
				errs = append(errs, fmt.Sprintf("%s: finish BookKeeper deletion: %v", name, err))
			}
			var done []int64
			for _, lr := range tr.Ledgers {
				for i := range fs {
					if fs[i].LedgerID != lr.LedgerID {
						continue
					}
					if lr.Err == nil && lr.Trim.Deleted {
						fs[i].Action = "trimmed"
						done = append(done, lr.LedgerID)
					} else if lr.Err != nil {
						fs[i].Action = "not trimmed: " + lr.Err.Error()
					}
				}
			}
			sc.Forget(name, done)
		}
	}
	return fs, errs
}
