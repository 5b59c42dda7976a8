package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/tierkeeper/tierkeeper/internal/mlproto"
	"github.com/tierkeeper/tierkeeper/internal/units"
	"github.com/tierkeeper/tierkeeper/offloader/mlmeta"
)

func init() { addCommand(newTopicsCmd) }

type topicsOptions struct {
	namespace   string
	topics      []string
	chroot      string
	summary     bool
	concurrency int
}

func newTopicsCmd(g *globalOptions) *cobra.Command {
	o := &topicsOptions{}
	cmd := &cobra.Command{
		Use:   "topics",
		Short: "List Pulsar managed ledgers with their ledgers, sizes, ages and offload state",
		Long: strings.TrimSpace(`
List the managed ledgers (persistent topics and their partitions) stored
under /managed-ledgers in ZooKeeper, and each one's BookKeeper ledgers:
entries, size, age (since the ledger was closed) and offload state:

  open                  the last ledger; being written, never offloaded
  bookkeeper            closed, data only in BookKeeper
  offloading            an offload attempt is recorded but not complete
  offloaded             in the object store; BookKeeper copy still present
  offloaded-bk-deleted  in the object store; BookKeeper ledger deleted

Compressed metadata (managedLedgerInfoCompressionType) is read too. The
--zk root suffix names the BookKeeper ledgers root and is not used here;
give --ml-chroot when Pulsar's metadataStoreUrl has a chroot. Nothing is
written. Managed ledgers that cannot be read are listed with their error
and make the command exit 1 after printing the rest.`),
		Example: `  offloader topics --zk 127.0.0.1:2181
  offloader topics --zk zk1:2181,zk2:2181 --namespace public/default --summary
  offloader topics --zk 127.0.0.1:2181 --topic persistent://public/default/orders -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd.Context(), g, cmd) },
	}
	f := cmd.Flags()
	f.StringVar(&o.namespace, "namespace", "", "only this `namespace` (tenant/ns, or tenant/cluster/ns for v1)")
	f.StringSliceVar(&o.topics, "topic", nil, "only these `topics` (repeatable; a partitioned topic means all its partitions)")
	f.StringVar(&o.chroot, "ml-chroot", "", "`path` prefix of Pulsar's metadata store in ZooKeeper (chroot of metadataStoreUrl)")
	f.BoolVar(&o.summary, "summary", false, "one row per managed ledger instead of one per ledger")
	f.IntVar(&o.concurrency, "concurrency", 8, "managed ledgers read in parallel")
	return cmd
}

// topicsJSON is the --output json document.
type topicsJSON struct {
	ManagedLedgers []mlJSON    `json:"managedLedgers"`
	Totals         totalsJSON  `json:"totals"`
	States         []string    `json:"states"`
	Errors         []errorJSON `json:"errors,omitempty"`
	ReadAt         time.Time   `json:"readAt"`
	_              struct{}    `json:"-"`
}

type mlJSON struct {
	Name        string       `json:"name"`
	Topic       string       `json:"topic,omitempty"`
	Path        string       `json:"path"`
	Version     int32        `json:"version"`
	Codec       string       `json:"codec"`
	StoredBytes int          `json:"storedBytes"`
	Modified    time.Time    `json:"modified"`
	Terminated  bool         `json:"terminated,omitempty"`
	Ledgers     []ledgerJSON `json:"ledgers"`
}

type ledgerJSON struct {
	LedgerID   int64        `json:"ledgerId"`
	Entries    int64        `json:"entries"`
	Size       int64        `json:"size"`
	Timestamp  int64        `json:"timestamp"`
	AgeSeconds *float64     `json:"ageSeconds,omitempty"`
	State      string       `json:"state"`
	Offload    *offloadJSON `json:"offload,omitempty"`
}

type offloadJSON struct {
	UUID              string `json:"uuid,omitempty"`
	Complete          bool   `json:"complete"`
	BookkeeperDeleted bool   `json:"bookkeeperDeleted"`
	Timestamp         int64  `json:"timestamp,omitempty"`
	Driver            string `json:"driver,omitempty"`
	Provider          string `json:"provider,omitempty"`
	Bucket            string `json:"bucket,omitempty"`
	Region            string `json:"region,omitempty"`
	ServiceEndpoint   string `json:"serviceEndpoint,omitempty"`
}

type totalsJSON struct {
	ManagedLedgers int64            `json:"managedLedgers"`
	Ledgers        int64            `json:"ledgers"`
	Entries        int64            `json:"entries"`
	Bytes          int64            `json:"bytes"`
	BytesByState   map[string]int64 `json:"bytesByState"`
	LedgersByState map[string]int64 `json:"ledgersByState"`
}

type errorJSON struct {
	Name  string `json:"name"`
	Error string `json:"error"`
}

func (o *topicsOptions) run(ctx context.Context, g *globalOptions, cmd *cobra.Command) error {
	if o.concurrency < 1 {
		return fmt.Errorf("--concurrency %d: want at least 1", o.concurrency)
	}
	if o.namespace != "" && len(o.topics) > 0 {
		return errors.New("--namespace and --topic are exclusive")
	}
	log := g.logger(cmd.ErrOrStderr())
	conn, _, err := g.connectZK(ctx, log)
	if err != nil {
		return err
	}
	defer conn.Close()
	store := mlmeta.New(conn, &mlmeta.Options{Chroot: o.chroot, ListConcurrency: o.concurrency, Logger: log})

	names, err := o.selectNames(ctx, store)
	if err != nil {
		return zkFailed(conn, err)
	}
	progress := newTopicsProgress(cmd.ErrOrStderr(), !g.json(), len(names))
	results, err := store.GetMany(ctx, names, progress.update)
	progress.done()
	if err != nil {
		return zkFailed(conn, err)
	}
	doc := buildTopicsDoc(results, time.Now(), o.chroot)
	out := cmd.OutOrStdout()
	if g.json() {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(doc); err != nil {
			return err
		}
	} else if err := printTopics(out, doc, o.summary); err != nil {
		return err
	}
	if n := len(doc.Errors); n > 0 {
		return fmt.Errorf("%d of %d managed ledgers could not be read", n, len(names))
	}
	return nil
}

// selectNames resolves the filters to managed-ledger names.
func (o *topicsOptions) selectNames(ctx context.Context, store *mlmeta.Store) ([]string, error) {
	switch {
	case o.namespace != "":
		return store.ListNamespace(ctx, o.namespace)
	case len(o.topics) > 0:
		var names []string
		for _, t := range o.topics {
			tn, err := mlmeta.ParseTopic(t)
			if err != nil {
				return nil, fmt.Errorf("--topic: %w", err)
			}
			if !tn.Persistent() {
				return nil, fmt.Errorf("--topic %s: non-persistent topics have no managed ledger", t)
			}
			if _, err := store.Get(ctx, tn.MLName()); err == nil || !errors.Is(err, mlmeta.ErrNotFound) {
				names = append(names, tn.MLName()) // exists, or fails visibly later
				continue
			}
			// A partitioned topic has no node of its own: take its partitions.
			all, err := store.ListNamespace(ctx, tn.NamespacePath())
			if err != nil {
				return nil, err
			}
			found := false
			for _, ml := range all {
				p, err := mlmeta.ParseMLName(ml)
				if err == nil && p.Partition >= 0 && p.PartitionedTopic() == tn {
					names = append(names, ml)
					found = true
				}
			}
			if !found {
				return nil, fmt.Errorf("--topic %s: %w (no node %s and no partitions)", t, mlmeta.ErrNotFound, mlmeta.Path(tn.MLName()))
			}
		}
		slices.Sort(names)
		return slices.Compact(names), nil
	default:
		return store.List(ctx)
	}
}

func buildTopicsDoc(results []mlmeta.Result, now time.Time, chroot string) topicsJSON {
	doc := topicsJSON{
		ManagedLedgers: []mlJSON{},
		ReadAt:         now.UTC(),
		Totals:         totalsJSON{BytesByState: map[string]int64{}, LedgersByState: map[string]int64{}},
	}
	for s := mlmeta.StateOpen; s <= mlmeta.StateOffloadedBKDeleted; s++ {
		doc.States = append(doc.States, s.String())
		doc.Totals.BytesByState[s.String()] = 0
		doc.Totals.LedgersByState[s.String()] = 0
	}
	for _, r := range results {
		if r.Err != nil {
			doc.Errors = append(doc.Errors, errorJSON{Name: r.Name, Error: r.Err.Error()})
			continue
		}
		snap := r.Snapshot
		m := mlJSON{
			Name: snap.Name, Path: strings.TrimRight(chroot, "/") + mlmeta.Path(snap.Name), Version: snap.Version,
			Codec: snap.Codec.String(), StoredBytes: snap.StoredBytes, Modified: snap.Modified.UTC(),
			Terminated: snap.Info.TerminatedPosition != nil, Ledgers: []ledgerJSON{},
		}
		if tn, err := mlmeta.ParseMLName(snap.Name); err == nil {
			m.Topic = tn.String()
		}
		states := mlmeta.States(snap.Info)
		for i, li := range snap.Info.GetLedgerInfo() {
			lj := ledgerJSON{
				LedgerID: li.GetLedgerId(), Entries: li.GetEntries(), Size: li.GetSize(),
				Timestamp: li.GetTimestamp(), State: states[i].String(),
			}
			if ts := li.GetTimestamp(); ts > 0 {
				age := now.Sub(time.UnixMilli(ts)).Seconds()
				lj.AgeSeconds = &age
			}
			lj.Offload = offloadOf(li.GetOffloadContext())
			m.Ledgers = append(m.Ledgers, lj)
			doc.Totals.Ledgers++
			doc.Totals.Entries += li.GetEntries()
			doc.Totals.Bytes += li.GetSize()
			doc.Totals.BytesByState[lj.State] += li.GetSize()
			doc.Totals.LedgersByState[lj.State]++
		}
		doc.Totals.ManagedLedgers++
		doc.ManagedLedgers = append(doc.ManagedLedgers, m)
	}
	return doc
}

func offloadOf(oc *mlproto.OffloadContext) *offloadJSON {
	if oc == nil {
		return nil
	}
	o := &offloadJSON{Complete: oc.GetComplete(), BookkeeperDeleted: oc.GetBookkeeperDeleted(), Timestamp: oc.GetTimestamp()}
	if id, ok := mlmeta.AttemptUUID(oc); ok {
		o.UUID = id.String()
	}
	if md := oc.GetDriverMetadata(); md != nil {
		d := mlmeta.DriverFromMetadata(md)
		o.Driver, o.Provider, o.Bucket, o.Region, o.ServiceEndpoint = d.Name, d.Provider, d.Bucket, d.Region, d.ServiceEndpoint
	}
	return o
}

func printTopics(w io.Writer, doc topicsJSON, summary bool) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if summary {
		fmt.Fprintln(tw, "TOPIC\tLEDGERS\tENTRIES\tSIZE\tOFFLOADED\tOLDEST\tCODEC\t")
		for _, m := range doc.ManagedLedgers {
			var entries, size, off int64
			oldest := "-"
			for _, l := range m.Ledgers {
				entries += l.Entries
				size += l.Size
				if strings.HasPrefix(l.State, "offloaded") {
					off += l.Size
				}
				if l.AgeSeconds != nil && oldest == "-" {
					oldest = topicsAge(*l.AgeSeconds)
				}
			}
			fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\t%s\t\n", topicOrName(m), len(m.Ledgers), entries,
				topicsBytes(size), topicsBytes(off), oldest, m.Codec)
		}
	} else {
		fmt.Fprintln(tw, "TOPIC\tLEDGER\tENTRIES\tSIZE\tAGE\tSTATE\tATTEMPT\t")
		for _, m := range doc.ManagedLedgers {
			if len(m.Ledgers) == 0 {
				fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t(no ledgers)\t\t\n", topicOrName(m))
			}
			for _, l := range m.Ledgers {
				age := "-"
				if l.AgeSeconds != nil {
					age = topicsAge(*l.AgeSeconds)
				}
				attempt := ""
				if l.Offload != nil {
					attempt = l.Offload.UUID
				}
				fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\t%s\t\n", topicOrName(m), l.LedgerID, l.Entries,
					topicsBytes(l.Size), age, l.State, attempt)
			}
		}
	}
	for _, e := range doc.Errors {
		fmt.Fprintf(tw, "%s\t\t\t\t\terror: %s\t\t\n", e.Name, e.Error)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	t := doc.Totals
	_, err := fmt.Fprintf(w, "\n%d managed ledgers, %d ledgers, %d entries, %s; offloaded %s, only in BookKeeper %s\n",
		t.ManagedLedgers, t.Ledgers, t.Entries, topicsBytes(t.Bytes),
		topicsBytes(t.BytesByState["offloaded"]+t.BytesByState["offloaded-bk-deleted"]),
		topicsBytes(t.BytesByState["bookkeeper"]+t.BytesByState["offloading"]+t.BytesByState["open"]))
	return err
}

func topicOrName(m mlJSON) string {
	if m.Topic != "" {
		return m.Topic
	}
	return m.Name
}

func topicsBytes(n int64) string { return units.HumanBytes(n) }

func topicsAge(sec float64) string {
	d := time.Duration(sec * float64(time.Second))
	switch {
	case d < 0:
		return "-" + topicsAge(-sec)
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	default:
		return fmt.Sprintf("%dd%02dh", int(d.Hours())/24, int(d.Hours())%24)
	}
}

// topicsProgress prints "read N/M managed ledgers" to a terminal stderr.
type topicsProgress struct {
	w       io.Writer
	total   int
	start   time.Time
	enabled bool
	last    time.Time
}

func newTopicsProgress(w io.Writer, want bool, total int) *topicsProgress {
	return &topicsProgress{w: w, total: total, start: time.Now(), enabled: want && isTerminal(w) && total > 0}
}

func (p *topicsProgress) update(done int) {
	if !p.enabled || (time.Since(p.last) < 100*time.Millisecond && done < p.total) {
		return
	}
	p.last = time.Now()
	rate := float64(done) / max(time.Since(p.start).Seconds(), 1e-3)
	eta := "-"
	if rate > 0 {
		eta = time.Duration(float64(p.total-done) / rate * float64(time.Second)).Round(time.Second).String()
	}
	fmt.Fprintf(p.w, "\rread %d/%d managed ledgers (%.0f/s, ETA %s)   ", done, p.total, rate, eta)
}

func (p *topicsProgress) done() {
	if p.enabled {
		fmt.Fprint(p.w, "\r\033[K")
	}
}
