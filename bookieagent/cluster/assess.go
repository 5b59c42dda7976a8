package cluster

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/tierkeeper/tierkeeper/bookieagent"
)

// AssessOptions configure Assess.
type AssessOptions struct {
	// Read says what the view reads (ZooKeeper, agents, bookies).
	Read Options
	// ScaleIn, when set, plans a scale-in on the view.
	ScaleIn *PlanOptions
	// Gate, when not empty, checks the gate after removing this bookie.
	Gate string
}

// Assessment is the cluster view and what is computed from it: the agents'
// recommendations merged, the fleet's running configuration against them,
// a scale-in plan and a gate. Its JSON is bookieagent cluster's -o json.
type Assessment struct {
	View   *View   `json:"cluster"`
	Merged *Merged `json:"merged,omitempty"`
	Drift  *Drift  `json:"running_config,omitempty"`
	Plan   *Plan   `json:"scale_in,omitempty"`
	Gate   *Gate   `json:"gate,omitempty"`
	// MergeErr says why the recommendations could not be merged (nil
	// also when no agent gave one: Merged is nil then).
	MergeErr error `json:"-"`
}

// Assess reads the cluster (Read) and computes, from the one view, the
// merged recommendation of every agent that gave one, the drift of the
// running configuration (when read), the scale-in plan and the gate. It
// fails when the view cannot be read or the scale-in names bad bookies; a
// plan that is not feasible and a gate not passed are in the result (Err).
func Assess(ctx context.Context, o AssessOptions) (*Assessment, error) {
	v, err := Read(ctx, o.Read)
	if err != nil {
		return nil, err
	}
	a := &Assessment{View: v}
	recs := map[string]*bookieagent.Recommendation{}
	for _, b := range append(append([]Bookie{}, v.Bookies...), v.Agents...) {
		if b.Agent != "" {
			recs[b.ID] = b.Recommendation
		}
	}
	if len(recs) > 0 {
		a.Merged, a.MergeErr = Merge(recs)
	}
	if o.ScaleIn != nil {
		if a.Plan, err = PlanScaleIn(v, *o.ScaleIn); err != nil {
			return nil, err
		}
	}
	if o.Read.RunningConfig {
		a.Drift = ComputeDrift(v, a.Merged)
	}
	if o.Gate != "" {
		a.Gate = CheckGate(v, o.Gate)
	}
	return a, nil
}

// Err is the plan's verdict as an error: nil when feasible, else what
// refused it and the checks that failed.
func (p *Plan) Err() error {
	if p.Feasible {
		return nil
	}
	var failed []string
	if len(p.Refused) > 0 {
		failed = append(failed, fmt.Sprintf("refused, %d things could not be read", len(p.Refused)))
	}
	failed = append(failed, failedChecks(p.Checks)...)
	return fmt.Errorf("scale-in of %s is not feasible: %s", strings.Join(p.Remove, ", "), strings.Join(failed, ", "))
}

// Err is the gate's verdict as an error: nil when passed, else the checks
// that failed.
func (g *Gate) Err() error {
	if g.Passed {
		return nil
	}
	return fmt.Errorf("gate after removing %s not passed: %s", g.Bookie, strings.Join(failedChecks(g.Checks), ", "))
}

func failedChecks(checks []Check) []string {
	var failed []string
	for _, c := range checks {
		if !c.OK {
			failed = append(failed, c.Name)
		}
	}
	return failed
}

// ParseAgents splits agent addresses into those given for a bookie
// ("BOOKIE_ID=URL": Options.Agents) and those matched to bookies by host
// (Options.AgentURLs). Every URL must be an http(s) base URL.
func ParseAgents(list []string) (byID map[string]string, byHost []string, err error) {
	byID = map[string]string{}
	for _, a := range list {
		id, u := "", a
		if i := strings.Index(a, "="); i > 0 && !strings.Contains(a[:i], "/") {
			id, u = a[:i], a[i+1:]
		}
		if pu, err := url.Parse(u); err != nil || pu.Host == "" || (pu.Scheme != "http" && pu.Scheme != "https") {
			return nil, nil, fmt.Errorf("%q: want an http(s) base URL like http://10.0.0.1:9580, or BOOKIE_ID=URL", a)
		}
		if id != "" {
			byID[id] = u
		} else {
			byHost = append(byHost, u)
		}
	}
	return byID, byHost, nil
}
