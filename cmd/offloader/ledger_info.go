package main

import (
	"errors"
	"strings"

	"github.com/spf13/cobra"
)

type ledgerInfoOptions struct {
	zk     zkOptions
	ledger int64
}

func newLedgerInfoCmd(g *globalOptions) *cobra.Command {
	o := &ledgerInfoOptions{ledger: -1}
	cmd := &cobra.Command{
		Use:   "info --ledger ID",
		Short: "Print a ledger's metadata",
		Long: strings.TrimSpace(`
Print a ledger's metadata as stored in ZooKeeper: state, last entry, length,
quorums, digest type, ensembles (with the entry each starts at) and custom
metadata (Pulsar records its managed-ledger name there). The password is
never printed.`),
		Example: "  offloader ledger info --zk 127.0.0.1:2181 --ledger 12345 -o json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.ledger < 0 {
				return errors.New("--ledger is required (a non-negative ledger id)")
			}
			ctx := cmd.Context()
			log := g.logger(cmd.ErrOrStderr())
			store, sess, err := o.zk.openStore(ctx, g, log)
			if err != nil {
				return err
			}
			defer sess.Close()
			md, err := store.ReadLedger(ctx, o.ledger)
			if err != nil {
				return sess.Failed(err)
			}
			li := store.Describe(md)
			if g.json() {
				return writeJSON(cmd.OutOrStdout(), li)
			}
			printLedgerInfo(cmd.OutOrStdout(), li)
			return nil
		},
	}
	o.zk.addFlags(cmd.Flags())
	cmd.Flags().Int64Var(&o.ledger, "ledger", -1, "ledger `id`")
	return cmd
}
