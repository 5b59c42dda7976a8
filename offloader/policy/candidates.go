package policy

import (
	"iter"
	"slices"

	"github.com/tierkeeper/tierkeeper/pulsar/mledger"
)

// Candidates is an evaluation's work list, in work order. It keeps the
// policy's candidates as indices into the snapshot they were chosen from
// (which the list holds) and makes each Candidate when it is asked for:
// 100 000 topics with 900 000 candidates take 61 MB of indices where a
// []Candidate took 223 MB, and an evaluation writes none of them. The
// zero value is the empty list. A list never changes once made (Append
// returns another).
type Candidates struct {
	ev    *evaluated
	order []int32     // indices in ev.cands, in work order
	more  []Candidate // after the policy's: candidates made elsewhere
}

// evaluated is what a policy candidate is made from.
type evaluated struct {
	topics    []Topic
	plans     []TopicPlan // per topic: its name as a string and its rule's
	eff       []Rule      // per topic: the effective rule
	cands     []chosen
	threshold float64 // Rules.Pressure.Threshold
}

// ListOf is a list of the given candidates, in that order (made outside
// the policy: the scrubber's, a simulation's, a test's).
func ListOf(cs ...Candidate) Candidates {
	return Candidates{more: slices.Clone(cs)}
}

// Len is the number of candidates.
func (l Candidates) Len() int { return len(l.order) + len(l.more) }

// At is the candidate at place i (0 ≤ i < Len).
func (l Candidates) At(i int) Candidate {
	if i >= len(l.order) {
		return l.more[i-len(l.order)]
	}
	return l.ev.candidate(l.order[i])
}

// Ref and Action are those of the candidate at place i, without making
// the whole Candidate (what a scheduler looks at for each queued one).
func (l Candidates) Ref(i int) mledger.LedgerRef {
	if i >= len(l.order) {
		return l.more[i-len(l.order)].LedgerRef
	}
	p := &l.ev.cands[l.order[i]]
	t := &l.ev.topics[p.topic]
	return mledger.LedgerRef{ML: t.ML, LedgerID: t.Ledgers[p.li].ID}
}

// Action is the action of the candidate at place i.
func (l Candidates) Action(i int) Action {
	if i >= len(l.order) {
		return l.more[i-len(l.order)].Action
	}
	return l.ev.cands[l.order[i]].action
}

// All yields the places and candidates in order.
func (l Candidates) All() iter.Seq2[int, Candidate] {
	return func(yield func(int, Candidate) bool) {
		for i := range l.Len() {
			if !yield(i, l.At(i)) {
				return
			}
		}
	}
}

// Slice makes every candidate (for small lists: a plan, a test).
func (l Candidates) Slice() []Candidate {
	out := make([]Candidate, 0, l.Len())
	for _, c := range l.All() {
		out = append(out, c)
	}
	return out
}

// Append is the list followed by cs; l itself is unchanged.
func (l Candidates) Append(cs ...Candidate) Candidates {
	if len(cs) == 0 {
		return l
	}
	l.more = append(slices.Clip(l.more), cs...)
	return l
}

// candidate makes the Candidate of ev.cands[ci].
func (ev *evaluated) candidate(ci int32) Candidate {
	p := &ev.cands[ci]
	t, tp, rule := &ev.topics[p.topic], &ev.plans[p.topic], &ev.eff[p.topic]
	l := &t.Ledgers[p.li]
	c := Candidate{LedgerRef: mledger.LedgerRef{ML: t.ML, LedgerID: l.ID}, Topic: tp.Topic, Entries: l.Entries, Size: l.Size, Action: p.action,
		Rule: tp.Rule, Trigger: triggers[p.trigger], ClosedAt: l.ClosedAt, OffloadedAt: l.OffloadedAt,
		Settings: Settings{BlockSize: rule.BlockSize, Verify: rule.Verify, DeletionLag: rule.DeletionLag}}
	c.why.n = p.n
	switch p.trigger {
	case trigPressure:
		c.Pressure = -p.pressure
		c.why.bookie, c.why.threshold = l.Bookies[p.bookie], ev.threshold
	case trigAge:
		c.why.limit = int64(rule.After)
	case trigBytes:
		c.why.limit = rule.KeepBytes
	case trigLedgers:
		c.why.limit = int64(rule.KeepLedgers)
	case trigLag:
		c.why.limit = int64(rule.DeletionLag.After)
	}
	return c
}
