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
	"github.com/tierkeeper/tierkeeper/bookkeeper/metadata"
	"github.com/tierkeeper/tierkeeper/bookkeeper/wire"
	"github.com/tierkeeper/tierkeeper/internal/connflags"
	"github.com/tierkeeper/tierkeeper/internal/units"
	blobclient "github.com/tierkeeper/tierkeeper/offloader/blob/client"
	"github.com/tierkeeper/tierkeeper/offloader/format"
	"github.com/tierkeeper/tierkeeper/pulsar/mledger"
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

// readEntry is one entry as printed.
type readEntry struct {
	id      int64
	payload []byte
	length  int64 // cumulative ledger length including this entry
	lac     int64 // the writer's LAC (-1: not known, read from the store)
	from    string
}

// readSource is where ledger read takes entries from: the bookies or the
// objects of an offloaded ledger.
type readSource struct {
	lastEntry, length int64
	// checked says what every entry was checked against ("CRC32C digests",
	// "object format").
	checked string
	// digest is the BookKeeper digest type ("" for the store).
	digest string
	read   func(ctx context.Context, from, to int64, fn func(readEntry) error) error
	close  func()
}

func (o *ledgerReadOptions) run(cmd *cobra.Command, g *globalOptions) error {
	if err := o.validate(g); err != nil {
		return err
	}
	ctx := cmd.Context()
	stderr := cmd.ErrOrStderr()
	log := g.logger(stderr)
	var src *readSource
	var err error
	if o.store.path != "" {
		src, err = o.storeSource(ctx, g, log)
	} else {
		src, err = o.bkSource(ctx, g, log)
	}
	if err != nil {
		return err
	}
	defer src.close()
	if o.to > src.lastEntry {
		return fmt.Errorf("--to %d: ledger %d ends at entry %d", o.to, o.ledger, src.lastEntry)
	}
	to := o.to
	if to < 0 {
		to = src.lastEntry
	}
	if o.from > to+1 || (o.from > src.lastEntry && src.lastEntry >= 0) {
		return fmt.Errorf("--from %d: ledger %d ends at entry %d", o.from, o.ledger, src.lastEntry)
	}
	expect := src.length
	if o.from > 0 || to < src.lastEntry {
		expect = 0 // unknown for a partial range
	}
	bar := newProgressBar(stderr, !g.json(), fmt.Sprintf("ledger %d", o.ledger), expect)
	out := bufio.NewWriterSize(cmd.OutOrStdout(), 256*1024)
	enc := json.NewEncoder(out)
	start := time.Now()
	err = nil
	if to >= o.from {
		err = src.read(ctx, o.from, to, func(e readEntry) error {
			if o.verifyOnly {
				bar.add(1, int64(len(e.payload)))
				return nil
			}
			sum := sha256.Sum256(e.payload)
			if g.json() {
				j := entryJSON{Ledger: o.ledger, Entry: e.id, Size: len(e.payload), Length: e.length,
					LAC: e.lac, Bookie: e.from, SHA256: hex.EncodeToString(sum[:])}
				switch o.payload {
				case "base64":
					j.Payload = base64.StdEncoding.EncodeToString(e.payload)
				case "hex":
					j.Payload = hex.EncodeToString(e.payload)
				}
				if err := enc.Encode(j); err != nil {
					return err
				}
			} else {
				fmt.Fprintf(out, "%d\tsize=%d\tlength=%d\tlac=%d\tbookie=%s\tsha256=%x\n", e.id, len(e.payload), e.length,
					e.lac, e.from, sum)
				switch o.payload {
				case "base64":
					fmt.Fprintf(out, "%s\n", base64.StdEncoding.EncodeToString(e.payload))
				case "hex":
					dumpHex(out, e.payload)
				}
			}
			bar.add(1, int64(len(e.payload)))
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
			MBPerSec: float64(bar.bytes) / 1e6 / max(el.Seconds(), 1e-9), DigestType: src.digest, Checked: src.checked, Verified: true}
		if g.json() {
			return json.NewEncoder(cmd.OutOrStdout()).Encode(sum)
		}
		fmt.Fprintf(cmd.OutOrStdout(), "ledger %d entries %d..%d: %d entries, %d bytes, %s verified in %s (%.1f MB/s)\n",
			sum.Ledger, sum.From, sum.To, sum.Entries, sum.Bytes, sum.Checked, el.Round(time.Millisecond), sum.MBPerSec)
		return nil
	}
	if !g.json() {
		fmt.Fprintf(stderr, "read %d entries (%s) of ledger %d in %s (%s), %s verified\n", bar.entries,
			units.HumanBytes(bar.bytes), o.ledger, el.Round(time.Millisecond), units.HumanRate(float64(bar.bytes)/max(el.Seconds(), 1e-9)), src.checked)
	}
	return nil
}

// bkSource reads the ledger from the bookies.
func (o *ledgerReadOptions) bkSource(ctx context.Context, g *globalOptions, log *slog.Logger) (*readSource, error) {
	bkTLS, err := o.bk.Config()
	if err != nil {
		return nil, err
	}
	store, sess, err := o.zk.openStore(ctx, g, log)
	if err != nil {
		return nil, err
	}
	md, err := store.ReadLedger(ctx, o.ledger)
	if err != nil {
		sess.Close()
		if errors.Is(err, metadata.ErrNoSuchLedger) {
			err = fmt.Errorf("%w (an offloaded ledger whose BookKeeper copy is deleted reads from the store: --store FILE --topic TOPIC)", err)
		}
		return nil, zkFailed(sess, err)
	}
	copts := client.Options{Resolver: store, TLS: bkTLS, ReadTimeout: o.readTimeout, Window: o.window, MaxFrameSize: o.maxFrame, Logger: log}
	if o.digest != "" {
		if copts.DigestType, err = digest.ParseType(o.digest); err != nil {
			sess.Close()
			return nil, fmt.Errorf("--digest: %w", err)
		}
		copts.Password = []byte(o.password)
	}
	c, err := client.New(copts)
	if err != nil {
		sess.Close()
		return nil, err
	}
	l, err := c.Open(md)
	if err != nil {
		c.Close()
		sess.Close()
		return nil, err
	}
	dt := md.DigestType
	if !md.HasPassword {
		dt = copts.DigestType
	}
	return &readSource{
		lastEntry: md.LastEntryID, length: md.Length, checked: dt.String() + " digests", digest: dt.String(),
		read: func(ctx context.Context, from, to int64, fn func(readEntry) error) error {
			return l.ReadRange(ctx, from, to, client.StreamOptions{}, func(e client.Entry) error {
				return fn(readEntry{id: e.EntryID, payload: e.Payload, length: e.Length, lac: e.LastAddConfirmed, from: e.Bookie})
			})
		},
		close: func() { c.Close(); sess.Close() },
	}, nil
}

// storeSource reads an offloaded ledger's objects: the attempt UUID comes
// from --uuid or from the topic's managed-ledger metadata (--topic).
func (o *ledgerReadOptions) storeSource(ctx context.Context, g *globalOptions, log *slog.Logger) (*readSource, error) {
	if (o.topic == "") == (o.uuid == "") {
		return nil, errors.New("--store needs the offload attempt: --topic TOPIC (its metadata names it) or --uuid UUID")
	}
	cfg, err := blobclient.Load(o.store.path)
	if err != nil {
		return nil, fmt.Errorf("--store: %w", err)
	}
	var id uuid.UUID
	if o.uuid != "" {
		if id, err = uuid.Parse(o.uuid); err != nil {
			return nil, fmt.Errorf("--uuid %q: %w", o.uuid, err)
		}
	} else {
		if id, err = o.attemptFromTopic(ctx, g, log); err != nil {
			return nil, err
		}
	}
	st, err := blobclient.New(ctx, cfg, blobclient.Options{Logger: log})
	if err != nil {
		return nil, fmt.Errorf("--store %s: %w", o.store.path, err)
	}
	r, err := format.Open(ctx, st, id, o.ledger, &format.ReaderOptions{Logger: log})
	if err != nil {
		st.Close()
		return nil, fmt.Errorf("ledger %d attempt %s in %s: %w", o.ledger, id, st.Name(), err)
	}
	where := st.Name()
	return &readSource{
		lastEntry: r.LastEntryID(), length: r.Length(), checked: "object format",
		read: func(ctx context.Context, from, to int64, fn func(readEntry) error) error {
			var length int64
			if from > 0 {
				length = -1 // not known without reading the entries before
			}
			return r.Read(ctx, from, to, func(id int64, p []byte) error {
				if length >= 0 {
					length += int64(len(p))
				}
				return fn(readEntry{id: id, payload: p, length: length, lac: -1, from: where})
			})
		},
		close: func() { r.Close(); st.Close() },
	}, nil
}

// attemptFromTopic finds the ledger in the topic's managed ledgers and
// returns its offload attempt UUID.
func (o *ledgerReadOptions) attemptFromTopic(ctx context.Context, g *globalOptions, log *slog.Logger) (uuid.UUID, error) {
	sess, _, err := g.connectZK(ctx, log)
	if err != nil {
		return uuid.Nil, err
	}
	defer sess.Close()
	ml := mledger.New(sess.Conn, &mledger.Options{Chroot: o.mlChroot, Logger: log})
	snaps, err := ml.TopicSnapshots(ctx, o.topic)
	if err != nil {
		return uuid.Nil, zkFailed(sess, err)
	}
	for _, snap := range snaps {
		name := snap.Name
		for _, li := range snap.Info.GetLedgerInfo() {
			if li.GetLedgerId() != o.ledger {
				continue
			}
			id, ok := mledger.AttemptUUID(li.GetOffloadContext())
			if !ok {
				return uuid.Nil, fmt.Errorf("ledger %d of %s has no offload attempt: it is in BookKeeper only (read it without --store)", o.ledger, name)
			}
			if !li.GetOffloadContext().GetComplete() {
				log.Warn("the ledger's offload is not complete; reading the attempt's objects anyway", "ledger", o.ledger, "uuid", id)
			}
			return id, nil
		}
	}
	return uuid.Nil, fmt.Errorf("ledger %d is not a ledger of %s", o.ledger, o.topic)
}

func dumpHex(w io.Writer, b []byte) {
	d := hex.Dumper(w)
	d.Write(b)
	d.Close()
}
