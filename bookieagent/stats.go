package bookieagent

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/tierkeeper/tierkeeper/diskbench"
	"github.com/tierkeeper/tierkeeper/internal/stats"
	"github.com/tierkeeper/tierkeeper/internal/units"
)

// SpreadGate is the largest spread (max − min) ÷ median of a point's rounds
// under which the evidence does not mark it noisy (informational: the
// decisions use the paired confidence interval, pairedRatio).
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

func newRounds(v ...float64) rounds { return rounds{v: v} }

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

// ratioCI is the paired comparison of two points' rounds a over b: round
// k of one against round k of the other (the plan runs every point of
// round k before round k+1, so slow drift of the disk or the machine hits
// both sides of a pair alike and cancels in their ratio). Ratio is the
// geometric mean of the per-round ratios a/b; Lo–Hi its two-sided 95%
// Student-t confidence interval (on the logs); N the pairs.
type ratioCI struct {
	N             int
	Ratio, Lo, Hi float64
}

func pairedRatio(a, b rounds) ratioCI {
	var d []float64
	for i := range min(a.n(), b.n()) {
		if a.v[i] > 0 && b.v[i] > 0 {
			d = append(d, math.Log(a.v[i]/b.v[i]))
		}
	}
	m, half := stats.MeanCI95(d)
	c := ratioCI{N: len(d), Ratio: math.Exp(m), Lo: math.Exp(m - half), Hi: math.Exp(m + half)}
	if c.N == 0 {
		c.Ratio = 0
	}
	return c
}

// MinMoveRounds is the fewest paired rounds on which a comparison may move
// a value off its current one (moveOff). Two rounds give the interval one
// degree of freedom: its width is then itself a single draw of the noise
// (two rounds whose ratios happen to agree give a narrow interval however
// much the disk swings), so a real but modest gain moves the value in
// some runs and not in others — on this project's VM the third of three
// default runs moved ledgerDirectories to 2 on two rounds at 1.3×, the
// others kept 1. With three rounds the t factor falls from 12.7 to 4.3
// and the width rests on two degrees of freedom.
const MinMoveRounds = 3

// verdict is what a paired comparison shows against a margin.
type verdict int

const (
	// open: the interval holds the margin, fewer than 2 pairs, or an
	// interval above it on fewer than MinMoveRounds pairs: more rounds
	// could still decide.
	open verdict = iota
	// above: the whole interval is above the margin on at least
	// MinMoveRounds pairs — the gain repeats.
	above
	// below: the whole interval is below the margin (2 pairs suffice) —
	// shown not to gain it: more rounds are not needed to keep a value.
	below
)

// against is the verdict of the interval against gain (1.10 = 10%).
func (c ratioCI) against(gain float64) verdict {
	switch {
	case c.N < 2:
		return open
	case c.Lo > gain && c.N >= MinMoveRounds:
		return above
	case c.Hi < gain:
		return below
	}
	return open
}

// moveOff is the one evidence rule for every value the agent keeps at its
// current one — a cookie-fixed directory count (the live cookie's, else
// Pulsar's 1) and Pulsar's write sizes — unless the measurements show the
// change repeats. It reports whether the rounds of to move the value from
// cur, with the paired comparison that decided: to larger (more dirs, a
// larger size) when the 95% lower bound of to ÷ cur is above gain; to
// smaller when the upper bound of cur ÷ to is below gain (cur shown not to
// gain that much); either way on at least MinMoveRounds paired rounds. The
// comparison returned is to ÷ cur, or cur ÷ to for a smaller to.
func moveOff(cur, to rounds, larger bool, gain float64) (bool, ratioCI) {
	if larger {
		c := pairedRatio(to, cur)
		return c.against(gain) == above, c
	}
	c := pairedRatio(cur, to)
	return c.N >= MinMoveRounds && c.against(gain) == below, c
}

// String renders the comparison as "1.04× (95% CI 0.91–1.19, 3 paired rounds)".
func (c ratioCI) String() string {
	switch c.N {
	case 0:
		return "not compared (no common round)"
	case 1:
		return fmt.Sprintf("%.2f× (1 paired round: no interval)", c.Ratio)
	}
	return fmt.Sprintf("%.2f× (95%% CI %.2f–%.2f, %d paired rounds)", c.Ratio, c.Lo, c.Hi, c.N)
}

// moveRule is moveOff in the rules' text: how a kept value moves.
func moveRule() string {
	return fmt.Sprintf("only when at least %d paired rounds separate the two (the 95%% interval of the per-round ratio clear of the margin)", MinMoveRounds)
}

// beats reports whether a is clearly faster than b by more than gain
// (1.10 = 10%): moveOff from b to the larger a — the lower bound of the
// 95% confidence interval of their paired ratio is above gain on at least
// MinMoveRounds rounds, so the gain repeats and run-to-run noise cannot
// decide. A single round of either never beats: its noise is unknown (a
// 0.1 s point of a disk's cache can look 4× faster than the disk).
func (a rounds) beats(b rounds, gain float64) bool {
	ok, _ := moveOff(b, a, true, gain)
	return ok
}

// notSeparated says why a did not beat b by gain, with the interval.
func notSeparated(aName string, a rounds, bName string, b rounds, gain float64) string {
	c := pairedRatio(a, b)
	switch {
	case c.N < 2:
		return fmt.Sprintf("%s vs %s share a single round: one round does not show that a difference repeats", aName, bName)
	case c.Lo > gain && c.N < MinMoveRounds:
		return fmt.Sprintf("%s ÷ %s = %s: above %.2f× on too few rounds (a move needs %d paired rounds)", aName, bName, c, gain, MinMoveRounds)
	}
	what := "its interval holds the margin"
	if c.against(gain) == below {
		what = "shown below the margin"
	}
	return fmt.Sprintf("%s ÷ %s = %s: not above %.2f× (%s)", aName, bName, c, gain, what)
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
// once are not candidates). A count is fixed by the cookie for the
// bookie's life, so the result moves away from base (the live cookie's
// count, else Pulsar's 1) only by moveOff, one measured count at a time:
// up to the next larger ok count when the lower bound of its paired ratio
// over the current one is above gain on at least MinMoveRounds paired
// rounds, and on from there by the same test; only when no step up is
// shown, down to the next smaller ok count while the upper bound of the
// current over it is below gain. A step never skips a count: a larger
// count that beats base only behind a middle count that does not separate
// is not taken (a single comparison of distant counts, the widest gain,
// is the one most often called on noise). Otherwise — also when base was
// not measured — base is kept. The note gives the intervals that decided.
func pickCount(by map[int]rounds, ok func(int) bool, base int, gain float64) (n int, note string) {
	counts := slices.Sorted(maps.Keys(by))
	// Where the comparison has repeated rounds, a count measured once
	// cannot be separated from the others: it informs, it is not chosen.
	repeated := slices.ContainsFunc(counts, func(c int) bool { return by[c].n() >= 2 })
	okRounds := ok
	ok = func(c int) bool { return okRounds(c) && (!repeated || by[c].n() >= 2 || c == base) }
	if !slices.ContainsFunc(counts, ok) {
		return base, "no count meets the latency budget"
	}
	if _, has := by[base]; !has {
		return base, fmt.Sprintf("the current count %d was not measured: nothing to compare with, N=%d kept", base, base)
	}
	// next returns the nearest ok count above (up) or below cur.
	next := func(cur int, up bool) (int, bool) {
		if up {
			for _, c := range counts {
				if c > cur && ok(c) {
					return c, true
				}
			}
			return 0, false
		}
		for _, c := range slices.Backward(counts) {
			if c < cur && ok(c) {
				return c, true
			}
		}
		return 0, false
	}
	name := func(c int) string { return fmt.Sprintf("N=%d", c) }
	var steps []string
	cur := base
	for {
		c, has := next(cur, true)
		if !has {
			break
		}
		move, ci := moveOff(by[cur], by[c], true, gain)
		if !move {
			steps = append(steps, fmt.Sprintf("%s: the evidence does not separate them, N=%d kept", notSeparated(name(c), by[c], name(cur), by[cur], gain), cur))
			break
		}
		steps = append(steps, fmt.Sprintf("N=%d ÷ N=%d = %s: above %.2f× → N=%d", c, cur, ci, gain, c))
		cur = c
	}
	if cur == base {
		for {
			c, has := next(cur, false)
			if !has {
				break
			}
			move, ci := moveOff(by[cur], by[c], false, gain)
			if !move {
				what := fmt.Sprintf("not shown below %.2f×", gain)
				if ci.against(gain) == below {
					what = fmt.Sprintf("below %.2f× on too few rounds (a move needs %d paired rounds)", gain, MinMoveRounds)
				}
				steps = append(steps, fmt.Sprintf("N=%d ÷ N=%d = %s: %s, N=%d kept", cur, c, ci, what, cur))
				break
			}
			steps = append(steps, fmt.Sprintf("N=%d ÷ N=%d = %s: below %.2f× → N=%d", cur, c, ci, gain, c))
			cur = c
		}
	}
	if !ok(cur) {
		steps = append(steps, fmt.Sprintf("N=%d is over the latency budget but no smaller count is shown as fast", cur))
	}
	return cur, strings.Join(steps, "; ")
}
