package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tierkeeper/tierkeeper/diskbench"
	"github.com/tierkeeper/tierkeeper/internal/units"
)

// journalSettingFlags binds the BookKeeper journal settings to flags under
// BookKeeper's own names (--journalMaxGroupWaitMSec ...).
type journalSettingFlags struct {
	s    diskbench.JournalSettings
	conf string
}

func (j *journalSettingFlags) add(fs *pflag.FlagSet) {
	d := diskbench.DefaultJournalSettings()
	j.s = d
	fs.StringVar(&j.conf, "bookie-conf", "", "read the journal settings below from this bookkeeper.conf (flags given on the command line win)")
	fs.IntVar(&j.s.JournalWriteBufferSizeKB, "journalWriteBufferSizeKB", d.JournalWriteBufferSizeKB, "journal write buffer (KiB): groups reach the file in writes of this size")
	fs.Int64Var(&j.s.JournalMaxGroupWaitMSec, "journalMaxGroupWaitMSec", d.JournalMaxGroupWaitMSec, "longest an entry waits for its group (ms)")
	fs.Int64Var(&j.s.JournalBufferedWritesThreshold, "journalBufferedWritesThreshold", d.JournalBufferedWritesThreshold, "flush a group once it holds more than this many bytes")
	fs.IntVar(&j.s.JournalBufferedEntriesThreshold, "journalBufferedEntriesThreshold", d.JournalBufferedEntriesThreshold, "flush a group once it holds more than this many entries (0: off)")
	fs.BoolVar(&j.s.JournalFlushWhenQueueEmpty, "journalFlushWhenQueueEmpty", d.JournalFlushWhenQueueEmpty, "flush a group as soon as no entry is queued")
	fs.IntVar(&j.s.JournalAlignmentSize, "journalAlignmentSize", d.JournalAlignmentSize, "pad each group to a multiple of this; size of the pre-allocation zero block")
	fs.IntVar(&j.s.JournalFormatVersionToWrite, "journalFormatVersionToWrite", d.JournalFormatVersionToWrite, "journal format: 5 and 6 pad groups, 4 does not")
	fs.IntVar(&j.s.JournalPreAllocSizeMB, "journalPreAllocSizeMB", d.JournalPreAllocSizeMB, "pre-allocation window (MiB): a zero block is written at each window's end")
	fs.Int64Var(&j.s.JournalMaxSizeMB, "journalMaxSizeMB", d.JournalMaxSizeMB, "start a new journal file once one is larger (MiB)")
	fs.BoolVar(&j.s.JournalRemoveFromPageCache, "journalRemoveFromPageCache", d.JournalRemoveFromPageCache, "posix_fadvise(DONTNEED) 8 MiB behind each fdatasync")
}

// resolve applies --bookie-conf (for the settings not given as flags) and
// returns the settings.
func (j *journalSettingFlags) resolve(fs *pflag.FlagSet) (diskbench.JournalSettings, error) {
	if j.conf == "" {
		return j.s, nil
	}
	kv, err := diskbench.ReadBookieConf(j.conf)
	if err != nil {
		return j.s, fmt.Errorf("--bookie-conf: %w", err)
	}
	for _, k := range diskbench.JournalSettingKeys {
		v, ok := kv[k]
		if !ok || fs.Changed(k) {
			continue
		}
		if err := fs.Set(k, v); err != nil {
			return j.s, fmt.Errorf("%w: %s: %s=%q: %v", diskbench.ErrInvalidOptions, j.conf, k, v, err)
		}
	}
	return j.s, nil
}

func newJournalCmd() *cobra.Command {
	var (
		c          commonFlags
		js         journalSettingFlags
		model      string
		writers    []int
		blockSizes = units.NewSizeList(4*units.KiB, 16*units.KiB, 64*units.KiB)
		inFlight   int
		syncEvery  int
		fileSize   units.Size
		prealloc   string
		alt        alternationFlags
	)
	cmd := &cobra.Command{
		Use:   "journal --dir DIR",
		Short: "Journal pattern: BookKeeper's journal (group commit, padding, sparse growth) per writer",
		Long: `By default (--model bookkeeper) each writer is one BookKeeper journal, written
the way BookKeeper 4.17's Journal writes a journal directory: a client keeps
--in-flight entries of --block-size bytes queued; a journal thread groups them
into its write buffer (--journalWriteBufferSizeKB) until a group is due
(--journalMaxGroupWaitMSec, --journalBufferedWritesThreshold,
--journalBufferedEntriesThreshold, --journalFlushWhenQueueEmpty), pads it to
--journalAlignmentSize (format ≥ 5) and writes it; a force-write thread calls
fdatasync and acknowledges the group. Files grow sparse: a zero block is written
at the end of each --journalPreAllocSizeMB window; a new file starts past
--journalMaxSizeMB. Settings default to Pulsar's shipped bookkeeper.conf, or
are read from --bookie-conf. Each point reports acknowledged MB/s, the add
latency (queued → acknowledged), and write, fdatasync and group latencies.

With --alternate the --writers counts run as one point per block size: the
largest count of journals is started and runs the warm-up; then the counts
take turns of --turn (first 1 journal adds entries, then 2, then 4, ...),
over and over, so every count meets the disk in the same seconds (a virtual
disk's host cache or an SSD's garbage collection then hits all alike); each
count gets a result per batch of cycles (--batches), the rounds of a paired
comparison.

--model plain is the pattern fio can express: each writer appends --block-size
writes to its own file (--prealloc) and calls fdatasync after every
--sync-every writes.`,
		Example: `  diskbench journal --dir /mnt/ssd0/tmp --writers 1,2,4 --block-size 4k,64k --duration 10s
  diskbench journal --dir /mnt/ssd0/tmp --bookie-conf /pulsar/conf/bookkeeper.conf --journalMaxGroupWaitMSec 2
  diskbench journal --dir /mnt/ssd0/tmp --writers 1,2,4 --block-size 64k --alternate --duration 12s
  diskbench journal --dir /mnt/ssd0/tmp --model plain --sync-every 1 --prealloc sparse`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := c.validate(); err != nil {
				return err
			}
			bs := blockSizes.Values()
			var err error
			jp := diskbench.JournalParams{Model: diskbench.JournalModel(model), Writers: writers, BlockSizes: bs}
			f := cmd.Flags()
			switch jp.Model {
			case diskbench.JournalModelBookKeeper:
				for _, name := range []string{"sync-every", "file-size", "prealloc"} {
					if f.Changed(name) {
						return fmt.Errorf("%w: --%s applies to --model plain only", diskbench.ErrInvalidOptions, name)
					}
				}
				if inFlight < 0 {
					return fmt.Errorf("%w: --in-flight must be at least 1", diskbench.ErrInvalidOptions)
				}
				s, err := js.resolve(f)
				if err != nil {
					return err
				}
				jp.Settings, jp.InFlight = &s, inFlight
			case diskbench.JournalModelPlain:
				for _, name := range append([]string{"in-flight", "bookie-conf"}, diskbench.JournalSettingKeys...) {
					if f.Changed(name) {
						return fmt.Errorf("%w: --%s applies to --model bookkeeper only", diskbench.ErrInvalidOptions, name)
					}
				}
				if syncEvery < 1 {
					return fmt.Errorf("%w: --sync-every must be at least 1", diskbench.ErrInvalidOptions)
				}
				jp.SyncEvery = syncEvery
				if jp.FileSize, err = sizeFlag(cmd, "file-size", fileSize); err != nil {
					return err
				}
				if jp.Prealloc, err = parsePrealloc(prealloc); err != nil {
					return err
				}
			default:
				return fmt.Errorf("%w: --model %q (want bookkeeper or plain)", diskbench.ErrInvalidOptions, model)
			}
			if jp.Alternate, err = alt.resolve(f); err != nil {
				return err
			}
			return c.run(cmd, func(ctx context.Context, o diskbench.Options) ([]diskbench.Result, error) {
				return diskbench.RunJournal(ctx, diskbench.JournalOptions{Options: o, JournalParams: jp})
			})
		},
	}
	c.addFlags(cmd.Flags(), 10*time.Second)
	f := cmd.Flags()
	f.StringVar(&model, "model", string(diskbench.JournalModelBookKeeper), "bookkeeper (BookKeeper's journal) or plain (appends + fdatasync every --sync-every writes)")
	f.IntSliceVar(&writers, "writers", []int{1, 2, 4, 8}, "numbers of parallel journals (journal directories) to sweep")
	f.Var(blockSizes, "block-size", "entry sizes (bookkeeper) or write sizes (plain) to sweep")
	f.IntVar(&inFlight, "in-flight", 0, "entries each journal's client keeps outstanding (default: 2 × journalBufferedWritesThreshold worth)")
	js.add(f)
	alt.add(f, "journals")
	f.IntVar(&syncEvery, "sync-every", 1, "plain: fdatasync after every N writes (group commit size)")
	f.Var(&fileSize, "file-size", "plain: size of each writer's file; a point stops when one is full (default: the point's byte share / writers × 1.5, at most 1GiB)")
	f.StringVar(&prealloc, "prealloc", "fallocate", "plain: how files are prepared: fallocate (unwritten extents), sparse (ftruncate) or none (appends)")
	return cmd
}

// alternationFlags are --alternate, --turn and --batches (journal,
// entrylog).
type alternationFlags struct {
	on      bool
	turn    time.Duration
	batches int
}

func (a *alternationFlags) add(fs *pflag.FlagSet, what string) {
	fs.BoolVar(&a.on, "alternate", false, "run the --writers counts of "+what+" in turns within one point per block size (a result per count and batch)")
	fs.DurationVar(&a.turn, "turn", diskbench.DefaultAlternationTurn, "with --alternate: each count's turn per cycle")
	fs.IntVar(&a.batches, "batches", diskbench.DefaultAlternationBatches, "with --alternate: batches of whole cycles the measured time is split into")
}

// resolve returns the alternation asked for, or nil.
func (a *alternationFlags) resolve(fs *pflag.FlagSet) (*diskbench.Alternation, error) {
	if !a.on {
		if fs.Changed("turn") || fs.Changed("batches") {
			return nil, fmt.Errorf("%w: --turn and --batches apply to --alternate only", diskbench.ErrInvalidOptions)
		}
		return nil, nil
	}
	return &diskbench.Alternation{Turn: a.turn, Batches: a.batches}, nil
}

// parsePrealloc is --prealloc's value.
func parsePrealloc(s string) (diskbench.Prealloc, error) {
	if p, ok := diskbench.ParsePrealloc(s); ok {
		return p, nil
	}
	return 0, fmt.Errorf("%w: --prealloc %q (want fallocate, sparse or none)", diskbench.ErrInvalidOptions, s)
}
