package bookieagent

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tierkeeper/tierkeeper/diskbench"
	"github.com/tierkeeper/tierkeeper/internal/bookiedir"
	"github.com/tierkeeper/tierkeeper/internal/units"
)

// Bench defaults (the bounds for `bookieagent recommend`).
const (
	DefaultBenchTime  = 60 * time.Second
	DefaultBenchBytes = 2 * GiB
	// minPointTime and minPointBytes are the least a point needs to give a
	// figure (diskbench skips points measured for less than 0.5 s).
	minPointTime  = 1 * time.Second
	minPointBytes = 16 * MiB
	// tier thresholds: optional points run only when every point of the
	// plan gets at least this much time.
	tier2PointTime = 1800 * time.Millisecond
	tier3PointTime = 2500 * time.Millisecond
	// journalEntry is the journal points' entry size; journalDeepInFlight
	// the entries in flight of the threshold and buffer points (4 MiB: a
	// group can fill any threshold measured while the previous one syncs).
	journalEntry        = 64 * KiB
	journalDeepInFlight = 64
	// randReadFile is the file random reads run on; 64 MiB keeps the
	// layout cheap under a 2 GiB budget.
	randReadFile = 64 * MiB
)

// ScratchPrefix names the scratch directories the agent creates next to a
// live bookie's directories.
const ScratchPrefix = ".bookieagent-scratch"

// BenchOptions configure PrepareBench.
type BenchOptions struct {
	// JournalDirs and LedgerDirs are the bookie directories; each is
	// treated as one disk. Both are required.
	JournalDirs, LedgerDirs []string
	// TimeBudget bounds the whole benchmark. Zero means DefaultBenchTime
	// (60 s); a negative value is an error.
	TimeBudget time.Duration
	// MaxBytes bounds the bytes written in total. Zero means
	// DefaultBenchBytes (2 GiB); a negative value is an error.
	MaxBytes int64
	// CPUs is the bookie's CPU count (caps the journal writer sweep).
	// Default 1.
	CPUs int
	// RaiseGOMAXPROCS is passed to diskbench (diskbench.Options): set it
	// only in a program that owns its process. Default off.
	RaiseGOMAXPROCS bool
	// Host reads /proc and /sys for device facts. Default: real ones.
	Host HostFS
	// Logger receives progress at debug level. Default: discard.
	Logger *slog.Logger
	// Progress, when set, receives diskbench's progress events with the
	// step name ("journal /mnt/j: group 256KiB").
	Progress func(step string, ev diskbench.ProgressEvent)
	// Sweep runs one diskbench plan. Default diskbench.Sweep; tests inject
	// faults through it.
	Sweep func(ctx context.Context, p diskbench.Plan) (*diskbench.Report, error)
}

// BenchDisk is one prepared disk.
type BenchDisk struct {
	Role Role
	Disk Disk
	// Scratch is true when BenchDir is a scratch directory the agent
	// creates (and removes) because Dir holds a live bookie.
	Scratch bool
	// FreeBytes is what statfs reports available.
	FreeBytes uint64
}

// BenchStep is one diskbench Sweep call of the plan.
type BenchStep struct {
	Name   string
	Disk   int // index into Prepared.Disks
	Plan   diskbench.Plan
	Points int
	// Bytes the step's layout needs on top of its points (random reads).
	LayoutBytes int64
}

// PreparedBench is a validated benchmark: directories checked, scratch
// directories chosen, the plan fitted to the budget. Nothing has been
// written yet.
type PreparedBench struct {
	o     BenchOptions
	Disks []BenchDisk
	Steps []BenchStep
	// Dropped lists optional steps left out to fit the budget.
	Dropped []string
}

// PrepareBench validates every directory (exists, is a directory, is
// writable, not on tmpfs/ramfs/overlayfs), looks for cookies, picks where
// to write (the directory itself when it holds no bookie data, else a
// scratch sibling on the same filesystem, else ErrLiveBookie), and fits the
// sweep into the budget (ErrBudgetTooSmall when not even the essential
// points fit). It writes nothing.
func PrepareBench(ctx context.Context, o BenchOptions) (*PreparedBench, error) {
	if o.TimeBudget < 0 || o.MaxBytes < 0 {
		return nil, fmt.Errorf("%w: negative budget (%v, %d bytes)", ErrBudgetTooSmall, o.TimeBudget, o.MaxBytes)
	}
	if o.TimeBudget == 0 {
		o.TimeBudget = DefaultBenchTime
	}
	if o.MaxBytes == 0 {
		o.MaxBytes = DefaultBenchBytes
	}
	if o.CPUs < 1 {
		o.CPUs = 1
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Sweep == nil {
		o.Sweep = diskbench.Sweep
	}
	if len(o.JournalDirs) == 0 || len(o.LedgerDirs) == 0 {
		return nil, errors.New("need at least one --journal-dir and one --ledger-dir")
	}
	p := &PreparedBench{o: o}
	for _, rd := range []struct {
		role Role
		dirs []string
	}{{RoleJournal, o.JournalDirs}, {RoleLedger, o.LedgerDirs}} {
		for _, dir := range rd.dirs {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			bd, err := prepareDisk(ctx, rd.role, dir, o.Host)
			if err != nil {
				return nil, err
			}
			p.Disks = append(p.Disks, bd)
		}
	}
	if err := p.plan(); err != nil {
		return nil, err
	}
	return p, nil
}

func prepareDisk(ctx context.Context, role Role, dir string, host HostFS) (BenchDisk, error) {
	d, err := bookiedir.Stat(ctx, dir, host)
	if err != nil {
		return BenchDisk{}, fmt.Errorf("%s dir %s: %w", role, dir, err)
	}
	if err := d.CheckFS(false, "mount the bookie's volume there"); err != nil {
		return BenchDisk{}, fmt.Errorf("%s dir: %w", role, err)
	}
	cookies, err := FindCookies(d.Path)
	if err != nil {
		return BenchDisk{}, err
	}
	found, err := bookiedir.FindBookieData(d.Path)
	if err != nil {
		return BenchDisk{}, fmt.Errorf("%s dir %s: %w", role, d.Path, err)
	}
	bd := BenchDisk{Role: role, Disk: Disk{Dir: d.Path, FSType: d.FSType, Device: d.Device, Cookies: cookies}, FreeBytes: d.FreeBytes}
	if len(found) == 0 {
		if err := d.CheckWritable(); err != nil {
			return BenchDisk{}, fmt.Errorf("%s dir: %w", role, err)
		}
		bd.Disk.BenchDir = d.Path
		return bd, nil
	}
	st, err := os.Stat(d.Path)
	if err != nil {
		return BenchDisk{}, fmt.Errorf("%s dir %s: %w", role, d.Path, err)
	}
	scratch, err := scratchFor(d.Path, st)
	if err != nil {
		return BenchDisk{}, fmt.Errorf("%s dir %s: %w", role, d.Path, err)
	}
	bd.Disk.BenchDir, bd.Scratch = scratch, true
	return bd, nil
}

// scratchFor picks a scratch directory on the same filesystem as the live
// bookie directory dir, outside every bookie directory: inside dir when the
// bookie's dirs are dir's sub-directories (dir itself has no current/),
// else next to dir. The parent must be writable and on the same device.
func scratchFor(dir string, st os.FileInfo) (string, error) {
	name := fmt.Sprintf("%s-%d", ScratchPrefix, os.Getpid())
	var cands []string
	if _, err := os.Stat(filepath.Join(dir, "current")); errors.Is(err, fs.ErrNotExist) {
		cands = append(cands, filepath.Join(dir, name))
	}
	if parent := filepath.Dir(dir); parent != dir {
		cands = append(cands, filepath.Join(parent, name+"-"+filepath.Base(dir)))
	}
	want := st.Sys()
	var reasons []string
	for _, c := range cands {
		parent := filepath.Dir(c)
		pst, err := os.Stat(parent)
		if err != nil {
			reasons = append(reasons, fmt.Sprintf("%s: %v", parent, err))
			continue
		}
		if devOf(want) == 0 || devOf(want) != devOf(pst.Sys()) {
			reasons = append(reasons, fmt.Sprintf("%s is on another filesystem", parent))
			continue
		}
		if err := unix.Access(parent, unix.W_OK|unix.X_OK); err != nil {
			reasons = append(reasons, fmt.Sprintf("%s is not writable", parent))
			continue
		}
		return c, nil
	}
	return "", fmt.Errorf("%w: no scratch directory on the same filesystem outside the bookie's directories (%s); benchmark a new disk, or a spare directory on the same filesystem",
		ErrLiveBookie, strings.Join(reasons, "; "))
}

// plan builds the steps in tiers and keeps the tiers that fit the budget.
func (p *PreparedBench) plan() error {
	type tiered struct {
		tier int
		step BenchStep
	}
	var all []tiered
	nJournal := len(p.o.JournalDirs)
	capN := max(1, min(MaxJournalDirsPerDisk, p.o.CPUs/2/nJournal))
	for i, d := range p.Disks {
		dir := d.Disk.BenchDir
		base := diskbench.Options{Dir: dir}
		label := func(s string) string { return fmt.Sprintf("%s %s: %s", d.Role, d.Disk.Dir, s) }
		// Journal points run diskbench's BookKeeper journal model with
		// Pulsar's journal settings, changed one at a time: the writers
		// sweep at the default in-flight entries, then thresholds and
		// write buffers with enough entries in flight (4 MiB) for groups to
		// fill any threshold measured.
		jp := func(writers []int, thresholdKiB, bufferKiB int64, inFlight int) diskbench.Plan {
			st := diskbench.DefaultJournalSettings()
			if thresholdKiB > 0 {
				st.JournalBufferedWritesThreshold = thresholdKiB * KiB
			}
			if bufferKiB > 0 {
				st.JournalWriteBufferSizeKB = int(bufferKiB)
			}
			return diskbench.Plan{Options: base, Journal: &diskbench.JournalParams{Model: diskbench.JournalModelBookKeeper,
				Writers: writers, BlockSizes: []int64{journalEntry}, Settings: &st, InFlight: inFlight}}
		}
		ep := func(writers []int, bss []int64) diskbench.Plan {
			return diskbench.Plan{Options: base, EntryLog: &diskbench.EntryLogParams{Writers: writers, BlockSizes: bss}}
		}
		switch d.Role {
		case RoleJournal:
			all = append(all,
				tiered{1, BenchStep{Name: label("journals 1,2,4 × 64KiB entries, Pulsar's journal settings"), Disk: i, Plan: jp([]int{1, 2, 4}, 0, 0, 0), Points: 3}},
				tiered{2, BenchStep{Name: label("journalBufferedWritesThreshold 512KiB, 64 × 64KiB in flight"), Disk: i, Plan: jp([]int{1}, 512, 0, journalDeepInFlight), Points: 1}},
				tiered{2, BenchStep{Name: label("journalBufferedWritesThreshold 1MiB, 64 × 64KiB in flight"), Disk: i, Plan: jp([]int{1}, 1024, 0, journalDeepInFlight), Points: 1}},
				tiered{3, BenchStep{Name: label("journalBufferedWritesThreshold 1MiB, journalWriteBufferSizeKB 256"), Disk: i, Plan: jp([]int{1}, 1024, 256, journalDeepInFlight), Points: 1}},
				tiered{3, BenchStep{Name: label("journalBufferedWritesThreshold 1MiB, journalWriteBufferSizeKB 1024"), Disk: i, Plan: jp([]int{1}, 1024, 1024, journalDeepInFlight), Points: 1}},
			)
			if capN >= 4 {
				all = append(all, tiered{2, BenchStep{Name: label("journals 8 × 64KiB entries"), Disk: i, Plan: jp([]int{8}, 0, 0, 0), Points: 1}})
			}
		case RoleLedger:
			all = append(all,
				tiered{1, BenchStep{Name: label("entry log 1MiB, 8MiB writes"), Disk: i, Plan: ep([]int{1}, []int64{1 * MiB, 8 * MiB}), Points: 2}},
				tiered{2, BenchStep{Name: label("entry log 64KiB writes"), Disk: i, Plan: ep([]int{1}, []int64{64 * KiB}), Points: 1}},
				tiered{2, BenchStep{Name: label("entry log 2 writers × 1MiB"), Disk: i, Plan: ep([]int{2}, []int64{1 * MiB}), Points: 1}},
				tiered{2, BenchStep{Name: label("random reads 4KiB depth 16"), Disk: i, Points: 1, LayoutBytes: randReadFile,
					Plan: diskbench.Plan{Options: base, RandRead: &diskbench.RandReadParams{BlockSizes: []int64{4 * KiB}, Depths: []int{16}, FileSize: randReadFile}}}},
				tiered{3, BenchStep{Name: label("entry log 4 writers × 1MiB"), Disk: i, Plan: ep([]int{4}, []int64{1 * MiB}), Points: 1}},
				tiered{4, BenchStep{Name: label("entry log 64MiB writes"), Disk: i, Plan: ep([]int{1}, []int64{64 * MiB}), Points: 1}},
			)
		}
	}
	fits := func(maxTier int) (time.Duration, int64) {
		pts := 0
		var layout int64
		for _, t := range all {
			if t.tier <= maxTier {
				pts += t.step.Points
				layout += t.step.LayoutBytes
			}
		}
		per := p.o.TimeBudget / time.Duration(pts)
		perB := (p.o.MaxBytes - layout) / int64(pts)
		return per, perB
	}
	chosen := 0
	for tier := 4; tier >= 1; tier-- {
		per, perB := fits(tier)
		need := map[int]time.Duration{1: minPointTime, 2: tier2PointTime, 3: tier3PointTime, 4: tier3PointTime}[tier]
		okBytes := perB >= minPointBytes
		if tier == 4 {
			okBytes = perB >= 4*64*MiB
		}
		if per >= need && okBytes {
			chosen = tier
			break
		}
	}
	if chosen == 0 {
		per, perB := fits(1)
		return fmt.Errorf("%w: %v and %s over %d disks leave %v and %s per essential point; need ≥ %v and ≥ %s",
			ErrBudgetTooSmall, p.o.TimeBudget, units.FormatBytes(p.o.MaxBytes), len(p.Disks), per.Round(time.Millisecond), units.HumanBytes(float64(perB)), minPointTime, units.FormatBytes(minPointBytes))
	}
	for _, t := range all {
		if t.tier <= chosen {
			p.Steps = append(p.Steps, t.step)
		} else {
			p.Dropped = append(p.Dropped, t.step.Name)
		}
	}
	// Each disk must have room for its share plus diskbench's reserve.
	for i, d := range p.Disks {
		var need int64
		for _, s := range p.Steps {
			if s.Disk == i {
				need = max(need, p.o.MaxBytes*int64(s.Points)/int64(p.points())+s.LayoutBytes)
			}
		}
		if uint64(need)+uint64(diskbench.ReserveBytes) > d.FreeBytes {
			return fmt.Errorf("%s dir %s: %w: %s free, a step may write %s plus a %s reserve",
				d.Role, d.Disk.Dir, diskbench.ErrInsufficientSpace, units.HumanBytes(float64(d.FreeBytes)), units.HumanBytes(float64(need)), units.FormatBytes(diskbench.ReserveBytes))
		}
	}
	return nil
}

func (p *PreparedBench) points() int {
	n := 0
	for _, s := range p.Steps {
		n += s.Points
	}
	return max(1, n)
}

// BenchResult is what Run measured.
type BenchResult struct {
	JournalDisks, LedgerDisks []Disk
	BytesWritten              int64
	Elapsed                   time.Duration
	Warnings                  []string
}

// Run executes the plan: it creates scratch directories, runs each step
// with its share of the time and bytes left, and removes the scratch
// directories (diskbench unlinks its own files). A failing step stops the
// run; its error is returned with the results so far.
func (p *PreparedBench) Run(ctx context.Context) (res *BenchResult, err error) {
	start := time.Now()
	deadline := start.Add(p.o.TimeBudget)
	res = &BenchResult{}
	for i := range p.Disks {
		d := &p.Disks[i]
		if !d.Scratch {
			continue
		}
		if err := os.Mkdir(d.Disk.BenchDir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return res, fmt.Errorf("create scratch dir: %w", err)
		}
		defer func(dir string) {
			if rerr := os.Remove(dir); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
				err = errors.Join(err, fmt.Errorf("remove scratch dir: %w", rerr))
			}
		}(d.Disk.BenchDir)
	}
	leftPts := p.points()
	var layoutLeft int64
	for _, s := range p.Steps {
		layoutLeft += s.LayoutBytes
	}
	bytesLeft := p.o.MaxBytes
	for _, s := range p.Steps {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		remain := time.Until(deadline)
		tb := remain * time.Duration(s.Points) / time.Duration(leftPts)
		mb := (bytesLeft-layoutLeft)*int64(s.Points)/int64(leftPts) + s.LayoutBytes
		leftPts -= s.Points
		layoutLeft -= s.LayoutBytes
		if tb < minPointTime/2 || mb < minPointBytes {
			res.Warnings = append(res.Warnings, fmt.Sprintf("skipped %s: budget spent", s.Name))
			continue
		}
		plan := s.Plan
		plan.TimeBudget = tb
		plan.Options.MaxBytes = mb
		plan.Options.Logger = p.o.Logger
		plan.Options.RaiseGOMAXPROCS = p.o.RaiseGOMAXPROCS
		if p.o.Progress != nil {
			name := s.Name
			plan.Options.Progress = func(ev diskbench.ProgressEvent) { p.o.Progress(name, ev) }
		}
		p.o.Logger.Debug("bench step", "step", s.Name, "time_budget", tb, "max_bytes", mb)
		rep, err := p.o.Sweep(ctx, plan)
		if rep != nil {
			bytesLeft -= rep.BytesWritten
			res.BytesWritten += rep.BytesWritten
			p.Disks[s.Disk].Disk.Results = append(p.Disks[s.Disk].Disk.Results, rep.Results...)
			for _, w := range rep.Warnings {
				res.Warnings = append(res.Warnings, fmt.Sprintf("%s: %s", s.Name, w))
			}
		}
		if err != nil {
			return res, fmt.Errorf("%s: %w", s.Name, err)
		}
	}
	for _, d := range p.Disks {
		if d.Role == RoleJournal {
			res.JournalDisks = append(res.JournalDisks, d.Disk)
		} else {
			res.LedgerDisks = append(res.LedgerDisks, d.Disk)
		}
	}
	res.Elapsed = time.Since(start)
	return res, nil
}
