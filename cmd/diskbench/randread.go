package main

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/tierkeeper/tierkeeper/diskbench"
	"github.com/tierkeeper/tierkeeper/internal/units"
)

func newRandReadCmd() *cobra.Command {
	var (
		c          commonFlags
		depths     []int
		blockSizes = units.NewSizeList(4*units.KiB, 64*units.KiB, units.MiB)
		fileSize   units.Size
	)
	cmd := &cobra.Command{
		Use:   "randread --dir DIR",
		Short: "Catch-up read pattern: O_DIRECT random reads at a queue depth",
		Long: `Lays out one --file-size file, then --depth goroutines each issue pread at
random block-aligned offsets on an O_DIRECT descriptor. Where O_DIRECT is not
supported it reads buffered and drops each block from the page cache, with a
warning in the output.`,
		Example: "  diskbench randread --dir /mnt/ssd0/tmp --block-size 4k,64k,1m --depth 1,16 --file-size 1g",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := c.validate(); err != nil {
				return err
			}
			rp := diskbench.RandReadParams{Depths: depths, BlockSizes: blockSizes.Values()}
			var err error
			if rp.FileSize, err = sizeFlag(cmd, "file-size", fileSize); err != nil {
				return err
			}
			return c.run(cmd, func(ctx context.Context, o diskbench.Options) ([]diskbench.Result, error) {
				return diskbench.RunRandRead(ctx, diskbench.RandReadOptions{Options: o, RandReadParams: rp})
			})
		},
	}
	c.addFlags(cmd.Flags(), 10*time.Second)
	cmd.Flags().IntSliceVar(&depths, "depth", []int{1, 16}, "numbers of reads in flight to sweep")
	cmd.Flags().Var(blockSizes, "block-size", "read sizes to sweep")
	cmd.Flags().Var(&fileSize, "file-size", "size of the file read; writing it counts against --max-bytes (default min(1GiB, max-bytes/2))")
	return cmd
}
