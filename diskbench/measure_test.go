package diskbench

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// Measure reports the target and what the run measured, also before the
// run failed; a target that fails the check gives no report.
func TestMeasure(t *testing.T) {
	dir := testDir(t)
	boom := errors.New("boom")
	rep, err := Measure(context.Background(), Options{Dir: dir, AllowAnyFS: true, MaxBytes: MiB},
		func(_ context.Context, o Options) ([]Result, error) {
			if o.Dir != dir {
				t.Errorf("run got dir %q", o.Dir)
			}
			return []Result{{BytesWritten: 3}, {BytesWritten: 4}}, boom
		})
	if !errors.Is(err, boom) || rep == nil || len(rep.Results) != 2 || rep.BytesWritten != 7 || rep.Dir == "" || rep.MaxBytes != MiB {
		t.Errorf("report %+v, error %v", rep, err)
	}
	ran := false
	rep, err = Measure(context.Background(), Options{Dir: filepath.Join(dir, "missing"), AllowAnyFS: true},
		func(context.Context, Options) ([]Result, error) { ran = true; return nil, nil })
	if err == nil || rep != nil || ran {
		t.Errorf("missing dir: report %v, error %v, ran %v", rep, err, ran)
	}
}

func TestPlanOnlyAndNames(t *testing.T) {
	p := DefaultPlan("/d")
	p.Only(WorkloadEntryLog)
	if p.Journal != nil || p.EntryLog == nil || p.RandRead != nil {
		t.Errorf("only entrylog: %+v", p)
	}
	for s, want := range map[string]Workload{"journal": WorkloadJournal, "entrylog": WorkloadEntryLog, "randread": WorkloadRandRead} {
		if w, ok := ParseWorkload(s); !ok || w != want {
			t.Errorf("ParseWorkload(%q) = %q %v", s, w, ok)
		}
	}
	if _, ok := ParseWorkload("fsync"); ok {
		t.Error("unknown workload accepted")
	}
	for s, want := range map[string]Prealloc{"": PreallocDefault, "default": PreallocDefault, "fallocate": PreallocFallocate,
		"sparse": PreallocSparse, "none": PreallocNone} {
		if p, ok := ParsePrealloc(s); !ok || p != want {
			t.Errorf("ParsePrealloc(%q) = %v %v", s, p, ok)
		}
	}
	if _, ok := ParsePrealloc("zero"); ok {
		t.Error("unknown preparation accepted")
	}
}

func TestReadBookieConf(t *testing.T) {
	p := filepath.Join(t.TempDir(), "bookkeeper.conf")
	if err := os.WriteFile(p, []byte("# comment\n! also\njournalMaxGroupWaitMSec = 2\njournalAlignmentSize:4096\n\nnoValue\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	kv, err := ReadBookieConf(p)
	if err != nil || len(kv) != 2 || kv["journalMaxGroupWaitMSec"] != "2" || kv["journalAlignmentSize"] != "4096" {
		t.Errorf("conf %v %v", kv, err)
	}
	if _, err := ReadBookieConf(p + ".missing"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}
