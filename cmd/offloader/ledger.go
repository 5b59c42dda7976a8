package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tierkeeper/tierkeeper/bookkeeper/client"
	"github.com/tierkeeper/tierkeeper/bookkeeper/metadata"
	tkzk "github.com/tierkeeper/tierkeeper/internal/zk"
	"github.com/tierkeeper/tierkeeper/offloader"
)

func init() { addCommand(newLedgerCmd) }

func newLedgerCmd(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ledger",
		Short: "Inspect and read BookKeeper ledgers (metadata from ZooKeeper, entries from the bookies)",
		Long: strings.TrimSpace(`
Commands that read BookKeeper ledgers directly: their metadata from
ZooKeeper (all ledger layouts, metadata formats v1-v3) and their entries from
the bookies over the v2 protocol (--bk-wire v3 for v3), verifying every
entry's digest. Only closed ledgers are read, and reads never fence a
ledger.`),
	}
	cmd.AddCommand(newLedgerInfoCmd(g), newLedgerListCmd(g), newLedgerReadCmd(g))
	return cmd
}

// zkOptions are the ledger commands' ZooKeeper settings.
type zkOptions struct {
	LedgersRoot string
	Layout      string
}

func (o *zkOptions) addFlags(f *pflag.FlagSet) {
	f.StringVar(&o.LedgersRoot, "ledgers-root", "", "BookKeeper ledgers root znode (default: from --zk, else /ledgers)")
	f.StringVar(&o.Layout, "layout", "", "override the ledger layout in LAYOUT: hierarchical, longhierarchical, legacyhierarchical, flat")
}

// apply sets the ZooKeeper part of pc from the global flags, --ledgers-root
// and --layout.
func (o *zkOptions) apply(g *globalOptions, pc *offloader.PeersConfig) error {
	zp, err := g.zkPeers()
	if err != nil {
		return err
	}
	pc.ZKServers, pc.ZKRoot, pc.ZKOptions, pc.ZKTLSFrom = zp.ZKServers, zp.ZKRoot, zp.ZKOptions, zp.ZKTLSFrom
	pc.LedgersRoot = o.LedgersRoot
	if o.Layout != "" {
		if pc.Layout, err = metadata.ParseManager(o.Layout); err != nil {
			return fmt.Errorf("--layout: %w", err)
		}
	}
	return nil
}

// openPeers opens ZooKeeper and the ledger metadata store, and the bookie
// client with bk (nil: none).
func (o *zkOptions) openPeers(ctx context.Context, g *globalOptions, log *slog.Logger, bk *client.Options) (*offloader.Peers, error) {
	var pc offloader.PeersConfig
	if err := o.apply(g, &pc); err != nil {
		return nil, err
	}
	return offloader.OpenPeers(ctx, pc, offloader.PeersOptions{Logger: log, Ledgers: true, Bookies: bk})
}

// openStore connects to ZooKeeper and opens the ledger metadata store.
// The caller closes the session.
func (o *zkOptions) openStore(ctx context.Context, g *globalOptions, log *slog.Logger) (*metadata.Store, *tkzk.Session, error) {
	p, err := o.openPeers(ctx, g, log, nil)
	if err != nil {
		return nil, nil, err
	}
	return p.Ledgers, p.ZK, nil
}

func printLedgerInfo(w io.Writer, li metadata.LedgerInfo) {
	fmt.Fprintf(w, "ledger          %d\n", li.Ledger)
	fmt.Fprintf(w, "path            %s (format v%d, znode version %d)\n", li.Path, li.FormatVersion, li.ZNodeVersion)
	fmt.Fprintf(w, "state           %s\n", li.State)
	fmt.Fprintf(w, "entries         0..%d (%d entries)\n", li.LastEntryID, li.LastEntryID+1)
	fmt.Fprintf(w, "length          %d bytes\n", li.Length)
	fmt.Fprintf(w, "quorum          E=%d W=%d A=%d\n", li.EnsembleSize, li.WriteQuorum, li.AckQuorum)
	if li.HasPassword {
		fmt.Fprintf(w, "digest          %s\n", li.DigestType)
	} else {
		fmt.Fprintf(w, "digest          (not recorded: v1 metadata; pass --digest/--password to read)\n")
	}
	fmt.Fprintf(w, "ctime           %d\n", li.Ctime)
	for _, e := range li.Ensembles {
		fmt.Fprintf(w, "ensemble @%-6d %s\n", e.FirstEntryID, strings.Join(e.Bookies, " "))
	}
	keys := make([]string, 0, len(li.CustomMetadata))
	for k := range li.CustomMetadata {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(w, "custom          %s=%s\n", k, li.CustomMetadata[k])
	}
}
