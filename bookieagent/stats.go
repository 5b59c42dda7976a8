package bookieagent

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/tierkeeper/tierkeeper/diskbench"
	"github.com/tierkeeper/tierkeeper/internal/stats"
	"github.com/tierkeeper/tierkeeper/internal/units"
)

// SpreadGate is the largest spread (max − min) ÷ median of a point's rounds
// under which its figure counts as repeatable; a noisier point is reported
// as such, and comparisons against it only count when they separate even
// its extremes.
const SpreadGate = 0.15

// sustainedRate is a result's figure for the rules: the median of its
// per-second samples when it has at least 4 (a second of a burst that
// leaked past the warm-up does not move it), else its mean rate.
func sustainedRate(r diskbench.Result) float64 {
	if len(r.SamplesBytesPerSec) >= 4 {
		return rounds{v: r.SamplesBytesPerSec}.median()
	}
	return r.BytesPerSec
}

// rounds is one point's figures over its repeated runs.
type rounds struct {
	v []float64
}

func (r *rounds) add(x float64) { r.v = append(r.v, x) }

func (r rounds) n() int { return len(r.v) }

func (r rounds) median() float64 { return stats.Median(r.v) }

// lowMedian is the median of an odd count of rounds, the lower middle one
// of an even count (the minimum of two).
func (r rounds) lowMedian() float64 {
	if len(r.v) == 0 {
		return 0
	}
	return slices.Sorted(slices.Values(r.v))[(len(r.v)-1)/2]
}

func (r rounds) lo() float64 { return slices.Min(r.v) }
func (r rounds) hi() float64 { return slices.Max(r.v) }

// spread is (max − min) ÷ median; 0 for fewer than two rounds.
func (r rounds) spread() float64 {
	if len(r.v) < 2 || r.median() <= 0 {
		return 0
	}
	return (r.hi() - r.lo()) / r.median()
}

// noisy reports a spread above SpreadGate.
func (r rounds) noisy() bool { return r.spread() > SpreadGate }

// repeatable reports whether every round lies within ±SpreadGate of the
// median (the recommendation's repeatability goal applied to the rounds
// of one run): the gate a cookie-fixed choice must pass.
func (r rounds) repeatable() bool {
	m := r.median()
	return r.n() < 2 || (r.lo() >= (1-SpreadGate)*m && r.hi() <= (1+SpreadGate)*m)
}

// beats reports whether a is clearly faster than b by more than gain
// (1.10 = 10%): a's slowest round must beat b's fastest by gain, so
// run-to-run noise cannot decide. A single round of either never beats:
// its noise is unknown (a 0.1 s point of a disk's cache can look 4× faster
// than the disk), so a value measured once never moves a setting away
// from its current or default value; the evidence shows "1 round".
func (a rounds) beats(b rounds, gain float64) bool {
	if a.n() < 2 || b.n() < 2 {
		return false
	}
	return a.lo() > b.hi()*gain
}

// notSeparated says why a did not beat b by gain: a single round of
// either, or overlapping rounds.
func notSeparated(aName string, a rounds, bName string, b rounds, gain float64) string {
	if a.n() < 2 || b.n() < 2 {
		return fmt.Sprintf("%s vs %s measured in a single round: one round does not show that a difference repeats", aName, bName)
	}
	return fmt.Sprintf("%s does not clearly beat %s by >%.0f%% (its slowest round against the other's fastest)", aName, bName, (gain-1)*100)
}

// describe renders the rounds as "412.3 MB/s (3 rounds 401–420, spread 5%)".
func (r rounds) describe() string {
	switch r.n() {
	case 0:
		return "not measured"
	case 1:
		return units.DecimalRate(r.v[0]) + " (1 round)"
	}
	s := fmt.Sprintf("%s (%d rounds %s–%s, spread %.0f%%", units.DecimalRate(r.median()), r.n(),
		strings.TrimSuffix(units.DecimalRate(r.lo()), " MB/s"), strings.TrimSuffix(units.DecimalRate(r.hi()), " MB/s"), 100*r.spread())
	if r.noisy() {
		s += fmt.Sprintf(" > %.0f%%: noisy", 100*SpreadGate)
	}
	return s + ")"
}

// pickCount applies the directory-count rule shared by journal and ledger
// directories to counts → rounds (ok reports which counts meet the
// latency budget; where any count has repeated rounds, counts measured
// once are not candidates): the best count is the fastest (by median)
// that is ok;
// the candidate is the smallest ok count the best does not clearly beat by
// gain. The result moves away from base (the live cookie's count, else
// Pulsar's 1) only when the evidence separates them: both counts' rounds
// repeatable (each within ±SpreadGate of its median), and a larger count
// must clearly beat base by gain; a
// smaller one must not be clearly beaten by base. Otherwise base is kept
// and the note says the evidence does not separate the two.
func pickCount(by map[int]rounds, ok func(int) bool, base int, gain float64) (n int, note string) {
	counts := slices.Sorted(maps.Keys(by))
	// Where the comparison has repeated rounds, a count measured once
	// cannot be separated from the others: it informs, it is not chosen.
	repeated := slices.ContainsFunc(counts, func(c int) bool { return by[c].n() >= 2 })
	okRounds := ok
	ok = func(c int) bool { return okRounds(c) && (!repeated || by[c].n() >= 2 || c == base) }
	best := 0
	for _, c := range counts {
		if ok(c) && (best == 0 || by[c].median() > by[best].median()) {
			best = c
		}
	}
	if best == 0 {
		return base, "no count meets the latency budget"
	}
	cand := best
	for _, c := range counts {
		if ok(c) && !by[best].beats(by[c], gain) {
			cand = c
			break
		}
	}
	b, hasBase := by[base]
	// A count is fixed by the cookie for the bookie's life: one round of
	// either count cannot show that the difference repeats.
	if hasBase && cand != base && (by[cand].n() < 2 || b.n() < 2) {
		return base, fmt.Sprintf("N=%d (%s) vs N=%d (%s): a single round does not separate them (a cookie-fixed count changes only on repeated rounds): N=%d kept",
			cand, by[cand].describe(), base, b.describe(), base)
	}
	// The spread gate: a count is fixed by the cookie for the bookie's
	// life, so a change needs rounds that repeat — both the candidate's and
	// the current count's within SpreadGate — besides separating them.
	if hasBase && cand != base && (!by[cand].repeatable() || !b.repeatable()) {
		noisy := cand
		if !b.repeatable() {
			noisy = base
		}
		return base, fmt.Sprintf("N=%d's rounds (%s) are not all within ±%.0f%% of their median: not repeatable (the machine or the disk moved during the benchmark), so they do not separate N=%d from N=%d: N=%d kept",
			noisy, by[noisy].describe(), 100*SpreadGate, cand, base, base)
	}
	switch {
	case cand == base && best != base:
		return base, fmt.Sprintf("the fastest is N=%d at %s, N=%d at %s: %s: the evidence does not separate them, N=%d kept",
			best, by[best].describe(), base, by[base].describe(), notSeparated(fmt.Sprintf("N=%d", best), by[best], fmt.Sprintf("N=%d", base), by[base], gain), base)
	case cand == base:
		return base, ""
	case !hasBase:
		return cand, fmt.Sprintf("the current count %d was not measured", base)
	case cand > base && !by[cand].beats(b, gain):
		return base, fmt.Sprintf("%s (%s vs %s): the evidence does not separate them, N=%d kept",
			notSeparated(fmt.Sprintf("N=%d", cand), by[cand], fmt.Sprintf("N=%d", base), b, gain), by[cand].describe(), b.describe(), base)
	case cand < base && b.beats(by[cand], gain):
		return base, fmt.Sprintf("N=%d is clearly slower than N=%d: N=%d kept", cand, base, base)
	}
	return cand, ""
}
