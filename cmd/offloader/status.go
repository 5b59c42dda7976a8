package main

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

func init() { addCommand(newStatusCmd) }

type statusOptions struct {
	service string
	timeout time.Duration
	all     bool
}

func newStatusCmd(g *globalOptions) *cobra.Command {
	o := &statusOptions{}
	cmd := &cobra.Command{
		Use:   "status --service URL",
		Short: "Show a running offload service's status (lag, offloaded bytes, parked ledgers, errors)",
		Long: strings.TrimSpace(`
Read a running service's /status (offloader run; http.listen in its config)
and render it: totals (bytes on BookKeeper and offloaded, offload lag in
bytes and age, trims due), ledgers running, backing off or parked with their
last error, and per topic the rule, lag, next action and last error (topics
with lag or an error; --all for every topic). -o json prints the document
as the service serves it.`),
		Example: `  offloader status --service http://offloader.pulsar:8090
  offloader status --service http://127.0.0.1:8090 --all -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd.Context(), g, cmd) },
	}
	cmd.Flags().StringVar(&o.service, "service", "", "base `URL` of a running offload service (http://host:8090)")
	cmd.Flags().DurationVar(&o.timeout, "timeout", 10*time.Second, "bound of the request")
	cmd.Flags().BoolVar(&o.all, "all", false, "list every topic, not only those with lag or errors")
	return cmd
}

func (o *statusOptions) run(ctx context.Context, g *globalOptions, cmd *cobra.Command) error {
	if o.service == "" {
		return errors.New("--service is required (the base URL of a running offloader run)")
	}
	st, raw, err := fetchServiceStatus(ctx, o.service, o.timeout)
	if err != nil {
		return err
	}
	if g.json() {
		_, err := cmd.OutOrStdout().Write(raw)
		return err
	}
	return printServiceStatus(cmd.OutOrStdout(), st, o.all)
}
