package pipeline

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tierkeeper/tierkeeper/offloader/blob"
	"github.com/tierkeeper/tierkeeper/offloader/blob/fs"
	"github.com/tierkeeper/tierkeeper/offloader/blob/memblob"
)

// The copy's write tracker answers for its store whether part CRC-32Cs are
// used, so the encoder computes none for a store that ignores them.
func TestWriteTrackerUsesPartCRC32C(t *testing.T) {
	fst, err := fs.New(fs.Config{Dir: t.TempDir(), NoSync: true}, fs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer fst.Close()
	for _, tc := range []struct {
		s    blob.Store
		want bool
	}{{fst, false}, {memblob.New(), true}} {
		if got := blob.UsesPartCRC32C(&writeTracker{Writer: tc.s}); got != tc.want {
			t.Errorf("%s: UsesPartCRC32C through the write tracker = %v, want %v", tc.s.Name(), got, tc.want)
		}
	}
}

// The copy's phases are counted in tierkeeper_pipeline_copy_seconds_total
// as they go, and add up to the CopyStats of the ledgers copied (what
// offloader offload --timeline samples is what copyCost reports).
func TestCopyPhasesMetric(t *testing.T) {
	r := newRig(t, false)
	name, cands := r.topic(t, 120, 60, 64<<10) // ledgers of 60 entries (3.75 MiB each)
	reg := prometheus.NewRegistry()
	p := r.pipeline(t, func(d *Deps, _ *Options) { d.Registerer = reg })
	tr, err := p.RunTopic(context.Background(), name, cands)
	if err != nil {
		t.Fatal(err)
	}
	var want CopyStats
	for _, lr := range tr.Ledgers {
		if lr.Outcome != OutcomeOffloaded {
			t.Fatalf("ledger %d: %s", lr.LedgerID, lr.Outcome)
		}
		want.ReadWait += lr.Copy.ReadWait
		want.Add += lr.Copy.Add
		want.Finish += lr.Copy.Finish
	}
	if len(tr.Ledgers) == 0 || want.Add <= 0 || want.Finish <= 0 {
		t.Fatalf("%d ledgers copied, stats %+v", len(tr.Ledgers), want)
	}
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range fams {
		if f.GetName() != "tierkeeper_pipeline_copy_seconds_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			got[m.GetLabel()[0].GetValue()] = m.GetCounter().GetValue()
		}
	}
	for phase, d := range map[string]time.Duration{PhaseBookies: want.ReadWait, PhaseAdd: want.Add, PhaseFinish: want.Finish} {
		if math.Abs(got[phase]-d.Seconds()) > 1e-6 {
			t.Errorf("phase %s: %.6fs in the metric, the copies' stats say %.6fs", phase, got[phase], d.Seconds())
		}
	}
}
