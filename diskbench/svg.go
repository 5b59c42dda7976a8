package diskbench

import (
	"fmt"
	"html"
	"io"
	"math"
	"sort"
	"strings"

	"github.com/tierkeeper/tierkeeper/internal/units"
)

// WriteSVG draws rep as a standalone SVG chart: one row per workload, with
// throughput on the left and latency (p99 solid, p50 dashed) on the right,
// against writers or depth (log2 axis) with one line per block size — or
// against block size when only one writers/depth value was measured.
// Latency axes are logarithmic; throughput axes too when the values span
// more than a decade. Hovering a point shows its exact figures.
func WriteSVG(w io.Writer, rep *Report) error {
	groups := map[Workload][]Result{}
	var order []Workload
	for _, r := range rep.Results {
		if _, ok := groups[r.Workload]; !ok {
			order = append(order, r.Workload)
		}
		groups[r.Workload] = append(groups[r.Workload], r)
	}
	const (
		panelW  = 420.0
		panelH  = 250.0
		gap     = 115.0 // between the panels (room for the y-axis labels)
		left    = 78.0
		width   = left + 2*panelW + gap + 40
		rowH    = 392.0
		headerH = 78.0
	)
	height := headerH + rowH*float64(max(1, len(order))) + 10
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="Helvetica, Arial, sans-serif">`+"\n",
		width, height, width, height)
	b.WriteString(`<style>
 .title{font-size:20px;font-weight:bold;fill:#222}
 .sub{font-size:12.5px;fill:#555}
 .ptitle{font-size:14.5px;font-weight:bold;fill:#222}
 .tick{font-size:11.5px;fill:#444}
 .atitle{font-size:12.5px;fill:#333}
 .grid{stroke:#e4e4e4;stroke-width:1}
 .axis{stroke:#777;stroke-width:1}
 .legend{font-size:12.5px;fill:#333}
 .warn{font-size:12px;fill:#a04000}
 .val{font-size:11px;font-weight:bold;paint-order:stroke;stroke:white;stroke-width:3px}
</style>
<rect width="100%" height="100%" fill="white"/>
`)
	fmt.Fprintf(&b, `<text class="title" x="24" y="32">diskbench — %s</text>`+"\n", esc(rep.Dir))
	dev := ""
	if rep.Device != "" {
		dev = " on " + rep.Device
	}
	fmt.Fprintf(&b, `<text class="sub" x="24" y="54">%s%s · %s · %d points · %s written · free %s</text>`+"\n",
		esc(rep.FSType), esc(dev), rep.StartedAt.Format("2006-01-02 15:04 UTC"), len(rep.Results),
		units.HumanBytes(rep.BytesWritten), units.HumanBytes(rep.FreeBytes))
	if len(order) == 0 {
		b.WriteString(`<text class="sub" x="24" y="110">no results</text>` + "\n")
	}
	for i, wl := range order {
		y0 := headerH + rowH*float64(i)
		drawWorkload(&b, wl, groups[wl], left, y0, panelW, panelH, gap)
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// Okabe–Ito colours: distinguishable with the common colour-vision
// deficiencies.
var palette = []string{"#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000"}

type pt struct {
	x, y  float64
	tip   string
	label string // drawn next to the point when the panel is sparse
}

type series struct {
	name   string
	color  string
	dashed bool
	pts    []pt
}

type axis struct {
	log      bool
	min, max float64
	ticks    []float64
	label    func(float64) string
	title    string
}

func (a axis) pos(v float64, lo, hi float64) float64 {
	if a.max == a.min {
		return (lo + hi) / 2
	}
	var f float64
	if a.log {
		f = (math.Log(v) - math.Log(a.min)) / (math.Log(a.max) - math.Log(a.min))
	} else {
		f = (v - a.min) / (a.max - a.min)
	}
	return lo + f*(hi-lo)
}

func drawWorkload(b *strings.Builder, wl Workload, rs []Result, x0, y0, pw, ph, gap float64) {
	// Pick the x dimension: writers/depth when it varies, else block size.
	countOf := func(r Result) int {
		if wl == WorkloadRandRead {
			return r.Depth
		}
		return r.Writers
	}
	countName := "writers"
	if wl == WorkloadRandRead {
		countName = "depth (reads in flight)"
	}
	counts := map[int]bool{}
	sizes := map[int64]bool{}
	for _, r := range rs {
		counts[countOf(r)] = true
		sizes[r.BlockSize] = true
	}
	xByCount := len(counts) > 1 || len(sizes) == 1
	keyOf := func(r Result) (float64, string) {
		if xByCount {
			return float64(countOf(r)), "bs=" + units.FormatBytes(r.BlockSize)
		}
		if wl == WorkloadRandRead {
			return float64(r.BlockSize), fmt.Sprintf("depth=%d", r.Depth)
		}
		return float64(r.BlockSize), fmt.Sprintf("writers=%d", r.Writers)
	}
	latName, latOf := latencyFor(wl)

	// Build series keyed by the legend name, in first-seen order.
	var names []string
	tput := map[string]*series{}
	p99 := map[string]*series{}
	p50 := map[string]*series{}
	xs := map[float64]bool{}
	var tmin, tmax, lmin, lmax = math.Inf(1), 0.0, math.Inf(1), 0.0
	for _, r := range rs {
		x, name := keyOf(r)
		xs[x] = true
		if _, ok := tput[name]; !ok {
			c := palette[len(names)%len(palette)]
			names = append(names, name)
			tput[name] = &series{name: name, color: c}
			p99[name] = &series{name: name, color: c}
			p50[name] = &series{name: name, color: c, dashed: true}
		}
		tip := fmt.Sprintf("%s %s: %s, %.0f IOPS", wl, pointLabel(r), units.HumanRate(r.BytesPerSec), r.IOPS)
		if r.BytesPerSec > 0 {
			tput[name].pts = append(tput[name].pts, pt{x: x, y: r.BytesPerSec, tip: tip, label: units.HumanRate(r.BytesPerSec)})
			tmin, tmax = math.Min(tmin, r.BytesPerSec), math.Max(tmax, r.BytesPerSec)
		}
		if l := latOf(r); l != nil && l.P99Ns > 0 {
			ltip := fmt.Sprintf("%s %s: %s p50 %s, p90 %s, p99 %s, p99.9 %s", wl, pointLabel(r), latName,
				FormatNs(l.P50Ns), FormatNs(l.P90Ns), FormatNs(l.P99Ns), FormatNs(l.P999Ns))
			p99[name].pts = append(p99[name].pts, pt{x: x, y: float64(l.P99Ns), tip: ltip, label: FormatNs(l.P99Ns)})
			p50[name].pts = append(p50[name].pts, pt{x: x, y: float64(max(l.P50Ns, 1)), tip: ltip})
			lmin = math.Min(lmin, float64(max(l.P50Ns, 1)))
			lmax = math.Max(lmax, float64(l.P99Ns))
		}
	}
	var xv []float64
	for x := range xs {
		xv = append(xv, x)
	}
	sort.Float64s(xv)
	xa := axis{log: true, min: xv[0], max: xv[len(xv)-1], ticks: xv}
	if xByCount {
		xa.title = countName
		xa.label = func(v float64) string { return fmt.Sprintf("%.0f", v) }
	} else {
		xa.title = "block size"
		xa.label = func(v float64) string { return units.FormatBytes(int64(v)) }
	}
	if xa.min == xa.max {
		xa.min, xa.max = xa.min/2, xa.max*2
	} else {
		// A little room so end points are not on the frame.
		pad := math.Pow(xa.max/xa.min, 0.06)
		xa.min, xa.max = xa.min/pad, xa.max*pad
	}

	title := map[Workload]string{
		WorkloadJournal:  "Journal — appends + fdatasync",
		WorkloadEntryLog: "Entry log — buffered writes + periodic fdatasync",
		WorkloadRandRead: "Random reads — O_DIRECT",
	}[wl]
	if title == "" {
		title = string(wl)
	}
	fmt.Fprintf(b, `<text class="ptitle" x="%.0f" y="%.0f">%s</text>`+"\n", x0-54, y0+10, esc(title))

	// Throughput panel.
	ta := rateAxis(tmin, tmax)
	var ts []*series
	for _, n := range names {
		ts = append(ts, tput[n])
	}
	drawPanel(b, x0, y0+28, pw, ph, xa, ta, ts)
	// Latency panel.
	var ls []*series
	for _, n := range names {
		ls = append(ls, p50[n], p99[n])
	}
	la := latAxis(lmin, lmax, latName)
	drawPanel(b, x0+pw+gap, y0+28, pw, ph, xa, la, ls)

	// Legend under the panels.
	ly := y0 + 28 + ph + 66
	lx := x0
	for _, n := range names {
		c := tput[n].color
		fmt.Fprintf(b, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="%s" stroke-width="2.5"/><circle cx="%.0f" cy="%.0f" r="3.5" fill="%s"/>`,
			lx, ly-4, lx+22, ly-4, c, lx+11, ly-4, c)
		fmt.Fprintf(b, `<text class="legend" x="%.0f" y="%.0f">%s</text>`+"\n", lx+28, ly, esc(n))
		lx += 40 + 7.5*float64(len(n))
	}
	fmt.Fprintf(b, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="#555" stroke-width="2"/><text class="legend" x="%.0f" y="%.0f">p99</text>`,
		lx+20, ly-4, lx+42, ly-4, lx+48, ly)
	fmt.Fprintf(b, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" stroke="#555" stroke-width="1.5" stroke-dasharray="5,4"/><text class="legend" x="%.0f" y="%.0f">p50</text>`+"\n",
		lx+82, ly-4, lx+104, ly-4, lx+110, ly)
	nwarn := 0
	for _, r := range rs {
		nwarn += len(r.Warnings)
	}
	if nwarn > 0 {
		fmt.Fprintf(b, `<text class="warn" x="%.0f" y="%.0f">⚠ %d warning(s) on these points — see the table or JSON output</text>`+"\n", x0, ly+20, nwarn)
	}
}

// latencyFor picks the latency a workload is judged by: what an add waits
// for in the journal (the BookKeeper model's add latency, the plain
// model's group commit), the fdatasync for the entry log (the flush), the
// read for random reads.
func latencyFor(wl Workload) (string, func(Result) *Latency) {
	switch wl {
	case WorkloadJournal:
		return "add/commit", func(r Result) *Latency {
			if r.AddLatency != nil {
				return r.AddLatency
			}
			return r.CommitLatency
		}
	case WorkloadEntryLog:
		return "fdatasync", func(r Result) *Latency { return r.SyncLatency }
	default:
		return "read", func(r Result) *Latency {
			if r.ReadLatency != nil {
				return r.ReadLatency
			}
			return r.WriteLatency
		}
	}
}

func rateAxis(lo, hi float64) axis {
	if math.IsInf(lo, 1) || hi <= 0 {
		lo, hi = 1, 1024
	}
	unit, name := float64(MiB), "MiB/s"
	switch {
	case hi >= float64(GiB):
		unit, name = float64(GiB), "GiB/s"
	case hi < float64(MiB):
		unit, name = float64(KiB), "KiB/s"
	}
	a := axis{title: "throughput (" + name + ")"}
	if hi/lo > 10 {
		a.log = true
		a.min, a.max, a.ticks = logTicks(lo/unit, hi/unit)
	} else {
		a.min, a.max, a.ticks = linTicks(0, hi/unit)
	}
	a.min, a.max = a.min*unit, a.max*unit
	for i := range a.ticks {
		a.ticks[i] *= unit
	}
	a.label = func(v float64) string { return trimNum(v / unit) }
	return a
}

func latAxis(lo, hi float64, name string) axis {
	if math.IsInf(lo, 1) || hi <= 0 {
		lo, hi = 1000, 1e6
	}
	a := axis{log: true, title: name + " latency (log scale)"}
	a.min, a.max, a.ticks = logTicks(lo, hi)
	a.label = func(v float64) string { return tickNs(v) }
	return a
}

// logTicks returns a range covering [lo, hi] on 1-2-5 boundaries and the
// ticks inside it (1-2-5 for narrow ranges, decades for wide ones).
func logTicks(lo, hi float64) (float64, float64, []float64) {
	steps := []float64{1, 2, 5}
	floor125 := func(v float64) float64 {
		e := math.Pow(10, math.Floor(math.Log10(v)))
		for i := len(steps) - 1; i >= 0; i-- {
			if steps[i]*e <= v*1.0000001 {
				return steps[i] * e
			}
		}
		return e
	}
	ceil125 := func(v float64) float64 {
		e := math.Pow(10, math.Floor(math.Log10(v)))
		for _, s := range steps {
			if s*e >= v*0.9999999 {
				return s * e
			}
		}
		return 10 * e
	}
	min, max := floor125(lo), ceil125(hi)
	if min == max {
		min, max = floor125(min*0.99), ceil125(max*1.01)
	}
	decades := math.Log10(max / min)
	tickSteps := steps
	if decades < 1 {
		tickSteps = []float64{1, 1.5, 2, 3, 4, 5, 7}
	}
	var ticks []float64
	for e := math.Floor(math.Log10(min)); e <= math.Ceil(math.Log10(max)); e++ {
		for _, s := range tickSteps {
			if decades > 3 && s != 1 {
				continue
			}
			v := s * math.Pow(10, e)
			if v >= min*0.9999 && v <= max*1.0001 {
				ticks = append(ticks, v)
			}
		}
	}
	return min, max, ticks
}

// linTicks returns [lo, niceMax] and about five 1-2-5 ticks.
func linTicks(lo, hi float64) (float64, float64, []float64) {
	if hi <= lo {
		hi = lo + 1
	}
	raw := (hi - lo) / 5
	e := math.Pow(10, math.Floor(math.Log10(raw)))
	step := 10 * e
	for _, s := range []float64{1, 2, 5} {
		if s*e >= raw {
			step = s * e
			break
		}
	}
	max := math.Ceil(hi/step) * step
	var ticks []float64
	for v := lo; v <= max+step/2; v += step {
		ticks = append(ticks, v)
	}
	return lo, max, ticks
}

// tickNs renders a round latency without trailing zeros: 500µs, 2ms, 1.5ms.
func tickNs(v float64) string { return withNsUnit(v, trimNum) }

func trimNum(v float64) string {
	switch {
	case v == 0:
		return "0"
	case math.Abs(v) >= 10 || v == math.Trunc(v):
		return fmt.Sprintf("%.0f", v)
	case math.Abs(v) >= 1:
		return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.1f", v), "0"), ".")
	default:
		return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.3f", v), "0"), ".")
	}
}

func drawPanel(b *strings.Builder, x0, y0, w, h float64, xa, ya axis, ss []*series) {
	x1, y1 := x0+w, y0+h
	px := func(v float64) float64 { return xa.pos(v, x0, x1) }
	py := func(v float64) float64 { return ya.pos(v, y1, y0) }
	// Grid and y ticks.
	for _, t := range ya.ticks {
		y := py(t)
		fmt.Fprintf(b, `<line class="grid" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`, x0, y, x1, y)
		fmt.Fprintf(b, `<text class="tick" x="%.1f" y="%.1f" text-anchor="end">%s</text>`+"\n", x0-7, y+4, esc(ya.label(t)))
	}
	for _, t := range xa.ticks {
		x := px(t)
		fmt.Fprintf(b, `<line class="grid" x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`, x, y0, x, y1)
		fmt.Fprintf(b, `<text class="tick" x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", x, y1+17, esc(xa.label(t)))
	}
	fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" class="axis"/>`+"\n", x0, y0, w, h)
	fmt.Fprintf(b, `<text class="atitle" x="%.1f" y="%.1f" text-anchor="middle">%s (log2 scale)</text>`+"\n", (x0+x1)/2, y1+38, esc(xa.title))
	fmt.Fprintf(b, `<text class="atitle" transform="translate(%.1f %.1f) rotate(-90)" text-anchor="middle">%s</text>`+"\n",
		x0-52, (y0+y1)/2, esc(ya.title))
	// Label the points with their values when there are few of them.
	n := 0
	for _, s := range ss {
		if !s.dashed {
			n += len(s.pts)
		}
	}
	sparse := n <= 8
	for _, s := range ss {
		if len(s.pts) == 0 {
			continue
		}
		pts := append([]pt(nil), s.pts...)
		sort.Slice(pts, func(i, j int) bool { return pts[i].x < pts[j].x })
		var path strings.Builder
		for i, p := range pts {
			cmd := "L"
			if i == 0 {
				cmd = "M"
			}
			fmt.Fprintf(&path, "%s%.1f %.1f ", cmd, px(p.x), py(p.y))
		}
		dash, sw, op := "", 2.5, 1.0
		if s.dashed {
			dash, sw, op = ` stroke-dasharray="5,4"`, 1.5, 0.75
		}
		fmt.Fprintf(b, `<path d="%s" fill="none" stroke="%s" stroke-width="%.1f" stroke-opacity="%.2f"%s/>`+"\n",
			strings.TrimSpace(path.String()), s.color, sw, op, dash)
		if !s.dashed && sparse {
			for _, p := range pts {
				if p.label != "" {
					fmt.Fprintf(b, `<text class="val" x="%.1f" y="%.1f" fill="%s">%s</text>`+"\n", px(p.x)+7, py(p.y)-7, s.color, esc(p.label))
				}
			}
		}
		for _, p := range pts {
			r := 4.0
			fill := s.color
			if s.dashed {
				r, fill = 2.5, "white"
			}
			fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="%.1f" fill="%s" stroke="%s" stroke-width="1.5"><title>%s</title></circle>`+"\n",
				px(p.x), py(p.y), r, fill, s.color, esc(p.tip))
		}
	}
}

func esc(s string) string { return html.EscapeString(s) }
