// Package copytrace records where an offload's copy step spends its time:
// a timeline sampled every Interval (default 200 ms) of chosen Prometheus
// metrics of the process (bytes read from the bookies and uploaded, parts
// in flight, the copy's phases), the CPU time of named processes (the
// copy's own, and on one host the bookies' and the store's), the machine's
// CPU time (/proc/stat) and its pressure stall times (PSI cpu and io),
// and a summary of it (Summarize): the share of the copy spent waiting
// for the bookies, for a free block (the store holding every buffer) and
// finishing, and what each process and the machine did meanwhile.
//
// It is a diagnostic: offloader offload --timeline writes one per ledger,
// and make bench-offload prints the summary of every round. Every counter
// is cumulative, so a sample missed or late costs resolution, not
// accuracy; a sample costs one registry gather and a few /proc reads
// (about 1 ms with three bookie JVMs to read: their /proc/PID/stat sums
// every thread), and the timeline records that cost (SamplerCPUSeconds),
// so that a figure of the process's CPU can leave it out.
package copytrace

import (
	"errors"
	"fmt"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/procfs"
	"golang.org/x/sys/unix"

	"github.com/tierkeeper/tierkeeper/internal/proccost"
)

// DefaultInterval is the default time between two samples.
const DefaultInterval = 200 * time.Millisecond

// Proc is a process whose CPU time is sampled.
type Proc struct {
	Name string `json:"name"`
	PID  int    `json:"pid"`
}

// Options configure a Sampler.
type Options struct {
	// Interval is the time between two samples (default DefaultInterval).
	Interval time.Duration
	// Gatherer is where Metrics are read (nil: none).
	Gatherer prometheus.Gatherer
	// Metrics are the metric families recorded, by full name; every
	// series of each (SeriesKey), a histogram as its _sum and _count.
	Metrics []string
	// Procs are the processes whose CPU time is recorded.
	Procs []Proc
	// ProcFS is the procfs root (default /proc).
	ProcFS string
}

// Timeline is what a Sampler recorded.
type Timeline struct {
	Start           time.Time `json:"start"`
	IntervalSeconds float64   `json:"intervalSeconds"`
	// Cores is the machine's CPU count (the most CPU seconds a second
	// holds).
	Cores   int      `json:"cores"`
	Procs   []Proc   `json:"procs,omitempty"`
	Samples []Sample `json:"samples"`
	// Errors are the first failure of every source that failed (its
	// figures are then missing from the samples).
	Errors []string `json:"errors,omitempty"`
	// SamplerCPUSeconds is the CPU time (user + system) the samples took
	// on the thread that took them: part of the sampled process's own
	// CPU over the timeline, which a process that is not sampled does
	// not spend. Zero where a thread's CPU time cannot be read.
	SamplerCPUSeconds float64 `json:"samplerCpuSeconds"`
}

// Sample is one reading; every figure is a total so far.
type Sample struct {
	// T is the time since the timeline's start, in seconds.
	T float64 `json:"t"`
	// Metrics are the metric series by SeriesKey.
	Metrics map[string]float64 `json:"metrics,omitempty"`
	// Procs are the processes' CPU seconds by name.
	Procs   map[string]CPU `json:"procs,omitempty"`
	Machine MachineCPU     `json:"machine"`
	PSI     PSI            `json:"psi"`
}

// CPU is a process's user and system CPU seconds so far.
type CPU struct {
	User   float64 `json:"user"`
	System float64 `json:"system"`
}

// Seconds is user + system.
func (c CPU) Seconds() float64 { return c.User + c.System }

// MachineCPU is the machine's CPU seconds so far over every core: Busy is
// all but idle and iowait, Total includes them; Steal (part of Busy) is
// the time the hypervisor ran something else on a virtual CPU that had
// work.
type MachineCPU struct {
	Busy  float64 `json:"busy"`
	Total float64 `json:"total"`
	Steal float64 `json:"steal"`
}

// PSI is the machine's pressure stall seconds so far (the "some" lines:
// time at least one task waited for a CPU, for I/O; IOFull: every
// non-idle task waited for I/O).
type PSI struct {
	CPUSome float64 `json:"cpuSome"`
	IOSome  float64 `json:"ioSome"`
	IOFull  float64 `json:"ioFull"`
}

// ReadMachineCPU reads <fs>/stat.
func ReadMachineCPU(fs procfs.FS) (MachineCPU, error) {
	st, err := fs.Stat()
	if err != nil {
		return MachineCPU{}, fmt.Errorf("copytrace: /proc/stat: %w", err)
	}
	c := st.CPUTotal
	busy := c.User + c.Nice + c.System + c.IRQ + c.SoftIRQ + c.Steal
	return MachineCPU{Busy: busy, Total: busy + c.Idle + c.Iowait, Steal: c.Steal}, nil
}

// ReadPSI reads <fs>/pressure/cpu and <fs>/pressure/io.
func ReadPSI(fs procfs.FS) (PSI, error) {
	var p PSI
	var errs []error
	if c, err := fs.PSIStatsForResource("cpu"); err != nil {
		errs = append(errs, err)
	} else if c.Some != nil {
		p.CPUSome = float64(c.Some.Total) / 1e6
	}
	if c, err := fs.PSIStatsForResource("io"); err != nil {
		errs = append(errs, err)
	} else {
		if c.Some != nil {
			p.IOSome = float64(c.Some.Total) / 1e6
		}
		if c.Full != nil {
			p.IOFull = float64(c.Full.Total) / 1e6
		}
	}
	if err := errors.Join(errs...); err != nil {
		return p, fmt.Errorf("copytrace: PSI: %w", err)
	}
	return p, nil
}

// SeriesKey names one series of a family: the name alone, or
// name{k="v",...} with the labels sorted by name.
func SeriesKey(name string, labels map[string]string) string {
	if len(labels) == 0 {
		return name
	}
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString(name)
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s=%q", k, labels[k])
	}
	b.WriteByte('}')
	return b.String()
}

// ReadMetrics gathers g and returns the series of the named families by
// SeriesKey: a counter's, gauge's or untyped value, a histogram's or
// summary's sum and count as <name>_sum and <name>_count.
func ReadMetrics(g prometheus.Gatherer, names []string) (map[string]float64, error) {
	fams, err := g.Gather()
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	out := map[string]float64{}
	for _, f := range fams {
		if !want[f.GetName()] {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			name := f.GetName()
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				out[SeriesKey(name, labels)] = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				out[SeriesKey(name, labels)] = m.GetGauge().GetValue()
			case dto.MetricType_UNTYPED:
				out[SeriesKey(name, labels)] = m.GetUntyped().GetValue()
			case dto.MetricType_HISTOGRAM:
				out[SeriesKey(name+"_sum", labels)] = m.GetHistogram().GetSampleSum()
				out[SeriesKey(name+"_count", labels)] = float64(m.GetHistogram().GetSampleCount())
			case dto.MetricType_SUMMARY:
				out[SeriesKey(name+"_sum", labels)] = m.GetSummary().GetSampleSum()
				out[SeriesKey(name+"_count", labels)] = float64(m.GetSummary().GetSampleCount())
			}
		}
	}
	if err != nil {
		return out, fmt.Errorf("copytrace: gather: %w", err)
	}
	return out, nil
}

// Sampler records a Timeline from Start to Stop.
type Sampler struct {
	o     Options
	fs    procfs.FS
	fsErr error
	start time.Time

	mu   sync.Mutex
	tl   Timeline
	errs map[string]bool

	stop chan struct{}
	done chan struct{}
}

// Start takes a first sample and samples every o.Interval until Stop.
func Start(o Options) *Sampler {
	if o.Interval <= 0 {
		o.Interval = DefaultInterval
	}
	if o.ProcFS == "" {
		o.ProcFS = procfs.DefaultMountPoint
	}
	s := &Sampler{o: o, start: time.Now(), errs: map[string]bool{}, stop: make(chan struct{}), done: make(chan struct{})}
	s.fs, s.fsErr = procfs.NewFS(o.ProcFS)
	s.tl = Timeline{Start: s.start, IntervalSeconds: o.Interval.Seconds(), Cores: runtime.NumCPU(), Procs: o.Procs}
	s.sample()
	go s.loop()
	return s
}

func (s *Sampler) loop() {
	defer close(s.done)
	t := time.NewTicker(s.o.Interval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			s.sample()
		}
	}
}

// Stop takes a last sample, ends the sampling and returns the timeline.
// Call it once.
func (s *Sampler) Stop() *Timeline {
	close(s.stop)
	<-s.done
	s.sample()
	s.mu.Lock()
	defer s.mu.Unlock()
	tl := s.tl
	return &tl
}

// threadCPU is the calling thread's CPU time (CLOCK_THREAD_CPUTIME_ID).
func threadCPU() (time.Duration, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0, err
	}
	return time.Duration(ts.Nano()), nil
}

// fail records a source's first error.
func (s *Sampler) fail(source string, err error) {
	if s.errs[source] {
		return
	}
	s.errs[source] = true
	s.tl.Errors = append(s.tl.Errors, fmt.Sprintf("%s: %v", source, err))
}

// sample takes one sample, and adds the CPU time it took to
// SamplerCPUSeconds: the goroutine keeps its thread meanwhile, so the
// thread's CPU clock counts this sample's work and nothing else.
func (s *Sampler) sample() {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	c0, cerr := threadCPU()
	defer func() {
		if c1, err := threadCPU(); err == nil && cerr == nil {
			s.mu.Lock()
			s.tl.SamplerCPUSeconds += (c1 - c0).Seconds()
			s.mu.Unlock()
		}
	}()
	smp := Sample{T: time.Since(s.start).Seconds()}
	var metricsErr error
	if s.o.Gatherer != nil && len(s.o.Metrics) > 0 {
		smp.Metrics, metricsErr = ReadMetrics(s.o.Gatherer, s.o.Metrics)
	}
	var procErrs map[string]error
	var machineErr, psiErr error
	if s.fsErr == nil {
		if len(s.o.Procs) > 0 {
			smp.Procs = map[string]CPU{}
		}
		for _, p := range s.o.Procs {
			u, sys, err := proccost.ProcessCPU(s.fs, p.PID)
			if err != nil {
				if procErrs == nil {
					procErrs = map[string]error{}
				}
				procErrs[p.Name] = err
				continue
			}
			smp.Procs[p.Name] = CPU{User: u.Seconds(), System: sys.Seconds()}
		}
		smp.Machine, machineErr = ReadMachineCPU(s.fs)
		smp.PSI, psiErr = ReadPSI(s.fs)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fsErr != nil {
		s.fail("procfs", s.fsErr)
	}
	if metricsErr != nil {
		s.fail("metrics", metricsErr)
	}
	for name, err := range procErrs {
		s.fail("process "+name, err)
	}
	if machineErr != nil {
		s.fail("machine", machineErr)
	}
	if psiErr != nil {
		s.fail("psi", psiErr)
	}
	s.tl.Samples = append(s.tl.Samples, smp)
}
