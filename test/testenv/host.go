package testenv

import (
	"fmt"
	"time"

	"github.com/prometheus/procfs"
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
	st, err := fs.Stat()
	if err != nil {
		return 0, 0
	}
	c := st.CPUTotal
	b := c.User + c.Nice + c.System + c.IRQ + c.SoftIRQ + c.Steal
	sec := func(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
	return sec(b), sec(b + c.Idle + c.Iowait)
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
