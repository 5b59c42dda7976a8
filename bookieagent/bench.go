package bookieagent

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tierkeeper/tierkeeper/diskbench"
	"github.com/tierkeeper/tierkeeper/internal/bookiedir"
	"github.com/tierkeeper/tierkeeper/internal/units"
)

// Bench defaults (`bookieagent recommend` and `serve --bench-on-start`).
const (
	// DefaultBenchTime bounds the whole benchmark: each disk's probe runs
	// past its caches, then every decisive point is measured exactly
	// DefaultRounds times for budget/80 (measureFor; shorter only when the
	// rounds do not fit).
	DefaultBenchTime = 2 * time.Minute
	// DefaultBenchBytes bounds the bytes written in total: the time budget
	// binds first on most disks (a virtual disk with a fast host cache
	// writes 1–3 GB/s; a run must get past that). Each run also stays
	// within its disk's free space (diskbench's 256 MiB reserve kept);
	// files are removed after every run, so the disk never holds more than
	// one run's files.
	DefaultBenchBytes = 512 * GiB
	// DefaultRounds is how often each decisive benchPoint is measured
	// (rounds interleaved, so slow drift hits every candidate of a
	// comparison alike). It is fixed: no run adds rounds while a
	// comparison is open or stops a point early, so every run of the same
	// budget decides on the same number of paired rounds (a run that
	// stopped on 4 rounds where the others had 2 moved a count the others
	// kept). 3, the fewest a count may move on (MinMoveRounds), not 4: with
	// the probes no round, 4 rounds are 27 runs (6 decisive points × 4,
	// random reads, 2 mixed), which the plan's estimate does not fit into
	// what the probes (14–21 s) leave of 2 minutes on the project's VM even
	// at 1 s measured, and which measured run times (~3 s per journal,
	// ~4.3 s per entry-log run) put at 108–115 s of 120: no room for a run
	// over its time. --rounds 4 needs a longer --budget there (by the
	// plan's estimate, 2m30s holds 4 rounds for two of three saved runs).
	DefaultRounds = 3
	// planReserve is the share of the time left after the probes the plan
	// keeps free: a run over its estimate must not push the last point of
	// the last round past the deadline (it would be skipped, and its
	// comparison decided on a round fewer than in another run).
	planReserve = 0.03
	// mixedRuns is how often the shared-device point runs (its figures
	// set journalMaxGroupWaitMSec and the compaction rate, no count).
	mixedRuns = 2
	// journalEntry is the journal points' entry size; journalDeepInFlight
	// the entries in flight of the threshold and buffer points (4 MiB: a
	// group can fill any threshold measured while the previous one syncs).
	journalEntry        = 64 * KiB
	journalDeepInFlight = 64
	// randReadFile is the file random reads run on.
	randReadFile = 256 * MiB
	// Per-run planning figures.
	runOverhead    = 1000 * time.Millisecond // files, checks, cleanup per run: 0.24–0.83 s (median 0.57) per journal run, 0.39–1.30 s (0.77) per entry-log run on the project's 2-CPU VM
	maxMeasure     = 10 * time.Second
	minMeasure     = 1 * time.Second
	minRunBytes    = 16 * MiB
	settleWindow   = 2
	settleTol      = 0.10
	probeMeasure   = 3 * time.Second
	journalWarmCap = 8 * time.Second
)

// ScratchPrefix names the scratch directories the agent benchmarks in.
const ScratchPrefix = ".bookieagent-scratch"

// BenchOptions configure PrepareBench.
type BenchOptions struct {
	// JournalDirs and LedgerDirs are the bookie directories; each is
	// treated as one disk. Both are required.
	JournalDirs, LedgerDirs []string
	// TimeBudget bounds the whole benchmark. Zero means DefaultBenchTime;
	// a negative value is an error.
	TimeBudget time.Duration
	// MaxBytes bounds the bytes written in total. Zero means
	// DefaultBenchBytes; a negative value is an error.
	MaxBytes int64
	// Rounds is how often each decisive benchPoint is measured (fixed;
	// fewer only when the budget cannot hold them at the shortest
	// measurement). Zero means DefaultRounds.
	Rounds int
	// CPUs is the bookie's CPU count (evidence only; journal threads
	// mostly wait on fdatasync). Default 1.
	CPUs int
	// AllowLiveBookie benchmarks a disk that holds a live bookie, in a
	// scratch directory outside the bookie's directories on the same
	// filesystem; the bookie's files are never touched, but its disk
	// carries the benchmark's load. Without it such a disk is refused
	// (ErrLiveBookie).
	AllowLiveBookie bool
	// RaiseGOMAXPROCS is passed to diskbench (diskbench.Options): set it
	// only in a program that owns its process. Default off.
	RaiseGOMAXPROCS bool
	// Host reads /proc and /sys for device facts. Default: real ones.
	Host HostFS
	// Logger receives progress at debug level. Default: discard.
	Logger *slog.Logger
	// Progress, when set, receives diskbench's progress events with the
	// step name ("journal /mnt/j: journals 1 … round 2/3").
	Progress func(step string, ev diskbench.ProgressEvent)
	// Sweep runs one diskbench plan. Default diskbench.Sweep; tests inject
	// faults through it.
	Sweep func(ctx context.Context, p diskbench.Plan) (*diskbench.Report, error)
	// Guard bounds every run so that no directory's filesystem passes the
	// bookie's disk-usage ceiling (DiskGuard). Default DefaultDiskGuard():
	// pass the bookie's own thresholds (DiskGuardFromConf,
	// DiskGuardFromServerConfig) when they differ.
	Guard *DiskGuard
	// Statfs reads a filesystem's size and available bytes before every
	// run. Default GopsutilStatfs.
	Statfs StatfsFunc
}

// BenchDisk is one prepared disk.
type BenchDisk struct {
	Role Role
	Disk Disk
	// Live is true when Dir held bookie data when the benchmark was
	// prepared (benchmarked beside it only with AllowLiveBookie).
	Live bool
	// FreeBytes is what statfs reports available.
	FreeBytes uint64
	// found is what bookiedir found (for Live), or nothing.
	found []string
}

// PreparedBench is a validated benchmark: directories checked, scratch
// directories chosen. Nothing has been written yet; Run measures the
// disks' rates first and fits the rest of the plan to the budget with them.
type PreparedBench struct {
	o     BenchOptions
	Disks []BenchDisk
	// Guard is what the disk guard found at the start; Run updates its
	// counts.
	Guard GuardRecord
}

// PrepareBench validates every directory (exists, is a directory, is
// writable, not on tmpfs/ramfs/overlayfs), looks for cookies and bookie
// data, and picks where to write: a scratch directory
// .bookieagent-scratch-<pid> inside the directory when the directory itself
// is not a bookie directory (BookKeeper only looks into <dir>/current, so
// the scratch directory never stops a new bookie from formatting the
// directory), else next to it on the same filesystem. A directory holding
// bookie data is refused (ErrLiveBookie) unless AllowLiveBookie. It checks
// that the budget can hold at least one round of the essential points
// (ErrBudgetTooSmall). It writes nothing.
func PrepareBench(ctx context.Context, o BenchOptions) (*PreparedBench, error) {
	if o.TimeBudget < 0 || o.MaxBytes < 0 || o.Rounds < 0 {
		return nil, fmt.Errorf("%w: negative budget (%v, %d bytes, %d rounds)", ErrBudgetTooSmall, o.TimeBudget, o.MaxBytes, o.Rounds)
	}
	if o.TimeBudget == 0 {
		o.TimeBudget = DefaultBenchTime
	}
	if o.MaxBytes == 0 {
		o.MaxBytes = DefaultBenchBytes
	}
	if o.Rounds == 0 {
		o.Rounds = DefaultRounds
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
	if o.Guard == nil {
		g := DefaultDiskGuard()
		o.Guard = &g
	}
	if err := o.Guard.validate(); err != nil {
		return nil, err
	}
	if o.Statfs == nil {
		o.Statfs = GopsutilStatfs
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
			bd, err := prepareDisk(ctx, rd.role, dir, o)
			if err != nil {
				return nil, err
			}
			p.Disks = append(p.Disks, bd)
		}
	}
	if err := p.checkRoom(ctx); err != nil {
		return nil, err
	}
	// The least a run can do: the probes and one round of the essential
	// points at the shortest measurement.
	pl := p.points(nil)
	var need time.Duration
	for _, pt := range pl {
		if pt.tier == 1 {
			need += pt.cost(minMeasure)
		}
	}
	if o.TimeBudget < need {
		return nil, fmt.Errorf("%w: %v over %d disks; one round of the essential points needs about %v",
			ErrBudgetTooSmall, o.TimeBudget, len(p.Disks), need.Round(time.Second))
	}
	if minB := int64(len(pl)) * minRunBytes; o.MaxBytes < minB {
		return nil, fmt.Errorf("%w: %s over %d disks; one round of the essential points needs at least %s",
			ErrBudgetTooSmall, units.FormatBytes(o.MaxBytes), len(p.Disks), units.FormatBytes(minB))
	}
	return p, nil
}

func prepareDisk(ctx context.Context, role Role, dir string, o BenchOptions) (BenchDisk, error) {
	d, err := bookiedir.Stat(ctx, dir, o.Host)
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
	bd := BenchDisk{Role: role, FreeBytes: d.FreeBytes, Live: len(found) > 0, found: found,
		Disk: Disk{Dir: d.Path, FSType: d.FSType, Device: d.Device, Cookies: cookies, TotalBytes: d.TotalBytes}}
	if bd.Live && !o.AllowLiveBookie {
		return BenchDisk{}, fmt.Errorf("%s dir %s: %w (%s): the benchmark would load a live bookie's disk; give --allow-live-bookie to measure beside it in a scratch directory (the bookie's files are never touched), or use --input with measurements saved earlier",
			role, d.Path, ErrLiveBookie, strings.Join(found, ", "))
	}
	st, err := os.Stat(d.Path)
	if err != nil {
		return BenchDisk{}, fmt.Errorf("%s dir %s: %w", role, d.Path, err)
	}
	scratch, err := scratchFor(d.Path, st, found)
	if err != nil {
		return BenchDisk{}, fmt.Errorf("%s dir %s: %w", role, d.Path, err)
	}
	if !bd.Live {
		// An empty (or non-bookie) directory must be writable itself.
		if err := d.CheckWritable(); err != nil {
			return BenchDisk{}, fmt.Errorf("%s dir: %w", role, err)
		}
	}
	bd.Disk.BenchDir = scratch
	return bd, nil
}

// scratchFor picks a scratch directory on the same filesystem as dir,
// outside every bookie directory: inside dir when dir itself is not a
// bookie directory (it has no current/ and none of the bookie data found
// lies directly in it: empty, or the parent of bookie directories), else
// next to dir. The parent must be writable and on the same device.
func scratchFor(dir string, st os.FileInfo, found []string) (string, error) {
	name := fmt.Sprintf("%s-%d", ScratchPrefix, os.Getpid())
	var cands []string
	inside := !slices.ContainsFunc(found, func(p string) bool { return filepath.Dir(p) == dir })
	if _, err := os.Stat(filepath.Join(dir, "current")); inside && errors.Is(err, fs.ErrNotExist) {
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

// pointKind is what a benchPoint measures.
type pointKind int

const (
	kindJournal pointKind = iota
	kindEntryLog
	kindRandRead
	kindMixed
)

// benchPoint is one measurement of the plan, run once per round.
type benchPoint struct {
	name  string
	disk  int // index into Disks (journal disk for kindMixed)
	disk2 int // ledger disk of kindMixed
	kind  pointKind
	tier  int
	probe bool
	// once runs the point in the first round only, whatever its tier's
	// rounds (the disk class it decides is a threshold of orders of
	// magnitude, not a comparison between rounds).
	once bool
	// maxRuns, when set, bounds the point's rounds below its tier's.
	maxRuns int
	// probeOnly: the point runs as its disk's probe and never in a round
	// (the alternating point measures its count).
	probeOnly bool
	// alternate lists the writer counts (journals, entry-log writers) of
	// an alternating point: one run in which the counts take turns
	// (diskbench.Alternation), a paired round per batch of cycles.
	alternate []int
	// joins names the writer count this point adds to its disk's
	// alternating point of the same kind, which has joinsTo counts, when
	// the point's tier is planned: it never runs by itself (its cost is
	// what the added turns cost).
	joins, joinsTo int
	// batches is the alternating point's --rounds (at least
	// diskbench.DefaultAlternationBatches are run).
	batches int
	// journal
	writers      int
	thresholdKiB int64
	bufferKiB    int64
	inFlight     int
	// entry log / random reads
	blockSize int64
	// rate is the expected sustained bytes/s (from the probe), burst the
	// probe's first seconds; warm the warm-up (fixed after the probe).
	rate, burst float64
	warm        time.Duration
}

// runs is how often the point runs (its probe included) under the rounds
// per tier.
func (pt benchPoint) runs(rounds map[int]int) int {
	n := rounds[pt.tier]
	switch {
	case pt.probeOnly:
		return 0
	case pt.joins > 0 && n < MinMoveRounds:
		// A count joins its alternating point only with its tier's full
		// rounds planned: it then gets every batch, so it decides like the
		// tier-1 counts, which a tier measured once never does.
		return 0
	}
	if pt.once {
		n = min(n, 1)
	}
	if pt.maxRuns > 0 {
		n = min(n, pt.maxRuns)
	}
	return n
}

// cost is the expected wall time of one run at measurement m.
func (pt benchPoint) cost(m time.Duration) time.Duration {
	w := pt.warm
	if w == 0 {
		w = 2 * settleWindow * time.Second
	}
	switch {
	case pt.joins > 0:
		// The turns it adds to its alternating point.
		return alternationMeasured(pt.kind, m, pt.joinsTo+1, pt.batchCount()) - alternationMeasured(pt.kind, m, pt.joinsTo, pt.batchCount())
	case len(pt.alternate) > 0:
		if pt.kind == kindEntryLog && pt.burst > burstFactor*pt.rate {
			// The probe met a burst: the warm-up may run to its cap.
			w = burstCap(w)
		}
		return w + alternationMeasured(pt.kind, m, len(pt.alternate), pt.batchCount()) + runOverhead
	}
	if pt.kind == kindRandRead {
		return time.Second + m + runOverhead + time.Duration(randReadFile/150_000_000)*time.Second
	}
	if pt.kind == kindEntryLog && pt.rate > 0 {
		// The warm-up watched for a burst ends on a whole second of
		// samples, two at least (diskbench.Settle, Window 1).
		w = max(2*time.Second, (w+time.Second-1)/time.Second*time.Second)
	}
	return w + m + runOverhead
}

// journalTurn is each journal count's turn in an alternating point: long
// enough for a journal's queue and groups to fill many times over (a
// group syncs in about 1 ms on this project's VM), short enough that the
// disk's state does not change within a cycle. journalSettle of every turn
// is left out of its figures (the previous turn's entries still being
// acknowledged).
const (
	journalTurn   = 250 * time.Millisecond
	journalSettle = 50 * time.Millisecond
)

// ledgerTurn is each entry-log writer count's turn: an entry-log writer
// syncs every 32 MiB (flushEntrylogBytes), 0.1–0.15 s at this project's
// VM's 250 MB/s, so a turn holds several syncs per writer; ledgerSettle of
// it is left out (the previous turn's writers syncing what they left).
const (
	ledgerTurn   = time.Second
	ledgerSettle = 250 * time.Millisecond
)

// turnOf is the turn of an alternating point of kind k.
func turnOf(k pointKind) (turn, settle time.Duration) {
	if k == kindEntryLog {
		return ledgerTurn, ledgerSettle
	}
	return journalTurn, journalSettle
}

// batchCount is how many paired rounds (batches of whole cycles) an
// alternating point gives each count: 8, more when --rounds asks for
// more. With 7 degrees of freedom the t factor is 2.36 (4.30 at 3 rounds),
// and the interval's width no longer rests on two differences.
func (pt benchPoint) batchCount() int { return max(diskbench.DefaultAlternationBatches, pt.batches) }

// lanes is how many writers the point's run starts: its writers, or the
// largest count of an alternating point.
func (pt benchPoint) lanes() int {
	if len(pt.alternate) > 0 {
		return slices.Max(pt.alternate)
	}
	return pt.writers
}

// alternationLayout is the turn and the cycles per batch of an alternating
// point of kind k with n counts at measurement m: each batch about m long,
// whole cycles of n turns, at least one.
func alternationLayout(k pointKind, m time.Duration, n int) (time.Duration, int) {
	turn, _ := turnOf(k)
	cycle := time.Duration(n) * turn
	return turn, max(1, int((m+cycle/2)/cycle))
}

// alternationMeasured is the measured time of an alternating point of
// kind k with n counts and batches batches at measurement m.
func alternationMeasured(k pointKind, m time.Duration, n, batches int) time.Duration {
	turn, cpb := alternationLayout(k, m, n)
	return time.Duration(batches*cpb*n) * turn
}

// share is the byte budget one run may spend: enough for a burst as fast
// as the probe's through the whole warm-up cap and 1.5 × the expected
// rate while measured, at least 2.5 × the expected bytes — a run stopped
// by its share has not run past the burst.
func (pt benchPoint) share(m, warmCap time.Duration) int64 {
	b := int64(2.5 * float64(pt.bytes(m)))
	// An entry-log warm-up that runs on past a burst (burstCap) may spend
	// 60% of the share (diskbench.Settle's MaxShare).
	b = max(b, int64((max(pt.burst, pt.rate)*warmCap.Seconds()/diskbench.DefaultSettleMaxShare)+1.5*pt.rate*m.Seconds()))
	return max(minRunBytes, b)
}

// bytes is the expected bytes of one run at measurement m.
func (pt benchPoint) bytes(m time.Duration) int64 {
	if pt.kind == kindRandRead {
		return randReadFile
	}
	r := pt.rate
	if r == 0 {
		r = 200e6
	}
	if pt.joins > 0 {
		return int64(r * pt.cost(m).Seconds())
	}
	return int64(r * (pt.cost(m) - runOverhead).Seconds())
}

// points lists the plan's points per disk; rates come from the probe
// results when given.
func (p *PreparedBench) points(probe map[int]diskbench.Result) []benchPoint {
	var out []benchPoint
	for i, d := range p.Disks {
		label := func(s string) string { return fmt.Sprintf("%s %s: %s", d.Role, d.Disk.Dir, s) }
		switch d.Role {
		case RoleJournal:
			jr, jb := 0.0, 0.0
			if r, ok := probe[i]; ok {
				jr, jb = r.BytesPerSec, burstOf(r)
			}
			jw := p.laterWarm()
			j := func(name string, tier, writers int, th, buf int64, inFlight int) benchPoint {
				// More journals rarely more than double one journal's rate
				// on one device (fdatasync-bound); the share allows for more.
				return benchPoint{name: label(name), disk: i, kind: kindJournal, tier: tier, writers: writers,
					thresholdKiB: th, bufferKiB: buf, inFlight: inFlight, rate: jr * float64(min(writers, 2)), burst: jb * float64(writers), warm: jw}
			}
			pr := j("journals 1 × 64KiB entries, Pulsar's journal settings", 1, 1, 0, 0, 0)
			pr.probe, pr.probeOnly = true, true
			// The journal counts take turns in one run (diskbench.Alternation):
			// separate runs of each count, seconds apart, met this VM's host
			// cache in different states and their paired ratio moved more
			// than the counts' difference.
			counts := []int{1, 2, 4}
			alt := j(fmt.Sprintf("journals %s × 64KiB entries in turns of %v, Pulsar's journal settings", diskbench.CountsLabel(counts), journalTurn), 1, 4, 0, 0, 0)
			alt.alternate, alt.once, alt.batches = counts, true, p.o.Rounds
			eight := j("journals 8 × 64KiB entries (a turn of the alternating run)", 2, 8, 0, 0, 0)
			eight.joins, eight.joinsTo, eight.once, eight.batches = 8, len(counts), true, p.o.Rounds
			out = append(out, pr, alt, eight,
				j("journalBufferedWritesThreshold 512KiB, 64 × 64KiB in flight", 2, 1, 512, 0, journalDeepInFlight),
				j("journalBufferedWritesThreshold 1MiB, 64 × 64KiB in flight", 2, 1, 1024, 0, journalDeepInFlight),
				j("journalBufferedWritesThreshold 1MiB, journalWriteBufferSizeKB 256", 3, 1, 1024, 256, journalDeepInFlight),
				j("journalBufferedWritesThreshold 1MiB, journalWriteBufferSizeKB 1024", 3, 1, 1024, 1024, journalDeepInFlight),
			)
		case RoleLedger:
			pf := probeFigures(probe, i)
			e := func(name string, tier, writers int, bs int64) benchPoint {
				return benchPoint{name: label(name), disk: i, kind: kindEntryLog, tier: tier, writers: writers, blockSize: bs, rate: pf.rate, burst: pf.burst, warm: p.laterWarm()}
			}
			pr := e("entry log 1 writer × 1MiB writes", 1, 1, MiB)
			pr.probe = true
			// The writer counts take turns in one run, first in the block:
			// right after the probe, past the host cache's burst, and with
			// no pause between turns in which it could refill.
			counts := []int{1, 2}
			alt := e(fmt.Sprintf("entry log %s writers × 1MiB writes in turns of %v", diskbench.CountsLabel(counts), ledgerTurn), 1, 2, MiB)
			alt.alternate, alt.once, alt.batches = counts, true, p.o.Rounds
			four := e("entry log 4 writers × 1MiB writes (a turn of the alternating run)", 2, 4, MiB)
			four.joins, four.joinsTo, four.once, four.batches = 4, len(counts), true, p.o.Rounds
			out = append(out, alt, pr,
				e("entry log 1 writer × 64KiB writes", 1, 1, 64*KiB),
				e("entry log 1 writer × 8MiB writes", 2, 1, 8*MiB),
				four,
				// Every plan measures the disk class once: the RocksDB memtable
				// size follows it, and sysfs alone misleads on virtual disks.
				benchPoint{name: label("random reads 4KiB depth 16"), disk: i, kind: kindRandRead, tier: 1, once: true, blockSize: 4 * KiB},
				e("entry log 1 writer × 64MiB writes", 3, 1, 64*MiB),
			)
		}
	}
	// Journal and ledgers sharing a device: both at once.
	for i, j := range p.Disks {
		for k, l := range p.Disks {
			if j.Role == RoleJournal && l.Role == RoleLedger && sameDevice(j.Disk, l.Disk) {
				pf := probeFigures(probe, k)
				out = append(out, benchPoint{name: fmt.Sprintf("journal %s + ledger %s (shared device %s): 1 journal and 1 entry-log writer at once", j.Disk.Dir, l.Disk.Dir, j.Disk.Device.Disk),
					disk: i, disk2: k, kind: kindMixed, tier: 1, maxRuns: mixedRuns, writers: 1, blockSize: MiB, rate: pf.rate, burst: pf.burst, warm: p.laterWarm()})
			}
		}
	}
	return out
}

// BenchPlan is the plan Run fitted to the budget after the probes.
type BenchPlan struct {
	// MeasureSec is each run's measured time after its warm-up.
	MeasureSec float64 `json:"measure_sec"`
	// Rounds per tier (tier 1 holds the points the directory counts and
	// writeBufferSizeBytes depend on).
	Rounds map[int]int `json:"rounds"`
	// Dropped lists points left out to fit the budget.
	Dropped []string `json:"dropped,omitempty"`
	// TimeBudgetSec and MaxBytes are the budgets.
	TimeBudgetSec float64 `json:"time_budget_sec"`
	MaxBytes      int64   `json:"max_bytes"`
	// Load is the other processes' CPU use during each run; MachineCPUs the
	// CPUs /proc/stat lists.
	Load        []RunLoad `json:"load,omitempty"`
	MachineCPUs int       `json:"machine_cpus,omitempty"`
	// Guard is how the benchmark kept every filesystem below the bookie's
	// disk-usage ceiling.
	Guard *GuardRecord `json:"guard,omitempty"`
}

// BenchResult is what Run measured.
type BenchResult struct {
	JournalDisks, LedgerDisks []Disk
	Plan                      BenchPlan
	BytesWritten              int64
	Elapsed                   time.Duration
	Warnings                  []string
}

// fitPlan chooses the measurement time and the rounds per tier that fit
// what is left of the budgets less planReserve of the time. The
// measurement is fixed by the budget (measureFor), so every run of one
// budget decides on rounds of the same length: with it, the most tiers
// that fit; only when even the essential points' full rounds do not fit,
// shorter measurements down to minMeasure, then fewer rounds.
func (p *PreparedBench) fitPlan(pts []benchPoint, timeLeft time.Duration, bytesLeft int64) (time.Duration, map[int]int, bool) {
	R := p.o.Rounds
	timeLeft -= time.Duration(planReserve * float64(timeLeft))
	type cand struct {
		rounds map[int]int
		ms     []time.Duration
	}
	fixed := p.measureFor()
	s := time.Second
	var shorter []time.Duration
	for _, m := range []time.Duration{5 * s, 4 * s, 3 * s, 2500 * time.Millisecond, 2 * s, 1500 * time.Millisecond, 1250 * time.Millisecond, minMeasure} {
		if m < fixed {
			shorter = append(shorter, m)
		}
	}
	cands := []cand{
		{map[int]int{1: R, 2: R, 3: 1}, []time.Duration{fixed}},
		{map[int]int{1: R, 2: R}, []time.Duration{fixed}},
		{map[int]int{1: R, 2: 1}, []time.Duration{fixed}},
		{map[int]int{1: R}, append([]time.Duration{fixed}, shorter...)},
		// Fewer rounds only when even the shortest measurement does not
		// hold them: first the fewest a count may move on, then 2.
		{map[int]int{1: min(R, MinMoveRounds)}, []time.Duration{fixed, minMeasure}},
		{map[int]int{1: min(R, 2)}, []time.Duration{fixed, minMeasure}},
		{map[int]int{1: 1}, []time.Duration{fixed, minMeasure}},
	}
	for _, c := range cands {
		for _, m := range c.ms {
			var t time.Duration
			var b int64
			for _, pt := range pts {
				n := pt.runs(c.rounds)
				if n <= 0 {
					continue
				}
				t += time.Duration(n) * pt.cost(m)
				b += int64(n) * max(minRunBytes, pt.bytes(m))
			}
			if t <= timeLeft && b <= bytesLeft {
				return m, c.rounds, true
			}
		}
	}
	return 0, nil, false
}

// Run creates the scratch directories, probes each disk (one journal and
// one entry-log benchPoint, warmed up until their throughput settles), fits the
// rest of the plan to the time and bytes left using the probed rates, runs
// it in interleaved rounds and removes the scratch directories (diskbench
// unlinks its own files). Before every run it checks that no bookie has
// started using a directory that held no bookie data (a bookie pod
// formatting the disk meanwhile): then it stops with ErrLiveBookie. A
// failing run stops the benchmark; its error is returned with the results
// so far.
func (p *PreparedBench) Run(ctx context.Context) (res *BenchResult, err error) {
	start := time.Now()
	deadline := start.Add(p.o.TimeBudget)
	res = &BenchResult{Plan: BenchPlan{TimeBudgetSec: p.o.TimeBudget.Seconds(), MaxBytes: p.o.MaxBytes}}
	defer p.finishGuard(res)
	for i := range p.Disks {
		dir := p.Disks[i].Disk.BenchDir
		if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return res, fmt.Errorf("create scratch dir: %w", err)
		}
		defer func(dir string) {
			if rerr := os.Remove(dir); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
				err = errors.Join(err, fmt.Errorf("remove scratch dir: %w", rerr))
			}
		}(dir)
	}
	bytesLeft := p.o.MaxBytes
	var mu sync.Mutex
	record := func(pt benchPoint, disk int, rep *diskbench.Report, mixed bool) {
		mu.Lock()
		defer mu.Unlock()
		bytesLeft -= rep.BytesWritten
		res.BytesWritten += rep.BytesWritten
		d := &p.Disks[disk].Disk
		switch {
		case mixed:
			d.MixedResults = append(d.MixedResults, rep.Results...)
		case pt.probe:
			d.ProbeResults = append(d.ProbeResults, rep.Results...)
		default:
			d.Results = append(d.Results, rep.Results...)
		}
		for _, w := range rep.Warnings {
			res.Warnings = append(res.Warnings, fmt.Sprintf("%s: %s", pt.name, w))
		}
	}
	run := func(pt benchPoint, m, warmCap time.Duration, round, rounds int) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := p.checkNoNewBookie(); err != nil {
			return err
		}
		name := pt.name
		if pt.probe {
			name += ", probe"
		} else if rounds > 1 {
			name = fmt.Sprintf("%s, round %d/%d", pt.name, round, rounds)
		}
		wc := warmCap
		if pt.kind == kindEntryLog && !pt.probe && pt.rate > 0 {
			wc = burstCap(warmCap)
		}
		share := pt.share(m, wc)
		if pt.probe {
			// Nothing is known yet: up to an eighth of the budget per disk.
			share = max(share, p.o.MaxBytes/int64(8*len(p.Disks)))
		}
		mu.Lock()
		share = min(share, bytesLeft)
		mu.Unlock()
		// Never more than the disk can hold beside diskbench's reserve.
		for _, di := range []int{pt.disk, pt.disk2} {
			if free := int64(p.Disks[di].FreeBytes) - diskbench.ReserveBytes - GiB; pt.kind == kindMixed || di == pt.disk {
				share = min(share, max(minRunBytes, free))
			}
		}
		// The longest the run may take: an entry-log warm-up watched for a
		// burst may go on to its cap (the plan counts its usual length).
		longest := pt.cost(m)
		if wc != warmCap {
			longest = max(longest, wc+m+runOverhead)
		}
		if left := time.Until(deadline); left < longest || share < minRunBytes {
			res.Warnings = append(res.Warnings, fmt.Sprintf("skipped %s: budget spent", name))
			return nil
		}
		// Never past the bookie's disk-usage ceiling, from a fresh statfs.
		share, skip, why, err := p.guardShare(ctx, pt, share)
		if err != nil {
			return err
		}
		if skip {
			p.o.Logger.Debug("bench run skipped by the disk guard", "run", name, "why", why)
			return nil
		}
		if why != "" {
			p.o.Logger.Debug("bench run bounded by the disk guard", "run", name, "max_bytes", share, "why", why)
		}
		before := markLoad(p.o.Host)
		defer func() {
			after := markLoad(p.o.Host)
			if l, ok := loadSince(before, after, name); ok {
				res.Plan.Load = append(res.Plan.Load, l)
				res.Plan.MachineCPUs = after.cpus
			}
		}()
		if pt.kind == kindMixed {
			return p.runMixed(ctx, pt, m, warmCap, share, name, record)
		}
		plan := p.planFor(pt, m, warmCap, share)
		plan.Options.Progress = p.progress(name)
		p.o.Logger.Debug("bench run", "run", name, "measure", m, "warmup_cap", warmCap, "max_bytes", share)
		rep, err := p.o.Sweep(ctx, plan)
		if rep != nil {
			record(pt, pt.disk, rep, false)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		return nil
	}

	// 1. Probes: the rates the rest of the plan is fitted with.
	all := p.points(nil)
	probe := map[int]diskbench.Result{}
	for _, pt := range all {
		if !pt.probe {
			continue
		}
		warmCap := min(journalWarmCap, max(4*time.Second, p.o.TimeBudget/30))
		if pt.kind == kindEntryLog {
			// Long enough to get past a virtual disk's host cache or an
			// SSD's SLC region at the start of the first write run.
			warmCap = min(max(p.o.TimeBudget/12, 8*time.Second), 45*time.Second)
		}
		// The probe only sizes the plan (and warms the disk up): it is
		// no round of its point, whose rounds all run after it with the
		// fixed warm-up of the others.
		m := min(probeMeasure, max(minMeasure, p.o.TimeBudget/60))
		n := len(p.Disks[pt.disk].Disk.ProbeResults)
		if err := run(pt, m, warmCap, 0, 0); err != nil {
			return res, err
		}
		if rs := p.Disks[pt.disk].Disk.ProbeResults; len(rs) > n {
			probe[pt.disk] = rs[n]
		}
	}
	for i, d := range p.Disks {
		if _, ok := probe[i]; !ok {
			return res, fmt.Errorf("%w: the probe of %s disk %s gave no result", ErrBudgetTooSmall, d.Role, d.Disk.Dir)
		}
	}

	// 2. Fit the plan with the probed rates.
	pts := p.points(probe)
	m, rounds, ok := p.fitPlan(pts, time.Until(deadline), bytesLeft)
	if !ok {
		// The probes alone are a (thin) measurement; say what is missing.
		m, rounds = minMeasure, map[int]int{1: 1}
		res.Warnings = append(res.Warnings, "the budget left after the probes holds less than one round of the essential points; raise --budget or --max-bytes")
	}
	res.Plan.MeasureSec = m.Seconds()
	res.Plan.Rounds = rounds
	for _, pt := range pts {
		if rounds[pt.tier] == 0 {
			res.Plan.Dropped = append(res.Plan.Dropped, pt.name)
		}
	}
	// A count whose tier is planned joins its disk's alternating point.
	for _, pt := range pts {
		if pt.joins == 0 || pt.runs(rounds) == 0 {
			continue
		}
		for i := range pts {
			if a := pts[i].alternate; len(a) > 0 && pts[i].disk == pt.disk && pts[i].kind == pt.kind {
				old := diskbench.CountsLabel(a)
				pts[i].alternate = append(slices.Clone(a), pt.joins)
				pts[i].name = strings.Replace(pts[i].name, old, diskbench.CountsLabel(pts[i].alternate), 1)
			}
		}
	}
	p.o.Logger.Debug("bench plan", "measure", m, "rounds", rounds, "dropped", len(res.Plan.Dropped))

	// 3. Rounds, interleaved within each block (schedule), each point its
	// planned rounds and no more or fewer (the probed points too: their
	// probes are no round).
	warmCap := p.laterWarm()
	for _, sr := range schedule(pts, rounds) {
		pt := sr.pt
		pt.probe = false
		if err := run(pt, m, warmCap, sr.round, sr.of); err != nil {
			return res, err
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

// scheduled is one run of the plan: round of a point's of rounds.
type scheduled struct {
	pt        benchPoint
	round, of int
}

// schedule orders the runs after the probes in blocks: first every
// tier-1 entry-log point and the shared-device point, then the tier-1
// journal points, then the random reads, and last every point of tiers 2
// and 3 (a run over its estimate then costs a tier-2 run, never an
// essential one: on this project's VM entry-log warm-ups in a host cache's
// burst ran to their cap and left no time for the journal counts); within
// a block the rounds interleave (every point of round r before round
// r + 1), so slow drift hits all candidates of a comparison alike — every
// comparison (entry-log sizes; journal and entry-log counts take turns
// within one run) lies within one block. The entry-log block comes
// right after the entry-log probe, which wrote the disk past its burst:
// on this project's VM the host cache refills while journals run, and
// with the journals between the entry-log rounds every 1-writer round of
// two of three runs measured the cache (807–1121 MB/s, fio 256–328).
func schedule(pts []benchPoint, rounds map[int]int) []scheduled {
	block := func(pt benchPoint) int {
		switch {
		case pt.tier > 1:
			return 3
		case pt.kind == kindEntryLog || pt.kind == kindMixed:
			return 0
		case pt.kind == kindJournal:
			return 1
		}
		return 2
	}
	var out []scheduled
	pts = slices.DeleteFunc(slices.Clone(pts), func(pt benchPoint) bool { return pt.joins > 0 })
	for b := range 4 {
		planned := 0
		for _, pt := range pts {
			if block(pt) == b {
				planned = max(planned, pt.runs(rounds))
			}
		}
		for r := 1; r <= planned; r++ {
			for _, pt := range pts {
				if n := pt.runs(rounds); block(pt) == b && r <= n {
					out = append(out, scheduled{pt: pt, round: r, of: n})
				}
			}
		}
	}
	return out
}

// finishGuard records the guard's view in the plan and its summary in the
// warnings (deferred by Run, so a stopped benchmark reports it too).
func (p *PreparedBench) finishGuard(res *BenchResult) {
	g := p.Guard
	g.Disks = slices.Clone(g.Disks)
	res.Plan.Guard = &g
	res.Warnings = append(res.Warnings, g.warnings()...)
}

// planFor builds the diskbench plan of one run.
func (p *PreparedBench) planFor(pt benchPoint, m, warmCap time.Duration, share int64) diskbench.Plan {
	d := p.Disks[pt.disk]
	// The probes warm up until their rate settles; later runs get the
	// fixed warm-up (laterWarm).
	var settle *diskbench.Settle
	switch {
	case pt.probe:
		settle = &diskbench.Settle{MinWarmup: min(2*time.Second, m), Window: settleWindow, Tolerance: settleTol}
		if pt.kind == kindEntryLog {
			// A flat rate is taken as sustained only after most of the
			// cap: on this project's VM a probe settled inside the host
			// cache's burst (732 MB/s after 4 s, no knee; fio 328).
			settle.NoKneeMinWarmup = warmCap - 2*time.Second
		}
	case pt.kind == kindEntryLog && pt.rate > 0:
		// The fixed warm-up, and on while the rate is above burstFactor ×
		// the probe's sustained rate per writer (a cache's burst), up to
		// burstCap: any other rate counts as settled.
		settle = &diskbench.Settle{MinWarmup: warmCap, Window: 1, Tolerance: 1,
			MaxRate: burstFactor * pt.rate * float64(pt.writers)}
		warmCap = burstCap(warmCap)
	}
	base := diskbench.Options{Dir: d.Disk.BenchDir, Duration: m, Warmup: warmCap, MaxBytes: share,
		Settle: settle, Logger: p.o.Logger, RaiseGOMAXPROCS: p.o.RaiseGOMAXPROCS, SysPath: p.o.Host.SysPath}
	plan := diskbench.Plan{Options: base, TimeBudget: warmCap + m + 2*runOverhead}
	switch pt.kind {
	case kindJournal:
		st := diskbench.DefaultJournalSettings()
		if pt.thresholdKiB > 0 {
			st.JournalBufferedWritesThreshold = pt.thresholdKiB * KiB
		}
		if pt.bufferKiB > 0 {
			st.JournalWriteBufferSizeKB = int(pt.bufferKiB)
		}
		plan.Journal = &diskbench.JournalParams{Model: diskbench.JournalModelBookKeeper, Writers: []int{pt.writers},
			BlockSizes: []int64{journalEntry}, Settings: &st, InFlight: pt.inFlight}
		if len(pt.alternate) > 0 {
			plan.Journal.Writers = pt.alternate
			plan.Journal.Alternate = p.alternation(&plan, pt, m)
		}
	case kindEntryLog:
		fileSize := share / int64(pt.lanes())
		fileSize -= fileSize % pt.blockSize
		plan.EntryLog = &diskbench.EntryLogParams{Writers: []int{pt.writers}, BlockSizes: []int64{pt.blockSize},
			FileSize: max(fileSize, pt.blockSize)}
		if len(pt.alternate) > 0 {
			// Every writer runs the warm-up, watched for a burst at its
			// count's rate.
			plan.EntryLog.Writers = pt.alternate
			plan.EntryLog.Alternate = p.alternation(&plan, pt, m)
			if plan.Options.Settle != nil {
				plan.Options.Settle.MaxRate = burstFactor * pt.rate * float64(pt.lanes())
			}
		}
	case kindRandRead:
		plan.Options.Settle = nil
		plan.Options.Warmup = time.Second
		plan.TimeBudget = time.Second + m + 2*runOverhead + time.Duration(randReadFile/50_000_000)*time.Second
		plan.RandRead = &diskbench.RandReadParams{BlockSizes: []int64{pt.blockSize}, Depths: []int{16}, FileSize: randReadFile}
	}
	return plan
}

// alternation sets plan's measured time for the alternating point pt at
// measurement m and returns its turns: pt.batchCount() batches of whole cycles.
func (p *PreparedBench) alternation(plan *diskbench.Plan, pt benchPoint, m time.Duration) *diskbench.Alternation {
	turn, settle := turnOf(pt.kind)
	plan.Options.Duration = alternationMeasured(pt.kind, m, len(pt.alternate), pt.batchCount())
	plan.TimeBudget = pt.cost(m) + runOverhead
	if plan.Options.Settle != nil {
		plan.TimeBudget += plan.Options.Warmup
	}
	return &diskbench.Alternation{Turn: turn, Settle: settle, Batches: pt.batchCount()}
}

// runMixed runs the journal benchPoint and the entry-log benchPoint of a shared
// device at the same time and records both under MixedResults.
func (p *PreparedBench) runMixed(ctx context.Context, pt benchPoint, m, warmCap time.Duration, share int64, name string,
	record func(benchPoint, int, *diskbench.Report, bool)) error {
	jp := p.planFor(benchPoint{name: pt.name, disk: pt.disk, kind: kindJournal, writers: 1}, m, warmCap, share/2)
	lp := p.planFor(benchPoint{name: pt.name, disk: pt.disk2, kind: kindEntryLog, writers: 1, blockSize: pt.blockSize}, m, warmCap, share)
	jp.Options.Progress = p.progress(name + " (journal)")
	if p.o.RaiseGOMAXPROCS {
		// Both points at once: each worker keeps a P (diskbench raises per
		// benchPoint and restores, which two concurrent points would undo).
		need := 3 + 1 + 4
		if prev := runtime.GOMAXPROCS(0); prev < need {
			runtime.GOMAXPROCS(need)
			defer runtime.GOMAXPROCS(prev)
		}
	}
	var wg sync.WaitGroup
	var jerr, lerr error
	var jrep, lrep *diskbench.Report
	wg.Add(2)
	go func() { defer wg.Done(); jrep, jerr = p.o.Sweep(ctx, jp) }()
	go func() { defer wg.Done(); lrep, lerr = p.o.Sweep(ctx, lp) }()
	wg.Wait()
	if jrep != nil {
		record(pt, pt.disk, jrep, true)
	}
	if lrep != nil {
		record(pt, pt.disk2, lrep, true)
	}
	if err := errors.Join(jerr, lerr); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

func (p *PreparedBench) progress(name string) diskbench.ProgressFunc {
	if p.o.Progress == nil {
		return nil
	}
	return func(ev diskbench.ProgressEvent) { p.o.Progress(name, ev) }
}

// burstOf is the probe's burst rate: its warm-up's first seconds, or its
// measured rate.
func burstOf(r diskbench.Result) float64 {
	if r.Settle != nil {
		return max(r.Settle.BurstBytesPerSec, r.BytesPerSec)
	}
	return r.BytesPerSec
}

// probed is what the probe of a ledger disk sets for its later entry-log
// runs (all zero without a probe).
type probed struct {
	rate, burst float64
}

// probeFigures returns the probe figures of disk i: its rate past the
// knee (probePastKnee) when it has one, else its measured rate.
func probeFigures(probe map[int]diskbench.Result, i int) probed {
	r, ok := probe[i]
	if !ok {
		return probed{}
	}
	rate := r.BytesPerSec
	if v, ok := probePastKnee(Disk{ProbeResults: []diskbench.Result{r}}); ok && v > 0 {
		rate = v
	}
	return probed{rate: rate, burst: burstOf(r)}
}

// measureFor is every run's measured time after the probes: budget/80,
// 1–10 s (1.5 s at the default budget, where three rounds of the
// essential points fit 2 minutes on this project's VM and 2 s did not).
// Fixed by the budget, not fitted to what a run's probes left: fitted,
// the runs of one VM measured 1.25 s in two runs and 2 s in the third,
// and decided on rounds of different length.
func (p *PreparedBench) measureFor() time.Duration {
	return min(max(p.o.TimeBudget/80, minMeasure), maxMeasure)
}

// burstFactor: a round's warm-up of an entry log goes on while its rate is
// above burstFactor × the probe's sustained rate per writer. On this
// project's VM rounds past the host cache's burst measured 0.9–1.1× fio's
// 30 s figure and rounds in it 3.2–3.6× (the burst itself 3–4× the disk):
// 2 lies between with room on both sides.
const burstFactor = 2.0

// burstCap is the longest an entry-log round's warm-up waits for the rate
// to fall below burstFactor × the sustained rate: 4 × the fixed warm-up
// (6 s at the default budget; the probe saw this VM's host cache burst
// for about 5 s when it was full, and the entry-log rounds follow the
// probe, which emptied it). A warm-up that reaches it is not settled
// (diskbench warns that the figure may include a burst).
func burstCap(w time.Duration) time.Duration { return 4 * w }

// laterWarm is the fixed warm-up of every run after the probes: the probe
// warmed each disk past its burst (page cache, a virtual disk's host
// cache, an SSD's fast region) and the runs of a block follow each other
// within a second, so a later run only needs its own files and queues to
// fill: budget/80, 1.5–5 s (1.5 s at the default budget: with 2 s, three
// fixed rounds of the essential points did not fit 2 minutes on this
// project's VM). An entry-log round goes on past it while its rate is a
// burst's (burstFactor); a run that still starts in a burst shows as a
// round out of line, which the paired intervals count as noise.
func (p *PreparedBench) laterWarm() time.Duration {
	return min(max(p.o.TimeBudget/80, 1500*time.Millisecond), 5*time.Second)
}

// checkNoNewBookie fails when a directory that held no bookie data at the
// start now does: a bookie has been formatted there meanwhile.
func (p *PreparedBench) checkNoNewBookie() error {
	for _, d := range p.Disks {
		if d.Live {
			continue
		}
		found, err := bookiedir.FindBookieData(d.Disk.Dir)
		if err != nil {
			return fmt.Errorf("%s dir %s: %w", d.Role, d.Disk.Dir, err)
		}
		if len(found) > 0 {
			return fmt.Errorf("%s dir %s: %w: a bookie started using it during the benchmark (%s); stopped so as not to compete with it",
				d.Role, d.Disk.Dir, ErrLiveBookie, strings.Join(found, ", "))
		}
	}
	return nil
}
