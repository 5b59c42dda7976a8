package copytrace

import (
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// fakeProc writes a procfs root with /stat, /<pid>/stat and PSI files.
func fakeProc(t *testing.T, pid int, utime, stime int, cpuLine string, cpuPSI, ioSome, ioFull uint64) string {
	t.Helper()
	dir := t.TempDir()
	write := func(name, text string) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("stat", cpuLine+"\ncpu0 1 0 1 1 0 0 0 0 0 0\nintr 0\nctxt 0\nbtime 1700000000\nprocesses 1\nprocs_running 1\nprocs_blocked 0\n")
	write(filepath.Join(itoa(pid), "stat"), itoa(pid)+" (java (bookie)) S 1 1 1 0 -1 4194304 98 0 0 0 "+itoa(utime)+" "+itoa(stime)+
		" 0 0 20 0 1 0 80650 3133440 362 18446744073709551615 1 1 1 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0 1 1 1 1 1 1 1 0\n")
	write("pressure/cpu", "some avg10=0.00 avg60=0.00 avg300=0.00 total="+utoa(cpuPSI)+"\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n")
	write("pressure/io", "some avg10=0.00 avg60=0.00 avg300=0.00 total="+utoa(ioSome)+"\nfull avg10=0.00 avg60=0.00 avg300=0.00 total="+utoa(ioFull)+"\n")
	return dir
}

func itoa(n int) string    { return strconv.Itoa(n) }
func utoa(n uint64) string { return strconv.FormatUint(n, 10) }

func near(a, b float64) bool { return math.Abs(a-b) < 1e-6 }

// The sampler reads a process's utime and stime (clock ticks, 100 per
// second), the machine's busy and total time from /proc/stat (idle and
// iowait are not busy; steal is) and the PSI totals (microseconds), and
// every series of the named metric families.
func TestSamplerReadsProcAndMetrics(t *testing.T) {
	// user nice system idle iowait irq softirq steal: busy 100+5+50+3+2+10 = 170 s, total 170+800+30 = 1000 s.
	root := fakeProc(t, 4242, 250, 150, "cpu  10000 500 5000 80000 3000 300 200 1000 0 0", 2_500_000, 700_000, 100_000)
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricCopySeconds}, []string{"phase"})
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: MetricPartDuration})
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: MetricPartsInFlight})
	other := prometheus.NewCounter(prometheus.CounterOpts{Name: "not_recorded_total"})
	reg.MustRegister(c, h, g, other)
	c.WithLabelValues("add").Add(1.5)
	h.Observe(0.25)
	h.Observe(0.5)
	g.Set(2)
	other.Inc()
	s := Start(Options{Interval: time.Hour, Gatherer: reg, Metrics: CopyMetrics(), Procs: []Proc{{Name: "bookie-1", PID: 4242}, {Name: "gone", PID: 999999}}, ProcFS: root})
	c.WithLabelValues("add").Add(1)
	tl := s.Stop()
	if len(tl.Samples) != 2 {
		t.Fatalf("%d samples, want the first and the last", len(tl.Samples))
	}
	first, last := tl.Samples[0], tl.Samples[1]
	if got := first.Metrics[`tierkeeper_pipeline_copy_seconds_total{phase="add"}`]; got != 1.5 {
		t.Errorf("add phase %v, want 1.5 (%v)", got, first.Metrics)
	}
	if got := last.Metrics[`tierkeeper_pipeline_copy_seconds_total{phase="add"}`]; got != 2.5 {
		t.Errorf("add phase at the end %v, want 2.5", got)
	}
	if first.Metrics[MetricPartDuration+"_sum"] != 0.75 || first.Metrics[MetricPartDuration+"_count"] != 2 || first.Metrics[MetricPartsInFlight] != 2 {
		t.Errorf("histogram and gauge: %v", first.Metrics)
	}
	if _, ok := first.Metrics["not_recorded_total"]; ok {
		t.Error("a family not asked for was recorded")
	}
	p := first.Procs["bookie-1"]
	if !near(p.User, 2.5) || !near(p.System, 1.5) {
		t.Errorf("bookie CPU %+v, want user 2.5 s, system 1.5 s", p)
	}
	if _, ok := first.Procs["gone"]; ok {
		t.Error("a process that does not exist has CPU figures")
	}
	if !near(first.Machine.Busy, 170) || !near(first.Machine.Total, 1000) || !near(first.Machine.Steal, 10) {
		t.Errorf("machine %+v, want busy 170 s of 1000", first.Machine)
	}
	if !near(first.PSI.CPUSome, 2.5) || !near(first.PSI.IOSome, 0.7) || !near(first.PSI.IOFull, 0.1) {
		t.Errorf("PSI %+v", first.PSI)
	}
	if len(tl.Errors) != 1 || !strings.Contains(tl.Errors[0], "process gone") {
		t.Errorf("errors %q, want one for the missing process, once", tl.Errors)
	}
}

// The sampler counts the CPU its own samples take (here 40 samples of this
// process's real /proc/self/stat, /proc/stat and PSI): more than nothing,
// and no more than the whole process spent meanwhile (rusage, which the
// kernel keeps to the microsecond); a process's CPU figure over a
// timeline can then leave the sampling out.
func TestSamplerCountsItsOwnCPU(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc here:", err)
	}
	var r0, r1 syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &r0); err != nil {
		t.Fatal(err)
	}
	s := Start(Options{Interval: time.Millisecond, Procs: []Proc{{Name: "self", PID: os.Getpid()}}})
	deadline := time.Now().Add(10 * time.Second)
	for {
		s.mu.Lock()
		n := len(s.tl.Samples)
		s.mu.Unlock()
		if n >= 40 || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	tl := s.Stop()
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &r1); err != nil {
		t.Fatal(err)
	}
	whole := time.Duration(syscall.TimevalToNsec(r1.Utime) - syscall.TimevalToNsec(r0.Utime) +
		syscall.TimevalToNsec(r1.Stime) - syscall.TimevalToNsec(r0.Stime)).Seconds()
	if len(tl.Samples) < 40 || len(tl.Errors) > 0 {
		t.Fatalf("%d samples, errors %v; want at least 40 and none", len(tl.Samples), tl.Errors)
	}
	if tl.SamplerCPUSeconds <= 0 || tl.SamplerCPUSeconds > whole+0.001 {
		t.Fatalf("the samples took %.6f CPU-s, the process %.6f; want more than 0 and no more than the process", tl.SamplerCPUSeconds, whole)
	}
	t.Logf("%d samples took %.2f ms of CPU (%.0f us each); the process %.2f ms", len(tl.Samples), 1000*tl.SamplerCPUSeconds, 1e6*tl.SamplerCPUSeconds/float64(len(tl.Samples)), 1000*whole)
}

func TestSeriesKeySortsLabels(t *testing.T) {
	if got := SeriesKey("m", map[string]string{"b": "2", "a": "1"}); got != `m{a="1",b="2"}` {
		t.Errorf("got %s", got)
	}
	if got := SeriesKey("m", nil); got != "m" {
		t.Errorf("got %s", got)
	}
}

// step is one synthetic interval of a timeline: its length and what
// happened in it.
type step struct {
	dt, readMB, bookies, add, partSecs, parts float64
	cores                                     map[string]float64
	busy                                      float64 // machine busy share (2 cores)
	steal                                     float64 // of which stolen
	psiCPU                                    float64 // share of dt
}

func timeline(steps []step) *Timeline {
	tl := &Timeline{Procs: []Proc{{Name: "offloader", PID: 1}, {Name: "versitygw", PID: 2}}, Cores: 2}
	cur := Sample{Metrics: map[string]float64{}, Procs: map[string]CPU{"offloader": {}, "versitygw": {}}}
	tl.Samples = append(tl.Samples, cur)
	for _, s := range steps {
		n := Sample{T: cur.T + s.dt, Metrics: map[string]float64{}, Procs: map[string]CPU{}}
		for k, v := range cur.Metrics {
			n.Metrics[k] = v
		}
		n.Metrics[MetricReadBytes] += s.readMB * 1e6
		n.Metrics[seriesBookies] += s.bookies
		n.Metrics[seriesAdd] += s.add
		n.Metrics[seriesPartsBusy] += s.partSecs
		n.Metrics[MetricPartsInFlight] = s.parts
		for p, c := range cur.Procs {
			n.Procs[p] = CPU{User: c.User + s.cores[p]*s.dt, System: c.System}
		}
		n.Machine = MachineCPU{Busy: cur.Machine.Busy + s.busy*2*s.dt, Total: cur.Machine.Total + 2*s.dt, Steal: cur.Machine.Steal + s.steal*2*s.dt}
		n.PSI = PSI{CPUSome: cur.PSI.CPUSome + s.psiCPU*s.dt}
		tl.Samples = append(tl.Samples, n)
		cur = n
	}
	return tl
}

// A synthetic copy: 1 s reading at full speed, 1 s held by the store (the
// reader in Add, both parts uploading, versitygw busy), 0.5 s waiting for
// the bookies, then 0.4 s finishing. The summary puts every stretch in its
// state, with the processes' cores and the machine's figures of that
// stretch, and finds the stretch held by the store as the slowest second.
func TestSummarizeStates(t *testing.T) {
	fast := step{dt: 0.25, readMB: 50, bookies: 0.05, add: 0.05, partSecs: 0.25, parts: 1, cores: map[string]float64{"offloader": 0.8, "versitygw": 0.8}, busy: 0.9}
	store := step{dt: 0.25, readMB: 10, add: 0.2, partSecs: 0.5, parts: 2, cores: map[string]float64{"offloader": 0.2, "versitygw": 1.6}, busy: 1, psiCPU: 0.5}
	bk := step{dt: 0.25, readMB: 20, bookies: 0.2, partSecs: 0.1, parts: 0, cores: map[string]float64{"offloader": 0.1, "versitygw": 0.1}, busy: 0.3}
	fin := step{dt: 0.2, partSecs: 0.3, parts: 2, cores: map[string]float64{"offloader": 0.1, "versitygw": 1}, busy: 0.6, steal: 0.1}
	var steps []step
	for range 4 {
		steps = append(steps, fast)
	}
	for range 4 {
		steps = append(steps, store)
	}
	steps = append(steps, bk, bk, fin, fin)
	tl := timeline(steps)
	tl.SamplerCPUSeconds = 0.125
	s := Summarize(tl, 2)
	if len(s.Missing) != 0 {
		t.Errorf("missing %v", s.Missing)
	}
	if s.SamplerCPUSeconds != 0.125 || !strings.Contains(s.String(), "The samples took 0.125 CPU-s") {
		t.Errorf("the samples' CPU %v s; summary %q", s.SamplerCPUSeconds, s.String())
	}
	if !near(s.Whole.Seconds, 2.9) || !near(s.Finish, 0.4) {
		t.Errorf("whole %v s, finish %v s; want 2.9 and 0.4", s.Whole.Seconds, s.Finish)
	}
	// 200+40+40 MB over 2.9 s.
	if !near(s.Whole.ReadMBps, 280/2.9) {
		t.Errorf("read %v MB/s", s.Whole.ReadMBps)
	}
	want := map[string]float64{StateCopying: 1, StateBlock: 1, StateBookies: 0.5, StateFinishing: 0.4}
	if len(s.States) != len(want) {
		t.Fatalf("states %+v", s.States)
	}
	for _, st := range s.States {
		if !near(st.Seconds, want[st.Name]) || !near(st.Share, want[st.Name]/2.9) {
			t.Errorf("%s: %v s (share %v), want %v s", st.Name, st.Seconds, st.Share, want[st.Name])
		}
	}
	if fs := s.States[len(s.States)-1]; fs.Name != StateFinishing || !near(fs.Steal, 0.1) || !near(fs.MachineBusy, 0.6) {
		t.Errorf("finishing %+v", fs)
	}
	if s.States[0].Seconds < s.States[len(s.States)-1].Seconds {
		t.Error("states not longest first")
	}
	for _, st := range s.States {
		if st.Name != StateBlock {
			continue
		}
		if !near(st.Cores["versitygw"], 1.6) || !near(st.MachineBusy, 1) || !near(st.Parts, 2) || !near(st.PartsFull, 1) || !near(st.Add, 0.8) || !near(st.PSICPU, 0.5) {
			t.Errorf("store-bound stretch %+v", st.Figures)
		}
		if !near(st.ReadMBps, 40) {
			t.Errorf("store-bound read %v MB/s, want 40", st.ReadMBps)
		}
	}
	if !near(s.Slowest.Seconds, 1) || !near(s.SlowestStart, 1) || !near(s.Slowest.ReadMBps, 40) {
		t.Errorf("slowest %+v from %v", s.Slowest, s.SlowestStart)
	}
	if len(s.SlowestStates) != 1 || s.SlowestStates[0].Name != StateBlock {
		t.Errorf("slowest states %+v", s.SlowestStates)
	}
	// Parts: 1 s at 1, 1 s at 2, 0.5 s at 0.2, 0.4 s at 1.5 part-seconds per second.
	if !near(s.Whole.Parts, (1+2+0.2+0.6)/2.9) {
		t.Errorf("parts %v", s.Whole.Parts)
	}
	text := s.String()
	for _, w := range []string{"waiting for a free block 34%", "versitygw 1.60", "finishing 0.40s", "Slowest 1.0s (from 1.0s): 40.0 MB/s", "machine 60% busy (steal 10%)"} {
		if !strings.Contains(text, w) {
			t.Errorf("summary lacks %q:\n%s", w, text)
		}
	}
}

// A timeline without the copy's metrics says so instead of reporting
// zero waits as figures.
func TestSummarizeNamesMissingMetrics(t *testing.T) {
	tl := &Timeline{Samples: []Sample{{T: 0}, {T: 1}}}
	s := Summarize(tl, 2)
	if len(s.Missing) != 5 || !strings.Contains(s.String(), "Not in the timeline: "+MetricReadBytes) {
		t.Errorf("missing %v: %s", s.Missing, s.String())
	}
	if got := Summarize(&Timeline{Samples: []Sample{{}}}, 2); got.Whole.Seconds != 0 || len(got.States) != 0 {
		t.Errorf("one sample: %+v", got)
	}
}
