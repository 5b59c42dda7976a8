package bookieagent

import (
	"fmt"
	"time"

	"github.com/prometheus/procfs"
	"golang.org/x/sys/unix"
)

// DisturbedCPUs is the CPU use by other processes (cores, averaged over a
// run) above which a benchmark run counts as disturbed: the journal's
// force-write and the entry logger's flush wait on the scheduler as much
// as on the disk, so a busy machine lowers the figures and spreads the
// rounds.
const DisturbedCPUs = 0.5

// RunLoad is what else used the machine's CPUs during one benchmark run.
type RunLoad struct {
	Run     string  `json:"run"`
	Seconds float64 `json:"seconds"`
	// OtherCPUs is the CPU time of everything but this process (and the
	// hypervisor's steal) ÷ the run's wall time, in CPUs.
	OtherCPUs float64 `json:"other_cpus"`
}

// loadMark is a moment of the machine's CPU use: every CPU's busy time
// from /proc/stat and this process's from getrusage.
type loadMark struct {
	at         time.Time
	busy, self float64 // CPU seconds
	cpus       int
	ok         bool
}

func markLoad(h HostFS) loadMark {
	m := loadMark{at: time.Now()}
	root := h.ProcPath
	if root == "" {
		root = procfs.DefaultMountPoint
	}
	fs, err := procfs.NewFS(root)
	if err != nil {
		return m
	}
	st, err := fs.Stat()
	if err != nil {
		return m
	}
	c := st.CPUTotal
	m.busy = c.User + c.Nice + c.System + c.IRQ + c.SoftIRQ + c.Steal
	m.cpus = len(st.CPU)
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return m
	}
	m.self = float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
	m.ok = true
	return m
}

// loadSince is the other processes' CPU use from a to b (false when either
// mark could not be read).
func loadSince(a, b loadMark, run string) (RunLoad, bool) {
	sec := b.at.Sub(a.at).Seconds()
	if !a.ok || !b.ok || sec <= 0 {
		return RunLoad{}, false
	}
	// /proc/stat counts in ticks: a short run's figure is coarse, never
	// more than the machine's CPUs.
	other := min(max(0, ((b.busy-a.busy)-(b.self-a.self))/sec), float64(max(1, b.cpus)))
	return RunLoad{Run: run, Seconds: sec, OtherCPUs: other}, true
}

// loadSummary is the median and the maximum of the runs' other CPU use.
func loadSummary(ls []RunLoad) (median, most float64, disturbed int) {
	var v rounds
	for _, l := range ls {
		v.add(l.OtherCPUs)
		if l.OtherCPUs > DisturbedCPUs {
			disturbed++
		}
	}
	if v.n() == 0 {
		return 0, 0, 0
	}
	return v.median(), v.hi(), disturbed
}

// loadWarning says when the benchmark ran on a busy machine.
func loadWarning(p *BenchPlan) (string, bool) {
	if p == nil {
		return "", false
	}
	med, most, n := loadSummary(p.Load)
	if med <= DisturbedCPUs {
		return "", false
	}
	of := ""
	if p.MachineCPUs > 0 {
		of = fmt.Sprintf(" of %d", p.MachineCPUs)
	}
	return fmt.Sprintf("measured on a busy machine: other processes kept %.1f%s CPUs busy (median over %d runs, at most %.1f; %d runs above %.1f): the figures may be low and the rounds spread, so counts stay at the current value unless separated; repeat on a quiet node for settings to rely on",
		med, of, len(p.Load), most, n, DisturbedCPUs), true
}
