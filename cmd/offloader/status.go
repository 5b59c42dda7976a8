package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tierkeeper/tierkeeper/offloader"
)

func init() { addCommand(newStatusCmd) }

type statusOptions struct {
	// --service: a running service's /status.
	service string
	timeout time.Duration
	all     bool
	watch   time.Duration
	// TOPIC: the topic's ledgers from the metadata (status_topic.go).
	env envOptions
}

func newStatusCmd(g *globalOptions) *cobra.Command {
	o := &statusOptions{}
	o.env.needBK = true
	cmd := &cobra.Command{
		Use:   "status (TOPIC [--store FILE] [--admin-url URL] | --service URL)",
		Short: "A topic's ledgers (offload state, where brokers read them, objects), or a running service's status",
		Long: strings.TrimSpace(`
With TOPIC: the offload state of every ledger of the topic (every partition
of a partitioned topic), read from ZooKeeper:

  STATE      open, bookkeeper, offloading (an attempt is recorded, not
             complete), offloaded, offloaded-bk-deleted
  READS FROM where a broker reads the ledger: "bookkeeper" or the bucket;
             with --admin-url the broker's own in-memory view
             (internalStats), which differs from the stored state until the
             broker reloads the topic
  BK         whether the BookKeeper copy still exists
  OBJECTS    with --store: whether the attempt's data and index objects are
             in the store, and the data object's size

Nothing is written (with --admin-url the broker loads the topic if it has
not).

With --service: read a running service's /status (offloader run; http.listen
in its config) and render it: totals (bytes on BookKeeper and offloaded,
offload lag in bytes and age, trims due), ledgers running (their step and
the bytes it has read), backing off or parked with their last error, and
per topic the rule, lag, next action and
last error (topics with lag or an error; --all for every topic), and what
the replica did since it started (ledgers offloaded, copy rate, BookKeeper
bytes freed). -o json prints the document as the service serves it.

--watch INTERVAL re-reads and re-renders the status every INTERVAL until
interrupted, under a progress line (offloaded share of offloaded + lag, the
replica's offload rate over the last 30 s, the time left at that rate):
in place on a terminal; otherwise each rendering after a timestamped
separator; with -o json one compact document per line. A failed read is
shown and the watch goes on (a restarting service).`),
		Example: `  offloader status --zk zk1:2181 persistent://public/default/orders
  offloader status --zk zk1:2181 --store s3.yaml --admin-url http://broker:8080 orders -o json
  offloader status --service http://offloader.pulsar:8090
  offloader status --service http://127.0.0.1:8090 --all -o json
  offloader status --service http://127.0.0.1:8090 --watch 1s`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case o.service != "" && len(args) > 0:
				return errors.New("give either TOPIC or --service, not both")
			case len(args) == 1:
				return o.runTopic(cmd, g, args[0])
			}
			return o.run(cmd.Context(), g, cmd)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.service, "service", "", "base `URL` of a running offload service (http://host:8090)")
	f.DurationVar(&o.timeout, "timeout", 10*time.Second, "with --service: bound of the request")
	f.BoolVar(&o.all, "all", false, "with --service: list every topic, not only those with lag or errors")
	f.DurationVar(&o.watch, "watch", 0, "with --service: re-render every `interval` until interrupted")
	o.env.addFlags(f, true)
	return cmd
}

func (o *statusOptions) run(ctx context.Context, g *globalOptions, cmd *cobra.Command) error {
	if o.service == "" {
		return errors.New("give a TOPIC (its ledgers, from ZooKeeper) or --service URL (a running offloader run)")
	}
	if o.watch < 0 {
		return fmt.Errorf("--watch %s: want a positive interval", o.watch)
	}
	if o.watch > 0 {
		return o.watchService(ctx, g, cmd.OutOrStdout())
	}
	st, raw, err := offloader.FetchStatus(ctx, o.service, o.timeout)
	if err != nil {
		return err
	}
	if g.json() {
		_, err := cmd.OutOrStdout().Write(raw)
		return err
	}
	return printServiceStatus(cmd.OutOrStdout(), st, o.all, 0)
}
