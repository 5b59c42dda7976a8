package copytrace

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// The metrics a copy's timeline records (CopyMetrics): the bookie
// client's, the upload's and the pipeline's own.
const (
	MetricReadBytes     = "tierkeeper_bookkeeper_read_bytes_total"
	MetricReadsInFlight = "tierkeeper_bookkeeper_requests_in_flight"
	MetricUploadBytes   = "tierkeeper_upload_bytes_total"
	MetricPartsInFlight = "tierkeeper_upload_parts_in_flight"
	MetricPartDuration  = "tierkeeper_upload_part_duration_seconds"
	MetricCopySeconds   = "tierkeeper_pipeline_copy_seconds_total"
)

// CopyMetrics are the metric families Options.Metrics takes for a copy.
func CopyMetrics() []string {
	return []string{MetricReadBytes, MetricReadsInFlight, MetricUploadBytes, MetricPartsInFlight, MetricPartDuration, MetricCopySeconds}
}

// Series of the copy's phases (pipeline.Phase*, as SeriesKey writes
// them) and the parts' upload seconds.
const (
	seriesBookies   = MetricCopySeconds + `{phase="bookies"}`
	seriesAdd       = MetricCopySeconds + `{phase="add"}`
	seriesPartsBusy = MetricPartDuration + "_sum"
)

// File is what offloader offload --timeline writes: one timeline per
// copied ledger.
type File struct {
	Ledgers []Ledger `json:"ledgers"`
}

// Ledger is one ledger's copy step.
type Ledger struct {
	ManagedLedger string    `json:"managedLedger"`
	LedgerID      int64     `json:"ledgerId"`
	Bytes         int64     `json:"bytes"`
	PartsInFlight int       `json:"partsInFlight"`
	BlockSize     int       `json:"blockSize"`
	Timeline      *Timeline `json:"timeline"`
}

// States of a stretch of the copy, by what held it (Summary.States).
const (
	// StateBlock: the reader spent at least half the stretch in Add, that
	// is waiting for a free block while the store holds every one.
	StateBlock = "waiting for a free block"
	// StateBookies: the reader spent at least half the stretch waiting
	// for the next entry from the bookies.
	StateBookies = "waiting for the bookies"
	// StateCopying: neither wait dominated (the copy's own work, or both
	// waits short).
	StateCopying = "copying"
	// StateFinishing: every entry read, the last parts, the completion
	// and the index.
	StateFinishing = "finishing"
)

// Figures are what the processes and the machine did over a stretch.
type Figures struct {
	Seconds float64 `json:"seconds"`
	// ReadMBps is the payload read from the bookies per second (MB).
	ReadMBps float64 `json:"readMBps"`
	// Bookies, Add are the shares of the stretch the reader waited for the
	// bookies and spent in Add.
	Bookies float64 `json:"bookies"`
	Add     float64 `json:"add"`
	// Parts is the average number of parts uploading (part seconds per
	// second, counted as parts end).
	Parts float64 `json:"parts"`
	// PartsFull is the share of samples in which every part slot was
	// uploading.
	PartsFull float64 `json:"partsFull"`
	// Cores are the processes' CPU seconds per second.
	Cores map[string]float64 `json:"cores,omitempty"`
	// MachineBusy is the share of the machine's CPU time that was busy;
	// PSICPU and PSIIO the shares of the stretch some task stalled on CPU
	// and on I/O.
	MachineBusy float64 `json:"machineBusy"`
	// Steal is the share of the machine's CPU time stolen by the
	// hypervisor (part of MachineBusy).
	Steal  float64 `json:"steal"`
	PSICPU float64 `json:"psiCPU"`
	PSIIO  float64 `json:"psiIO"`
}

// State is the copy's time in one state.
type State struct {
	Name  string  `json:"name"`
	Share float64 `json:"share"` // of the copy's time
	Figures
}

// Summary is a copy step's timeline in a few figures.
type Summary struct {
	// Whole is the whole copy step.
	Whole Figures `json:"whole"`
	// Finish is the seconds after the last entry.
	Finish float64 `json:"finishSeconds"`
	// States split the copy by what held it, longest first.
	States []State `json:"states"`
	// Slowest is the stretch of about SlowWindow seconds while reading
	// with the lowest read rate; Start its start in the timeline.
	Slowest      Figures `json:"slowest"`
	SlowestStart float64 `json:"slowestStart"`
	// SlowestStates are the states of the slowest stretch, longest first.
	SlowestStates []State `json:"slowestStates"`
	// Missing are the copy metrics the timeline lacks.
	Missing []string `json:"missing,omitempty"`
	// Procs are the process names, in the timeline's order.
	Procs []string `json:"procs"`
	// SamplerCPUSeconds is the timeline's Timeline.SamplerCPUSeconds:
	// the CPU its samples took in the sampled process.
	SamplerCPUSeconds float64 `json:"samplerCpuSeconds"`
}

// SlowWindow is the length of Summary.Slowest, in seconds.
const SlowWindow = 1.0

// interval is the stretch between two samples.
type interval struct {
	a, b  *Sample
	dt    float64
	state string
	parts float64 // the parts gauge at its end
}

// Summarize sums up a copy's timeline; parts is the pipeline's parts in
// flight (for PartsFull).
func Summarize(tl *Timeline, parts int) Summary {
	s := Summary{SamplerCPUSeconds: tl.SamplerCPUSeconds}
	for _, p := range tl.Procs {
		s.Procs = append(s.Procs, p.Name)
	}
	n := len(tl.Samples)
	if n < 2 {
		return s
	}
	last := &tl.Samples[n-1]
	for _, m := range []string{MetricReadBytes, seriesBookies, seriesAdd, MetricPartsInFlight, seriesPartsBusy} {
		if _, ok := last.Metrics[m]; !ok {
			s.Missing = append(s.Missing, m)
		}
	}
	total := last.Metrics[MetricReadBytes]
	var ivs []interval
	for i := 1; i < n; i++ {
		a, b := &tl.Samples[i-1], &tl.Samples[i]
		dt := b.T - a.T
		if dt <= 0 {
			continue
		}
		iv := interval{a: a, b: b, dt: dt, parts: b.Metrics[MetricPartsInFlight]}
		switch {
		case total > 0 && a.Metrics[MetricReadBytes] >= total:
			iv.state = StateFinishing
		case delta(a, b, seriesAdd)/dt >= 0.5:
			iv.state = StateBlock
		case delta(a, b, seriesBookies)/dt >= 0.5:
			iv.state = StateBookies
		default:
			iv.state = StateCopying
		}
		ivs = append(ivs, iv)
	}
	s.Whole = figures(ivs, s.Procs, parts)
	for _, iv := range ivs {
		if iv.state == StateFinishing {
			s.Finish += iv.dt
		}
	}
	s.States = states(ivs, s.Procs, parts, s.Whole.Seconds)
	// The slowest window of about SlowWindow seconds while reading.
	best := math.Inf(1)
	for i := range ivs {
		var win []interval
		var dur float64
		for j := i; j < len(ivs) && ivs[j].state != StateFinishing && dur < SlowWindow-1e-9; j++ {
			win = append(win, ivs[j])
			dur += ivs[j].dt
		}
		if dur < SlowWindow-1e-9 {
			continue
		}
		f := figures(win, s.Procs, parts)
		if f.ReadMBps < best {
			best, s.Slowest, s.SlowestStart = f.ReadMBps, f, win[0].a.T
			s.SlowestStates = states(win, s.Procs, parts, f.Seconds)
		}
	}
	return s
}

func delta(a, b *Sample, key string) float64 { return b.Metrics[key] - a.Metrics[key] }

// figures sums up consecutive or scattered intervals.
func figures(ivs []interval, procs []string, parts int) Figures {
	var f Figures
	var read, bookies, add, busy, psiCPU, psiIO, mBusy, mTotal, steal float64
	var full int
	cores := map[string]float64{}
	for _, iv := range ivs {
		f.Seconds += iv.dt
		read += delta(iv.a, iv.b, MetricReadBytes)
		bookies += delta(iv.a, iv.b, seriesBookies)
		add += delta(iv.a, iv.b, seriesAdd)
		busy += delta(iv.a, iv.b, seriesPartsBusy)
		psiCPU += iv.b.PSI.CPUSome - iv.a.PSI.CPUSome
		psiIO += iv.b.PSI.IOSome - iv.a.PSI.IOSome
		mBusy += iv.b.Machine.Busy - iv.a.Machine.Busy
		mTotal += iv.b.Machine.Total - iv.a.Machine.Total
		steal += iv.b.Machine.Steal - iv.a.Machine.Steal
		for _, p := range procs {
			ca, oka := iv.a.Procs[p]
			cb, okb := iv.b.Procs[p]
			if oka && okb {
				cores[p] += cb.Seconds() - ca.Seconds()
			}
		}
		if parts > 0 && iv.parts >= float64(parts) {
			full++
		}
	}
	if f.Seconds <= 0 {
		return f
	}
	f.ReadMBps = read / 1e6 / f.Seconds
	f.Bookies, f.Add = bookies/f.Seconds, add/f.Seconds
	f.Parts = busy / f.Seconds
	if len(ivs) > 0 {
		f.PartsFull = float64(full) / float64(len(ivs))
	}
	f.PSICPU, f.PSIIO = psiCPU/f.Seconds, psiIO/f.Seconds
	if mTotal > 0 {
		f.MachineBusy, f.Steal = mBusy/mTotal, steal/mTotal
	}
	if len(cores) > 0 {
		f.Cores = map[string]float64{}
		for p, c := range cores {
			f.Cores[p] = c / f.Seconds
		}
	}
	return f
}

// states groups intervals by state, longest first; whole is the time the
// shares are of.
func states(ivs []interval, procs []string, parts int, whole float64) []State {
	by := map[string][]interval{}
	for _, iv := range ivs {
		by[iv.state] = append(by[iv.state], iv)
	}
	var out []State
	for name, list := range by {
		f := figures(list, procs, parts)
		st := State{Name: name, Figures: f}
		if whole > 0 {
			st.Share = f.Seconds / whole
		}
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Seconds != out[j].Seconds {
			return out[i].Seconds > out[j].Seconds
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// String is the summary in a paragraph.
func (s Summary) String() string {
	var b strings.Builder
	w := s.Whole
	fmt.Fprintf(&b, "copy %.2fs, bookies read at %.1f MB/s; the reader waited for the bookies %.0f%% of it and spent %.0f%% in Add (copy into the block, waiting for a free block); finishing %.2fs; parts uploading %.2f on average, all slots busy in %.0f%% of the samples; %s",
		w.Seconds, w.ReadMBps, 100*w.Bookies, 100*w.Add, s.Finish, w.Parts, 100*w.PartsFull, s.machine(w))
	b.WriteString(". By state: ")
	for i, st := range s.States {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s %.0f%% (%.2fs, %.1f MB/s, parts %.2f, %s)", st.Name, 100*st.Share, st.Seconds, st.ReadMBps, st.Parts, s.machine(st.Figures))
	}
	if s.Slowest.Seconds > 0 {
		fmt.Fprintf(&b, ". Slowest %.1fs (from %.1fs): %.1f MB/s, bookies %.0f%%, Add %.0f%%, parts %.2f, %s;", s.Slowest.Seconds, s.SlowestStart, s.Slowest.ReadMBps,
			100*s.Slowest.Bookies, 100*s.Slowest.Add, s.Slowest.Parts, s.machine(s.Slowest))
		for _, st := range s.SlowestStates {
			fmt.Fprintf(&b, " %s %.0f%%", st.Name, 100*st.Share)
		}
	}
	if len(s.Missing) > 0 {
		fmt.Fprintf(&b, ". Not in the timeline: %s", strings.Join(s.Missing, ", "))
	}
	fmt.Fprintf(&b, ". The samples took %.3f CPU-s of the copy's process", s.SamplerCPUSeconds)
	return b.String()
}

// machine is what the processes and the machine did: cores per process,
// the machine's busy share and PSI.
func (s Summary) machine(f Figures) string {
	var parts []string
	for _, p := range s.Procs {
		if c, ok := f.Cores[p]; ok {
			parts = append(parts, fmt.Sprintf("%s %.2f", p, c))
		}
	}
	cores := ""
	if len(parts) > 0 {
		cores = "cores " + strings.Join(parts, ", ") + "; "
	}
	return fmt.Sprintf("%smachine %.0f%% busy (steal %.0f%%), PSI cpu %.0f%% io %.0f%%", cores, 100*f.MachineBusy, 100*f.Steal, 100*f.PSICPU, 100*f.PSIIO)
}
