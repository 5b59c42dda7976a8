package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	tkzk "github.com/tierkeeper/tierkeeper/internal/zk"
)

type ledgerListOptions struct {
	zk      zkOptions
	details bool
}

func newLedgerListCmd(g *globalOptions) *cobra.Command {
	o := &ledgerListOptions{}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the ledgers that have metadata in ZooKeeper",
		Long: strings.TrimSpace(`
List every ledger id under the ledgers root, in ascending order, for the
layout named in LAYOUT (hierarchical, long hierarchical, legacy
hierarchical or flat). With --details each ledger's metadata is read too
(one ZooKeeper read per ledger): state, last entry, length and, for Pulsar
ledgers, the managed ledger it belongs to.`),
		Example: "  offloader ledger list --zk 127.0.0.1:2181 --details",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			log := g.logger(cmd.ErrOrStderr())
			store, sess, err := o.zk.openStore(ctx, g, log)
			if err != nil {
				return err
			}
			defer sess.Close()
			ids, err := store.ListLedgers(ctx)
			if err != nil {
				return sess.Failed(err)
			}
			out := cmd.OutOrStdout()
			enc := json.NewEncoder(out)
			if !o.details {
				if g.json() {
					if ids == nil {
						ids = []int64{}
					}
					return enc.Encode(ids)
				}
				for _, id := range ids {
					fmt.Fprintln(out, id)
				}
				return nil
			}
			for i, id := range ids {
				md, err := store.ReadLedger(ctx, id)
				if tkzk.Unavailable(err) || ctx.Err() != nil {
					// ZooKeeper is gone: every further read would fail too.
					return sess.Failed(fmt.Errorf("ledger list stopped after %d of %d ledgers: %w", i, len(ids), err))
				}
				if err != nil {
					// Deleted while listing, or corrupt: report and go on.
					log.Warn("cannot read ledger metadata", "ledger", id, "err", err)
					if g.json() {
						if err := enc.Encode(map[string]any{"ledger": id, "error": err.Error()}); err != nil {
							return err
						}
					} else {
						fmt.Fprintf(out, "%d\terror: %v\n", id, err)
					}
					continue
				}
				li := store.Describe(md)
				if g.json() {
					if err := enc.Encode(li); err != nil {
						return err
					}
					continue
				}
				fmt.Fprintf(out, "%d\t%s\tentries=%d\tlength=%d\tE/W/A=%d/%d/%d\t%s\n", id, li.State, li.LastEntryID+1, li.Length,
					li.EnsembleSize, li.WriteQuorum, li.AckQuorum, li.CustomMetadata["pulsar/managed-ledger"])
			}
			return nil
		},
	}
	o.zk.addFlags(cmd.Flags())
	cmd.Flags().BoolVar(&o.details, "details", false, "read each ledger's metadata (JSON: one object per line)")
	return cmd
}
