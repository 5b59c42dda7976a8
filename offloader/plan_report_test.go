package offloader

import (
	"slices"
	"testing"
	"time"

	"github.com/tierkeeper/tierkeeper/offloader/policy"
)

// A plan's document numbers the candidates in work order, adds them up per
// action, counts the topics per state and carries the warnings /status
// gives for the same evaluation, in the same order.
func TestPlanDoc(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("X", 3600))
	// The ledger's identity is set field by field: it is promoted from an
	// embedded type in some versions of policy.Candidate.
	cand := func(a policy.Action, topic string, id, size int64, offloaded time.Time) policy.Candidate {
		c := policy.Candidate{Action: a, Topic: topic, Size: size, OffloadedAt: offloaded}
		c.ML, c.LedgerID = "t/ns/persistent/"+topic[len(topic)-1:], id
		return c
	}
	res := &PlanResult{At: at, Result: policy.Result{
		Candidates: policy.ListOf(cand(policy.ActionTrim, "persistent://t/ns/a", 1, 100, at),
			cand(policy.ActionOffload, "persistent://t/ns/a", 2, 200, time.Time{}), cand(policy.ActionOffload, "persistent://t/ns/b", 7, 300, time.Time{})),
		Topics: []policy.TopicPlan{{Topic: "persistent://t/ns/a"}, {Topic: "persistent://t/ns/b", Refused: "broker offloads"},
			{Topic: "persistent://t/ns/c", Excluded: true}, {Topic: "persistent://t/ns/d", Held: "reload bound"}},
		UnusedRules: []string{"typo"}},
		Report:     SnapshotReport{PressureErrors: []string{"bookie b1: down"}, LedgerErrors: []string{"ledger 9: no node"}},
		ReadErrors: map[string]string{"t/ns/persistent/z": "bad", "t/ns/persistent/y": "worse"},
	}
	doc := res.Doc()
	if len(doc.Candidates) != 3 || doc.Candidates[0].Order != 1 || doc.Candidates[2].Order != 3 || doc.Candidates[2].LedgerID != 7 {
		t.Errorf("candidates %+v", doc.Candidates)
	}
	if o := doc.Candidates[0].OffloadedAt; o == nil || o.Location() != time.UTC || !o.Equal(at) || doc.Candidates[1].OffloadedAt != nil {
		t.Errorf("offloadedAt %v / %v, want the trim's in UTC and none for an offload", o, doc.Candidates[1].OffloadedAt)
	}
	want := PlanTotals{OffloadLedgers: 2, OffloadBytes: 500, TrimLedgers: 1, TrimBytes: 100, Topics: 4, Excluded: 1, Refused: 1, Held: 1}
	if doc.Totals != want {
		t.Errorf("totals %+v, want %+v", doc.Totals, want)
	}
	if doc.UnusedIncludes == nil || doc.At.Location() != time.UTC {
		t.Errorf("unused includes %v (want [], not null), at %v (want UTC)", doc.UnusedIncludes, doc.At)
	}
	wantW := []string{"managed ledger t/ns/persistent/y not read: worse", "managed ledger t/ns/persistent/z not read: bad",
		"pressure: bookie b1: down", "ledger metadata: ledger 9: no node", `rule "typo" matches no topic`}
	if !slices.Equal(doc.Warnings, wantW) {
		t.Errorf("warnings\n%q\nwant\n%q", doc.Warnings, wantW)
	}
}
