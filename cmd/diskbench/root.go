package main

import (
	"github.com/spf13/cobra"
)

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "diskbench",
		Short: "Measure a disk the way a BookKeeper bookie uses it",
		Long: `diskbench measures the I/O patterns of an Apache BookKeeper bookie:
  journal   BookKeeper's journal per writer: group commit, padding, sparse
            growth, fdatasync per group (--model plain: appends with an
            fdatasync every N writes, as fio can express)
  entrylog  buffered sequential writes with an fdatasync every --flush-every
            (32 MiB)
  randread  O_DIRECT random reads at a queue depth (catch-up reads)
  sweep     all three within one time and byte budget (what the bookie agent runs)

It refuses tmpfs/ramfs/overlayfs and directories holding bookie data, never
writes more than --max-bytes, and removes every file it creates, also on
Ctrl-C. Results go to stdout (a table, or JSON with --output json); progress
goes to stderr when it is a terminal. While a point runs, the command raises
GOMAXPROCS to writers + 2 so each writer keeps a P while blocked in the kernel
(see docs/diskbench.md); the library does not unless asked.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newJournalCmd(), newEntryLogCmd(), newRandReadCmd(), newSweepCmd(), newCheckCmd(), newCompareFioCmd())
	return root
}
