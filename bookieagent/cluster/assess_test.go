package cluster

import (
	"strings"
	"testing"
	"time"

	"github.com/tierkeeper/tierkeeper/bookieagent/agentapi"
	"github.com/tierkeeper/tierkeeper/bookkeeper/metadata"
	"github.com/tierkeeper/tierkeeper/offloader/mltest"
)

// Without ZooKeeper, Assess reads the agents alone and merges their
// recommendations; no plan, drift or gate is computed unless asked.
func TestAssessAgentsOnly(t *testing.T) {
	a1, a2 := mltest.AgentServer(t, 0.4, profileRec(t, "nvme")), mltest.AgentServer(t, 0.5, profileRec(t, "sata-ssd"))
	byID, byHost, err := ParseAgents([]string{"b1:3181=" + a1, a2})
	if err != nil || byID["b1:3181"] != a1 || len(byHost) != 1 || byHost[0] != a2 {
		t.Fatalf("ParseAgents: %v %v %v", byID, byHost, err)
	}
	a, err := Assess(t.Context(), AssessOptions{Read: Options{Agents: byID, AgentURLs: byHost, Timeout: 5 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	if a.Merged == nil || a.MergeErr != nil || a.Plan != nil || a.Drift != nil || a.Gate != nil {
		t.Errorf("assessment: merged %v (%v), plan %v, drift %v, gate %v", a.Merged != nil, a.MergeErr, a.Plan, a.Drift, a.Gate)
	}
	for _, bad := range []string{"10.0.0.1:9580", "ftp://h:1", "b1=http://"} {
		if _, _, err := ParseAgents([]string{bad}); err == nil || !strings.Contains(err.Error(), "want an http(s) base URL") {
			t.Errorf("ParseAgents(%q): %v", bad, err)
		}
	}
}

// A plan's and a gate's verdicts as errors name what failed.
func TestPlanGateErr(t *testing.T) {
	if (&Plan{Feasible: true}).Err() != nil || (&Gate{Passed: true}).Err() != nil {
		t.Error("a feasible plan or a passed gate is an error")
	}
	p := &Plan{Remove: []string{"b3", "b4"}, Refused: []string{"x", "y"}, Checks: []Check{{Name: "copies", OK: true}, {Name: "room"}}}
	if err := p.Err(); err == nil || err.Error() != "scale-in of b3, b4 is not feasible: refused, 2 things could not be read, room" {
		t.Errorf("plan error %v", err)
	}
	g := &Gate{Bookie: "b3", Checks: []Check{{Name: "re-replicated"}, {Name: "auditor", OK: true}, {Name: "cookie deleted"}}}
	if err := g.Err(); err == nil || err.Error() != "gate after removing b3 not passed: re-replicated, cookie deleted" {
		t.Errorf("gate error %v", err)
	}
}

// The gate after a removal also checks the other bookies the ledgers
// name: one of them down (not registered) while the next bookie is
// stopped can leave entries with no copy, so the gate does not pass.
func TestGateOtherBookiesUp(t *testing.T) {
	seg := func(bs ...string) []metadata.Segment { return []metadata.Segment{{FirstEntryID: 0, Bookies: bs}} }
	v := &View{
		Bookies: []Bookie{{ID: "b1"}, {ID: "b2"}, {ID: "b3"}},
		Ledgers: []Ledger{{ID: 1, Ensemble: 3, WriteQuorum: 2, AckQuorum: 2, State: "CLOSED", LastEntryID: 9, Segments: seg("b1", "b2", "b3")}},
		Auditor: "b1",
	}
	check := func(g *Gate) Check {
		for _, c := range g.Checks {
			if c.Name == "other bookies up" {
				return c
			}
		}
		t.Fatalf("no check 'other bookies up' in %+v", g.Checks)
		return Check{}
	}
	if g := CheckGate(v, "b4"); !g.Passed || !check(g).OK {
		t.Errorf("all named bookies up: %+v", g)
	}
	v.Bookies = v.Bookies[:2] // b3 crashed
	g := CheckGate(v, "b4")
	if c := check(g); g.Passed || c.OK || !strings.Contains(c.Detail, "b3") {
		t.Errorf("b3 down: passed %v, %+v", g.Passed, c)
	}
}

// The room check counts the offloaded ledgers' BookKeeper copies as gone
// only when the step that deletes them is done: when the remaining
// bookies can take what is copied only without them, that step is
// required, not optional, and the check says so.
func TestPlanRoomNeedsTheOffloadStep(t *testing.T) {
	const gib = float64(1 << 30)
	view := func(headroom float64) *View {
		v := &View{Auditor: "b2", AutoRecovery: []string{"b2", "b3"}}
		for _, id := range []string{"b1", "b2", "b3", "b4"} {
			v.Bookies = append(v.Bookies, Bookie{ID: id, Writable: true, Report: &agentapi.Report{LedgerWarnHeadroomBytes: headroom}})
		}
		closed := metadata.StateClosed.String()
		v.Ledgers = []Ledger{
			{ID: 1, Ensemble: 3, WriteQuorum: 2, AckQuorum: 2, State: closed, LastEntryID: 99, Length: 90 << 30,
				Segments: []metadata.Segment{{Bookies: []string{"b1", "b2", "b3"}}}, ManagedState: "offloaded", Topic: "persistent://t/n/a"},
			{ID: 2, Ensemble: 3, WriteQuorum: 2, AckQuorum: 2, State: closed, LastEntryID: 99, Length: 9 << 30,
				Segments: []metadata.Segment{{Bookies: []string{"b1", "b3", "b4"}}}, ManagedState: "none"},
		}
		return v
	}
	// b1 holds 60 GiB of the offloaded ledger and 6 GiB of the other.
	for _, c := range []struct {
		headroom float64 // per remaining bookie
		required bool
	}{{30 * gib, false}, {10 * gib, true}} {
		p, err := PlanScaleIn(view(c.headroom), PlanOptions{Remove: []string{"b1"}})
		if err != nil {
			t.Fatal(err)
		}
		var room Check
		for _, ch := range p.Checks {
			if ch.Name == "room on the remaining bookies" {
				room = ch
			}
		}
		var step string
		for _, s := range p.Steps {
			if strings.HasPrefix(s.Title, "Move data out of BookKeeper first") {
				step = s.Title
			}
		}
		if !room.OK || strings.Contains(step, "required") != c.required || strings.Contains(room.Detail, "required") != c.required {
			t.Errorf("headroom %.0f GiB a bookie: room %+v, step %q; want the offload step required %v", c.headroom/gib, room, step, c.required)
		}
	}
}
