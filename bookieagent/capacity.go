package bookieagent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/shirou/gopsutil/v4/disk"

	"github.com/tierkeeper/tierkeeper/bookieagent/agentapi"
	"github.com/tierkeeper/tierkeeper/internal/hostfs"
)

// BookKeeper's disk-usage thresholds (ServerConfiguration defaults).
const (
	// DefaultDiskUsageThreshold is diskUsageThreshold: above it a ledger dir
	// stops taking writes; all full → the bookie turns read-only.
	DefaultDiskUsageThreshold = 0.95
	// DefaultDiskUsageWarnThreshold is diskUsageWarnThreshold: above it major
	// compaction pauses.
	DefaultDiskUsageWarnThreshold = 0.90
	// diskUsageLwmThreshold defaults to diskUsageThreshold in BookKeeper
	// (ServerConfiguration.getDiskLowWaterMarkUsageThreshold): a read-only
	// bookie turns writable again when the usage over all its ledger dirs'
	// filesystems falls below it (LedgerDirsMonitor).
)

// ErrBadThreshold is returned for disk-usage thresholds BookKeeper would
// refuse (outside (0, 1), warn or lwm above the threshold) or out of the
// order lwm ≤ warn ≤ threshold.
var ErrBadThreshold = errors.New("bad disk usage threshold")

// CheckThresholds validates BookKeeper's disk-usage thresholds: each in
// (0, 1) (DiskChecker and LedgerDirsMonitor refuse anything else), warn ≤
// threshold and lwm ≤ threshold (else the bookie refuses to start), and,
// when lwm is given (> 0), lwm ≤ warn, the order the Pulsar chart asks for.
// lwm 0 means BookKeeper's default: the threshold.
func CheckThresholds(threshold, warn, lwm float64) error {
	bad := func(name string, v float64) error {
		return fmt.Errorf("%w: %s %v: must be > 0 and < 1", ErrBadThreshold, name, v)
	}
	switch {
	case !(threshold > 0 && threshold < 1):
		return bad("diskUsageThreshold", threshold)
	case !(warn > 0 && warn < 1):
		return bad("diskUsageWarnThreshold", warn)
	case lwm != 0 && !(lwm > 0 && lwm < 1):
		return bad("diskUsageLwmThreshold", lwm)
	case warn > threshold:
		return fmt.Errorf("%w: diskUsageWarnThreshold %v > diskUsageThreshold %v (BookKeeper refuses to start)", ErrBadThreshold, warn, threshold)
	case lwm > threshold:
		return fmt.Errorf("%w: diskUsageLwmThreshold %v > diskUsageThreshold %v (BookKeeper refuses to start)", ErrBadThreshold, lwm, threshold)
	case lwm > warn:
		return fmt.Errorf("%w: diskUsageLwmThreshold %v > diskUsageWarnThreshold %v: want lwm ≤ warn ≤ threshold", ErrBadThreshold, lwm, warn)
	}
	return nil
}

// The capacity report's types are the agent's JSON API, in agentapi (a
// leaf package the offloader and the cluster view decode it with).
type (
	Role        = agentapi.Role
	DirRole     = agentapi.DirRole
	IOCounters  = agentapi.IOCounters
	MountReport = agentapi.MountReport
	Report      = agentapi.Report
	DirCapacity = agentapi.DirCapacity
)

// Directory roles.
const (
	RoleJournal = agentapi.RoleJournal
	RoleLedger  = agentapi.RoleLedger
)

// FSUsage is one statfs reading in bytes. Avail counts blocks available to
// unprivileged users (f_bavail), as BookKeeper's DiskChecker does.
type FSUsage struct {
	Size   uint64
	Avail  uint64
	FSType string
}

// StatfsFunc reads a filesystem's size and available bytes.
type StatfsFunc func(ctx context.Context, path string) (FSUsage, error)

// GopsutilStatfs is the default StatfsFunc (gopsutil's disk.Usage: Total =
// f_blocks × f_bsize, Free = f_bavail × f_bsize).
func GopsutilStatfs(ctx context.Context, path string) (FSUsage, error) {
	u, err := disk.UsageWithContext(ctx, path)
	if err != nil {
		return FSUsage{}, err
	}
	return FSUsage{Size: u.Total, Avail: u.Free, FSType: u.Fstype}, nil
}

// SamplerOptions configure a Sampler. Zero values mean the documented
// defaults.
type SamplerOptions struct {
	// Dirs are the journal and ledger directories to watch. Required.
	Dirs []DirRole
	// Host reads /proc and /sys. Default: the real /proc and /sys.
	Host HostFS
	// Interval between samples. Default 30 s.
	Interval time.Duration
	// Window is how far back growth is fitted. Default 6 h (compaction
	// makes usage a sawtooth; see docs/bookieagent.md, Limits).
	Window time.Duration
	// MaxSamples bounds the samples kept per mount. Default 4096.
	MaxSamples int
	// Threshold and WarnThreshold are BookKeeper's diskUsageThreshold and
	// diskUsageWarnThreshold. Defaults 0.95 and 0.90.
	Threshold, WarnThreshold float64
	// LWMThreshold is diskUsageLwmThreshold. Default (0): Threshold, as in
	// BookKeeper.
	LWMThreshold float64
	// StatfsTimeout bounds one statfs call, so a hung mount cannot stall
	// sampling. Default 5 s.
	StatfsTimeout time.Duration
	// Statfs reads capacity. Default GopsutilStatfs; tests inject faults.
	Statfs StatfsFunc
	// Now returns the current time. Default time.Now.
	Now func() time.Time
	// Logger receives warnings. Default: discard.
	Logger *slog.Logger
}

func (o *SamplerOptions) defaults() {
	if o.Interval <= 0 {
		o.Interval = 30 * time.Second
	}
	if o.Window <= 0 {
		o.Window = 6 * time.Hour
	}
	if o.MaxSamples <= 0 {
		o.MaxSamples = 4096
	}
	if o.Threshold <= 0 {
		o.Threshold = DefaultDiskUsageThreshold
	}
	if o.WarnThreshold <= 0 {
		o.WarnThreshold = DefaultDiskUsageWarnThreshold
	}
	if o.StatfsTimeout <= 0 {
		o.StatfsTimeout = 5 * time.Second
	}
	if o.Statfs == nil {
		o.Statfs = GopsutilStatfs
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// point is one capacity sample.
type point struct {
	t     time.Time
	size  float64
	avail float64
}

type mountState struct {
	mount   Mount
	device  string // kernel name of the whole disk, for diskstats
	dirs    []DirRole
	samples []point
	lastErr string
	fsType  string
}

// Sampler samples the capacity of the mounts behind the configured bookie
// directories and the I/O counters of their devices, and keeps a window of
// samples to fit growth. It is safe for concurrent use.
type Sampler struct {
	o SamplerOptions

	mu      sync.Mutex
	mounts  []*mountState
	io      []DiskStats
	ioErr   string
	lastAt  time.Time
	samples uint64
	errors  uint64
}

// NewSampler checks that every directory exists and maps it to its mount
// (through Host's mountinfo, after resolving symlinks). Directories on the
// same mount share one entry.
func NewSampler(opts SamplerOptions) (*Sampler, error) {
	opts.defaults()
	if len(opts.Dirs) == 0 {
		return nil, errors.New("sampler: no directories configured")
	}
	if err := CheckThresholds(opts.Threshold, opts.WarnThreshold, opts.LWMThreshold); err != nil {
		return nil, fmt.Errorf("sampler: %w", err)
	}
	if opts.LWMThreshold == 0 {
		opts.LWMThreshold = opts.Threshold
	}
	mounts, merr := opts.Host.Mounts()
	s := &Sampler{o: opts}
	byMP := map[string]*mountState{}
	seen := map[DirRole]bool{}
	for _, d := range opts.Dirs {
		if seen[d] {
			continue
		}
		seen[d] = true
		st, err := os.Stat(d.Dir)
		if err != nil {
			return nil, fmt.Errorf("%s dir %s: %w", d.Role, d.Dir, err)
		}
		if !st.IsDir() {
			return nil, fmt.Errorf("%s dir %s: %w", d.Role, d.Dir, ErrNoDirectory)
		}
		real, err := filepath.EvalSymlinks(d.Dir)
		if err != nil {
			return nil, fmt.Errorf("%s dir %s: %w", d.Role, d.Dir, err)
		}
		real, _ = filepath.Abs(real)
		var m Mount
		if merr == nil {
			m, err = hostfs.MountFor(mounts, real)
		}
		if merr != nil || err != nil {
			// Without mountinfo each directory stands for itself.
			m = Mount{MountPoint: real}
			opts.Logger.Warn("mount not found; using the directory as its own mount", "dir", d.Dir, "err", errors.Join(merr, err))
		}
		ms := byMP[m.MountPoint]
		if ms == nil {
			ms = &mountState{mount: m}
			if m.Major != 0 || m.Minor != 0 {
				if bd, err := opts.Host.BlockDevice(m.Major, m.Minor); err == nil {
					ms.device = bd.Disk
				}
			}
			byMP[m.MountPoint] = ms
			s.mounts = append(s.mounts, ms)
		}
		ms.dirs = append(ms.dirs, DirRole{Dir: d.Dir, Role: d.Role})
	}
	sort.Slice(s.mounts, func(i, j int) bool { return s.mounts[i].mount.MountPoint < s.mounts[j].mount.MountPoint })
	return s, nil
}

// statDir returns the path statfs is called on: the first configured dir
// of the mount (the mount point itself may be hidden in a container).
func (m *mountState) statDir() string { return m.dirs[0].Dir }

// Sample takes one sample of every mount and of /proc/diskstats. A mount
// whose statfs fails keeps its old samples and reports the error in
// Report; Sample returns the errors joined.
func (s *Sampler) Sample(ctx context.Context) error {
	now := s.o.Now()
	type res struct {
		u   FSUsage
		err error
	}
	results := make([]res, len(s.mounts))
	for i, m := range s.mounts {
		results[i].u, results[i].err = s.statfs(ctx, m.statDir())
	}
	ds, ioErr := s.o.Host.Diskstats()

	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for i, m := range s.mounts {
		r := results[i]
		if r.err == nil && r.u.Size == 0 {
			r.err = fmt.Errorf("statfs %s: filesystem reports size 0", m.statDir())
		}
		if r.err != nil {
			m.lastErr = r.err.Error()
			errs = append(errs, r.err)
			continue
		}
		m.lastErr = ""
		m.fsType = r.u.FSType
		m.samples = append(m.samples, point{t: now, size: float64(r.u.Size), avail: float64(r.u.Avail)})
		cut := now.Add(-s.o.Window)
		drop := 0
		for drop < len(m.samples)-1 && m.samples[drop].t.Before(cut) {
			drop++
		}
		if over := len(m.samples) - drop - s.o.MaxSamples; over > 0 {
			drop += over
		}
		if drop > 0 {
			m.samples = append(m.samples[:0], m.samples[drop:]...)
		}
	}
	if ioErr != nil {
		s.ioErr = ioErr.Error()
		errs = append(errs, ioErr)
	} else {
		s.ioErr = ""
		s.io = ds
	}
	s.samples++
	if len(errs) > 0 {
		s.errors++
	}
	s.lastAt = now
	return errors.Join(errs...)
}

func (s *Sampler) statfs(ctx context.Context, path string) (FSUsage, error) {
	ctx, cancel := context.WithTimeout(ctx, s.o.StatfsTimeout)
	defer cancel()
	ch := make(chan struct {
		u   FSUsage
		err error
	}, 1)
	go func() {
		u, err := s.o.Statfs(ctx, path)
		ch <- struct {
			u   FSUsage
			err error
		}{u, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			return FSUsage{}, fmt.Errorf("statfs %s: %w", path, r.err)
		}
		return r.u, nil
	case <-ctx.Done():
		return FSUsage{}, fmt.Errorf("statfs %s: %w", path, ctx.Err())
	}
}

// Run samples every Interval until ctx ends. The first sample is taken at
// once.
func (s *Sampler) Run(ctx context.Context) {
	t := time.NewTicker(s.o.Interval)
	defer t.Stop()
	for {
		if err := s.Sample(ctx); err != nil && ctx.Err() == nil {
			s.o.Logger.Warn("sample failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// SampleFor takes a sample at once, then one every Interval until d has
// passed (d ≤ 0: the one sample), for a report with growth. It stops at
// the first failed sample and when ctx ends (ctx's error).
func (s *Sampler) SampleFor(ctx context.Context, d time.Duration) error {
	if err := s.Sample(ctx); err != nil || d <= 0 {
		return err
	}
	deadline := time.Now().Add(d)
	t := time.NewTicker(s.o.Interval)
	defer t.Stop()
	for time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		if err := s.Sample(ctx); err != nil {
			return err
		}
	}
	return nil
}

// FitGrowth returns the least-squares slope of used bytes (size − avail)
// over time, in bytes per second, and false when fewer than two samples
// span a non-zero time.
func FitGrowth(ts []time.Time, used []float64) (float64, bool) {
	n := len(ts)
	if n < 2 || len(used) != n {
		return 0, false
	}
	t0 := ts[0]
	var sx, sy float64
	for i := range ts {
		sx += ts[i].Sub(t0).Seconds()
		sy += used[i]
	}
	mx, my := sx/float64(n), sy/float64(n)
	var sxx, sxy float64
	for i := range ts {
		dx := ts[i].Sub(t0).Seconds() - mx
		sxx += dx * dx
		sxy += dx * (used[i] - my)
	}
	if sxx == 0 {
		return 0, false
	}
	g := sxy / sxx
	if math.IsNaN(g) || math.IsInf(g, 0) {
		return 0, false
	}
	return g, true
}

// SecondsTo returns how long until usage (1 − avail/size) reaches
// threshold at the given growth: 0 when it already has, and false when
// usage is not growing.
func SecondsTo(size, avail, growth, threshold float64) (float64, bool) {
	target := (1 - threshold) * size
	if avail <= target {
		return 0, true
	}
	if growth <= 0 {
		return 0, false
	}
	v := (avail - target) / growth
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, false
	}
	return v, true
}

// Report builds the capacity report from the samples so far.
func (s *Sampler) Report() Report {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := Report{GeneratedAt: s.o.Now().UTC(), Threshold: s.o.Threshold, WarnThreshold: s.o.WarnThreshold, LWMThreshold: s.o.LWMThreshold,
		LastSample: s.lastAt.UTC(), LedgerDirs: []DirCapacity{}}
	ioBy := map[string]DiskStats{}
	for _, d := range s.io {
		ioBy[d.Name] = d
	}
	var lGrowth float64
	lFit := false
	ledgerMounts, fullMounts := 0, 0
	var lSize, lAvail float64
	for _, m := range s.mounts {
		mr := MountReport{MountPoint: m.mount.MountPoint, Device: m.device, FSType: m.mount.FSType, Dirs: m.dirs, Error: m.lastErr}
		if mr.FSType == "" {
			mr.FSType = m.fsType
		}
		if d, ok := ioBy[m.device]; ok && m.device != "" {
			mr.IO = &IOCounters{Device: d.Name, ReadsCompleted: d.ReadsCompleted, WritesCompleted: d.WritesCompleted,
				ReadBytes: d.ReadBytes, WrittenBytes: d.WrittenBytes, ReadTimeSeconds: d.ReadTimeSeconds,
				WriteTimeSeconds: d.WriteTimeSeconds, IOTimeSeconds: d.IOTimeSeconds, IOTimeWeightedSecond: d.IOTimeWeightedSecond}
		}
		if m.lastErr != "" {
			r.SampleErrors = append(r.SampleErrors, m.lastErr)
		}
		ledger := false
		for _, d := range m.dirs {
			ledger = ledger || d.Role == RoleLedger
		}
		mr.Samples = len(m.samples)
		if n := len(m.samples); n > 0 {
			last := m.samples[n-1]
			mr.SizeBytes = uint64(last.size)
			mr.AvailBytes = uint64(last.avail)
			mr.UsedBytes = mr.SizeBytes - min(mr.SizeBytes, mr.AvailBytes)
			mr.Usage = 1 - last.avail/last.size
			mr.AboveWarn = mr.Usage > s.o.WarnThreshold
			mr.AboveThreshold = mr.Usage > s.o.Threshold
			mr.HeadroomBytes = last.avail - (1-s.o.Threshold)*last.size
			mr.WarnHeadroomBytes = last.avail - (1-s.o.WarnThreshold)*last.size
			mr.WindowSeconds = last.t.Sub(m.samples[0].t).Seconds()
			ts := make([]time.Time, n)
			used := make([]float64, n)
			for i, p := range m.samples {
				ts[i], used[i] = p.t, p.size-p.avail
			}
			if g, ok := FitGrowth(ts, used); ok {
				mr.GrowthBytesPerSec = ptrF(g)
				if v, ok := SecondsTo(last.size, last.avail, g, s.o.WarnThreshold); ok {
					mr.SecondsToWarn = ptrF(v)
				}
				if v, ok := SecondsTo(last.size, last.avail, g, s.o.Threshold); ok {
					mr.SecondsToReadOnly = ptrF(v)
				}
				if ledger {
					lGrowth += g
					lFit = true
				}
			}
			if ledger {
				ledgerMounts++
				if mr.AboveThreshold {
					fullMounts++
				}
				lSize += last.size
				lAvail += last.avail
				r.LedgerUsedBytes += mr.UsedBytes
				r.LedgerHeadroomBytes += math.Max(0, mr.HeadroomBytes)
				r.LedgerWarnHeadroomBytes += math.Max(0, mr.WarnHeadroomBytes)
				r.SecondsToWarn = minPtr(r.SecondsToWarn, mr.SecondsToWarn)
				r.SecondsToReadOnly = minPtr(r.SecondsToReadOnly, mr.SecondsToReadOnly)
				for _, d := range m.dirs {
					if d.Role == RoleLedger {
						r.LedgerDirs = append(r.LedgerDirs, DirCapacity{Dir: d.Dir, MountPoint: mr.MountPoint, Usage: mr.Usage,
							SecondsToWarn: mr.SecondsToWarn, SecondsToReadOnly: mr.SecondsToReadOnly, AboveThreshold: mr.AboveThreshold})
					}
				}
			}
		}
		r.Mounts = append(r.Mounts, mr)
	}
	if s.ioErr != "" {
		r.SampleErrors = append(r.SampleErrors, s.ioErr)
	}
	if lFit {
		r.LedgerGrowthBytesPerSec = ptrF(lGrowth)
	}
	if ledgerMounts > 0 && fullMounts == ledgerMounts {
		r.ReadOnly = true
		r.WritableAgainBytes = math.Max(0, (1-s.o.LWMThreshold)*lSize-lAvail)
		if lFit && lGrowth < 0 {
			r.SecondsToWritable = ptrF(r.WritableAgainBytes / -lGrowth)
		}
	}
	return r
}

func minPtr(a, b *float64) *float64 {
	switch {
	case b == nil:
		return a
	case a == nil || *b < *a:
		return ptrF(*b)
	}
	return a
}

// Stats returns the number of samples taken, how many had errors, and the
// time of the last one.
func (s *Sampler) Stats() (samples, errs uint64, last time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.samples, s.errors, s.lastAt
}

// Interval returns the sampling interval in force.
func (s *Sampler) Interval() time.Duration { return s.o.Interval }

func ptrF(v float64) *float64 { return &v }
