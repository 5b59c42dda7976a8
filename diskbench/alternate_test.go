package diskbench

import (
	"context"
	"errors"
	"math"
	"sync/atomic"
	"testing"
	"time"
)

// TestAlternationSchedule pins the cycle layout: turns from the warm-up's
// end, batches of whole cycles, turns in the order given, the settle time
// of each turn and the warm-up left out.
func TestAlternationSchedule(t *testing.T) {
	ms := int64(time.Millisecond)
	a := Alternation{Turn: 250 * time.Millisecond, Settle: 50 * time.Millisecond, Batches: 4}
	al := newAlternation(a, []int{1, 2, 4}, 6*time.Second)
	var origin atomic.Int64
	origin.Store(1500 * ms) // the warm-up's end
	al.origin = &origin
	if al.cpb != 2 || al.duration() != 6*time.Second {
		t.Fatalf("%d cycles per batch, measured %v; want 2, 6s", al.cpb, al.duration())
	}
	// Every writer runs through the warm-up.
	if !al.active(3, 100*ms) || !al.active(2, 1499*ms) {
		t.Error("a lane idle during the warm-up")
	}
	for _, c := range []struct {
		t      int64
		bucket int
	}{
		{0, -1},               // warm-up
		{1499 * ms, -1},       // warm-up
		{1500 * ms, -1},       // first turn's settle
		{1560 * ms, 0},        // batch 0, count 1
		{1810 * ms, 1},        // batch 0, count 2
		{2060 * ms, 2},        // batch 0, count 4
		{2310 * ms, 0},        // second cycle of batch 0, count 1
		{3060 * ms, 3},        // batch 1, count 1
		{7499 * ms, 11},       // batch 3, count 4
		{7500*ms + 60*ms, -1}, // past the last batch
	} {
		if got := al.bucket(c.t); got != c.bucket {
			t.Errorf("bucket(%v) = %d, want %d", time.Duration(c.t), got, c.bucket)
		}
	}
	// Lane 2 (the third journal) runs only in count 4's turns.
	if al.active(2, 1600*ms) || al.active(2, 1800*ms) || !al.active(2, 2100*ms) {
		t.Error("lane 2 active outside count 4's turn")
	}
	if got := al.nextActive(2, 1600*ms); got != 2000*ms {
		t.Errorf("nextActive(lane 2, 1.6s) = %v, want 2s", time.Duration(got))
	}
	if got := al.nextActive(0, 2100*ms); got != 2250*ms {
		t.Errorf("nextActive(lane 0, 2.1s) = %v, want 2.25s", time.Duration(got))
	}
}

// TestJournalAlternation runs 1, 2 and 4 journals in turns on a disk
// whose fdatasync always takes 10 ms: each journal then acknowledges its
// in-flight entries once per sync, so a count's turns must write in
// proportion to the journals that run in them — 2× and 4× count 1's in
// every batch. A journal that added outside its counts' turns would bring
// the ratios towards 1.
func TestJournalAlternation(t *testing.T) {
	ffs := &faultFS{syncDelay: 10 * time.Millisecond}
	o := bkOpts(t, nil)
	o.OpenFile = ffs.open
	o.MaxBytes = 4 << 30
	o.Duration = 1800 * time.Millisecond
	o.Warmup = 300 * time.Millisecond
	o.LatencyBuckets = true
	counts := []int{1, 2, 4}
	res, err := RunJournal(context.Background(), JournalOptions{Options: o, JournalParams: JournalParams{
		Writers: counts, BlockSizes: []int64{64 * KiB},
		Alternate: &Alternation{Turn: 100 * time.Millisecond, Settle: 30 * time.Millisecond, Batches: 3}}})
	if err != nil {
		t.Fatal(err)
	}
	ffs.assertGone(t)
	if len(res) != 9 {
		t.Fatalf("%d results, want 3 counts × 3 batches", len(res))
	}
	rate := map[[2]int]float64{}
	for i, r := range res {
		ai := r.Alternation
		want := counts[i/3]
		if ai == nil || r.Writers != want || ai.Batch != i%3+1 || ai.Batches != 3 || ai.CyclesPerBatch != 2 || len(ai.Counts) != 3 {
			t.Fatalf("result %d: writers %d, alternation %+v; want count %d, batch %d of 3, 2 cycles each", i, r.Writers, ai, want, i%3+1)
		}
		if math.Abs(r.DurationSec-0.14) > 1e-9 || r.Bytes == 0 || r.AddLatency == nil || r.SyncLatency == nil || len(r.AddLatency.Buckets) == 0 {
			t.Fatalf("result %d: %.3f s, %d bytes, add %v, sync %v; want 2 × 70 ms measured, bytes and latencies", i, r.DurationSec, r.Bytes, r.AddLatency, r.SyncLatency)
		}
		if r.SyncLatency.P50Ns < 10e6 {
			t.Errorf("result %d: fdatasync p50 %v, want the 10 ms sleep", i, time.Duration(r.SyncLatency.P50Ns))
		}
		rate[[2]int{r.Writers, ai.Batch}] = r.BytesPerSec
	}
	for b := 1; b <= 3; b++ {
		for _, pair := range [][2]int{{2, 1}, {4, 2}} {
			got := rate[[2]int{pair[0], b}] / rate[[2]int{pair[1], b}]
			if got < 1.6 || got > 2.4 {
				t.Errorf("batch %d: %d journals wrote %.2f× of %d (want about 2)", b, pair[0], got, pair[1])
			}
		}
	}
}

// TestEntryLogAlternation: 1 and 2 entry-log writers in turns, each
// syncing every 256 KiB on a disk whose fdatasync takes 10 ms: a turn of 2
// writers must write about twice a turn of 1 in every batch, and the
// warm-up, which every writer runs, ends early once the rate has settled
// (Options.Settle), the turns starting from there. The turns are 250 ms
// (220 ms measured: ~22 syncs of the single writer), so that one sync
// more or less moves a ratio by ~5 %; with 100 ms turns (7 syncs) it moved
// it by 14 %, and a loaded machine took a batch under 1.6.
func TestEntryLogAlternation(t *testing.T) {
	ffs := &faultFS{syncDelay: 10 * time.Millisecond}
	o := quick(testDir(t))
	o.OpenFile = ffs.open
	o.MaxBytes = 4 << 30
	o.Duration = 1200 * time.Millisecond
	o.Warmup = 5 * time.Second
	o.Settle = &Settle{MinWarmup: 300 * time.Millisecond, Window: 1, Tolerance: 1}
	res, err := RunEntryLog(context.Background(), EntryLogOptions{Options: o, EntryLogParams: EntryLogParams{
		Writers: []int{1, 2}, BlockSizes: []int64{64 * KiB}, FlushEveryBytes: 256 * KiB,
		Alternate: &Alternation{Turn: 250 * time.Millisecond, Settle: 30 * time.Millisecond, Batches: 3}}})
	if err != nil {
		t.Fatal(err)
	}
	ffs.assertGone(t)
	if len(res) != 6 {
		t.Fatalf("%d results, want 2 counts × 3 batches", len(res))
	}
	for b := range 3 {
		one, two := res[b], res[3+b]
		if one.Writers != 1 || two.Writers != 2 || one.Alternation == nil || one.Alternation.Batch != b+1 || one.SyncLatency == nil {
			t.Fatalf("batch %d: %+v / %+v", b+1, one, two)
		}
		if one.WarmupSec > 3 {
			t.Errorf("warm-up %.1f s: the settled warm-up did not end it", one.WarmupSec)
		}
		if got := two.BytesPerSec / one.BytesPerSec; got < 1.6 || got > 2.4 {
			t.Errorf("batch %d: 2 writers wrote %.2f× of 1 (want about 2)", b+1, got)
		}
	}
}

func TestAlternationInvalid(t *testing.T) {
	for name, jp := range map[string]JournalParams{
		"one count": {Writers: []int{2}, Alternate: &Alternation{}},
		"twice":     {Writers: []int{1, 2, 1}, Alternate: &Alternation{}},
		"settle":    {Writers: []int{1, 2}, Alternate: &Alternation{Turn: 50 * time.Millisecond, Settle: 50 * time.Millisecond}},
		"batches":   {Writers: []int{1, 2}, Alternate: &Alternation{Batches: -1}},
	} {
		_, err := RunJournal(context.Background(), JournalOptions{Options: quick(testDir(t)), JournalParams: jp})
		if !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("%s: %v, want ErrInvalidOptions", name, err)
		}
	}
}
