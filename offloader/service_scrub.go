package offloader

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/tierkeeper/tierkeeper/internal/retry"
	"github.com/tierkeeper/tierkeeper/offloader/discovery"
	"github.com/tierkeeper/tierkeeper/offloader/pipeline"
	"github.com/tierkeeper/tierkeeper/offloader/policy"
	"github.com/tierkeeper/tierkeeper/offloader/scrub"
	"github.com/tierkeeper/tierkeeper/pulsar/mledger"
)

// scrubLease is the lease name of the scrubber: one replica scrubs at a
// time (a name no managed ledger can have: those contain "/").
const scrubLease = "scrubber"

// ScrubStatus is the scrubber's part of /status.
type ScrubStatus struct {
	DryRun bool `json:"dryRun"`
	Deep   bool `json:"deep"`
	// Running: a pass is under way (Pass counts it so far).
	Running bool `json:"running"`
	// By is the replica scrubbing when it is another one.
	By string `json:"by,omitempty"`
	// Pass is the pass under way, else the last one.
	Pass *scrub.Report `json:"pass,omitempty"`
	// LastPassEnded is when the last complete pass ended.
	LastPassEnded time.Time `json:"lastPassEnded,omitzero"`
	// Lost are the committed ledgers whose objects are missing or wrong
	// and whose BookKeeper copy is gone: no readable copy.
	Lost []scrub.Finding `json:"lost"`
	// Pending are the ledgers waiting for a repair or a finished trim,
	// or needing a look (mismatch).
	Pending []scrub.Finding `json:"pending"`
	Err     string          `json:"error,omitempty"`
}

// scrubLoop runs a pass over every committed ledger every
// scrub.interval (from the start of one to the start of the next; the
// first at once), while this replica holds the scrubber lease.
func (s *Service) scrubLoop(ctx context.Context, disc *discovery.Discovery, sc *scrub.Scrubber, leases *zkLeases) {
	for ctx.Err() == nil {
		start := time.Now()
		// A held scrubber lease is given back and taken again (a new
		// generation) at each pass.
		lease, holder, err := leases.TryAcquire(ctx, scrubLease)
		held := lease != nil
		switch {
		case err != nil:
			s.setScrub(func(st *ScrubStatus) { st.Err = "scrubber lease: " + err.Error() })
		case !held:
			s.setScrub(func(st *ScrubStatus) { st.By, st.Running = holder, false })
		default:
			s.scrubPass(ctx, disc, sc)
		}
		wait := s.cfg.Scrub.Interval.D() - time.Since(start)
		if !held {
			wait = min(wait, time.Minute) // take over soon when the scrubbing replica goes
		}
		if retry.Sleep(ctx, max(wait, time.Second)) != nil {
			return
		}
	}
}

func (s *Service) scrubPass(ctx context.Context, disc *discovery.Discovery, sc *scrub.Scrubber) {
	topics, _ := disc.Snapshot()
	names := committedTopics(topics)
	rep := scrub.NewReport(sc.Bucket(), s.cfg.Scrub.DryRun, s.cfg.Scrub.Deep, time.Now())
	s.setScrub(func(st *ScrubStatus) { st.Running, st.By, st.Err, st.Pass = true, "", "", rep })
	for _, name := range names {
		fs, err := sc.CheckTopic(ctx, name, nil)
		if ctx.Err() != nil {
			return
		}
		s.mu.Lock()
		rep.Topics++
		rep.Add(fs, false)
		if err != nil {
			rep.Errors = append(rep.Errors, fmt.Sprintf("%s: %v", name, err))
		}
		s.mu.Unlock()
	}
	s.mu.Lock()
	rep.Finish(time.Now())
	s.mu.Unlock()
	sc.PassDone(rep)
	s.log.Info("scrub pass", "topics", rep.Topics, "ledgers", rep.Ledgers, "requests", rep.Requests, "verdicts", rep.Verdicts,
		"seconds", rep.Seconds)
	s.setScrub(func(st *ScrubStatus) { st.Running, st.LastPassEnded = false, time.Now() })
}

// setScrub changes the scrubber's status.
func (s *Service) setScrub(fn func(*ScrubStatus)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.status.Scrub == nil {
		s.status.Scrub = &ScrubStatus{DryRun: s.cfg.Scrub.DryRun, Deep: s.cfg.Scrub.Deep}
	}
	st := *s.status.Scrub
	fn(&st)
	s.status.Scrub = &st
}

// scrubView completes the stored scrub status with the scrubber's lost and
// pending ledgers, and adds a warning per lost ledger (s.mu held).
func (s *Service) scrubView(st *ScrubStatus, warnings []string) (*ScrubStatus, []string) {
	if st == nil || s.scrub == nil {
		return st, warnings
	}
	v := *st
	if v.Pass != nil {
		p := *v.Pass
		p.Findings = nil // listed in Lost and Pending
		p.Verdicts, p.Errors = maps.Clone(p.Verdicts), slices.Clone(p.Errors)
		v.Pass = &p
	}
	v.Lost, v.Pending = s.scrub.Lost(), s.scrub.Pending()
	w := append([]string(nil), warnings...)
	for _, f := range v.Lost {
		w = append(w, fmt.Sprintf("LOST: %s ledger %d (attempt %s, bucket %s): %s", f.ML, f.LedgerID, f.UUID, f.Bucket, f.Detail))
	}
	return &v, w
}

// scrubCandidates are the writes the scrubber asks for, for the
// scheduler (which runs them under the topic's lease): repairs, and
// interrupted BookKeeper deletions (when the broker can be reloaded
// first). None in a dry run.
func (s *Service) scrubCandidates() []policy.Candidate {
	s.mu.Lock()
	sc := s.scrub
	s.mu.Unlock()
	if sc == nil || s.cfg.Scrub.DryRun {
		return nil
	}
	var out []policy.Candidate
	for _, f := range sc.Pending() {
		c := policy.Candidate{LedgerRef: mledger.LedgerRef{ML: f.ML, LedgerID: f.LedgerID}, Entries: f.Entries, Size: f.Bytes, Rule: "scrub",
			Trigger: policy.Trigger("scrub"), Detail: f.Detail}
		if tn, err := mledger.ParseMLName(f.ML); err == nil {
			c.Topic = tn.String()
		}
		switch {
		case f.Verdict == scrub.VerdictRepair:
			c.Action = policy.ActionRepair
		case f.Verdict == scrub.VerdictTrimLeftover && s.cfg.Admin.URL != "":
			c.Action = policy.ActionTrim
			c.Settings = policy.Settings{BlockSize: pipeline.DefaultBlockSize,
				DeletionLag: policy.DeletionLag{Mode: policy.LagAfter}}
		default:
			continue
		}
		out = append(out, c)
	}
	return out
}
