package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/spf13/cobra"

	"github.com/tierkeeper/tierkeeper/bookieagent"
	"github.com/tierkeeper/tierkeeper/internal/cli"
)

type serveOptions struct {
	dirs         dirOptions
	mem          memOptions
	bench        benchFlags
	listen       string
	interval     time.Duration
	window       time.Duration
	thresholds   thresholdFlags
	benchOnStart bool
	logLevel     string
	conf         string
}

func newServeCmd() *cobra.Command {
	o := &serveOptions{}
	cmd := &cobra.Command{
		Use:   "serve --listen ADDR --journal-dir D... --ledger-dir D...",
		Short: "Run as a DaemonSet: sample capacity, serve /metrics /report /recommendation /conf /healthz",
		Long: `serve samples the capacity of the mounts holding the journal and ledger directories
(statfs; usage = 1 - avail/size as BookKeeper computes it) and their devices' I/O
counters (/proc/diskstats) every --interval, fits growth over --window, and serves:

  /metrics         Prometheus metrics (base units, *_total counters), including
                   seconds to diskUsageWarnThreshold and to diskUsageThreshold
  /report          JSON capacity report per mount
  /recommendation  the last benchmark's recommendation (404 when none ran)
  /conf            the keys of --conf (the bookie's bookkeeper.conf, read at start;
                   404 without it): what "bookieagent cluster" shows for a bookie
                   whose HTTP admin server is off
  /healthz         200 while samples are fresh

--bench-on-start runs the recommend benchmark once at start, with recommend's rules: in
a scratch directory, stopped as soon as a bookie starts using a directory, and on a
disk holding a live bookie only with --allow-live-bookie (else /recommendation says
"skipped"). The benchmark owns the process's GOMAXPROCS while it runs, as recommend
does, so both measure alike.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd) },
	}
	fs := cmd.Flags()
	o.dirs.addFlags(fs)
	o.mem.addFlags(fs)
	o.bench.addFlags(fs)
	fs.StringVar(&o.listen, "listen", ":9580", "address to serve HTTP on")
	fs.DurationVar(&o.interval, "interval", 30*time.Second, "capacity sampling interval")
	fs.DurationVar(&o.window, "window", 6*time.Hour, "growth is fitted over this much history (compaction makes usage a sawtooth: use hours)")
	o.thresholds.addFlags(fs)
	fs.BoolVar(&o.benchOnStart, "bench-on-start", false, "benchmark the disks once at start (see above)")
	fs.StringVar(&o.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.StringVar(&o.conf, "conf", "", "the bookie's bookkeeper.conf, served at /conf (read once at start)")
	return cmd
}

func (o *serveOptions) run(cmd *cobra.Command) error {
	ctx := cmd.Context()
	if err := o.dirs.validate(false); err != nil {
		return err
	}
	if o.interval <= 0 || o.window < o.interval {
		return fmt.Errorf("--interval must be positive and --window at least one interval")
	}
	if err := o.thresholds.validate(); err != nil {
		return err
	}
	lvl, err := cli.ParseLogLevel("--log-level", o.logLevel)
	if err != nil {
		return err
	}
	log := cli.Logger(cmd.ErrOrStderr(), lvl)
	var bench *bookieagent.BenchOnStartOptions
	if o.benchOnStart {
		if err := o.dirs.validate(true); err != nil {
			return fmt.Errorf("--bench-on-start: %w", err)
		}
		budget, maxBytes, err := o.bench.parse()
		if err != nil {
			return err
		}
		direct, directSrc, err := o.mem.resolve()
		if errors.Is(err, bookieagent.ErrNoDirectMemory) {
			log.Warn("bench on start without direct memory: the cache sizes will be left out", "err", err)
			direct, directSrc, err = 0, "", nil
		}
		if err != nil {
			return fmt.Errorf("--bench-on-start: %w", err)
		}
		// The bookie's thresholds as serve was given them, unless its conf
		// or HTTP config is named.
		def := bookieagent.DiskGuard{Threshold: o.thresholds.threshold, WarnThreshold: o.thresholds.warn, LwmThreshold: o.thresholds.lwm,
			Source: "serve's --disk-usage-*-threshold flags"}
		if def.LwmThreshold == 0 {
			def.LwmThreshold = def.Threshold
		}
		guard, err := o.bench.guard(cmd.Context(), "", &def)
		if err != nil {
			return fmt.Errorf("--bench-on-start: %w", err)
		}
		// The agent's own cgroup is the DaemonSet pod's, not the bookie's:
		// only a given --memory-limit counts here.
		var limit int64
		var limitSrc string
		if cmd.Flags().Changed("memory-limit") {
			if limit, limitSrc, err = o.mem.memoryLimit(o.dirs.host()); err != nil {
				return fmt.Errorf("--bench-on-start: %w", err)
			}
		}
		bench = &bookieagent.BenchOnStartOptions{DirectMemoryBytes: direct, DirectMemorySource: directSrc,
			HeapBytes: o.mem.heap, MemoryLimitBytes: limit, MemoryLimitSource: limitSrc, CPUsSource: o.bench.cpusSource(cmd.Flags()),
			Bench: o.bench.options(&o.dirs, guard, budget, maxBytes)}
		bench.Bench.Logger = log
	}
	sampler, err := bookieagent.NewSampler(bookieagent.SamplerOptions{
		Dirs: o.dirs.dirRoles(), Host: o.dirs.host(), Interval: o.interval, Window: o.window,
		Threshold: o.thresholds.threshold, WarnThreshold: o.thresholds.warn, LWMThreshold: o.thresholds.lwm, Logger: log,
	})
	if err != nil {
		return err
	}
	var conf *bookieagent.Conf
	if o.conf != "" {
		var err error
		if conf, err = bookieagent.ReadConfFile(o.conf, bookieagent.ParseConf); err != nil {
			return fmt.Errorf("--conf: %w", err)
		}
	}
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return fmt.Errorf("--listen %s: %w", o.listen, err)
	}
	// NewServer's default registry carries the Go and process collectors.
	srv, err := bookieagent.NewServer(bookieagent.ServerOptions{Sampler: sampler, Conf: conf, Logger: log})
	if err != nil {
		ln.Close()
		return err
	}
	if err := sampler.Sample(ctx); err != nil {
		log.Warn("first sample failed", "err", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go sampler.Run(ctx)
	if bench != nil {
		go srv.BenchOnStart(ctx, *bench)
	}
	log.Info("serving", "addr", ln.Addr().String(), "dirs", len(o.dirs.dirRoles()))
	err = srv.Serve(ctx, ln)
	if errors.Is(ctx.Err(), context.Canceled) && cmd.Context().Err() != nil {
		// Stopped by a signal: a clean exit.
		return nil
	}
	return err
}
