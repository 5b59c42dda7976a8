package bookieagent

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tierkeeper/tierkeeper/diskbench"
	"github.com/tierkeeper/tierkeeper/internal/hostfs"
)

func mkdirs(t *testing.T, names ...string) []string {
	t.Helper()
	root := t.TempDir()
	var out []string
	for _, n := range names {
		p := filepath.Join(root, n)
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

func writeCookie(t *testing.T, dir string) {
	t.Helper()
	os.MkdirAll(filepath.Join(dir, "current"), 0o755)
	if err := os.WriteFile(filepath.Join(dir, "current", "VERSION"), []byte(cookieV5), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestPrepareBenchRefusals(t *testing.T) {
	ctx := context.Background()
	d := mkdirs(t, "j", "l", "live")
	file := filepath.Join(d[0], "file")
	os.WriteFile(file, nil, 0o644)
	writeCookie(t, d[2])
	cases := []struct {
		name string
		o    BenchOptions
		want error
	}{
		{"missing", BenchOptions{JournalDirs: []string{d[0] + "/nope"}, LedgerDirs: d[1:2]}, fs.ErrNotExist},
		{"file", BenchOptions{JournalDirs: []string{file}, LedgerDirs: d[1:2]}, ErrNoDirectory},
		{"tmpfs", BenchOptions{JournalDirs: d[:1], LedgerDirs: []string{"/dev/shm"}}, ErrUnsupportedFS},
		{"tiny time", BenchOptions{JournalDirs: d[:1], LedgerDirs: d[1:2], TimeBudget: 2 * time.Second}, ErrBudgetTooSmall},
		{"tiny bytes", BenchOptions{JournalDirs: d[:1], LedgerDirs: d[1:2], MaxBytes: 10 * MiB}, ErrBudgetTooSmall},
		// Negative budgets are errors, not the defaults.
		{"negative bytes", BenchOptions{JournalDirs: d[:1], LedgerDirs: d[1:2], MaxBytes: -1}, ErrBudgetTooSmall},
		{"negative time", BenchOptions{JournalDirs: d[:1], LedgerDirs: d[1:2], TimeBudget: -time.Second}, ErrBudgetTooSmall},
		// A live bookie's disk is refused unless asked for (serve and
		// recommend alike).
		{"live bookie", BenchOptions{JournalDirs: d[:1], LedgerDirs: d[2:3]}, ErrLiveBookie},
	}
	for _, tc := range cases {
		if tc.name == "tmpfs" {
			if _, err := os.Stat("/dev/shm"); err != nil {
				continue
			}
		}
		_, err := PrepareBench(ctx, tc.o)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: err = %v, want %v", tc.name, err, tc.want)
		}
		if tc.name == "live bookie" && (err == nil || !strings.Contains(err.Error(), "--allow-live-bookie")) {
			t.Errorf("live bookie refusal does not say how to proceed: %v", err)
		}
	}
	// Nothing was created by any refusal.
	ents, _ := os.ReadDir(filepath.Dir(d[0]))
	if len(ents) != 3 {
		t.Errorf("refusals left files: %v", ents)
	}
}

// TestFitPlanByMeasuredRates: the plan is fitted with the probed rates
// (the old planner split the time by point count, so raising
// --max-bytes changed nothing and fast disks got 0.1 s points). A fast disk
// under the same time budget gets fewer or shorter runs because its runs
// cost more bytes; a larger byte budget buys it back; a short time budget
// drops the optional tiers before the essential rounds.
func TestFitPlanByMeasuredRates(t *testing.T) {
	d := mkdirs(t, "j", "l")
	p, err := PrepareBench(context.Background(), BenchOptions{JournalDirs: d[:1], LedgerDirs: d[1:], TimeBudget: 5 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	probe := func(ledgerRate float64) map[int]diskbench.Result {
		return map[int]diskbench.Result{
			0: {Workload: diskbench.WorkloadJournal, Writers: 1, BytesPerSec: 20e6, WarmupSec: 4},
			1: {Workload: diskbench.WorkloadEntryLog, Writers: 1, BytesPerSec: ledgerRate, WarmupSec: 10},
		}
	}
	type fit struct {
		m      time.Duration
		rounds map[int]int
	}
	get := func(rate float64, tb time.Duration, bytes int64) fit {
		m, r, ok := p.fitPlan(p.points(probe(rate)), tb, bytes)
		if !ok {
			return fit{}
		}
		return fit{m, r}
	}
	slow := get(150e6, 5*time.Minute, 64*GiB)
	if slow.rounds[1] != DefaultRounds || slow.m != p.measureFor() {
		t.Errorf("150 MB/s disk, 5 min, 64 GiB: %+v; want %d rounds of the essential points at the budget's %v", slow, DefaultRounds, p.measureFor())
	}
	fast := get(3e9, 5*time.Minute, 64*GiB)
	fastMore := get(3e9, 5*time.Minute, 1024*GiB)
	cost := func(f fit) float64 { return float64(f.rounds[1]+f.rounds[2]+f.rounds[3]) * f.m.Seconds() }
	if cost(fast) >= cost(slow) {
		t.Errorf("3 GB/s disk under 64 GiB got %+v, not less than the 150 MB/s disk's %+v: the byte budget was not fitted by rate", fast, slow)
	}
	if cost(fastMore) <= cost(fast) {
		t.Errorf("raising the byte budget did not buy the fast disk more measurement: %+v vs %+v", fastMore, fast)
	}
	short := get(150e6, 90*time.Second, 64*GiB)
	if short.rounds[3] != 0 || short.rounds[1] == 0 {
		t.Errorf("90 s budget: %+v; want the optional tiers dropped first", short)
	}
	// The disk class (random reads) is measured once in every plan, the
	// shortest too: the RocksDB memtable size follows it, so it may not
	// depend on whether the budget left room for tier 2.
	tight := get(150e6, 60*time.Second, 64*GiB)
	if tight.rounds == nil || tight.rounds[2] != 0 {
		t.Fatalf("60 s budget: %+v; want tier 1 only", tight)
	}
	for _, f := range []fit{slow, fast, fastMore, short, tight} {
		for _, pt := range p.points(probe(150e6)) {
			if pt.kind == kindRandRead && pt.runs(f.rounds) != 1 && f.rounds != nil {
				t.Errorf("plan %+v: random reads run %d times, want once", f, pt.runs(f.rounds))
			}
		}
	}
	if none := get(150e6, 5*time.Second, 64*GiB); none.rounds != nil {
		t.Errorf("5 s left after the probes: %+v, want no plan", none)
	}
}

// TestFitPlanFixedRounds: the plan keeps the essential points' full
// rounds by shortening their measurement down to minMeasure before it
// gives up a round, and it plans an entry-log run's warm-up (which must
// write the probe's burst region again) at the disk's sustained rate,
// not at the rate of the probe's burst: planned at the burst, the rounds
// it promised did not fit the budget and the last runs were skipped.
func TestFitPlanFixedRounds(t *testing.T) {
	d := mkdirs(t, "j", "l")
	p, err := PrepareBench(context.Background(), BenchOptions{JournalDirs: d[:1], LedgerDirs: d[1:]})
	if err != nil {
		t.Fatal(err)
	}
	// This VM: a host cache bursting 2 GB/s for a second, then 300 MB/s.
	probe := map[int]diskbench.Result{
		0: {Workload: diskbench.WorkloadJournal, Writers: 1, BytesPerSec: 400e6, WarmupSec: 4},
		1: {Workload: diskbench.WorkloadEntryLog, Writers: 1, BytesPerSec: 300e6, WarmupSec: 10,
			Settle: &diskbench.SettleInfo{BurstBytesPerSec: 2e9, KneeSec: 1, SamplesBytesPerSec: []float64{2e9, 3e8, 3e8, 3e8}}},
	}
	pts := p.points(probe)
	// What the plan really costs: an entry-log round's warm-up, watched
	// for a burst, ends on whole seconds (two at least).
	real := func(m time.Duration, rounds map[int]int) time.Duration {
		var total time.Duration
		for _, pt := range pts {
			n := pt.runs(rounds)
			c := pt.cost(m)
			if pt.kind == kindEntryLog && len(pt.alternate) == 0 {
				c = 2*time.Second + m + runOverhead
			}
			total += time.Duration(max(n, 0)) * c
		}
		return total
	}
	one := map[int]int{1: DefaultRounds}
	for _, left := range []time.Duration{60 * time.Second, 75 * time.Second, 90 * time.Second, 120 * time.Second} {
		m, rounds, ok := p.fitPlan(pts, left, 512*GiB)
		if !ok {
			t.Errorf("%v left: no plan", left)
			continue
		}
		t.Logf("%v left: %v rounds at %v, %v with warm-ups at the sustained rate", left, rounds, m, real(m, rounds))
		if got := real(m, rounds); got > left {
			t.Errorf("%v left: plan %v at %v costs %v with warm-ups at the sustained rate", left, rounds, m, got)
		}
		if rounds[1] != DefaultRounds && real(minMeasure, one) <= time.Duration((1-planReserve)*float64(left)) {
			t.Errorf("%v left: %v rounds at %v, but %d rounds fit at %v (%v)", left, rounds, m, DefaultRounds, minMeasure, real(minMeasure, one))
		}
		// The measurement is the budget's, however much the probes left,
		// while the full rounds fit it: every run decides on rounds of
		// the same length.
		if fits := real(p.measureFor(), one) <= time.Duration((1-planReserve)*float64(left)); fits && m != p.measureFor() {
			t.Errorf("%v left: measured %v, want the budget's fixed %v", left, m, p.measureFor())
		}
	}
	// Just room for the full rounds at the shortest measurement: they are
	// kept, not cut to two.
	left := time.Duration(float64(real(minMeasure, one))/(1-planReserve)) + 200*time.Millisecond
	if m, rounds, ok := p.fitPlan(pts, left, 512*GiB); !ok || rounds[1] != DefaultRounds || m != minMeasure {
		t.Errorf("%v left: %v rounds at %v (ok %v), want %d at %v", left, rounds, m, ok, DefaultRounds, minMeasure)
	}
	// --rounds 4 where only 3 fit: 3 rounds (the fewest a count moves on)
	// at the shortest measurement, not 2 at a longer one.
	p4, err := PrepareBench(context.Background(), BenchOptions{JournalDirs: d[:1], LedgerDirs: d[1:], Rounds: 4})
	if err != nil {
		t.Fatal(err)
	}
	if m, rounds, ok := p4.fitPlan(p4.points(probe), left, 512*GiB); !ok || rounds[1] != MinMoveRounds || m != minMeasure {
		t.Errorf("--rounds 4, %v left (3 rounds fit at %v): %v rounds at %v (ok %v), want %d at %v", left, minMeasure, rounds, m, ok, MinMoveRounds, minMeasure)
	}
}

// fakeSweep returns synthetic results instantly: a journal at 20 MB/s per
// writer up to 4, an entry log at rate (independent of writers and sizes: one
// VM disk), and records the order of the runs.
type fakeSweep struct {
	mu    sync.Mutex
	runs  []string
	rate  float64
	hook  func(n int)
	plans []diskbench.Plan
	// journalRate, when set, gives the journal rate of the k-th run (from
	// 0) with w writers.
	journalRate func(w, k int) float64
	journalRuns map[int]int
}

func (f *fakeSweep) sweep(ctx context.Context, p diskbench.Plan) (*diskbench.Report, error) {
	f.mu.Lock()
	f.plans = append(f.plans, p)
	n := len(f.plans)
	f.mu.Unlock()
	if f.hook != nil {
		f.hook(n)
	}
	if _, err := os.Stat(p.Dir); err != nil {
		return nil, err
	}
	rep := &diskbench.Report{BytesWritten: 64 * MiB}
	var r diskbench.Result
	switch {
	case p.Journal != nil && p.Journal.Alternate != nil:
		// One result per count and batch; journalRate's k is the batch.
		a := p.Journal.Alternate
		for _, w := range p.Journal.Writers {
			for b := range a.Batches {
				rate := 20e6 * float64(min(w, 4))
				if f.journalRate != nil {
					rate = f.journalRate(w, b)
				}
				rep.Results = append(rep.Results, diskbench.Result{Workload: diskbench.WorkloadJournal, Model: diskbench.JournalModelBookKeeper,
					JournalSettings: p.Journal.Settings, Writers: w, BlockSize: p.Journal.BlockSizes[0], InFlight: max(8, p.Journal.InFlight),
					BytesPerSec: rate, Ops: 100, AddLatency: &diskbench.Latency{Count: 100, P50Ns: 1e6, P99Ns: 2e6},
					SyncLatency: &diskbench.Latency{Count: 10, P50Ns: 9e5, P99Ns: 2e6}, WarmupSec: 2,
					Alternation: &diskbench.AlternationInfo{Counts: p.Journal.Writers, Batch: b + 1, Batches: a.Batches, CyclesPerBatch: 2}})
			}
		}
		f.mu.Lock()
		f.runs = append(f.runs, "journal/alternating/"+strconv.FormatInt(p.Journal.BlockSizes[0], 10))
		f.mu.Unlock()
		return rep, nil
	case p.Journal != nil:
		w := p.Journal.Writers[0]
		rate := 20e6 * float64(min(w, 4))
		if f.journalRate != nil {
			f.mu.Lock()
			if f.journalRuns == nil {
				f.journalRuns = map[int]int{}
			}
			rate = f.journalRate(w, f.journalRuns[w])
			f.journalRuns[w]++
			f.mu.Unlock()
		}
		r = diskbench.Result{Workload: diskbench.WorkloadJournal, Model: diskbench.JournalModelBookKeeper, JournalSettings: p.Journal.Settings,
			Writers: w, BlockSize: p.Journal.BlockSizes[0], InFlight: max(8, p.Journal.InFlight), BytesPerSec: rate, Ops: 100,
			AddLatency: &diskbench.Latency{Count: 100, P50Ns: 1e6, P99Ns: 2e6}, SyncLatency: &diskbench.Latency{Count: 10, P50Ns: 9e5, P99Ns: 2e6}, WarmupSec: 2}
	case p.EntryLog != nil && p.EntryLog.Alternate != nil:
		// One result per count and batch; every writer adds f.rate until
		// the disk's 2.5 × f.rate.
		a := p.EntryLog.Alternate
		for _, w := range p.EntryLog.Writers {
			for b := range a.Batches {
				rep.Results = append(rep.Results, diskbench.Result{Workload: diskbench.WorkloadEntryLog, Writers: w, BlockSize: p.EntryLog.BlockSizes[0],
					BytesPerSec: f.rate * min(float64(w), 2.5), Ops: 100, WarmupSec: 6, DurationSec: 0.75, Settle: &diskbench.SettleInfo{Settled: true},
					Alternation: &diskbench.AlternationInfo{Counts: p.EntryLog.Writers, Batch: b + 1, Batches: a.Batches, CyclesPerBatch: 1}})
			}
		}
		f.mu.Lock()
		f.runs = append(f.runs, "entrylog/alternating/"+strconv.FormatInt(p.EntryLog.BlockSizes[0], 10))
		f.mu.Unlock()
		return rep, nil
	case p.EntryLog != nil:
		r = diskbench.Result{Workload: diskbench.WorkloadEntryLog, Writers: p.EntryLog.Writers[0], BlockSize: p.EntryLog.BlockSizes[0],
			BytesPerSec: f.rate, Ops: 100, WarmupSec: 6, Settle: &diskbench.SettleInfo{Settled: true}}
	case p.RandRead != nil:
		r = diskbench.Result{Workload: diskbench.WorkloadRandRead, Depth: 16, BlockSize: 4 * KiB, BytesPerSec: 200e6, IOPS: 50000, Ops: 100}
	}
	f.mu.Lock()
	f.runs = append(f.runs, string(r.Workload)+"/"+strconv.Itoa(max(r.Writers, r.Depth))+"/"+strconv.FormatInt(r.BlockSize, 10))
	f.mu.Unlock()
	rep.Results = []diskbench.Result{r}
	return rep, nil
}

// TestBenchRunsFixedRounds: every decisive point runs exactly --rounds
// times, whatever its comparisons show and however much budget is left —
// 2 journals swinging 16/30 MB/s against 1 at 20 (a comparison that
// stays open) and 4 at 80 (decided after three) alike. Sequential rounds
// let one run stop on 4 paired rounds where the others had 2, and the
// count it moved differed from theirs.
func TestBenchRunsFixedRounds(t *testing.T) {
	for _, tc := range []struct {
		rounds int
		budget time.Duration
	}{{0, 0}, {4, 5 * time.Minute}} {
		d := mkdirs(t, "j", "l")
		f := &fakeSweep{rate: 150e6, journalRate: func(w, k int) float64 {
			switch w {
			case 2:
				return []float64{16e6, 30e6}[k%2]
			case 4:
				return 80e6
			}
			return 20e6
		}}
		p, err := PrepareBench(context.Background(), BenchOptions{JournalDirs: d[:1], LedgerDirs: d[1:], Sweep: f.sweep, Rounds: tc.rounds, TimeBudget: tc.budget})
		if err != nil {
			t.Fatal(err)
		}
		res, err := p.Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		want := max(tc.rounds, DefaultRounds)
		if res.Plan.Rounds[1] != want {
			t.Fatalf("--rounds %d: planned %v, want %d rounds of tier 1", tc.rounds, res.Plan.Rounds, want)
		}
		// The probes are kept apart: no rule reads them as a round.
		for _, dk := range []Disk{res.JournalDisks[0], res.LedgerDisks[0]} {
			if len(dk.ProbeResults) != 1 {
				t.Errorf("--rounds %d: %s: %d probe results, want 1", tc.rounds, dk.Dir, len(dk.ProbeResults))
			}
		}
		// The journal counts run once, in turns, with their batches as the
		// rounds; 1 journal runs by itself only as the probe, beside the
		// entry log (mixed) and in the tier-2 threshold points (64 entries
		// in flight).
		other := 1 + len(res.JournalDisks[0].MixedResults)
		var alts []diskbench.Plan
		for _, pl := range f.plans {
			if pl.Journal != nil && pl.Journal.InFlight == journalDeepInFlight {
				other++
			}
			if pl.Journal != nil && pl.Journal.Alternate != nil {
				alts = append(alts, pl)
			}
		}
		batches := max(want, diskbench.DefaultAlternationBatches)
		// 8 journals and 4 entry-log writers join the turns when tier 2
		// has its full rounds (the 5-minute budget).
		wantJ, wantE := []int{1, 2, 4}, []int{1, 2}
		if res.Plan.Rounds[2] >= MinMoveRounds {
			wantJ, wantE = []int{1, 2, 4, 8}, []int{1, 2, 4}
		}
		if len(alts) != 1 || !slices.Equal(alts[0].Journal.Writers, wantJ) || alts[0].Journal.Alternate.Batches != batches {
			t.Fatalf("--rounds %d: alternating journal runs %+v, want one of %v journals in %d batches", tc.rounds, alts, wantJ, batches)
		}
		if f.journalRuns[1] != other || f.journalRuns[2] != 0 || f.journalRuns[4] != 0 || f.journalRuns[8] != 0 {
			t.Errorf("--rounds %d: separate journal runs per count %v (%d probe, mixed or threshold runs): want no other", tc.rounds, f.journalRuns, other)
		}
		// The figures the count comparison reads: a round per batch for
		// every count, none from the probe.
		per := map[int]int{}
		for _, r := range res.JournalDisks[0].Results {
			if r.InFlight != journalDeepInFlight {
				per[r.Writers]++
			}
		}
		if per[1] != batches || per[2] != batches || per[4] != batches {
			t.Errorf("--rounds %d: rounds recorded per journal count %v, want %d each", tc.rounds, per, batches)
		}
		els := map[string]int{}
		for _, r := range f.runs {
			if strings.HasPrefix(r, "entrylog/") {
				els[r]++
			}
		}
		// entrylog/1/1048576 also runs as the probe and in the mixed runs
		// (the two directories share a device).
		els["entrylog/1/1048576"] -= 1 + len(res.LedgerDisks[0].MixedResults)
		for _, run := range []string{"entrylog/1/1048576", "entrylog/1/65536"} {
			if els[run] != want {
				t.Errorf("--rounds %d: %s ran %d times, want %d: %v", tc.rounds, run, els[run], want, els)
			}
		}
		// The entry-log writer counts run once, in turns, a round per batch.
		var ealts []diskbench.Plan
		for _, pl := range f.plans {
			if pl.EntryLog != nil && pl.EntryLog.Alternate != nil {
				ealts = append(ealts, pl)
			}
		}
		if len(ealts) != 1 || !slices.Equal(ealts[0].EntryLog.Writers, wantE) || ealts[0].EntryLog.Alternate.Batches != batches {
			t.Errorf("--rounds %d: alternating entry-log runs %+v, want one of %v writers in %d batches", tc.rounds, ealts, wantE, batches)
		}
		if tc.budget > DefaultBenchTime && res.Plan.Rounds[2] < MinMoveRounds {
			t.Errorf("--rounds %d at %v: tier 2 planned %v, want its full rounds (8 journals and 4 writers in the turns)", tc.rounds, tc.budget, res.Plan.Rounds)
		}
	}
}

// TestBenchRunRoundsAndMixed: probes first, then the essential points in
// interleaved rounds; journal and ledger dirs on one device also run
// together (the mixed point); the recommendation reads the rounds.
func TestBenchRunRoundsAndMixed(t *testing.T) {
	d := mkdirs(t, "j", "l")
	h, err := hostfs.FakeSysfs(t.TempDir(), d[0], "fakedisk0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeSweep{rate: 150e6}
	p, err := PrepareBench(context.Background(), BenchOptions{JournalDirs: d[:1], LedgerDirs: d[1:], Host: h, Sweep: f.sweep})
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(f.runs) < 2 || f.runs[0] != "journal/1/65536" || f.runs[1] != "entrylog/1/1048576" {
		t.Fatalf("runs %v: want the two probes first", f.runs)
	}
	count := func(run string) int {
		n := 0
		for _, r := range f.runs {
			if r == run {
				n++
			}
		}
		return n
	}
	// Every decisive entry-log point runs the planned rounds; the journal
	// counts run once, in turns.
	for _, run := range []string{"entrylog/1/65536"} {
		if n := count(run); n != DefaultRounds || res.Plan.Rounds[1] != DefaultRounds {
			t.Errorf("%s ran %d times, want %d; plan %+v", run, n, DefaultRounds, res.Plan)
		}
	}
	for _, run := range []string{"journal/alternating/65536", "entrylog/alternating/1048576"} {
		if n := count(run); n != 1 {
			t.Errorf("%s ran %d times, want once: %v", run, n, f.runs)
		}
	}
	// The entry-log counts' turns come first in their block, right after
	// the probe (past the host cache's burst).
	if f.runs[2] != "entrylog/alternating/1048576" {
		t.Errorf("runs %v: want the entry-log turns right after the probes", f.runs)
	}
	// Blocks: after the probes every entry-log run (the mixed ones
	// included) before the journals, the random reads last; within a
	// block the rounds interleave: the second run of 1 writer × 1 MiB
	// comes after the first of the 64 KiB one.
	nth := func(run string, k int) int {
		for i, r := range f.runs {
			if r == run {
				if k--; k == 0 {
					return i
				}
			}
		}
		return -1
	}
	rr := nth("randread/16/4096", 1)
	if j := nth("journal/alternating/65536", 1); j < nth("entrylog/1/65536", DefaultRounds) || rr < j {
		t.Errorf("not in blocks (entry logs, journals, random reads): %v", f.runs)
	}
	// Tier 2 and 3 last, after every essential run.
	for _, run := range []string{"entrylog/1/8388608"} {
		if i := nth(run, 1); i >= 0 && i < rr {
			t.Errorf("tier-2 run %s before the essential ones: %v", run, f.runs)
		}
	}
	if e2, e64 := nth("entrylog/1/1048576", 3), nth("entrylog/1/65536", 1); e64 > e2 || e2 < 0 {
		t.Errorf("rounds not interleaved within the blocks: %v", f.runs)
	}
	// Every run records what else used the CPUs meanwhile (a mixed run is
	// one run of two plans).
	if len(res.Plan.Load) != len(f.runs)-len(res.JournalDisks[0].MixedResults) || res.Plan.MachineCPUs < 1 || res.Plan.Load[0].Run == "" ||
		slices.ContainsFunc(res.Plan.Load, func(l RunLoad) bool { return l.OtherCPUs > float64(res.Plan.MachineCPUs) }) {
		t.Errorf("load of %d runs recorded for %d runs, %d CPUs: %+v", len(res.Plan.Load), len(f.runs), res.Plan.MachineCPUs, res.Plan.Load)
	}
	if n := count("randread/16/4096"); n != 1 {
		t.Errorf("random reads ran %d times, want once: %v", n, f.runs)
	}
	if len(res.LedgerDisks[0].MixedResults) == 0 || len(res.JournalDisks[0].MixedResults) == 0 {
		t.Errorf("journal and ledgers on one device were not measured together: %+v", res.JournalDisks[0].MixedResults)
	}
	// The probes warm up until they settle (the entry-log probe without a
	// knee for most of its cap); an entry-log round gets the fixed warm-up
	// and goes on while its rate is above burstFactor × the probe's per
	// writer, up to burstCap; every other run (the mixed ones too: their
	// two halves run at once) the fixed warm-up. Every run measures the
	// budget's fixed time.
	for i, pl := range f.plans {
		probe := i < 2
		if pl.EntryLog != nil {
			st := pl.Options.Settle
			switch w := float64(slices.Max(pl.EntryLog.Writers)); {
			case probe && (st == nil || st.NoKneeMinWarmup != pl.Options.Warmup-2*time.Second || st.MaxRate != 0):
				t.Errorf("entry-log probe: settle %+v, warm-up cap %v", st, pl.Options.Warmup)
			case !probe && st != nil && (st.MaxRate != burstFactor*f.rate*w || pl.Options.Warmup != burstCap(p.laterWarm()) || st.MinWarmup != p.laterWarm()):
				t.Errorf("entry-log run %d: settle %+v, warm-up cap %v: want the fixed %v, on above %.0f MB/s up to %v", i, st, pl.Options.Warmup, p.laterWarm(), burstFactor*f.rate*w/1e6, burstCap(p.laterWarm()))
			case !probe && st == nil && pl.Options.Warmup != p.laterWarm():
				t.Errorf("mixed entry-log run %d: warm-up %v, want the fixed %v", i, pl.Options.Warmup, p.laterWarm())
			}
			if pl.EntryLog.FileSize < pl.Options.MaxBytes/int64(slices.Max(pl.EntryLog.Writers))-pl.EntryLog.BlockSizes[0] {
				t.Errorf("entry-log run %d: files smaller than its bytes: %+v", i, pl.Options)
			}
		} else if !probe && pl.RandRead == nil && pl.Options.Warmup != p.laterWarm() {
			t.Errorf("run %d warm-up %v, want the fixed %v", i, pl.Options.Warmup, p.laterWarm())
		}
		want := p.measureFor()
		if pl.Journal != nil && pl.Journal.Alternate != nil {
			// Batches of 2 cycles of 3 turns, about the fixed time each.
			want = time.Duration(pl.Journal.Alternate.Batches*2*3) * journalTurn
		}
		if pl.EntryLog != nil && pl.EntryLog.Alternate != nil {
			// Batches of one cycle of 2 turns.
			want = time.Duration(pl.EntryLog.Alternate.Batches*2) * ledgerTurn
		}
		if !probe && pl.Options.Duration != want {
			t.Errorf("run %d measured %v, want %v", i, pl.Options.Duration, want)
		}
		if !strings.Contains(pl.Dir, ScratchPrefix) {
			t.Errorf("ran outside a scratch directory: %s", pl.Dir)
		}
	}
	var mixedLogs int
	for _, pl := range f.plans {
		if pl.EntryLog != nil && pl.Options.Settle == nil {
			mixedLogs++
		}
	}
	if mixedLogs != len(res.LedgerDisks[0].MixedResults) {
		t.Errorf("%d entry-log runs without a settle, %d mixed runs: only the mixed ones run without", mixedLogs, len(res.LedgerDisks[0].MixedResults))
	}
	rec, err := Recommend(Input{JournalDisks: res.JournalDisks, LedgerDisks: res.LedgerDisks, CPUs: 2, DirectMemoryBytes: 2 * GiB, DirectMemorySource: "test"})
	if err != nil {
		t.Fatal(err)
	}
	// The entry log does not scale with writers (one disk): 1 ledger dir.
	if s, _ := rec.Setting("ledgerDirectories"); s.Value != d[1] {
		t.Errorf("ledgerDirectories %q: %v", s.Value, s.Evidence)
	}
	// Journals scale 20/40/80/80 MB/s with equal latency: 4.
	if s, _ := rec.Setting("journalDirectories"); len(strings.Split(s.Value, ",")) != 4 {
		t.Errorf("journalDirectories %q: %v", s.Value, s.Evidence)
	}
	if !strings.Contains(strings.Join(rec.Warnings, " "), "measured at once") {
		t.Errorf("no mixed-load figures in the warnings: %v", rec.Warnings)
	}
}

// TestBenchStopsWhenABookieAppears: a bookie formatting an empty directory
// during the benchmark (a bookie pod starting on the node) stops it before
// the next run, and the scratch directories go.
func TestBenchStopsWhenABookieAppears(t *testing.T) {
	d := mkdirs(t, "j", "l")
	f := &fakeSweep{rate: 150e6}
	f.hook = func(n int) {
		if n == 3 {
			writeCookie(t, d[1])
		}
	}
	p, err := PrepareBench(context.Background(), BenchOptions{JournalDirs: d[:1], LedgerDirs: d[1:], Sweep: f.sweep})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Run(context.Background())
	if !errors.Is(err, ErrLiveBookie) || !strings.Contains(err.Error(), "started using it") {
		t.Fatalf("err = %v, want ErrLiveBookie naming the bookie that started", err)
	}
	if len(f.plans) != 3 {
		t.Errorf("%d runs, want the benchmark stopped before the 4th", len(f.plans))
	}
	for _, dir := range d {
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), ScratchPrefix) {
				t.Errorf("scratch dir left: %s", e.Name())
			}
		}
	}
}

// TestBenchLiveBookieUsesScratch runs a real (shortened) benchmark on
// directories that hold a bookie cookie, with AllowLiveBookie: the
// measurements come from scratch directories next to them, and the
// bookie's directories are left exactly as they were.
func TestBenchLiveBookieUsesScratch(t *testing.T) {
	if testing.Short() {
		t.Skip("writes up to about a GiB")
	}
	root := t.TempDir()
	j, l := filepath.Join(root, "journal"), filepath.Join(root, "ledgers")
	for _, d := range []string{j, l} {
		os.MkdirAll(d, 0o755)
		writeCookie(t, d)
	}
	before := snapshot(t, root)
	var mu sync.Mutex
	var dirs []string
	p, err := PrepareBench(context.Background(), BenchOptions{JournalDirs: []string{j}, LedgerDirs: []string{l},
		TimeBudget: 60 * time.Second, MaxBytes: GiB, Rounds: 1, AllowLiveBookie: true,
		Sweep: func(ctx context.Context, plan diskbench.Plan) (*diskbench.Report, error) {
			mu.Lock()
			dirs = append(dirs, plan.Dir)
			mu.Unlock()
			if _, err := os.Stat(plan.Dir); err != nil {
				t.Errorf("scratch dir %s not created: %v", plan.Dir, err)
			}
			// A unit test's budget: short real runs.
			plan.Duration, plan.Warmup, plan.Settle = time.Second, 300*time.Millisecond, nil
			plan.MaxBytes = min(plan.MaxBytes, 24*MiB)
			if plan.EntryLog != nil {
				plan.EntryLog.FileSize = 24 * MiB
			}
			if plan.RandRead != nil {
				plan.RandRead.FileSize = 16 * MiB
			}
			plan.TimeBudget = 4 * time.Second
			short := &diskbench.Alternation{Turn: 50 * time.Millisecond, Settle: 10 * time.Millisecond, Batches: 2}
			if a := plan.Journal; a != nil && a.Alternate != nil {
				// 2 batches of one 3 × 50 ms cycle; the byte share is
				// generous for a disk that acknowledges at GB/s (256 MiB
				// ran out before the first batch on one).
				a.Alternate = short
				plan.Duration, plan.Warmup, plan.MaxBytes = 300*time.Millisecond, 150*time.Millisecond, GiB
			}
			if e := plan.EntryLog; e != nil && e.Alternate != nil {
				// 2 batches of cycles of 2 × 20 ms. The turns start once
				// the warm-up's syncs settle: 80 ms left 30 ms for that,
				// and a CI run beside test/compat's broker had none
				// ("stopped by duration after 145ms (warm-up 50ms)").
				// The file and the byte share are generous for a VM
				// whose disk acknowledges writes at GB/s (its host's
				// cache): a 192 MiB file filled up, ending the point, at
				// 190 ms, before its first 200 ms batch. The point stops
				// by duration.
				e.Alternate = &diskbench.Alternation{Turn: 20 * time.Millisecond, Settle: 5 * time.Millisecond, Batches: 2}
				e.FileSize = GiB
				plan.Duration, plan.Warmup, plan.MaxBytes = 400*time.Millisecond, 50*time.Millisecond, 2*GiB
			}
			return diskbench.Sweep(ctx, plan)
		}})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range p.Disks {
		if !d.Live || !strings.HasPrefix(filepath.Base(d.Disk.BenchDir), ScratchPrefix) || filepath.Dir(d.Disk.BenchDir) != root {
			t.Fatalf("%s: bench dir %s, live %v; want a scratch sibling", d.Disk.Dir, d.Disk.BenchDir, d.Live)
		}
	}
	res, err := p.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range dirs {
		if strings.HasPrefix(s, j) || strings.HasPrefix(s, l) {
			t.Errorf("benchmark ran inside a live bookie dir: %s", s)
		}
	}
	if len(res.JournalDisks[0].Results) < 3 || len(res.LedgerDisks[0].Results) < 4 || len(res.JournalDisks[0].Cookies) != 1 {
		t.Errorf("results: %d journal, %d ledger; cookies %d; warnings %q", len(res.JournalDisks[0].Results), len(res.LedgerDisks[0].Results), len(res.JournalDisks[0].Cookies), res.Warnings)
	}
	if after := snapshot(t, root); after != before {
		t.Errorf("tree changed:\nbefore %s\nafter  %s", before, after)
	}
	rec, err := Recommend(Input{JournalDisks: res.JournalDisks, LedgerDisks: res.LedgerDisks, CPUs: 2, DirectMemoryBytes: 2 * GiB, DirectMemorySource: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := rec.Setting("journalDirectories"); s.Effective() != strings.Join(res.JournalDisks[0].Cookies[0].JournalDirs, ",") {
		t.Errorf("live bookie's journalDirectories not kept: %+v", s)
	}
}

// TestBenchRunFailureCleansScratch injects a failing sweep: the error is
// returned and the scratch directories are still removed.
func TestBenchRunFailureCleansScratch(t *testing.T) {
	root := t.TempDir()
	j, l := filepath.Join(root, "j"), filepath.Join(root, "l")
	os.MkdirAll(j, 0o755)
	os.MkdirAll(l, 0o755)
	writeCookie(t, j)
	boom := errors.New("injected: device error")
	p, err := PrepareBench(context.Background(), BenchOptions{JournalDirs: []string{j}, LedgerDirs: []string{l}, AllowLiveBookie: true,
		Sweep: func(context.Context, diskbench.Plan) (*diskbench.Report, error) { return nil, boom }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Run(context.Background()); !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	for _, dir := range []string{root, l} {
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), ScratchPrefix) {
				t.Errorf("scratch dir left behind: %s", e.Name())
			}
		}
	}
}

// snapshot lists every path under root with its size.
func snapshot(t *testing.T, root string) string {
	t.Helper()
	var b strings.Builder
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, _ := d.Info()
		b.WriteString(strings.TrimPrefix(p, root))
		if !d.IsDir() {
			b.WriteString(":" + strconv.FormatInt(info.Size(), 10))
		}
		b.WriteString(" ")
		return nil
	})
	return b.String()
}
