package diskbench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"time"

	"github.com/tierkeeper/tierkeeper/internal/units"
)

// NewReport starts a Report for a target found by Check.
func NewReport(t *Target) *Report {
	rep := &Report{Tool: "diskbench", StartedAt: time.Now().UTC(), Results: []Result{}}
	if bi, ok := debug.ReadBuildInfo(); ok {
		rep.Version = bi.Main.Version
	}
	rep.Host, _ = os.Hostname()
	if t != nil {
		rep.Dir = t.Dir
		rep.FSType = t.FSType
		rep.Device = t.Device
		rep.FreeBytes = t.FreeBytes
		rep.TotalBytes = t.TotalBytes
		rep.MaxBytes = t.MaxBytes
		rep.Warnings = append(rep.Warnings, t.Warnings...)
	}
	return rep
}

// Sweep overheads the planner sets aside.
const (
	pointOverhead   = 150 * time.Millisecond // create, preallocate, close per point
	minPoint        = 400 * time.Millisecond // shortest point (warm-up + measurement)
	layoutRateGuess = 150e6                  // bytes/s assumed for the randread layout
)

// Sweep runs plan within its time and byte budgets and returns the report.
// Each point gets an equal slice of the time left (warm-up = max(1 s, 5%),
// at most a third of the slice); the random-read file is set aside first and
// each write point gets a block-size-weighted share of the bytes left (see
// writeParams.pointWeight). Points that no longer fit in the time budget are skipped and
// listed in Report.Warnings. On error the report holds the results measured so far.
func Sweep(ctx context.Context, plan Plan) (*Report, error) {
	var wps []writeParams
	if plan.Journal != nil {
		wps = append(wps, plan.Journal.resolve())
	}
	if plan.EntryLog != nil {
		wps = append(wps, plan.EntryLog.resolve())
	}
	var rp *readParams
	if plan.RandRead != nil {
		v := plan.RandRead.resolve()
		rp = &v
	}
	total := 0
	for _, wp := range wps {
		if err := wp.validate(); err != nil {
			return nil, err
		}
		total += wp.points()
	}
	if rp != nil {
		if err := rp.validate(); err != nil {
			return nil, err
		}
		total += rp.points()
	}
	if total == 0 {
		return nil, fmt.Errorf("%w: the plan has no workload", ErrInvalidOptions)
	}
	tb := plan.TimeBudget
	if tb <= 0 {
		tb = DefaultTimeBudget
	}
	r, err := newRunner(ctx, plan.Options)
	if err != nil {
		return nil, err
	}
	rep := NewReport(r.target)
	rep.TimeBudgetSec = tb.Seconds()
	err = r.sweep(ctx, plan.Options, tb, wps, rp, total, rep)
	err = joinCleanup(err, r.cleanup())
	rep.BytesWritten = r.written.Load()
	rep.ElapsedSec = time.Since(r.start).Seconds()
	return rep, err
}

func (r *runner) sweep(ctx context.Context, o Options, tb time.Duration, wps []writeParams, rp *readParams, total int, rep *Report) error {
	deadline := r.start.Add(tb)
	// A hard stop a little after the budget, in case a point overruns.
	ctx, cancel := context.WithDeadline(ctx, deadline.Add(2*time.Second))
	defer cancel()
	r.points = total
	r.estimate = tb

	var layoutSize int64
	var layoutTime time.Duration
	if rp != nil {
		layoutSize = rp.fileSize
		if layoutSize == 0 {
			layoutSize = min(256*MiB, r.budget.Load()/4)
		}
		layoutSize -= layoutSize % MiB
		layoutTime = time.Duration(float64(layoutSize) / layoutRateGuess * float64(time.Second))
	}
	left := total
	// Byte shares are weighted by block size (see pointWeight); what a point
	// leaves unspent goes to the later ones.
	weightLeft := 0
	for _, wp := range wps {
		weightLeft += wp.weight()
	}
	timing := func() (time.Duration, time.Duration, bool) {
		if o.Duration > 0 {
			d, w := resolveTiming(o)
			return d, w, time.Until(deadline) >= d+w
		}
		until := time.Until(deadline) - layoutTime
		remain := until - time.Duration(left)*pointOverhead
		// Points run in order with an equal slice of what is left, but
		// never less than minPoint; when even that no longer fits, the
		// rest are skipped.
		slice := max(remain/time.Duration(left), minPoint)
		if until < slice+pointOverhead {
			return 0, 0, false
		}
		w := o.Warmup
		if w == 0 {
			w = min(defaultWarmup(slice), slice/3)
		} else if w < 0 {
			w = 0
		}
		return max(slice-w, slice*2/3), w, true
	}
	skip := func(what string) {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("skipped %s: time budget of %v spent", what, tb))
	}
	// writePoint runs one point of wp at bs (run measures it) in its slice
	// of the time and its share of the bytes, or skips it when neither is
	// left.
	writePoint := func(wp writeParams, bs int64, label string, run func(d, w time.Duration, share int64) ([]Result, error)) error {
		d, w, ok := timing()
		wt := wp.pointWeight(bs)
		if !ok {
			skip(label)
			left--
			weightLeft -= wt
			r.pointNum++
			return nil
		}
		share := (r.budget.Load() - layoutSize) * int64(wt) / int64(weightLeft)
		left--
		weightLeft -= wt
		rs, err := run(d, w, share)
		if errors.Is(err, ErrBudgetExhausted) {
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("skipped %s: %v", label, err))
			return nil
		}
		if err != nil {
			return err
		}
		rep.Results = append(rep.Results, rs...)
		return nil
	}
	for _, wp := range wps {
		if wp.alternate != nil {
			for _, bs := range wp.blockSizes {
				label := fmt.Sprintf("%s writers=%s alternating bs=%s", wp.workload, CountsLabel(wp.writers), units.FormatBytes(bs))
				if err := writePoint(wp, bs, label, func(d, w time.Duration, share int64) ([]Result, error) {
					return r.runAlternation(ctx, wp, bs, d, w, share)
				}); err != nil {
					return err
				}
			}
			continue
		}
		for _, writers := range wp.writers {
			for _, bs := range wp.blockSizes {
				label := fmt.Sprintf("%s writers=%d bs=%s", wp.workload, writers, units.FormatBytes(bs))
				if err := writePoint(wp, bs, label, func(d, w time.Duration, share int64) ([]Result, error) {
					res, err := r.runWritePoint(ctx, wp, writers, bs, d, w, share)
					return []Result{res}, err
				}); err != nil {
					return err
				}
			}
		}
	}
	if rp == nil {
		return nil
	}
	layoutSize = min(layoutSize, r.budget.Load())
	rf, err := r.layoutReadFile(ctx, layoutSize, maxBlock(rp.blockSizes))
	if err != nil {
		return err
	}
	defer rf.f.Close()
	layoutTime = 0
	for _, bs := range rp.blockSizes {
		for _, depth := range rp.depths {
			d, w, ok := timing()
			if !ok {
				skip(fmt.Sprintf("randread depth=%d bs=%s", depth, units.FormatBytes(bs)))
				left--
				r.pointNum++
				continue
			}
			left--
			res, err := r.runReadPoint(ctx, rf, bs, depth, d, w)
			if err != nil {
				return err
			}
			rep.Results = append(rep.Results, res)
		}
	}
	return nil
}
