package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/tierkeeper/tierkeeper/diskbench"
	"github.com/tierkeeper/tierkeeper/internal/cli"
	"github.com/tierkeeper/tierkeeper/internal/units"
)

func newCheckCmd() *cobra.Command {
	var c commonFlags
	cmd := &cobra.Command{
		Use:   "check --dir DIR",
		Short: "Run only the preflight checks (filesystem, bookie data, free space)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if c.dir == "" {
				return fmt.Errorf("%w: --dir is required", diskbench.ErrInvalidOptions)
			}
			o := diskbench.Options{Dir: c.dir, AllowAnyFS: c.allowAnyFS, Force: c.force, SysPath: c.sysfs}
			var err error
			if o.MaxBytes, err = sizeFlag(cmd, "max-bytes", c.maxBytes); err != nil {
				return err
			}
			t, err := diskbench.Check(cmd.Context(), o)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if c.output == "json" {
				return cli.WriteJSON(out, t)
			}
			fmt.Fprintf(out, "dir:       %s\nfs:        %s\ndevice:    %s\nfree:      %s of %s\nmax-bytes: %s\n",
				t.Dir, t.FSType, t.Device, units.HumanBytes(t.FreeBytes), units.HumanBytes(t.TotalBytes), units.HumanBytes(t.MaxBytes))
			for _, w := range t.Warnings {
				fmt.Fprintf(out, "warning:   %s\n", w)
			}
			fmt.Fprintln(out, "ok")
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&c.dir, "dir", "", "directory to check (required)")
	fs.Var(&c.maxBytes, "max-bytes", "byte budget to check room for (default min(2GiB, 10% of free space))")
	fs.BoolVar(&c.allowAnyFS, "allow-any-fs", false, "accept tmpfs, ramfs and overlayfs")
	fs.BoolVar(&c.force, "force", false, "accept a directory that holds bookie data")
	fs.StringVar(&c.output, "output", "table", "table or json")
	fs.StringVar(&c.sysfs, "path.sysfs", "/sys", "sysfs mount point the device is looked up in (the host's, in a container)")
	return cmd
}
