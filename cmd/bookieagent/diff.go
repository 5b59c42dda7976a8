package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tierkeeper/tierkeeper/bookieagent"
)

type diffOptions struct {
	recommendOptions
	conf         string
	rocksConf    string
	allowUnknown bool
	output       string
}

func newDiffCmd() *cobra.Command {
	o := &diffOptions{}
	cmd := &cobra.Command{
		Use:   "diff --conf bookkeeper.conf [--rocksdb-conf FILE] [--mem \"$BOOKIE_MEM\"] (--input FILE | --journal-dir D... --ledger-dir D...)",
		Short: "Compare a bookie's configuration with the recommendation",
		Long: `diff reads the bookie's bookkeeper.conf (and entry_location_rocksdb.conf) and prints, for
every setting the agent recommends, the value the bookie uses now (the file's, else
BookKeeper's default) next to the recommended one with the rule and evidence, grouped
as "applies on restart" and "new or re-formatted bookies only" (directory counts, which
the cookie fixes).

The recommendation comes from measurements saved with recommend --save-input
(--input), or from a benchmark run now with recommend's flags. --mem takes the
bookie's JVM options ("$BOOKIE_MEM") for the direct-memory shares.

Unknown keys (neither BookKeeper 4.17's nor in Pulsar's shipped bookkeeper.conf) are
errors that name the closest known key, unless --allow-unknown-keys; malformed lines,
repeated keys and values that do not parse are errors with their line. The exit code
is 0 whether or not anything differs.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.runDiff(cmd) },
	}
	fs := cmd.Flags()
	o.dirs.addFlags(fs)
	o.mem.addFlags(fs)
	fs.StringVar(&o.mem.mem, "mem", "", "the bookie's JVM memory options (e.g. \"$BOOKIE_MEM\"): -XX:MaxDirectMemorySize, else -Xmx")
	o.bench.addFlags(fs)
	fs.StringVar(&o.entrySize, "entry-size", "", "median entry size, if known (sets readBufferSizeBytes, rounded up to 4 KiB, at most 16 KiB)")
	fs.StringVar(&o.input, "input", "", "measurements saved by recommend --save-input (else: benchmark now)")
	fs.StringVar(&o.saveInput, "save-input", "", "also write the measurements and node facts as JSON to this file")
	fs.BoolVarP(&o.quiet, "quiet", "q", false, "no progress on stderr")
	fs.StringVar(&o.conf, "conf", "", "the bookie's bookkeeper.conf (required)")
	fs.StringVar(&o.rocksConf, "rocksdb-conf", "", "the bookie's entry_location_rocksdb.conf")
	fs.BoolVar(&o.allowUnknown, "allow-unknown-keys", false, "report unknown keys as warnings instead of failing")
	fs.StringVarP(&o.output, "output", "o", "text", "text or json")
	return cmd
}

func (o *diffOptions) runDiff(cmd *cobra.Command) error {
	if o.conf == "" {
		return errors.New("give --conf (the bookie's bookkeeper.conf)")
	}
	if o.output != "text" && o.output != "json" {
		return fmt.Errorf("--output %q: want text or json", o.output)
	}
	// The files are read and checked before any benchmark.
	conf, err := bookieagent.ReadConfFile(o.conf, bookieagent.ParseConf)
	if err != nil {
		return err
	}
	if len(conf.Unknown) > 0 && !o.allowUnknown {
		return fmt.Errorf("%w: %s: unknown keys: %s (give --allow-unknown-keys to compare anyway)",
			bookieagent.ErrBadConf, o.conf, strings.Join(conf.Unknown, "; "))
	}
	var rocks *bookieagent.RocksConf
	if o.rocksConf != "" {
		if rocks, err = bookieagent.ReadConfFile(o.rocksConf, bookieagent.ParseRocksConf); err != nil {
			return err
		}
	}
	o.guardConf = o.conf
	m, err := o.measure(cmd, o.quiet || o.output == "json")
	if err != nil {
		return err
	}
	rec, err := bookieagent.Recommend(m.in)
	if err != nil {
		return errors.Join(err, m.saveErr)
	}
	d, err := bookieagent.Diff(conf, rocks, rec, m.in.DirectMemoryBytes)
	if err != nil {
		return errors.Join(err, m.saveErr)
	}
	var out bytes.Buffer
	if err := bookieagent.RenderDiff(&out, d, o.output == "json"); err != nil {
		return errors.Join(err, m.saveErr)
	}
	_, err = io.Copy(cmd.OutOrStdout(), &out)
	return errors.Join(err, m.saveErr)
}
