package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tierkeeper/tierkeeper/bookieagent"
	"github.com/tierkeeper/tierkeeper/bookieagent/cluster"
	"github.com/tierkeeper/tierkeeper/internal/cli"
	"github.com/tierkeeper/tierkeeper/internal/connflags"
	"github.com/tierkeeper/tierkeeper/internal/units"
	"github.com/tierkeeper/tierkeeper/pulsar/mledger"
	"github.com/tierkeeper/tierkeeper/pulsar/mledger/status"
)

type clusterOptions struct {
	zk             connflags.ZKServer
	mlChroot       string
	noML           bool
	agents         []string
	agentTemplate  string
	agentTimeout   time.Duration
	remove         []string
	removeCount    int
	rate           units.Size
	workers        int
	perLedger      float64
	bookieHTTPPort int
	statefulSet    bool
	gate           string
	noRunning      bool
	format         string
}

func newClusterCmd() *cobra.Command {
	o := &clusterOptions{}
	cmd := &cobra.Command{
		Use:   "cluster --zk ADDR [--agents URL,... | --agent-url 'http://{host}:9580'] [--remove ID,... | --remove-count K [--statefulset]] [--gate ID]",
		Short: "Cluster view: merge the agents' recommendations, the fleet's running configuration, plan a scale-in of bookies",
		Long: `cluster reads the BookKeeper cluster from ZooKeeper (--zk: host:port[/ledgers root], or a
metadataServiceUri): the bookies, every ledger's ensembles and quorums, Pulsar's rack map
(/bookies), AutoRecovery's under-replicated ledgers, and the managed ledgers that own the
ledgers with their offload state; and every bookie agent's /recommendation and /report
(--agents: base URLs, matched to bookies by host; --agent-url: a template with {host}).

It prints the cluster's bytes per bookie, one configuration merged from the agents'
recommendations (per key the minimum, maximum or median, as safe for every node; see
docs/bookieagent.md), and each bookie's running configuration (its HTTP admin server's
/api/v1/config/server_config, else its agent's /conf) per key against the merged
recommendation and against the other bookies.

With --remove or --remove-count a scale-in plan that removes ONE bookie at a time:
every ledger segment's copies left (a segment with entries whose every copy is on the
removed bookies makes the plan infeasible, named), a replacement outside each
segment's ensemble within its isolation groups and racks, the auditor and AutoRecovery
really running (their votes in ZooKeeper), room on the remaining disks, the bytes to
re-replicate per bookie (and how many belong to ledgers offloaded or offloadable
first), an estimate, and per step what to run, what to watch and the gate to pass
before the next (--gate ID checks one from the metadata: exit 0 once passed), and the
rollback. --statefulset removes the highest ordinals first (bookie ids must be the
pods' host names). A plan on a cluster that could not be read completely (a bookie
named by ledgers but not registered, an agent that does not answer) is refused.

A secured ZooKeeper: --zk names the secureClientPort with --zk-tls-ca (and --zk-tls-cert/
--zk-tls-key when it requires client certificates); --zk-digest-file names a file holding
user:password for digest authentication (never printed).

--format helm prints the merged configuration as Helm values. Without --zk only the
agents are read (merge). The exit code is 1 when a plan is not feasible or refused,
or a gate has not passed.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd) },
	}
	fs := cmd.Flags()
	o.zk.AddFlags(fs, "", "ZooKeeper of the BookKeeper cluster: host:port[,host:port][/ledgers root] or a metadataServiceUri")
	fs.StringVar(&o.mlChroot, "ml-chroot", "", "chroot of Pulsar's metadata store on the same ZooKeeper, if any")
	fs.BoolVar(&o.noML, "no-managed-ledgers", false, "do not read Pulsar's managed ledgers (no offload figures)")
	fs.StringSliceVar(&o.agents, "agents", nil, "bookie agent base URLs (http://host:9580), matched to bookies by host, or BOOKIE_ID=URL")
	fs.StringVar(&o.agentTemplate, "agent-url", "", "agent base URL template for every bookie, {host} replaced by the bookie's host")
	fs.DurationVar(&o.agentTimeout, "agent-timeout", 10*time.Second, "bound on each agent request")
	fs.StringSliceVar(&o.remove, "remove", nil, "bookie ids to remove (scale-in plan)")
	fs.IntVar(&o.removeCount, "remove-count", 0, "plan removing this many bookies: with --statefulset the highest ordinals, else those with the least data to copy")
	fs.Var(&o.rate, "rereplication-rate", "re-replication rate per second (e.g. 200MiB); default: measured by the agents")
	fs.IntVar(&o.workers, "autorecovery-workers", 0, "AutoRecovery replication workers (0: the AutoRecovery processes voting for auditor in ZooKeeper, at least 1)")
	fs.Float64Var(&o.perLedger, "per-ledger-seconds", cluster.DefaultPerLedgerSeconds, "AutoRecovery overhead per ledger")
	fs.IntVar(&o.bookieHTTPPort, "bookie-http-port", 8000, "the bookies' HTTP port when their registration does not publish one (read-only step, running configuration)")
	fs.BoolVar(&o.statefulSet, "statefulset", false, "the bookies are a StatefulSet's pods: remove the highest ordinals first (--remove-count picks them)")
	fs.StringVar(&o.gate, "gate", "", "check the gate after removing this bookie id: re-replicated, nothing under-replicated, auditor running, cookie deleted")
	fs.BoolVar(&o.noRunning, "no-running-config", false, "do not read the bookies' running configuration")
	fs.StringVarP(&o.format, "format", "o", "text", "text, json or helm")
	fs.StringVar(&o.format, "output", "text", "same as --format")
	return cmd
}

func (o *clusterOptions) run(cmd *cobra.Command) error {
	ctx := cmd.Context()
	if o.format != "text" && o.format != "json" && o.format != "helm" {
		return fmt.Errorf("--format %q: want text, json or helm", o.format)
	}
	if o.zk.ZK == "" && len(o.agents) == 0 {
		return errors.New("give --zk (the cluster) and/or --agents")
	}
	if (len(o.remove) > 0 || o.removeCount > 0 || o.gate != "") && o.zk.ZK == "" {
		return errors.New("a scale-in plan and a gate need --zk")
	}
	if o.gate != "" && (len(o.remove) > 0 || o.removeCount > 0) {
		return errors.New("--gate checks one step of a plan already under way: not with --remove or --remove-count")
	}
	if o.workers < 0 || o.rate < 0 || o.agentTimeout <= 0 {
		return errors.New("--autorecovery-workers and --rereplication-rate must not be negative, --agent-timeout must be positive")
	}
	explicit, byHost, err := cluster.ParseAgents(o.agents)
	if err != nil {
		return fmt.Errorf("--agents %w", err)
	}
	copts := cluster.Options{AgentTemplate: o.agentTemplate, Timeout: o.agentTimeout,
		RunningConfig: o.zk.ZK != "" && !o.noRunning && o.gate == "", BookieHTTPPort: o.bookieHTTPPort,
		Logger: cli.Logger(cmd.ErrOrStderr(), slog.LevelWarn)}
	if o.zk.ZK != "" {
		s, root, err := o.zk.Connect(ctx, nil)
		if err != nil {
			return err
		}
		defer s.Close()
		copts.Conn, copts.LedgersRoot = s, root
		if !o.noML {
			copts.ManagedLedgers = status.LedgerOwners(mledger.New(s, &mledger.Options{Chroot: o.mlChroot}))
		}
	}
	copts.Agents, copts.AgentURLs = explicit, byHost
	ao := cluster.AssessOptions{Read: copts, Gate: o.gate}
	if len(o.remove) > 0 || o.removeCount > 0 {
		ao.ScaleIn = &cluster.PlanOptions{Remove: o.remove, RemoveCount: o.removeCount, StatefulSet: o.statefulSet,
			RereplicationRate: float64(o.rate), Workers: o.workers, PerLedgerSeconds: o.perLedger, HTTPPort: o.bookieHTTPPort, ZK: o.zk.ZK}
	}
	a, err := cluster.Assess(ctx, ao)
	if err != nil {
		return err
	}
	var out bytes.Buffer
	switch o.format {
	case "helm":
		switch {
		case a.MergeErr != nil:
			return fmt.Errorf("--format helm: %w: %s", a.MergeErr, strings.Join(a.View.Errors, "; "))
		case a.Merged == nil:
			return fmt.Errorf("--format helm: %w: no agent gave a recommendation (give --agents or --agent-url): %s", cluster.ErrAgent, strings.Join(a.View.Errors, "; "))
		}
		err = bookieagent.Render(&out, a.Merged.Recommendation, bookieagent.FormatHelm)
	case "json":
		err = cli.WriteJSONUnescaped(&out, a)
	default:
		err = cluster.WriteText(&out, a.View, a.Merged, a.Plan, a.Drift, a.Gate)
	}
	if err != nil {
		return err
	}
	if _, err := io.Copy(cmd.OutOrStdout(), &out); err != nil {
		return err
	}
	if a.Plan != nil {
		if err := a.Plan.Err(); err != nil {
			return err
		}
	}
	if a.Gate != nil {
		return a.Gate.Err()
	}
	return nil
}
