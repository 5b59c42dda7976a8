package testenv

import (
	"fmt"
	"os"
	"time"

	"github.com/prometheus/procfs"

	"github.com/tierkeeper/tierkeeper/offloader/copytrace"
)

// CPUTime is the machine's CPU time so far (/proc/stat, every core):
// busy is all but idle and iowait, total includes them. Zero when
// /proc/stat cannot be read. Benchmarks difference two readings to see
// how busy the machine was meanwhile.
func CPUTime() (busy, total time.Duration) {
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		return 0, 0
	}
	c, err := copytrace.ReadMachineCPU(fs)
	if err != nil {
		return 0, 0
	}
	sec := func(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
	return sec(c.Busy), sec(c.Total)
}

// LoadAvg is the machine's 1, 5 and 15 minute load averages as
// /proc/loadavg shows them, or "?".
func LoadAvg() string {
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		return "?"
	}
	l, err := fs.LoadAvg()
	if err != nil {
		return "?"
	}
	return fmt.Sprintf("%.2f %.2f %.2f", l.Load1, l.Load5, l.Load15)
}

// Progress is what a process has done so far: the CPU time it used and
// the size of its log. A process starting on a loaded machine is slow but
// advances one of them; one that advances neither is stuck.
type Progress struct {
	CPU      time.Duration
	LogBytes int64
}

// Progress reads p's progress (zero fields when /proc or the log cannot
// be read).
func (p *Process) Progress() Progress {
	var pr Progress
	if fs, err := procfs.NewDefaultFS(); err == nil {
		if proc, err := fs.Proc(p.Pid()); err == nil {
			if st, err := proc.Stat(); err == nil {
				pr.CPU = time.Duration(st.CPUTime() * float64(time.Second))
			}
		}
	}
	if fi, err := os.Stat(p.LogPath); err == nil {
		pr.LogBytes = fi.Size()
	}
	return pr
}

// WaitProgressing polls ready every 100 ms until it reports true, and
// fails when the process exits, when it has made no progress (Progress:
// no CPU used, nothing logged) for stall, or after limit in all. The wait
// scales with the machine's load (a slow start keeps going while the
// process works) yet stays bounded; what names what was awaited, for the
// errors, which say how long it waited, the CPU the process used and its
// log tail. ready's last error is reported with them.
func (p *Process) WaitProgressing(what string, stall, limit time.Duration, ready func() (bool, error)) error {
	start := time.Now()
	last, lastAt := p.Progress(), start
	var lastErr error
	for {
		if exited, err := p.Exited(); exited {
			return fmt.Errorf("%s exited before %s after %s: %v; log tail:\n%s",
				p.Name, what, time.Since(start).Round(time.Millisecond), err, Tail(p.LogPath, 40))
		}
		ok, err := ready()
		if ok {
			return nil
		}
		if err != nil {
			lastErr = err
		}
		now := time.Now()
		if pr := p.Progress(); pr != last {
			last, lastAt = pr, now
		}
		var why string
		switch {
		case now.Sub(lastAt) >= stall:
			why = fmt.Sprintf("no progress (no CPU used, nothing logged) for %s", stall)
		case now.Sub(start) >= limit:
			why = fmt.Sprintf("still starting after the %s limit", limit)
		}
		if why != "" {
			return fmt.Errorf("%s: not %s after %s: %s (CPU used %s, log %d bytes, load %s, last error %v); log tail:\n%s",
				p.Name, what, now.Sub(start).Round(time.Millisecond), why, last.CPU, last.LogBytes, LoadAvg(), lastErr, Tail(p.LogPath, 40))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// IOState is the machine's I/O stall time so far and its dirty page cache
// now, for benchmarks that tell a step held up by the disk (writeback of
// what an earlier step wrote) from one held up by CPU.
type IOState struct {
	// Stall is /proc/pressure/io "some" total: time at least one task
	// waited for I/O. Zero without PSI.
	Stall time.Duration
	// DirtyMiB and WritebackMiB are /proc/meminfo Dirty and Writeback.
	DirtyMiB, WritebackMiB float64
	// FreeMiB is /proc/meminfo MemFree: memory no process or cache holds.
	FreeMiB float64
}

// IONow reads IOState (zero fields when /proc lacks them).
func IONow() IOState {
	var s IOState
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		return s
	}
	if p, err := fs.PSIStatsForResource("io"); err == nil && p.Some != nil {
		s.Stall = time.Duration(p.Some.Total) * time.Microsecond
	}
	if m, err := fs.Meminfo(); err == nil {
		if m.Dirty != nil {
			s.DirtyMiB = float64(*m.Dirty) / 1024
		}
		if m.MemFree != nil {
			s.FreeMiB = float64(*m.MemFree) / 1024
		}
		if m.Writeback != nil {
			s.WritebackMiB = float64(*m.Writeback) / 1024
		}
	}
	return s
}
