package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/tierkeeper/tierkeeper/offloader"
	"github.com/tierkeeper/tierkeeper/offloader/pipeline"
)

func init() { addCommand(newRunCmd) }

type runOptions struct {
	config      configOption
	check       bool
	printConfig bool
}

func newRunCmd(g *globalOptions) *cobra.Command {
	o := &runOptions{}
	cmd := &cobra.Command{
		Use:   "run --config FILE",
		Short: "Run the offload service (policy, scheduler, sweeper, status and metrics)",
		Long: strings.TrimSpace(`
Run the offload service described by a YAML config (configs/offloader.yaml is
a commented example): it finds closed ledgers of Pulsar topics in ZooKeeper,
chooses by policy what to offload next, copies them to the object store and
switches the managed-ledger metadata, and serves /status, /metrics, /healthz
and /readyz.

The config is parsed strictly: an unknown key is an error naming the key and
its line. Secrets are read with !env NAME or !file PATH and never printed.

Logs go to stderr (--log-level; info shows every job). SIGTERM or SIGINT
stops taking work; ledgers in flight get scheduler.stop_timeout to finish,
then stop at their next step boundary (every step is crash-safe, so a
restart resumes from ZooKeeper); the process exits within stop_timeout plus
the bound of the step in progress (its ZooKeeper, bookie or store call).

Fault injection (tests): $TIERKEEPER_FAILPOINTS stops, delays or kills the
process at the pipeline's named failpoints, as for offloader offload
(docs/offload.md).

--check validates the config, then checks that ZooKeeper, the store, the
admin URL and the bookie usage source answer (each bounded in time, saying
what it waited for), prints one line per check and exits: 0 when all pass,
1 otherwise. The --zk flag is not used: the config names ZooKeeper.`),
		Example: `  offloader run --config /etc/tierkeeper/offloader.yaml --check
  offloader run --config configs/offloader.yaml --check --print-config -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd.Context(), g, cmd) },
	}
	f := cmd.Flags()
	o.config.addFlag(f)
	f.BoolVar(&o.check, "check", false, "validate the config and the reachability of its peers, then exit")
	f.BoolVar(&o.printConfig, "print-config", false, "with --check: also print the effective config (secrets redacted)")
	return cmd
}

type checkJSON struct {
	Config string                  `json:"config"`
	OK     bool                    `json:"ok"`
	Checks []offloader.CheckResult `json:"checks"`
	// Effective is the effective config, secrets redacted (--print-config).
	Effective *offloader.Config `json:"effective,omitempty"`
}

func (o *runOptions) run(ctx context.Context, g *globalOptions, cmd *cobra.Command) error {
	cfg, err := o.config.load()
	if err != nil {
		return err
	}
	log := g.logger(cmd.ErrOrStderr())
	if !o.check {
		fps, err := pipeline.FailpointsFromEnv()
		if err != nil {
			return err
		}
		svc, err := offloader.New(ctx, cfg, offloader.Deps{Logger: log, Failpoints: fps})
		if err != nil {
			return err
		}
		return svc.Run(ctx)
	}
	res := offloader.Check(ctx, cfg, offloader.CheckOptions{Logger: log})
	ok := true
	for _, r := range res {
		ok = ok && r.OK
	}
	doc := checkJSON{Config: o.config.path, OK: ok, Checks: res}
	if o.printConfig {
		doc.Effective = cfg
	}
	if err := printResult(cmd.OutOrStdout(), g, doc, func(w io.Writer) error {
		return printChecks(w, o.config.path, res, cfg, o.printConfig)
	}); err != nil {
		return err
	}
	if !ok {
		return errors.New("check failed")
	}
	return nil
}

func printChecks(w io.Writer, path string, res []offloader.CheckResult, cfg *offloader.Config, printConfig bool) error {
	if printConfig {
		fmt.Fprintf(w, "# effective config (secrets redacted)\n%s\n", cfg.Render())
	}
	fmt.Fprintf(w, "config %s: valid\n", path)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CHECK\tRESULT\tTOOK\tTARGET\tDETAIL")
	for _, r := range res {
		st := "ok"
		switch {
		case r.Skipped:
			st = "skipped"
		case !r.OK:
			st = "FAILED"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Name, st, r.Took, r.Target, r.Detail)
	}
	return tw.Flush()
}
