package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/tierkeeper/tierkeeper/diskbench"
	"github.com/tierkeeper/tierkeeper/internal/units"
)

func newJournalCmd() *cobra.Command {
	var (
		c          commonFlags
		writers    []int
		blockSizes = units.NewSizeList(4*units.KiB, 16*units.KiB, 64*units.KiB)
		syncEvery  int
		fileSize   units.Size
		prealloc   string
	)
	cmd := &cobra.Command{
		Use:   "journal --dir DIR",
		Short: "Journal pattern: per-writer appends with fdatasync every N writes",
		Long: `Each writer appends --block-size writes to its own preallocated file and
calls fdatasync after every --sync-every writes (group commit), as a bookie
journal thread does. One point per (writers, block size) pair; each reports
bytes/s, IOPS and write, fdatasync and commit latency percentiles.`,
		Example: "  diskbench journal --dir /mnt/ssd0/tmp --writers 1,2,4,8 --block-size 4k,16k,64k --duration 10s",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := c.validate(); err != nil {
				return err
			}
			bs := blockSizes.Values()
			var err error
			if syncEvery < 1 {
				return fmt.Errorf("%w: --sync-every must be at least 1", diskbench.ErrInvalidOptions)
			}
			jp := diskbench.JournalParams{Writers: writers, BlockSizes: bs, SyncEvery: syncEvery}
			if jp.FileSize, err = sizeFlag(cmd, "file-size", fileSize); err != nil {
				return err
			}
			if jp.Prealloc, err = parsePrealloc(prealloc); err != nil {
				return err
			}
			return c.run(cmd, func(ctx context.Context, o diskbench.Options) ([]diskbench.Result, error) {
				return diskbench.RunJournal(ctx, diskbench.JournalOptions{Options: o, JournalParams: jp})
			})
		},
	}
	c.addFlags(cmd.Flags(), 10*time.Second)
	cmd.Flags().IntSliceVar(&writers, "writers", []int{1, 2, 4, 8}, "numbers of parallel writers (journal directories) to sweep")
	cmd.Flags().Var(blockSizes, "block-size", "write sizes to sweep")
	cmd.Flags().IntVar(&syncEvery, "sync-every", 1, "fdatasync after every N writes (group commit size)")
	cmd.Flags().Var(&fileSize, "file-size", "size of each writer's file; a point stops when one is full (default: the point's byte share / writers × 1.5, at most 1GiB)")
	cmd.Flags().StringVar(&prealloc, "prealloc", "fallocate", "how files are prepared: fallocate (unwritten extents) or none (appends)")
	return cmd
}

func parsePrealloc(s string) (diskbench.Prealloc, error) {
	switch s {
	case "", "default":
		return diskbench.PreallocDefault, nil
	case "fallocate":
		return diskbench.PreallocFallocate, nil
	case "none":
		return diskbench.PreallocNone, nil
	}
	return 0, fmt.Errorf("%w: --prealloc %q (want fallocate or none)", diskbench.ErrInvalidOptions, s)
}
