package diskbench

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"io/fs"
	"math"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestRunJournal(t *testing.T) {
	dir := testDir(t)
	var mu sync.Mutex
	var phases []Phase
	o := quick(dir)
	o.Progress = func(ev ProgressEvent) {
		mu.Lock()
		phases = append(phases, ev.Phase)
		mu.Unlock()
		if ev.Points != 2 || ev.Point < 1 || ev.Point > 2 {
			t.Errorf("progress point %d/%d", ev.Point, ev.Points)
		}
	}
	res, err := RunJournal(context.Background(), JournalOptions{Options: o,
		JournalParams: JournalParams{Model: JournalModelPlain, Writers: []int{1, 2}, BlockSizes: []int64{4 * KiB}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 2 || res[0].Writers != 1 || res[1].Writers != 2 {
		t.Fatalf("results %+v", res)
	}
	for _, r := range res {
		if r.Workload != WorkloadJournal || r.BlockSize != 4096 || r.SyncEvery != 1 || r.Prealloc != "fallocate" {
			t.Errorf("settings %+v", r)
		}
		if r.Ops == 0 || r.Bytes != r.Ops*4096 {
			t.Errorf("ops %d bytes %d", r.Ops, r.Bytes)
		}
		// One fdatasync per write; the last group may straddle the window.
		if d := r.Syncs - r.Ops; d < -int64(r.Writers) || d > int64(r.Writers) {
			t.Errorf("syncs %d vs writes %d", r.Syncs, r.Ops)
		}
		if math.Abs(r.BytesPerSec*r.DurationSec-float64(r.Bytes)) > 1 {
			t.Errorf("bytes/s %f × %fs != %d", r.BytesPerSec, r.DurationSec, r.Bytes)
		}
		// 300 ms asked; the upper bound only catches a window that ignores
		// its deadline (a slow fdatasync under load may stretch it a bit).
		if r.DurationSec < 0.25 || r.DurationSec > 2 || r.WarmupSec < 0.04 {
			t.Errorf("duration %f warmup %f", r.DurationSec, r.WarmupSec)
		}
		for name, l := range map[string]*Latency{"write": r.WriteLatency, "sync": r.SyncLatency, "commit": r.CommitLatency} {
			if l == nil || l.Count == 0 || !(l.MinNs <= l.P50Ns && l.P50Ns <= l.P90Ns && l.P90Ns <= l.P99Ns && l.P99Ns <= l.P999Ns && l.P999Ns <= l.MaxNs) {
				t.Errorf("%s latency %+v", name, l)
			}
		}
		if r.CommitLatency.P50Ns < r.SyncLatency.P50Ns {
			t.Errorf("commit p50 %d < sync p50 %d", r.CommitLatency.P50Ns, r.SyncLatency.P50Ns)
		}
		if r.ReadLatency != nil {
			t.Error("journal has read latency")
		}
		if r.BytesWritten < r.Bytes {
			t.Errorf("bytes written %d < measured %d", r.BytesWritten, r.Bytes)
		}
	}
	if len(phases) == 0 || phases[len(phases)-1] != PhaseDone {
		t.Errorf("phases %v", phases)
	}
}

func TestRunJournalGroupCommit(t *testing.T) {
	res, err := RunJournal(context.Background(), JournalOptions{Options: quick(testDir(t)),
		JournalParams: JournalParams{Model: JournalModelPlain, Writers: []int{1}, BlockSizes: []int64{4 * KiB}, SyncEvery: 8}})
	if err != nil {
		t.Fatal(err)
	}
	r := res[0]
	// The measured window cuts groups at both edges (a group's writes may
	// fall before the window and its sync inside, or the reverse), so allow
	// up to one group of slack at each edge; syncing every write, every 4
	// writes or never is still far outside it.
	if r.SyncEvery != 8 || r.Syncs == 0 || math.Abs(float64(r.Ops)-8*float64(r.Syncs)) > 2*8 {
		t.Errorf("writes %d syncs %d, want 8 writes per sync", r.Ops, r.Syncs)
	}
}

func TestRunEntryLog(t *testing.T) {
	res, err := RunEntryLog(context.Background(), EntryLogOptions{Options: quick(testDir(t)),
		EntryLogParams: EntryLogParams{BlockSizes: []int64{16 * KiB}, FlushEveryBytes: 64 * KiB}})
	if err != nil {
		t.Fatal(err)
	}
	r := res[0]
	if r.Workload != WorkloadEntryLog || r.Writers != 1 || r.FlushEveryBytes != 64*KiB || r.Prealloc != "none" {
		t.Errorf("settings %+v", r)
	}
	if r.Syncs == 0 || math.Abs(float64(r.Ops)/float64(r.Syncs)-4) > 1 {
		t.Errorf("writes %d syncs %d, want 4 writes per flush", r.Ops, r.Syncs)
	}
}

func TestRunRandRead(t *testing.T) {
	dir := testDir(t)
	o := quick(dir)
	res, err := RunRandRead(context.Background(), RandReadOptions{Options: o,
		RandReadParams: RandReadParams{BlockSizes: []int64{4 * KiB, 64 * KiB}, Depths: []int{1, 4}, FileSize: 8 * MiB}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 4 {
		t.Fatalf("%d results", len(res))
	}
	var st unix.Statfs_t
	unix.Statfs(dir, &st)
	for i, r := range res {
		wantBS := []int64{4 * KiB, 4 * KiB, 64 * KiB, 64 * KiB}[i]
		wantD := []int{1, 4, 1, 4}[i]
		if r.BlockSize != wantBS || r.Depth != wantD || r.FileSize != 8*MiB || r.Writers != 0 {
			t.Errorf("result %d: %+v", i, r)
		}
		if r.Ops == 0 || r.ReadLatency == nil || r.WriteLatency != nil || r.Bytes != r.Ops*r.BlockSize {
			t.Errorf("result %d: ops %d read %v write %v", i, r.Ops, r.ReadLatency, r.WriteLatency)
		}
		if wantWritten := map[bool]int64{true: 8 * MiB, false: 0}[i == 0]; r.BytesWritten != wantWritten {
			t.Errorf("result %d: bytes written %d, want %d (layout charged to the first point)", i, r.BytesWritten, wantWritten)
		}
		if st.Type == unix.EXT4_SUPER_MAGIC && !r.DirectIO {
			t.Errorf("ext4 should take O_DIRECT: %v", r.Warnings)
		}
	}
}

func TestRandReadFallsBackWithoutODirect(t *testing.T) {
	dir := testDir(t)
	ffs := &faultFS{failOpen: func(name string, flag int) error {
		if flag&unix.O_DIRECT != 0 {
			return syscall.EINVAL
		}
		return nil
	}}
	o := quick(dir)
	o.OpenFile = ffs.open
	res, err := RunRandRead(context.Background(), RandReadOptions{Options: o,
		RandReadParams: RandReadParams{BlockSizes: []int64{4 * KiB}, Depths: []int{2}, FileSize: 4 * MiB}})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].DirectIO || len(res[0].Warnings) == 0 || !strings.Contains(res[0].Warnings[0], "O_DIRECT is not supported") {
		t.Errorf("fallback not reported: direct=%v warnings=%v", res[0].DirectIO, res[0].Warnings)
	}
	if res[0].Ops == 0 {
		t.Error("no reads")
	}
	ffs.assertGone(t)
}

func TestENOSPCMidRun(t *testing.T) {
	for _, wl := range []Workload{WorkloadJournal, WorkloadEntryLog, WorkloadRandRead} {
		t.Run(string(wl), func(t *testing.T) {
			dir := testDir(t)
			ffs := &faultFS{failWriteAfter: 50, writeErr: syscall.ENOSPC}
			o := quick(dir)
			o.OpenFile = ffs.open
			var err error
			switch wl {
			case WorkloadJournal:
				_, err = RunJournal(context.Background(), JournalOptions{Options: o,
					JournalParams: JournalParams{Writers: []int{2}, BlockSizes: []int64{4 * KiB}}})
			case WorkloadEntryLog:
				_, err = RunEntryLog(context.Background(), EntryLogOptions{Options: o,
					EntryLogParams: EntryLogParams{BlockSizes: []int64{64 * KiB}}})
			case WorkloadRandRead:
				_, err = RunRandRead(context.Background(), RandReadOptions{Options: o,
					RandReadParams: RandReadParams{BlockSizes: []int64{4 * KiB}, Depths: []int{1}, FileSize: 128 * MiB}})
			}
			if !errors.Is(err, ErrNoSpace) || !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("want ErrNoSpace wrapping ENOSPC, got %v", err)
			}
			ffs.assertGone(t)
		})
	}
}

func TestFdatasyncFailure(t *testing.T) {
	dir := testDir(t)
	ffs := &faultFS{syncErr: syscall.EIO}
	o := quick(dir)
	o.OpenFile = ffs.open
	_, err := RunJournal(context.Background(), JournalOptions{Options: o,
		JournalParams: JournalParams{Writers: []int{4}, BlockSizes: []int64{4 * KiB}}})
	if !errors.Is(err, ErrSync) || !errors.Is(err, syscall.EIO) {
		t.Fatalf("want ErrSync wrapping EIO, got %v", err)
	}
	ffs.assertGone(t)

	// The random-read layout's fdatasync too, and ENOSPC there is ErrNoSpace.
	for _, c := range []struct{ errno, want error }{{syscall.EIO, ErrSync}, {syscall.ENOSPC, ErrNoSpace}} {
		ffs := &faultFS{syncErr: c.errno}
		o.OpenFile = ffs.open
		_, err := RunRandRead(context.Background(), RandReadOptions{Options: o,
			RandReadParams: RandReadParams{BlockSizes: []int64{4 * KiB}, Depths: []int{1}, FileSize: 4 * MiB}})
		if !errors.Is(err, c.want) || !errors.Is(err, c.errno) || !strings.Contains(err.Error(), "randread layout") {
			t.Errorf("randread layout: want %v wrapping %v, got %v", c.want, c.errno, err)
		}
		ffs.assertGone(t)
	}
}

func TestFallocateENOSPC(t *testing.T) {
	dir := testDir(t)
	ffs := &faultFS{allocErr: syscall.ENOSPC}
	o := quick(dir)
	o.OpenFile = ffs.open
	_, err := RunJournal(context.Background(), JournalOptions{Options: o,
		JournalParams: JournalParams{Model: JournalModelPlain, Writers: []int{3}, BlockSizes: []int64{4 * KiB}}})
	if !errors.Is(err, ErrNoSpace) {
		t.Fatalf("want ErrNoSpace, got %v", err)
	}
	ffs.assertGone(t)
}

func TestFallocateUnsupportedFallsBack(t *testing.T) {
	ffs := &faultFS{allocErr: syscall.EOPNOTSUPP}
	o := quick(testDir(t))
	o.OpenFile = ffs.open
	res, err := RunJournal(context.Background(), JournalOptions{Options: o,
		JournalParams: JournalParams{Model: JournalModelPlain, Writers: []int{1}, BlockSizes: []int64{4 * KiB}}})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Prealloc != "none" || len(res[0].Warnings) == 0 {
		t.Errorf("prealloc %q warnings %v", res[0].Prealloc, res[0].Warnings)
	}
	ffs.assertGone(t)
}

func TestPermissionDenied(t *testing.T) {
	ffs := &faultFS{failOpen: func(string, int) error { return syscall.EACCES }}
	o := quick(testDir(t))
	o.OpenFile = ffs.open
	_, err := RunJournal(context.Background(), JournalOptions{Options: o})
	if !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("want fs.ErrPermission, got %v", err)
	}
}

func TestByteBudgetIsNeverExceeded(t *testing.T) {
	dir := testDir(t)
	o := quick(dir)
	o.MaxBytes = 2 * MiB
	o.Duration = 5 * time.Second // the budget, not the clock, must end this
	start := time.Now()
	// Each file could take the whole budget, so a writer starved by a busy
	// machine cannot let the other fill its file (1.5× a fair share by
	// default) first.
	res, err := RunJournal(context.Background(), JournalOptions{Options: o,
		JournalParams: JournalParams{Model: JournalModelPlain, Writers: []int{2}, BlockSizes: []int64{64 * KiB}, FileSize: o.MaxBytes}})
	if err != nil {
		t.Fatal(err)
	}
	if time.Since(start) > 4*time.Second {
		t.Errorf("budget did not stop the point (took %v)", time.Since(start))
	}
	r := res[0]
	if r.BytesWritten > o.MaxBytes || r.StopReason != "byte budget" {
		t.Errorf("wrote %d of %d, stop %q", r.BytesWritten, o.MaxBytes, r.StopReason)
	}
	if len(r.Warnings) == 0 || !strings.Contains(strings.Join(r.Warnings, " "), "byte budget") {
		t.Errorf("warnings %v", r.Warnings)
	}
}

func TestCancelRemovesFiles(t *testing.T) {
	dir := testDir(t)
	ffs := &faultFS{}
	o := quick(dir)
	o.OpenFile = ffs.open
	o.Duration = time.Minute
	o.MaxBytes = 512 * MiB // the cancel, not the budget, must end the point
	for _, m := range []JournalModel{JournalModelBookKeeper, JournalModelPlain} {
		ctx, cancel := context.WithCancel(context.Background())
		o.Progress = func(ev ProgressEvent) {
			if ev.BytesWritten > 0 { // mid-point: files exist
				cancel()
			}
		}
		start := time.Now()
		_, err := RunJournal(ctx, JournalOptions{Options: o,
			JournalParams: JournalParams{Model: m, Writers: []int{2}, BlockSizes: []int64{4 * KiB}}})
		cancel()
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("%s: want context.Canceled, got %v", m, err)
		}
		if time.Since(start) > 10*time.Second {
			t.Errorf("%s: cancel took %v", m, time.Since(start))
		}
		ffs.assertGone(t)
	}
}

func TestInvalidOptions(t *testing.T) {
	dir := testDir(t)
	ctx := context.Background()
	for name, err := range map[string]error{
		"writers 0": func() error {
			_, err := RunJournal(ctx, JournalOptions{Options: quick(dir), JournalParams: JournalParams{Writers: []int{0}}})
			return err
		}(),
		"tiny block": func() error {
			_, err := RunEntryLog(ctx, EntryLogOptions{Options: quick(dir), EntryLogParams: EntryLogParams{BlockSizes: []int64{100}}})
			return err
		}(),
		"odd read block": func() error {
			_, err := RunRandRead(ctx, RandReadOptions{Options: quick(dir), RandReadParams: RandReadParams{BlockSizes: []int64{1000}}})
			return err
		}(),
		"depth 0": func() error {
			_, err := RunRandRead(ctx, RandReadOptions{Options: quick(dir), RandReadParams: RandReadParams{Depths: []int{0}}})
			return err
		}(),
		"empty plan": func() error {
			_, err := Sweep(ctx, Plan{Options: quick(dir)})
			return err
		}(),
	} {
		if !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestSweepWithinBudgets(t *testing.T) {
	dir := testDir(t)
	plan := DefaultPlan(dir)
	plan.AllowAnyFS = true
	plan.MaxBytes = 48 * MiB
	plan.TimeBudget = 4 * time.Second
	plan.Journal.Writers = []int{1, 2}
	plan.RandRead.FileSize = 8 * MiB
	start := time.Now()
	rep, err := Sweep(context.Background(), plan)
	if err != nil {
		t.Fatal(err)
	}
	el := time.Since(start)
	if el > plan.TimeBudget+time.Second {
		t.Errorf("sweep took %v, budget %v", el, plan.TimeBudget)
	}
	if rep.BytesWritten > plan.MaxBytes || rep.MaxBytes != plan.MaxBytes {
		t.Errorf("wrote %d, budget %d (report says %d)", rep.BytesWritten, plan.MaxBytes, rep.MaxBytes)
	}
	got := map[Workload]int{}
	for _, r := range rep.Results {
		got[r.Workload]++
	}
	if got[WorkloadJournal] == 0 || got[WorkloadEntryLog] == 0 || got[WorkloadRandRead] == 0 {
		t.Errorf("workloads measured %v, warnings %v", got, rep.Warnings)
	}
	if rep.FSType == "" || rep.Dir == "" || rep.Tool != "diskbench" || rep.ElapsedSec <= 0 {
		t.Errorf("report header %+v", rep)
	}
	// The JSON form keeps the public field names.
	b, _ := json.Marshal(rep)
	for _, k := range []string{`"workload"`, `"block_size"`, `"bytes_per_sec"`, `"iops"`, `"p99_ns"`, `"writers"`, `"depth"`} {
		if !bytes.Contains(b, []byte(k)) {
			t.Errorf("JSON lacks %s", k)
		}
	}
	// Both human renderings work on a real report.
	var tb bytes.Buffer
	if err := WriteTable(&tb, rep); err != nil || !strings.Contains(tb.String(), "journal") || !strings.Contains(tb.String(), "randread") {
		t.Errorf("table: %v\n%s", err, tb.String())
	}
	var sb bytes.Buffer
	if err := WriteSVG(&sb, rep); err != nil {
		t.Fatal(err)
	}
	checkSVG(t, sb.Bytes(), []string{"Journal", "Entry log", "Random reads", "throughput (", "commit latency", "writers (log2 scale)", "bs=4KiB"})
}

func TestSweepSkipsWhatDoesNotFit(t *testing.T) {
	plan := DefaultPlan(testDir(t))
	plan.AllowAnyFS = true
	plan.MaxBytes = 256 * MiB
	plan.TimeBudget = 1500 * time.Millisecond
	plan.Duration, plan.Warmup = 600*time.Millisecond, 100*time.Millisecond
	plan.Journal.Writers = []int{1, 2, 3, 4, 5, 6}
	plan.Journal.BlockSizes = []int64{4 * KiB}
	// The plain model: its points run their whole duration (the
	// bookkeeper model's may spend the byte budget first on a fast disk).
	plan.Journal.Model = JournalModelPlain
	plan.EntryLog, plan.RandRead = nil, nil
	start := time.Now()
	rep, err := Sweep(context.Background(), plan)
	if err != nil {
		t.Fatal(err)
	}
	// Wall time only catches a sweep that ignores its hard stop (budget +
	// 2 s); an fdatasync in flight on a busy disk may add to it.
	if el := time.Since(start); el > plan.TimeBudget+5*time.Second {
		t.Errorf("took %v", el)
	}
	if len(rep.Results) == 6 || len(rep.Warnings) == 0 {
		t.Errorf("%d results, warnings %v: expected points skipped for lack of time", len(rep.Results), rep.Warnings)
	}
	// A point starts only while duration + warm-up still fit in the budget,
	// so the points before the last ran for at most budget - (duration +
	// warm-up) together, however slow the machine.
	var before float64
	for _, r := range rep.Results[:max(len(rep.Results)-1, 0)] {
		before += r.WarmupSec + r.DurationSec
	}
	if limit := (plan.TimeBudget - plan.Duration - plan.Warmup).Seconds(); before > limit+1e-3 {
		t.Errorf("points before the last ran %.3fs, more than the %.3fs the budget left them", before, limit)
	}
}

// checkSVG parses the document as XML and looks for the given texts.
func checkSVG(t *testing.T, b []byte, want []string) {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(b))
	var text strings.Builder
	root := ""
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v", err)
		}
		switch v := tok.(type) {
		case xml.StartElement:
			if root == "" {
				root = v.Name.Local
			}
		case xml.CharData:
			text.Write(v)
			text.WriteByte('\n')
		}
	}
	if root != "svg" {
		t.Errorf("root element %q", root)
	}
	for _, w := range want {
		if !strings.Contains(text.String(), w) {
			t.Errorf("SVG lacks %q", w)
		}
	}
}

func TestSVGAndTableByBlockSize(t *testing.T) {
	// Synthetic report: one writer count, three block sizes → x is block size.
	rep := &Report{Dir: "/x", FSType: "ext4"}
	for i, bs := range []int64{64 * KiB, MiB, 8 * MiB} {
		l := &Latency{Count: 10, MinNs: 1000, P50Ns: int64(1e6 * (i + 1)), P90Ns: 2e6, P99Ns: int64(5e6 * (i + 1)), P999Ns: 9e6, MaxNs: 1e7}
		rep.Results = append(rep.Results, Result{Workload: WorkloadEntryLog, Writers: 1, BlockSize: bs, FlushEveryBytes: 32 * MiB,
			BytesPerSec: float64(100+i) * 1e6, IOPS: 10, WriteLatency: l, SyncLatency: l, Warnings: []string{"w<&>"}})
	}
	var sb bytes.Buffer
	if err := WriteSVG(&sb, rep); err != nil {
		t.Fatal(err)
	}
	checkSVG(t, sb.Bytes(), []string{"block size (log2 scale)", "64KiB", "8MiB", "writers=1", "fdatasync latency", "MiB/s"})
	var tb bytes.Buffer
	WriteTable(&tb, rep)
	if !strings.Contains(tb.String(), "w<&>") || !strings.Contains(tb.String(), "32MiB") {
		t.Errorf("table:\n%s", tb.String())
	}
	// An empty report still renders.
	sb.Reset()
	if err := WriteSVG(&sb, &Report{}); err != nil {
		t.Fatal(err)
	}
	checkSVG(t, sb.Bytes(), []string{"no results"})
}

func TestLogTicks(t *testing.T) {
	lo, hi, ticks := logTicks(3.2e4, 8.1e6)
	if lo != 2e4 || hi != 1e7 || len(ticks) == 0 {
		t.Errorf("logTicks = %v %v %v", lo, hi, ticks)
	}
	for _, v := range ticks {
		if v < lo || v > hi {
			t.Errorf("tick %v outside [%v, %v]", v, lo, hi)
		}
	}
	_, max, lt := linTicks(0, 437)
	if max != 500 || len(lt) != 6 {
		t.Errorf("linTicks max %v ticks %v", max, lt)
	}
}

func TestFileFullStopsPoint(t *testing.T) {
	o := quick(testDir(t))
	o.Duration = 5 * time.Second
	o.Warmup = -1
	start := time.Now()
	res, err := RunJournal(context.Background(), JournalOptions{Options: o,
		JournalParams: JournalParams{Model: JournalModelPlain, Writers: []int{2}, BlockSizes: []int64{4 * KiB}, FileSize: 256 * KiB}})
	if err != nil {
		t.Fatal(err)
	}
	r := res[0]
	if r.StopReason != "file full" || r.Ops > 2*64 || r.Ops == 0 || r.FileSize != 256*KiB {
		t.Errorf("stop %q ops %d file %d", r.StopReason, r.Ops, r.FileSize)
	}
	if !strings.Contains(strings.Join(r.Warnings, " "), "file is full") {
		t.Errorf("warnings %v", r.Warnings)
	}
	if time.Since(start) > 4*time.Second {
		t.Errorf("took %v", time.Since(start))
	}
}

// TestGOMAXPROCSLeftAloneByDefault: the library no longer changes the
// process-wide GOMAXPROCS unless the program asks; when asked it
// raises it to writers+2 for the point and restores it.
func TestGOMAXPROCSLeftAloneByDefault(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	for _, raise := range []bool{false, true} {
		var mu sync.Mutex
		seen := map[int]bool{}
		o := quick(testDir(t))
		o.RaiseGOMAXPROCS = raise
		o.Progress = func(ev ProgressEvent) {
			if ev.Phase == PhaseMeasure || ev.Phase == PhaseWarmup {
				mu.Lock()
				seen[runtime.GOMAXPROCS(0)] = true
				mu.Unlock()
			}
		}
		if _, err := RunJournal(context.Background(), JournalOptions{Options: o,
			JournalParams: JournalParams{Writers: []int{4}, BlockSizes: []int64{4 * KiB}}}); err != nil {
			t.Fatal(err)
		}
		// Raised: one value, at least writers+2 (the journal model may run
		// more goroutines per writer).
		ok := len(seen) == 1 && seen[1]
		if raise {
			ok = len(seen) == 1 && !seen[1]
			for n := range seen {
				ok = ok && n >= 6
			}
		}
		if !ok {
			t.Errorf("RaiseGOMAXPROCS=%v: GOMAXPROCS during the point %v (was 1)", raise, seen)
		}
		if got := runtime.GOMAXPROCS(0); got != 1 {
			t.Errorf("RaiseGOMAXPROCS=%v: GOMAXPROCS %d after the run, want 1 restored", raise, got)
		}
	}
}
