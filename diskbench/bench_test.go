package diskbench

import (
	"context"
	"os"
	"testing"
	"time"
)

func BenchmarkHistRecord(b *testing.B) {
	var h hist
	v := int64(12345)
	for i := 0; i < b.N; i++ {
		h.record(v)
		v = v*1103515245 + 12345
		if v < 0 {
			v = -v
		}
	}
}

// nullFile does no I/O, so the journal loop measures only diskbench's own
// per-operation cost (clock reads, budget, histograms, counters).
type nullFile struct{}

func (nullFile) WriteAt(p []byte, _ int64) (int, error) { return len(p), nil }
func (nullFile) ReadAt(p []byte, _ int64) (int, error)  { return len(p), nil }
func (nullFile) Datasync() error                        { return nil }
func (nullFile) Sync() error                            { return nil }
func (nullFile) Truncate(int64) error                   { return nil }
func (nullFile) Allocate(int64, int64) error            { return nil }
func (nullFile) Fadvise(int64, int64, int) error        { return nil }
func (nullFile) Close() error                           { return nil }

// BenchmarkEngineOverhead reports the engine's cost per write+fdatasync
// pair with I/O removed (ns/op): what diskbench adds to every measured
// operation compared with fio.
func BenchmarkEngineOverhead(b *testing.B) {
	dir := b.TempDir()
	o := Options{Dir: dir, Duration: 500 * time.Millisecond, Warmup: -1, AllowAnyFS: true,
		OpenFile: func(name string, flag int, perm os.FileMode) (File, error) {
			f, err := OpenOSFile(name, flag, perm) // create the real name, then drop it
			if err == nil {
				f.Close()
			}
			return nullFile{}, err
		}}
	// 64 MiB of 512-byte writes: the byte budget ends each run after
	// ~131k operations.
	o.MaxBytes = 64 * MiB
	var ops int64
	var ns float64
	for i := 0; i < b.N; i++ {
		res, err := RunJournal(context.Background(), JournalOptions{Options: o,
			JournalParams: JournalParams{Model: JournalModelPlain, Writers: []int{1}, BlockSizes: []int64{512}, FileSize: 1 * MiB}})
		if err != nil {
			b.Fatal(err)
		}
		ops += res[0].Ops
		ns += res[0].DurationSec * 1e9
	}
	b.ReportMetric(ns/float64(ops), "ns/write+sync")
	b.ReportMetric(0, "ns/op")
}
