package main

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/tierkeeper/tierkeeper/diskbench"
	"github.com/tierkeeper/tierkeeper/internal/units"
)

func newEntryLogCmd() *cobra.Command {
	var (
		c          commonFlags
		writers    []int
		blockSizes = units.NewSizeList(64*units.KiB, units.MiB, 8*units.MiB)
		flushEvery = units.Size(32 * units.MiB)
		fileSize   units.Size
		prealloc   string
		alt        alternationFlags
	)
	cmd := &cobra.Command{
		Use:   "entrylog --dir DIR",
		Short: "Entry-log pattern: buffered sequential writes with periodic fdatasync",
		Long: `Each writer appends --block-size buffered writes to its own file and calls
fdatasync every --flush-every bytes, as DbLedgerStorage's entry logger does.

With --alternate the --writers counts run as one point per block size: every
writer runs the warm-up, then the counts take turns of --turn (a writer makes
its unsynced bytes durable when its turn ends), and each count gets a result
per batch of cycles (--batches).`,
		Example: `  diskbench entrylog --dir /mnt/ssd0/tmp --block-size 64k,1m,8m --flush-every 32MiB
  diskbench entrylog --dir /mnt/ssd0/tmp --writers 1,2 --block-size 1m --alternate --turn 1s --duration 16s`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := c.validate(); err != nil {
				return err
			}
			ep := diskbench.EntryLogParams{Writers: writers, BlockSizes: blockSizes.Values()}
			var err error
			if ep.FlushEveryBytes, err = sizeFlag(cmd, "flush-every", flushEvery); err != nil {
				return err
			}
			if ep.FileSize, err = sizeFlag(cmd, "file-size", fileSize); err != nil {
				return err
			}
			if ep.Prealloc, err = parsePrealloc(prealloc); err != nil {
				return err
			}
			if ep.Alternate, err = alt.resolve(cmd.Flags()); err != nil {
				return err
			}
			return c.run(cmd, func(ctx context.Context, o diskbench.Options) ([]diskbench.Result, error) {
				return diskbench.RunEntryLog(ctx, diskbench.EntryLogOptions{Options: o, EntryLogParams: ep})
			})
		},
	}
	c.addFlags(cmd.Flags(), 10*time.Second)
	cmd.Flags().IntSliceVar(&writers, "writers", []int{1}, "numbers of parallel entry-log files (ledger directories) to sweep")
	cmd.Flags().Var(blockSizes, "block-size", "write sizes to sweep")
	cmd.Flags().Var(&flushEvery, "flush-every", "fdatasync after this many bytes")
	cmd.Flags().Var(&fileSize, "file-size", "size of each writer's file; a point stops when one is full (default: the point's byte share / writers × 1.5, at most 1GiB)")
	cmd.Flags().StringVar(&prealloc, "prealloc", "none", "how files are prepared: none (appends, like an entry log) or fallocate")
	alt.add(cmd.Flags(), "entry-log writers")
	return cmd
}
