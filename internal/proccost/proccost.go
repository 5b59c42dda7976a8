// Package proccost measures what a stretch of work costs the running
// process: user+system CPU seconds from /proc/self/stat, read and write
// system calls from /proc/self/io, Go heap allocations from
// runtime.MemStats and, on request, CPU, blocking, mutex and allocation
// profiles of the same stretch. The offloader's copy step is
// measured this way (offloader offload reports it per ledger); the figures
// are the whole process's, so they describe one step only while nothing
// else runs in it.
package proccost

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"time"

	"github.com/prometheus/procfs"
)

// Sample is the process's totals at one moment.
type Sample struct {
	// CPU is user+system CPU time since the process started (clock-tick
	// resolution); zero when /proc could not be read (CPUErr says why).
	CPU    time.Duration
	CPUErr error
	// User and System split CPU into user and system (kernel) time.
	User, System time.Duration
	// PageFaults is the process's minor plus major page faults so far (a
	// fault maps a page the process touches for the first time, e.g. heap
	// the runtime took back from the kernel; on a virtual machine whose host
	// backs guest memory lazily a fault on a page the guest returned to the
	// host costs the host's fault too, charged here as system time).
	PageFaults uint64
	// ReadCalls and WriteCalls are the read-like and write-like system
	// calls so far (/proc/self/io syscr and syscw: read, readv, write,
	// writev on files, pipes and sockets); zero when it could not be read
	// (IOErr says why).
	ReadCalls, WriteCalls uint64
	IOErr                 error
	// AllocBytes and Allocs are runtime.MemStats.TotalAlloc and Mallocs.
	AllocBytes, Allocs uint64
	// GCCycles is runtime.MemStats.NumGC.
	GCCycles uint32
	// GCPause is runtime.MemStats.PauseTotalNs.
	GCPause time.Duration
	// At is when the sample was taken.
	At time.Time
}

// Now samples the process.
func Now() Sample {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	s := Sample{AllocBytes: ms.TotalAlloc, Allocs: ms.Mallocs, GCCycles: ms.NumGC, GCPause: time.Duration(ms.PauseTotalNs), At: time.Now()}
	p, err := procfs.Self()
	if err != nil {
		err = fmt.Errorf("proccost: /proc/self: %w", err)
		s.CPUErr, s.IOErr = err, err
		return s
	}
	s.User, s.System, s.PageFaults, s.CPUErr = selfStat(p)
	s.CPU = s.User + s.System
	s.ReadCalls, s.WriteCalls, s.IOErr = selfIO(p)
	return s
}

// selfIO is the process's read-like and write-like system calls so far.
func selfIO(p procfs.Proc) (reads, writes uint64, err error) {
	io, err := p.IO()
	if err != nil {
		return 0, 0, fmt.Errorf("proccost: /proc/self/io: %w", err)
	}
	return io.SyscR, io.SyscW, nil
}

// selfStat is the process's user and system CPU time and page faults.
func selfStat(p procfs.Proc) (user, system time.Duration, faults uint64, err error) {
	st, err := p.Stat()
	if err != nil {
		return 0, 0, 0, fmt.Errorf("proccost: /proc/self/stat: %w", err)
	}
	user, system = splitCPU(st)
	return user, system, uint64(st.MinFlt) + uint64(st.MajFlt), nil
}

// ProcessCPU is the user and system CPU time so far of process pid, read
// from <fs>/<pid>/stat (clock-tick resolution).
func ProcessCPU(fs procfs.FS, pid int) (user, system time.Duration, err error) {
	p, err := fs.Proc(pid)
	if err != nil {
		return 0, 0, fmt.Errorf("proccost: process %d: %w", pid, err)
	}
	return procCPU(p)
}

func procCPU(p procfs.Proc) (user, system time.Duration, err error) {
	st, err := p.Stat()
	if err != nil {
		return 0, 0, fmt.Errorf("proccost: /proc/%d/stat: %w", p.PID, err)
	}
	user, system = splitCPU(st)
	return user, system, nil
}

// splitCPU is a process's user and system CPU time from its stat.
func splitCPU(st procfs.ProcStat) (user, system time.Duration) {
	// CPUTime is (utime+stime)/USER_HZ; its share of each.
	total := time.Duration(st.CPUTime() * float64(time.Second))
	if st.UTime+st.STime == 0 {
		return 0, 0
	}
	user = time.Duration(float64(total) * float64(st.UTime) / float64(st.UTime+st.STime))
	return user, total - user
}

// Cost is the difference between two samples.
type Cost struct {
	// Wall is the elapsed time.
	Wall time.Duration
	// CPU is the user+system CPU time spent; CPUErr is set when either
	// sample could not read /proc (CPU is then zero).
	CPU    time.Duration
	CPUErr error
	// User and System split CPU into user and system (kernel) time.
	User, System time.Duration
	// PageFaults is the number of page faults taken (zero with CPUErr).
	PageFaults uint64
	// ReadCalls and WriteCalls are the read-like and write-like system
	// calls made; IOErr is set (and they are zero) when either sample
	// could not read /proc/self/io.
	ReadCalls, WriteCalls uint64
	IOErr                 error
	// AllocBytes and Allocs are the heap bytes and objects allocated.
	AllocBytes, Allocs uint64
	// GCCycles is the number of garbage collections that ended, GCPause
	// their stop-the-world pauses.
	GCCycles uint32
	GCPause  time.Duration
}

// Since is the cost from start to s.
func (s Sample) Since(start Sample) Cost {
	c := Cost{Wall: s.At.Sub(start.At), AllocBytes: s.AllocBytes - start.AllocBytes, Allocs: s.Allocs - start.Allocs,
		GCCycles: s.GCCycles - start.GCCycles, GCPause: s.GCPause - start.GCPause}
	if c.CPUErr = errors.Join(start.CPUErr, s.CPUErr); c.CPUErr == nil {
		c.CPU, c.User, c.System = s.CPU-start.CPU, s.User-start.User, s.System-start.System
		c.PageFaults = s.PageFaults - start.PageFaults
	}
	if c.IOErr = errors.Join(start.IOErr, s.IOErr); c.IOErr == nil {
		c.ReadCalls, c.WriteCalls = s.ReadCalls-start.ReadCalls, s.WriteCalls-start.WriteCalls
	}
	return c
}

// Profiler records the CPU, block, mutex and allocation profiles of one
// stretch of work into a directory: Start, then Stop. Only one may run in
// a process at a time (the runtime has one CPU profiler); blocking and
// mutex events are sampled at every event while it runs, which slows
// heavily contended code, so it is a diagnostic, not for measured runs.
type Profiler struct {
	dir, name string
	cpu       *os.File
	prevMutex int
}

// StartProfile starts profiling; the files are dir/name.{cpu,block,mutex,allocs}.pprof.
func StartProfile(dir, name string) (*Profiler, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("proccost: profile directory: %w", err)
	}
	p := &Profiler{dir: dir, name: name}
	f, err := os.Create(p.path("cpu"))
	if err != nil {
		return nil, fmt.Errorf("proccost: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("proccost: CPU profile: %w", err)
	}
	p.cpu = f
	// Counts only events from here on (the block profile keeps what was
	// recorded while its rate was set, and nothing else sets it here).
	runtime.SetBlockProfileRate(1)
	p.prevMutex = runtime.SetMutexProfileFraction(1)
	return p, nil
}

func (p *Profiler) path(kind string) string {
	return filepath.Join(p.dir, p.name+"."+kind+".pprof")
}

// Stop ends the profiles and writes them; it returns the files written.
func (p *Profiler) Stop() ([]string, error) {
	pprof.StopCPUProfile()
	errs := []error{p.cpu.Close()}
	runtime.SetBlockProfileRate(0)
	runtime.SetMutexProfileFraction(p.prevMutex)
	files := []string{p.path("cpu")}
	for _, kind := range []string{"block", "mutex", "allocs"} {
		f, err := os.Create(p.path(kind))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		errs = append(errs, pprof.Lookup(kind).WriteTo(f, 0), f.Close())
		files = append(files, p.path(kind))
	}
	if err := errors.Join(errs...); err != nil {
		return files, fmt.Errorf("proccost: write profiles: %w", err)
	}
	return files, nil
}
