package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/tierkeeper/tierkeeper/diskbench"
	"github.com/tierkeeper/tierkeeper/internal/cli"
	"github.com/tierkeeper/tierkeeper/internal/units"
)

// commonFlags are the flags every measuring subcommand takes.
type commonFlags struct {
	dir        string
	duration   time.Duration
	warmup     time.Duration
	maxBytes   units.Size
	allowAnyFS bool
	force      bool
	output     string
	svg        string
	seed       uint64
	verbose    bool
	sysfs      string
	buckets    bool

	// svgOut is --svg, opened before the run so a bad path fails at once.
	svgOut *cli.OutputFile
}

func (c *commonFlags) addFlags(fs *pflag.FlagSet, defDuration time.Duration) {
	fs.StringVar(&c.dir, "dir", "", "directory to measure (required); files are created there and removed")
	fs.DurationVar(&c.duration, "duration", defDuration, "measured time of each point, warm-up excluded")
	fs.DurationVar(&c.warmup, "warmup", 0, "warm-up before each point, discarded (default max(1s, 5% of --duration); negative: none)")
	fs.Var(&c.maxBytes, "max-bytes", "never write more than this many bytes in total (default min(2GiB, 10% of free space))")
	fs.BoolVar(&c.allowAnyFS, "allow-any-fs", false, "run on tmpfs, ramfs or overlayfs too (figures then measure memory)")
	fs.BoolVar(&c.force, "force", false, "run in a directory that holds bookie data (current/VERSION, *.txn, *.log)")
	fs.StringVar(&c.output, "output", "table", "result format on stdout: table or json")
	fs.StringVar(&c.svg, "svg", "", "also draw the sweep as an SVG chart into this file")
	fs.Uint64Var(&c.seed, "seed", 0, "seed for data and random offsets (0: random)")
	fs.BoolVarP(&c.verbose, "verbose", "v", false, "log debug records to stderr")
	fs.StringVar(&c.sysfs, "path.sysfs", "/sys", "sysfs mount point the device is looked up in (the host's, in a container)")
	fs.BoolVar(&c.buckets, "latency-buckets", false, "with --output json, give each latency its histogram's non-empty buckets ([lowest ns, count]) so runs can be pooled")
}

// validate checks the common flags of journal, entrylog and randread.
func (c *commonFlags) validate() error {
	if err := c.validateDirOutput(); err != nil {
		return err
	}
	if c.duration <= 0 {
		return fmt.Errorf("%w: --duration must be positive", diskbench.ErrInvalidOptions)
	}
	return nil
}

// validateDirOutput checks --dir and --output (sweep allows --duration 0).
func (c *commonFlags) validateDirOutput() error {
	if c.dir == "" {
		return fmt.Errorf("%w: --dir is required", diskbench.ErrInvalidOptions)
	}
	if c.output != "table" && c.output != "json" {
		return fmt.Errorf("%w: --output %q (want table or json)", diskbench.ErrInvalidOptions, c.output)
	}
	return nil
}

// options builds the library options (progress goes to stderr) and opens
// the --svg file, so that a path that cannot be written fails before the
// benchmark instead of after it. The caller defers
// closeOutputs.
func (c *commonFlags) options(cmd *cobra.Command) (diskbench.Options, *progressBar, error) {
	o := diskbench.Options{
		Dir:        c.dir,
		Duration:   c.duration,
		Warmup:     c.warmup,
		AllowAnyFS: c.allowAnyFS,
		Force:      c.force,
		Seed:       c.seed,
		SysPath:    c.sysfs,
		// Buckets only matter in JSON; the table shows quantiles.
		LatencyBuckets: c.buckets && c.output == "json",
		// The command owns its process and runs one benchmark at a time.
		RaiseGOMAXPROCS: true,
	}
	var err error
	if o.MaxBytes, err = sizeFlag(cmd, "max-bytes", c.maxBytes); err != nil {
		return o, nil, err
	}
	if c.svg != "" {
		if c.svgOut, err = cli.OpenOutput("--svg", c.svg); err != nil {
			return o, nil, err
		}
	}
	o.Logger = cli.Logger(cmd.ErrOrStderr(), verboseLevel(c.verbose))
	var bar *progressBar
	if c.output != "json" {
		bar = newProgressBar(cmd.ErrOrStderr())
		if bar != nil {
			o.Progress = bar.update
		}
	}
	return o, bar, nil
}

// emit writes the report to stdout (table or JSON) first, then the SVG if
// asked: a chart that cannot be written never costs the figures.
func (c *commonFlags) emit(cmd *cobra.Command, rep *diskbench.Report) error {
	out := cmd.OutOrStdout()
	err := cli.Print(out, c.output == "json", rep, func(w io.Writer) error { return diskbench.WriteTable(w, rep) })
	if c.svgOut != nil {
		if serr := c.svgOut.Write(func(w io.Writer) error { return diskbench.WriteSVG(w, rep) }); serr != nil {
			return errors.Join(err, fmt.Errorf("--svg: %w", serr))
		}
		if c.output != "json" {
			fmt.Fprintf(cmd.ErrOrStderr(), "chart written to %s\n", c.svgOut.Path())
		}
	}
	return err
}

// verboseLevel is the log level of --verbose: debug, else warn.
func verboseLevel(verbose bool) slog.Level {
	if verbose {
		return slog.LevelDebug
	}
	return slog.LevelWarn
}

// closeOutputs removes an output file that was opened but never written
// (the run failed before measuring anything).
func (c *commonFlags) closeOutputs() { c.svgOut.Discard() }

// sizeFlag returns the value of a size flag, or 0 (the library's default)
// when the flag was left out. An explicit zero or less is refused rather
// than silently meaning the default.
func sizeFlag(cmd *cobra.Command, name string, v units.Size) (int64, error) {
	if !cmd.Flags().Changed(name) {
		return 0, nil
	}
	if v <= 0 {
		return 0, fmt.Errorf("%w: --%s %s: must be positive (leave the flag out for the default)", diskbench.ErrInvalidOptions, name, v.String())
	}
	return int64(v), nil
}

// run runs one Run* call with the library options and prints what it
// measured, also the partial results when it failed.
func (c *commonFlags) run(cmd *cobra.Command, run func(context.Context, diskbench.Options) ([]diskbench.Result, error)) error {
	o, bar, err := c.options(cmd)
	defer c.closeOutputs()
	if err != nil {
		return err
	}
	rep, err := diskbench.Measure(cmd.Context(), o, run)
	return c.report(cmd, bar, rep, err)
}

// report clears the progress bar and prints rep unless the run failed
// before measuring anything. It returns the run's error, else the
// printing's.
func (c *commonFlags) report(cmd *cobra.Command, bar *progressBar, rep *diskbench.Report, err error) error {
	bar.finish()
	if rep != nil && (len(rep.Results) > 0 || err == nil) {
		if eerr := c.emit(cmd, rep); eerr != nil && err == nil {
			err = eerr
		}
	}
	return err
}
