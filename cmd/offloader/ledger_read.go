package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/tierkeeper/tierkeeper/bookkeeper/client"
	"github.com/tierkeeper/tierkeeper/bookkeeper/digest"
	"github.com/tierkeeper/tierkeeper/bookkeeper/wire"
	"github.com/tierkeeper/tierkeeper/internal/connflags"
	"github.com/tierkeeper/tierkeeper/internal/units"
	"github.com/tierkeeper/tierkeeper/offloader"
	blobclient "github.com/tierkeeper/tierkeeper/offloader/blob/client"
)

type ledgerReadOptions struct {
	zk          zkOptions
	bk          connflags.BookKeeper
	store       storeOptions
	topic       string
	uuid        string
	mlChroot    string
	ledger      int64
	from, to    int64
	payload     string
	readTimeout time.Duration
	window      int
	digest      string
	password    string
	verifyOnly  bool
	maxFrame    int
}

func newLedgerReadCmd(g *globalOptions) *cobra.Command {
	o := &ledgerReadOptions{ledger: -1, to: -1}
	cmd := &cobra.Command{
		Use:   "read --ledger ID [--from N] [--to M]",
		Short: "Stream a closed ledger's entries from the bookies, verifying digests",
		Long: strings.TrimSpace(`
Read entries of a CLOSED ledger straight from the bookies (BookKeeper's v3
protocol) and print one line (or, with -o json, one JSON object) per entry:
entry id, payload size, cumulative length, the writer's LAC, the bookie that
served it and the payload's SHA-256. Every entry's digest (CRC32, CRC32C,
HMAC or DUMMY, from the metadata) is verified; a corrupt or unreachable
replica is skipped for the next one of the entry's write set. The read
stops with an error if an entry can not be read from any replica.

Reads never fence the ledger, so this is safe while Pulsar runs. Open
ledgers (still being written) and ledgers in recovery are refused.

With --store FILE the entries come from an offloaded ledger's objects in
the object store instead (the ledger's BookKeeper copy may be gone): the
offload attempt is found in the managed-ledger metadata of --topic, or
given with --uuid. Every block, record and padding is checked as Pulsar's
reader does; each random range costs at most the blocks it touches. The
writer's LAC is not stored there (printed as -1), nor the cumulative
length of a range that does not start at entry 0 (-1).

--payload controls how payloads are printed: auto (base64 in JSON, not in
text), none, base64 or hex. --verify-only prints no entries, only a summary
(entries, bytes, time, throughput): a full readability and integrity check
of the ledger. A progress bar is drawn on stderr when it is a terminal and
the output is text.`),
		Example: "  offloader ledger read --zk 127.0.0.1:2181 --ledger 12345\n" +
			"  offloader ledger read --zk zk1:2181/ledgers --ledger 12345 --from 100 --to 199 -o json\n" +
			"  offloader ledger read --zk zk1:2181 --ledger 12345 --store s3.yaml --topic persistent://public/default/orders --verify-only",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd, g) },
	}
	f := cmd.Flags()
	o.zk.addFlags(f)
	o.bk.AddFlags(f)
	f.Int64Var(&o.ledger, "ledger", -1, "ledger `id` (required)")
	o.store.addFlags(f)
	f.StringVar(&o.topic, "topic", "", "with --store: the `topic` the ledger belongs to (its metadata names the offload attempt)")
	f.StringVar(&o.uuid, "uuid", "", "with --store: the offload attempt `UUID` (instead of --topic)")
	f.StringVar(&o.mlChroot, "ml-chroot", "", "with --topic: `path` prefix of Pulsar's metadata store in ZooKeeper")
	f.Int64Var(&o.from, "from", 0, "first entry id")
	f.Int64Var(&o.to, "to", -1, "last entry id (-1: the ledger's last entry)")
	f.StringVar(&o.payload, "payload", "auto", "payload output: auto, none, base64, hex")
	f.DurationVar(&o.readTimeout, "read-timeout", 5*time.Second, "timeout of one read on one bookie before trying the next replica")
	f.IntVar(&o.window, "window", 128, "entries read ahead (in flight)")
	f.StringVar(&o.digest, "digest", "", "digest type for ledgers whose metadata records none (v1): CRC32, CRC32C, HMAC, DUMMY")
	f.StringVar(&o.password, "password", "", "ledger password for ledgers whose metadata records none (v1)")
	f.BoolVar(&o.verifyOnly, "verify-only", false, "read and verify every entry but print only a summary")
	f.IntVar(&o.maxFrame, "max-frame-size", wire.DefaultMaxFrameSize, "largest bookie response frame accepted, in `bytes` (raise with the bookies' nettyMaxFrameSizeBytes)")
	return cmd
}

func (o *ledgerReadOptions) validate(g *globalOptions) error {
	if o.ledger < 0 {
		return errors.New("--ledger is required (a non-negative ledger id)")
	}
	if o.from < 0 {
		return fmt.Errorf("--from %d: must be >= 0", o.from)
	}
	if o.to >= 0 && o.to < o.from {
		return fmt.Errorf("--to %d is before --from %d", o.to, o.from)
	}
	switch o.payload {
	case "auto":
		o.payload = "none"
		if g.json() {
			o.payload = "base64"
		}
	case "none", "base64", "hex":
	default:
		return fmt.Errorf("--payload %q: want auto, none, base64 or hex", o.payload)
	}
	if o.maxFrame < 1024 {
		return fmt.Errorf("--max-frame-size %d: must be at least 1024", o.maxFrame)
	}
	if o.window < 1 {
		return fmt.Errorf("--window %d: must be >= 1", o.window)
	}
	if o.readTimeout <= 0 {
		// The client would silently use its 5 s default.
		return fmt.Errorf("--read-timeout %s: must be positive", o.readTimeout)
	}
	return nil
}

// readSummary is the --verify-only result.
type readSummary struct {
	Ledger     int64   `json:"ledger"`
	From       int64   `json:"from"`
	To         int64   `json:"to"`
	Entries    int64   `json:"entries"`
	Bytes      int64   `json:"bytes"`
	Seconds    float64 `json:"seconds"`
	MBPerSec   float64 `json:"mbPerSec"`
	DigestType string  `json:"digestType,omitempty"`
	// Checked says what every entry was checked against.
	Checked  string `json:"checked"`
	Verified bool   `json:"verified"`
}

// entryJSON is one entry in --output json.
type entryJSON struct {
	Ledger  int64  `json:"ledger"`
	Entry   int64  `json:"entry"`
	Size    int    `json:"size"`
	Length  int64  `json:"length"`
	LAC     int64  `json:"lac"`
	Bookie  string `json:"bookie"`
	SHA256  string `json:"sha256"`
	Payload string `json:"payload,omitempty"`
}

func (o *ledgerReadOptions) run(cmd *cobra.Command, g *globalOptions) error {
	if err := o.validate(g); err != nil {
		return err
	}
	ctx := cmd.Context()
	stderr := cmd.ErrOrStderr()
	log := g.logger(stderr)
	src, err := o.open(ctx, g, log)
	if err != nil {
		return err
	}
	defer src.Close()
	if o.to > src.LastEntry {
		return fmt.Errorf("--to %d: ledger %d ends at entry %d", o.to, o.ledger, src.LastEntry)
	}
	to := o.to
	if to < 0 {
		to = src.LastEntry
	}
	if o.from > to+1 || (o.from > src.LastEntry && src.LastEntry >= 0) {
		return fmt.Errorf("--from %d: ledger %d ends at entry %d", o.from, o.ledger, src.LastEntry)
	}
	expect := src.Length
	if o.from > 0 || to < src.LastEntry {
		expect = 0 // unknown for a partial range
	}
	bar := newProgressBar(stderr, !g.json(), fmt.Sprintf("ledger %d", o.ledger), expect)
	out := bufio.NewWriterSize(cmd.OutOrStdout(), 256*1024)
	enc := json.NewEncoder(out)
	start := time.Now()
	err = nil
	if to >= o.from {
		err = src.Read(ctx, o.from, to, func(e offloader.LedgerEntry) error {
			if o.verifyOnly {
				bar.add(1, int64(len(e.Payload)))
				return nil
			}
			sum := sha256.Sum256(e.Payload)
			if g.json() {
				j := entryJSON{Ledger: o.ledger, Entry: e.ID, Size: len(e.Payload), Length: e.Length,
					LAC: e.LAC, Bookie: e.From, SHA256: hex.EncodeToString(sum[:])}
				switch o.payload {
				case "base64":
					j.Payload = base64.StdEncoding.EncodeToString(e.Payload)
				case "hex":
					j.Payload = hex.EncodeToString(e.Payload)
				}
				if err := enc.Encode(j); err != nil {
					return err
				}
			} else {
				fmt.Fprintf(out, "%d\tsize=%d\tlength=%d\tlac=%d\tbookie=%s\tsha256=%x\n", e.ID, len(e.Payload), e.Length,
					e.LAC, e.From, sum)
				switch o.payload {
				case "base64":
					fmt.Fprintf(out, "%s\n", base64.StdEncoding.EncodeToString(e.Payload))
				case "hex":
					dumpHex(out, e.Payload)
				}
			}
			bar.add(1, int64(len(e.Payload)))
			return nil
		})
	}
	bar.finish()
	if ferr := out.Flush(); err == nil {
		err = ferr
	}
	if err != nil {
		return fmt.Errorf("ledger %d: read stopped after %d entries: %w", o.ledger, bar.entries, err)
	}
	el := time.Since(start)
	if o.verifyOnly {
		sum := readSummary{Ledger: o.ledger, From: o.from, To: to, Entries: bar.entries, Bytes: bar.bytes, Seconds: el.Seconds(),
			MBPerSec: float64(bar.bytes) / 1e6 / max(el.Seconds(), 1e-9), DigestType: src.Digest, Checked: src.Checked, Verified: true}
		if g.json() {
			return json.NewEncoder(cmd.OutOrStdout()).Encode(sum)
		}
		fmt.Fprintf(cmd.OutOrStdout(), "ledger %d entries %d..%d: %d entries, %d bytes, %s verified in %s (%.1f MB/s)\n",
			sum.Ledger, sum.From, sum.To, sum.Entries, sum.Bytes, sum.Checked, el.Round(time.Millisecond), sum.MBPerSec)
		return nil
	}
	if !g.json() {
		fmt.Fprintf(stderr, "read %d entries (%s) of ledger %d in %s (%s), %s verified\n", bar.entries,
			units.HumanBytes(bar.bytes), o.ledger, el.Round(time.Millisecond), units.HumanRate(float64(bar.bytes)/max(el.Seconds(), 1e-9)), src.Checked)
	}
	return nil
}

// open opens the ledger's source: the bookies, or with --store the
// objects of the attempt --uuid names or the metadata of --topic records.
func (o *ledgerReadOptions) open(ctx context.Context, g *globalOptions, log *slog.Logger) (*offloader.LedgerSource, error) {
	var pc offloader.PeersConfig
	so := offloader.LedgerSourceOptions{Logger: log, FromStore: o.store.path != "", Topic: o.topic,
		Bookies: client.Options{ReadTimeout: o.readTimeout, Window: o.window, MaxFrameSize: o.maxFrame, WireProtocol: o.bk.Wire}}
	var err error
	if !so.FromStore {
		if o.digest != "" {
			if so.Bookies.DigestType, err = digest.ParseType(o.digest); err != nil {
				return nil, fmt.Errorf("--digest: %w", err)
			}
			so.Bookies.Password = []byte(o.password)
		}
		if pc.BookieTLS, err = o.bk.Config(); err != nil {
			return nil, err
		}
	} else {
		if (o.topic == "") == (o.uuid == "") {
			return nil, errors.New("--store needs the offload attempt: --topic TOPIC (its metadata names it) or --uuid UUID")
		}
		cfg, err := blobclient.Load(o.store.path)
		if err != nil {
			return nil, fmt.Errorf("--store: %w", err)
		}
		pc.Store, pc.StoreName, pc.MLChroot = &cfg, "--store "+o.store.path, o.mlChroot
		if o.uuid != "" {
			if so.Attempt, err = uuid.Parse(o.uuid); err != nil {
				return nil, fmt.Errorf("--uuid %q: %w", o.uuid, err)
			}
		}
	}
	if so.Attempt == uuid.Nil {
		if err := o.zk.apply(g, &pc); err != nil {
			return nil, err
		}
	}
	return offloader.OpenLedgerSource(ctx, pc, o.ledger, so)
}

func dumpHex(w io.Writer, b []byte) {
	d := hex.Dumper(w)
	d.Write(b)
	d.Close()
}
