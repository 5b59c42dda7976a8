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

	"github.com/tierkeeper/tierkeeper/bookkeeper/metadata"
	tkzk "github.com/tierkeeper/tierkeeper/internal/zk"
)

func init() { addCommand(newLedgerCmd) }

func newLedgerCmd(g *globalOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ledger",
		Short: "Inspect and read BookKeeper ledgers (metadata from ZooKeeper, entries from the bookies)",
		Long: strings.TrimSpace(`
Commands that read BookKeeper ledgers directly: their metadata from
ZooKeeper (all ledger layouts, metadata formats v1-v3) and their entries from
the bookies over the v3 protocol, verifying every entry's digest. Only closed
ledgers are read, and reads never fence a ledger.`),
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

// openStore connects to ZooKeeper and opens the ledger metadata store.
// The caller closes the session.
func (o *zkOptions) openStore(ctx context.Context, g *globalOptions, log *slog.Logger) (*metadata.Store, *tkzk.Session, error) {
	var mgr metadata.Manager
	if o.Layout != "" {
		var err error
		if mgr, err = metadata.ParseManager(o.Layout); err != nil {
			return nil, nil, fmt.Errorf("--layout: %w", err)
		}
	}
	conn, root, err := g.connectZK(ctx, log)
	if err != nil {
		return nil, nil, err
	}
	if o.LedgersRoot != "" {
		root = o.LedgersRoot
	}
	store, err := metadata.NewStore(ctx, conn, metadata.StoreOptions{Root: root, Manager: mgr, Logger: log})
	if err != nil {
		conn.Close()
		return nil, nil, zkFailed(conn, err)
	}
	return store, conn, nil
}

// ledgerInfo is the JSON form of ledger metadata.
type ledgerInfo struct {
	Ledger         int64             `json:"ledger"`
	Path           string            `json:"path"`
	FormatVersion  int               `json:"formatVersion"`
	ZNodeVersion   int32             `json:"znodeVersion"`
	State          string            `json:"state"`
	LastEntryID    int64             `json:"lastEntryId"`
	Length         int64             `json:"length"`
	EnsembleSize   int               `json:"ensembleSize"`
	WriteQuorum    int               `json:"writeQuorum"`
	AckQuorum      int               `json:"ackQuorum"`
	DigestType     string            `json:"digestType,omitempty"`
	HasPassword    bool              `json:"hasPassword"`
	Ctime          int64             `json:"ctime"`
	Ensembles      []ensembleInfo    `json:"ensembles"`
	CustomMetadata map[string]string `json:"customMetadata,omitempty"`
}

type ensembleInfo struct {
	FirstEntryID int64    `json:"firstEntryId"`
	Bookies      []string `json:"bookies"`
}

func toLedgerInfo(s *metadata.Store, m *metadata.LedgerMetadata) ledgerInfo {
	p, _ := s.LedgerPath(m.LedgerID)
	li := ledgerInfo{
		Ledger: m.LedgerID, Path: p, FormatVersion: m.FormatVersion, ZNodeVersion: m.Version, State: m.State.String(),
		LastEntryID: m.LastEntryID, Length: m.Length, EnsembleSize: m.EnsembleSize, WriteQuorum: m.WriteQuorum,
		AckQuorum: m.AckQuorum, HasPassword: m.HasPassword, Ctime: m.Ctime,
	}
	if m.HasPassword {
		li.DigestType = m.DigestType.String()
	}
	for _, seg := range m.Segments {
		li.Ensembles = append(li.Ensembles, ensembleInfo{FirstEntryID: seg.FirstEntryID, Bookies: seg.Bookies})
	}
	if len(m.CustomMetadata) > 0 {
		li.CustomMetadata = map[string]string{}
		for k, v := range m.CustomMetadata {
			li.CustomMetadata[k] = string(v)
		}
	}
	return li
}

func printLedgerInfo(w io.Writer, li ledgerInfo) {
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
