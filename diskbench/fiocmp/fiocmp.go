// Package fiocmp runs fio and diskbench on the same workloads, one after the
// other in the same run, and compares their throughput and p99 latency. It
// is the proof that diskbench's engine measures what fio measures.
//
// Every case is translated into one fio job with the same semantics as the
// diskbench point:
//
//	diskbench (plain journal model)   fio
//	journal  writers=N bs=B sync=1    rw=write bs=B numjobs=N ioengine=psync fdatasync=1
//	  prealloc=sparse                   fallocate=truncate (BookKeeper's journal: writes land in holes)
//	  prealloc=fallocate                fallocate=native (preallocated, unwritten extents)
//	entrylog writers=1 bs=B flush=F   rw=write bs=B ioengine=psync fdatasync=F/B fallocate=none
//	randread depth=D bs=B             rw=randread bs=B direct=1 ioengine=libaio iodepth=D norandommap
//	FileSize, Duration, Warmup        size=, runtime=, ramp_time= (writes stop when the file is full,
//	                                  reads are time_based)
//
// (fio's libaio at iodepth D against D goroutines each issuing pread on an
// O_DIRECT descriptor.) fio cannot express BookKeeper's group commit (a
// journal thread and a force-write thread per file); the sparse journal
// case is the part of BookKeeper's journal pattern it can: sequential
// writes into a sparse file, each fdatasync allocating the blocks written
// (`make bench-journal` compares the whole pattern with BookKeeper's own
// Journal).
package fiocmp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/tierkeeper/tierkeeper/diskbench"
	"github.com/tierkeeper/tierkeeper/internal/stats"
	"github.com/tierkeeper/tierkeeper/internal/units"
)

// Case is one workload both tools run.
type Case struct {
	Workload   diskbench.Workload `json:"workload"`
	Writers    int                `json:"writers,omitempty"`
	Depth      int                `json:"depth,omitempty"`
	BlockSize  int64              `json:"block_size"`
	SyncEvery  int                `json:"sync_every,omitempty"`
	FlushEvery int64              `json:"flush_every_bytes,omitempty"`
	FileSize   int64              `json:"file_size"`
	// Prealloc is how journal files are prepared: PreallocSparse (the
	// BookKeeper pattern, fio fallocate=truncate) or PreallocFallocate
	// (fio fallocate=native).
	Prealloc diskbench.Prealloc `json:"-"`
	// PreallocName is Prealloc's name in JSON ("sparse", "fallocate").
	PreallocName string `json:"prealloc,omitempty"`
}

// JournalPreallocs are the journal file preparations compare-fio runs by
// default: the BookKeeper pattern first, then the preallocated one.
var JournalPreallocs = []diskbench.Prealloc{diskbench.PreallocSparse, diskbench.PreallocFallocate}

// PreallocLabel says what a journal case's file preparation stands for.
func PreallocLabel(p diskbench.Prealloc) string {
	switch p {
	case diskbench.PreallocSparse:
		return "BookKeeper pattern: sparse file, fio fallocate=truncate"
	case diskbench.PreallocFallocate:
		return "preallocated: unwritten extents, fio fallocate=native"
	case diskbench.PreallocNone:
		return "appending: file grows with each write, fio fallocate=none"
	}
	return p.String()
}

func fioFallocate(p diskbench.Prealloc) string {
	switch p {
	case diskbench.PreallocSparse:
		return "truncate"
	case diskbench.PreallocNone:
		return "none"
	default:
		return "native"
	}
}

// Name is a short label: "journal w=2 bs=4KiB".
func (c Case) Name() string {
	switch c.Workload {
	case diskbench.WorkloadRandRead:
		return fmt.Sprintf("randread d=%d bs=%s", c.Depth, units.FormatBytes(c.BlockSize))
	case diskbench.WorkloadEntryLog:
		return fmt.Sprintf("entrylog w=%d bs=%s flush=%s", c.Writers, units.FormatBytes(c.BlockSize), units.FormatBytes(c.FlushEvery))
	default:
		p := c.Prealloc
		if p == diskbench.PreallocDefault {
			p = diskbench.PreallocFallocate
		}
		return fmt.Sprintf("journal w=%d bs=%s sync=%d %s", c.Writers, units.FormatBytes(c.BlockSize), c.SyncEvery, p)
	}
}

// DefaultCases are the workloads of `make bench-fio`: journal 1/2/4 writers
// × 4 KiB/64 KiB with fdatasync per write, each on a sparse file (the
// BookKeeper pattern) and on a preallocated one (JournalPreallocs), entry log 1 MiB writes with a
// flush every 32 MiB, random reads of 4 KiB at depth 16. fileSize is each
// journal writer's file size and logSize the entry log's (a write case stops
// when a file is full, so make them larger than a writer's rate ×
// (duration + warm-up)); readSize is the size of the file random reads read.
func DefaultCases(fileSize, logSize, readSize int64) []Case {
	var cs []Case
	for _, pa := range JournalPreallocs {
		for _, w := range []int{1, 2, 4} {
			for _, bs := range []int64{4 * diskbench.KiB, 64 * diskbench.KiB} {
				cs = append(cs, Case{Workload: diskbench.WorkloadJournal, Writers: w, BlockSize: bs, SyncEvery: 1, FileSize: fileSize,
					Prealloc: pa, PreallocName: pa.String()})
			}
		}
	}
	cs = append(cs,
		Case{Workload: diskbench.WorkloadEntryLog, Writers: 1, BlockSize: diskbench.MiB, FlushEvery: 32 * diskbench.MiB, FileSize: logSize},
		Case{Workload: diskbench.WorkloadRandRead, Depth: 16, BlockSize: 4 * diskbench.KiB, FileSize: readSize},
	)
	return cs
}

// SelectCases returns the DefaultCases whose journal cases prepare their
// files as one of preallocs (PreallocNone: the sparse cases appending to
// empty files instead, fio fallocate=none, after the others) and whose
// name only matches (nil: every case).
func SelectCases(fileSize, logSize, readSize int64, preallocs []diskbench.Prealloc, only *regexp.Regexp) []Case {
	want := map[diskbench.Prealloc]bool{}
	for _, p := range preallocs {
		want[p] = true
	}
	var cases []Case
	for _, c := range DefaultCases(fileSize, logSize, readSize) {
		if c.Workload != diskbench.WorkloadJournal || want[c.Prealloc] {
			cases = append(cases, c)
		}
	}
	if want[diskbench.PreallocNone] {
		for _, c := range DefaultCases(fileSize, logSize, readSize) {
			if c.Workload == diskbench.WorkloadJournal && c.Prealloc == diskbench.PreallocSparse {
				c.Prealloc, c.PreallocName = diskbench.PreallocNone, diskbench.PreallocNone.String()
				cases = append(cases, c)
			}
		}
	}
	if only == nil {
		return cases
	}
	var keep []Case
	for _, c := range cases {
		if only.MatchString(c.Name()) {
			keep = append(keep, c)
		}
	}
	return keep
}

// OutsideRatio lists the rows whose throughput ratio is outside [lo, hi],
// as "name (ratio)".
func OutsideRatio(rows []Row, lo, hi float64) []string {
	var bad []string
	for _, r := range rows {
		if q := r.ThroughputRatio(); q < lo || q > hi {
			bad = append(bad, fmt.Sprintf("%s (%.2f)", r.Case.Name(), q))
		}
	}
	return bad
}

// Metrics are one tool's figures for a case. Latencies are p99 in ns; 0
// means not measured.
type Metrics struct {
	BytesPerSec float64 `json:"bytes_per_sec"`
	IOPS        float64 `json:"iops"`
	OpP99Ns     int64   `json:"op_p99_ns"`   // each write or read
	SyncP99Ns   int64   `json:"sync_p99_ns"` // each fdatasync
}

// Row is one compared case: the median of each tool's runs, the runs, and
// the median of the per-round throughput ratios (each round runs both tools
// back to back, so a burst of background load hits one pair, not the
// whole comparison).
type Row struct {
	Case          Case      `json:"case"`
	Fio           Metrics   `json:"fio"`
	Diskbench     Metrics   `json:"diskbench"`
	FioRuns       []Metrics `json:"fio_runs"`
	DiskbenchRuns []Metrics `json:"diskbench_runs"`
	// Ratio is the median over rounds of diskbench/fio bytes per second.
	Ratio float64 `json:"ratio"`
}

// median takes each field's median over runs.
func median(runs []Metrics) Metrics {
	med := func(get func(Metrics) float64) float64 {
		v := make([]float64, len(runs))
		for i, r := range runs {
			v[i] = get(r)
		}
		return stats.Median(v)
	}
	return Metrics{
		BytesPerSec: med(func(m Metrics) float64 { return m.BytesPerSec }),
		IOPS:        med(func(m Metrics) float64 { return m.IOPS }),
		OpP99Ns:     int64(med(func(m Metrics) float64 { return float64(m.OpP99Ns) })),
		SyncP99Ns:   int64(med(func(m Metrics) float64 { return float64(m.SyncP99Ns) })),
	}
}

// ThroughputRatio is the median per-round diskbench/fio bytes-per-second
// ratio (the ratio of the medians when the rounds are not known).
func (r Row) ThroughputRatio() float64 {
	if r.Ratio > 0 {
		return r.Ratio
	}
	return ratio(r.Diskbench.BytesPerSec, r.Fio.BytesPerSec)
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// Options configure Run.
type Options struct {
	// Dir is where both tools put their files (checked like diskbench's).
	Dir string
	// Duration and Warmup of every case in both tools. Defaults 5 s and 1 s.
	Duration, Warmup time.Duration
	// Repeat runs each case this many times per tool, alternating which
	// tool goes first (fio, diskbench, diskbench, fio, ...), and compares
	// medians, so background load on a shared machine hits both alike.
	// Default 3.
	Repeat int
	// Fio is the fio binary. Default "fio" from PATH.
	Fio string
	// AllowAnyFS, Force, RaiseGOMAXPROCS as in diskbench.Options.
	AllowAnyFS, Force, RaiseGOMAXPROCS bool
	// Logger, default discard.
	Logger *slog.Logger
	// OnRow is called after each case, for progress.
	OnRow func(i, n int, r Row)
}

// Run runs every case Repeat times with each tool, alternating which goes
// first, and returns the rows.
func Run(ctx context.Context, o Options, cases []Case) ([]Row, error) {
	if o.Duration <= 0 {
		o.Duration = 5 * time.Second
	}
	if o.Warmup <= 0 {
		o.Warmup = time.Second
	}
	if o.Repeat <= 0 {
		o.Repeat = 3
	}
	if o.Fio == "" {
		o.Fio = "fio"
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	fioPath, err := exec.LookPath(o.Fio)
	if err != nil {
		return nil, fmt.Errorf("fio not found (install it: apt-get install fio, or `make bench-fio`): %w", err)
	}
	var maxFiles int64
	for _, c := range cases {
		maxFiles = max(maxFiles, c.FileSize*int64(max(c.Writers, 1)))
	}
	t, err := diskbench.Check(ctx, diskbench.Options{Dir: o.Dir, AllowAnyFS: o.AllowAnyFS, Force: o.Force, MaxBytes: maxFiles})
	if err != nil {
		return nil, err
	}
	// diskbench must not stop on its byte budget where fio would go on:
	// writes stop when a file is full, so disk use stays at the files' size.
	budget := int64(t.FreeBytes/2) - diskbench.ReserveBytes
	var rows []Row
	for i, c := range cases {
		row := Row{Case: c}
		for rep := 0; rep < o.Repeat; rep++ {
			for k := 0; k < 2; k++ {
				if (k == 0) == (rep%2 == 0) {
					fm, err := runFio(ctx, fioPath, t.Dir, c, o)
					if err != nil {
						return rows, fmt.Errorf("fio %s: %w", c.Name(), err)
					}
					row.FioRuns = append(row.FioRuns, fm)
				} else {
					dm, err := runDiskbench(ctx, t.Dir, c, o, budget)
					if err != nil {
						return rows, fmt.Errorf("diskbench %s: %w", c.Name(), err)
					}
					row.DiskbenchRuns = append(row.DiskbenchRuns, dm)
				}
			}
		}
		row.Fio, row.Diskbench = median(row.FioRuns), median(row.DiskbenchRuns)
		var rs []float64
		for k := range row.FioRuns {
			rs = append(rs, ratio(row.DiskbenchRuns[k].BytesPerSec, row.FioRuns[k].BytesPerSec))
		}
		row.Ratio = stats.Median(rs)
		rows = append(rows, row)
		if o.OnRow != nil {
			o.OnRow(i+1, len(cases), row)
		}
	}
	return rows, nil
}

// JobFile renders the fio job for c in dir.
func JobFile(dir string, c Case, duration, warmup time.Duration) string {
	var b strings.Builder
	p := func(k, v string) { fmt.Fprintf(&b, "%s=%s\n", k, v) }
	if c.Workload == diskbench.WorkloadJournal {
		pa := c.Prealloc
		if pa == diskbench.PreallocDefault {
			pa = diskbench.PreallocFallocate
		}
		fmt.Fprintf(&b, "; %s — %s\n", c.Name(), PreallocLabel(pa))
	} else {
		fmt.Fprintf(&b, "; %s\n", c.Name())
	}
	b.WriteString("[global]\n")
	p("directory", dir)
	p("filename_format", fmt.Sprintf(".diskbench-fio-%d.$jobnum", os.Getpid()))
	p("size", strconv.FormatInt(c.FileSize, 10))
	p("bs", strconv.FormatInt(c.BlockSize, 10))
	p("runtime", fmt.Sprintf("%dms", duration.Milliseconds()))
	p("ramp_time", fmt.Sprintf("%dms", warmup.Milliseconds()))
	p("group_reporting", "1")
	p("unlink", "1")
	p("thread", "1")
	p("lat_percentiles", "1")
	p("percentile_list", "50:90:99:99.9")
	switch c.Workload {
	case diskbench.WorkloadJournal:
		p("ioengine", "psync")
		p("rw", "write")
		p("fallocate", fioFallocate(c.Prealloc))
		p("fdatasync", strconv.Itoa(max(c.SyncEvery, 1)))
		p("numjobs", strconv.Itoa(max(c.Writers, 1)))
	case diskbench.WorkloadEntryLog:
		p("ioengine", "psync")
		p("rw", "write")
		p("fallocate", "none")
		p("fdatasync", strconv.FormatInt(max(c.FlushEvery/c.BlockSize, 1), 10))
		p("numjobs", strconv.Itoa(max(c.Writers, 1)))
	case diskbench.WorkloadRandRead:
		p("ioengine", "libaio")
		p("rw", "randread")
		p("direct", "1")
		p("iodepth", strconv.Itoa(max(c.Depth, 1)))
		p("norandommap", "1")
		p("time_based", "1")
		p("randrepeat", "0")
	}
	b.WriteString("[" + string(c.Workload) + "]\n")
	return b.String()
}

func runFio(ctx context.Context, fio, dir string, c Case, o Options) (Metrics, error) {
	job := JobFile(dir, c, o.Duration, o.Warmup)
	jf, err := os.CreateTemp("", "diskbench-fio-*.fio")
	if err != nil {
		return Metrics{}, err
	}
	defer os.Remove(jf.Name())
	if _, err := jf.WriteString(job); err != nil {
		jf.Close()
		return Metrics{}, err
	}
	jf.Close()
	o.Logger.Debug("fio job", "case", c.Name(), "job", job)
	// fio leaves its files behind when killed; remove them whatever happens.
	defer func() {
		matches, _ := filepath.Glob(filepath.Join(dir, fmt.Sprintf(".diskbench-fio-%d.*", os.Getpid())))
		for _, m := range matches {
			os.Remove(m)
		}
	}()
	cmd := exec.CommandContext(ctx, fio, "--output-format=json", jf.Name())
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 10 * time.Second
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return Metrics{}, ctx.Err()
		}
		return Metrics{}, fmt.Errorf("%w: %s", err, strings.TrimSpace(stderr.String()))
	}
	m, err := ParseFioJSON(out.Bytes(), c.Workload)
	if errors.Is(err, ErrNoLatencySamples) && c.Workload != diskbench.WorkloadRandRead {
		err = fmt.Errorf("%w (the %s file filled within the %s warm-up: give a larger file or a shorter warm-up)",
			err, units.FormatBytes(c.FileSize), o.Warmup)
	}
	return m, err
}

// ParseFioJSON extracts the metrics of a group-reported fio JSON document.
// fio may print warnings before the JSON; they are skipped.
func ParseFioJSON(b []byte, wl diskbench.Workload) (Metrics, error) {
	if i := bytes.IndexByte(b, '{'); i > 0 {
		b = b[i:]
	}
	var doc struct {
		Jobs []struct {
			Error int     `json:"error"`
			Read  fioDir  `json:"read"`
			Write fioDir  `json:"write"`
			Sync  fioSync `json:"sync"`
		} `json:"jobs"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return Metrics{}, fmt.Errorf("parse fio json: %w", err)
	}
	if len(doc.Jobs) == 0 {
		return Metrics{}, errors.New("fio json has no jobs")
	}
	j := doc.Jobs[0]
	if j.Error != 0 {
		return Metrics{}, fmt.Errorf("fio job error %d", j.Error)
	}
	d := j.Write
	if wl == diskbench.WorkloadRandRead {
		d = j.Read
	}
	p99, ok := d.p99()
	if !ok {
		// fio omits percentiles of a latency with no samples (and then
		// reports a bandwidth over what it did before the ramp ended).
		return Metrics{}, fmt.Errorf("%w: %d IOs in all, none measured", ErrNoLatencySamples, d.TotalIOs)
	}
	m := Metrics{BytesPerSec: d.BWBytes, IOPS: d.IOPS, OpP99Ns: p99}
	// No fdatasync in the measured window (an entry log flushing rarely
	// in a short run) is data: no sync percentile, 0.
	m.SyncP99Ns = int64(j.Sync.Lat.Percentile["99.000000"])
	return m, nil
}

type fioLat struct {
	Percentile map[string]float64 `json:"percentile"`
}

type fioDir struct {
	BWBytes  float64 `json:"bw_bytes"`
	IOPS     float64 `json:"iops"`
	TotalIOs int64   `json:"total_ios"`
	Lat      fioLat  `json:"lat_ns"`
	Clat     fioLat  `json:"clat_ns"`
}

// p99 is the total latency's 99th percentile (lat_percentiles=1), or the
// completion latency's from a job without it; false when fio gave neither.
func (d fioDir) p99() (int64, bool) {
	if v, ok := d.Lat.Percentile["99.000000"]; ok {
		return int64(v), true
	}
	v, ok := d.Clat.Percentile["99.000000"]
	return int64(v), ok
}

type fioSync struct {
	Lat fioLat `json:"lat_ns"`
}

func runDiskbench(ctx context.Context, dir string, c Case, o Options, budget int64) (Metrics, error) {
	opts := diskbench.Options{Dir: dir, Duration: o.Duration, Warmup: o.Warmup, MaxBytes: budget,
		AllowAnyFS: o.AllowAnyFS, Force: o.Force, Logger: o.Logger, RaiseGOMAXPROCS: o.RaiseGOMAXPROCS}
	var res []diskbench.Result
	var err error
	switch c.Workload {
	case diskbench.WorkloadJournal:
		res, err = diskbench.RunJournal(ctx, diskbench.JournalOptions{Options: opts, JournalParams: diskbench.JournalParams{
			Model: diskbench.JournalModelPlain, Writers: []int{c.Writers}, BlockSizes: []int64{c.BlockSize}, SyncEvery: c.SyncEvery,
			FileSize: c.FileSize, Prealloc: journalPrealloc(c.Prealloc)}})
	case diskbench.WorkloadEntryLog:
		res, err = diskbench.RunEntryLog(ctx, diskbench.EntryLogOptions{Options: opts, EntryLogParams: diskbench.EntryLogParams{
			Writers: []int{c.Writers}, BlockSizes: []int64{c.BlockSize}, FlushEveryBytes: c.FlushEvery,
			FileSize: c.FileSize, Prealloc: diskbench.PreallocNone}})
	case diskbench.WorkloadRandRead:
		res, err = diskbench.RunRandRead(ctx, diskbench.RandReadOptions{Options: opts, RandReadParams: diskbench.RandReadParams{
			Depths: []int{c.Depth}, BlockSizes: []int64{c.BlockSize}, FileSize: c.FileSize}})
	default:
		return Metrics{}, fmt.Errorf("unknown workload %q", c.Workload)
	}
	if err != nil {
		return Metrics{}, err
	}
	if len(res) != 1 {
		return Metrics{}, fmt.Errorf("diskbench returned %d results, want 1", len(res))
	}
	r := res[0]
	m := Metrics{BytesPerSec: r.BytesPerSec, IOPS: r.IOPS}
	if r.ReadLatency != nil {
		m.OpP99Ns = r.ReadLatency.P99Ns
	} else if r.WriteLatency != nil {
		m.OpP99Ns = r.WriteLatency.P99Ns
	}
	if r.SyncLatency != nil {
		m.SyncP99Ns = r.SyncLatency.P99Ns
	}
	return m, nil
}

func journalPrealloc(p diskbench.Prealloc) diskbench.Prealloc {
	if p == diskbench.PreallocDefault {
		return diskbench.PreallocFallocate
	}
	return p
}

// WriteTable prints the comparison: median throughput of both tools, the
// median per-round ratio diskbench/fio, the spread of each tool's runs
// ((max-min)/median), then median p99 of each write/read and each
// fdatasync and their ratios.
func WriteTable(w io.Writer, rows []Row) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "case\tfio\tdiskbench\tratio\tspread fio\tdb\t\top p99 fio\tdiskbench\tratio\t\tsync p99 fio\tdiskbench\tratio\t")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.2f\t%s\t%s\t\t%s\t%s\t%s\t\t%s\t%s\t%s\t\n", r.Case.Name(),
			units.HumanRate(r.Fio.BytesPerSec), units.HumanRate(r.Diskbench.BytesPerSec), r.ThroughputRatio(),
			spread(r.FioRuns), spread(r.DiskbenchRuns),
			ns(r.Fio.OpP99Ns), ns(r.Diskbench.OpP99Ns), ratioStr(r.Diskbench.OpP99Ns, r.Fio.OpP99Ns),
			ns(r.Fio.SyncP99Ns), ns(r.Diskbench.SyncP99Ns), ratioStr(r.Diskbench.SyncP99Ns, r.Fio.SyncP99Ns))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	// The journal cases' file preparations, and what sparse costs against
	// preallocated where both ran.
	type key struct {
		w  int
		bs int64
	}
	by := map[key]map[diskbench.Prealloc]Row{}
	var keys []key
	seen := map[diskbench.Prealloc]bool{}
	for _, r := range rows {
		if r.Case.Workload != diskbench.WorkloadJournal {
			continue
		}
		k, pa := key{r.Case.Writers, r.Case.BlockSize}, journalPrealloc(r.Case.Prealloc)
		if by[k] == nil {
			by[k] = map[diskbench.Prealloc]Row{}
			keys = append(keys, k)
		}
		by[k][pa] = r
		seen[pa] = true
	}
	if len(seen) > 0 {
		fmt.Fprintln(w)
		for _, pa := range []diskbench.Prealloc{diskbench.PreallocSparse, diskbench.PreallocFallocate, diskbench.PreallocNone} {
			if seen[pa] {
				fmt.Fprintf(w, "journal %s: %s\n", pa, PreallocLabel(pa))
			}
		}
	}
	for _, k := range keys {
		sp, ok1 := by[k][diskbench.PreallocSparse]
		fa, ok2 := by[k][diskbench.PreallocFallocate]
		if ok1 && ok2 {
			fmt.Fprintf(w, "journal w=%d bs=%s sparse ÷ preallocated: fio %.2f, diskbench %.2f\n", k.w, units.FormatBytes(k.bs),
				ratio(sp.Fio.BytesPerSec, fa.Fio.BytesPerSec), ratio(sp.Diskbench.BytesPerSec, fa.Diskbench.BytesPerSec))
		}
	}
	return nil
}

func ns(v int64) string {
	if v == 0 {
		return "-"
	}
	return diskbench.FormatNs(v)
}

func ratioStr(a, b int64) string {
	if a == 0 || b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", float64(a)/float64(b))
}

// spread is (max-min)/median of the runs' throughput, as a percentage.
func spread(runs []Metrics) string {
	if len(runs) < 2 {
		return "-"
	}
	lo, hi := runs[0].BytesPerSec, runs[0].BytesPerSec
	for _, r := range runs {
		lo, hi = min(lo, r.BytesPerSec), max(hi, r.BytesPerSec)
	}
	m := median(runs).BytesPerSec
	if m == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f%%", 100*(hi-lo)/m)
}
