package cluster

import (
	"fmt"
	"maps"
	"math"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/tierkeeper/tierkeeper/bookkeeper/metadata"
	"github.com/tierkeeper/tierkeeper/internal/units"
)

// Scale-in planning defaults.
const (
	// DefaultPerLedgerSeconds is the AutoRecovery overhead per ledger
	// (metadata reads and updates, the fragment's fencing and reads), from
	// operators' figures: about 20 000 ledgers in 2–3 hours with one
	// replication worker (Heur.).
	DefaultPerLedgerSeconds = 0.45
	// DefaultRereplicationRate is the copy rate assumed without a measured
	// one (Heur.).
	DefaultRereplicationRate = 100e6
	// rereplicationDiskShare: a replication worker writes through the
	// target bookies' journals and entry logs beside their own traffic;
	// the plan counts a quarter of the slowest remaining ledger disk's
	// measured sustained bandwidth per worker (Heur.).
	rereplicationDiskShare = 0.25
)

// PlanOptions configure PlanScaleIn.
type PlanOptions struct {
	// Remove names the bookies to remove; or RemoveCount picks that many:
	// with StatefulSet the highest ordinals, else those with the fewest
	// bytes that must be copied.
	Remove      []string
	RemoveCount int
	// StatefulSet: the bookies are a Kubernetes StatefulSet's pods, whose
	// scale-in always removes the highest ordinals (read from the bookie
	// ids' host names, "<set>-<ordinal>.…"); the plan removes them in that
	// order and refuses others.
	StatefulSet bool
	// RereplicationRate is the copy rate in bytes/s. Zero: measured — a
	// share of the slowest remaining bookie's sustained ledger-disk rate
	// (its agent's recommendation) per worker — else
	// DefaultRereplicationRate.
	RereplicationRate float64
	// Workers is the number of AutoRecovery replication workers
	// (autorecovery pods, or bookies with autoRecoveryDaemonEnabled).
	// Default: the AutoRecovery processes voting for auditor, at least 1.
	Workers int
	// PerLedgerSeconds is the per-ledger overhead. Default
	// DefaultPerLedgerSeconds.
	PerLedgerSeconds float64
	// HTTPPort is the bookies' HTTP port for the read-only step when a
	// registration does not publish one. Default 8000.
	HTTPPort int
	// ZK is the ZooKeeper address shown in the commands. Default "<zk>".
	ZK string
}

// Check is one pre-condition of the plan.
type Check struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

// Share is a part of a bookie's data.
type Share struct {
	Ledgers int     `json:"ledgers"`
	Bytes   float64 `json:"bytes"`
}

// BookieData is what a removed bookie holds.
type BookieData struct {
	Bookie string `json:"bookie"`
	// Total is every ledger with a fragment on the bookie.
	Total Share `json:"total"`
	// Offloaded ledgers are in the object store already: their BookKeeper
	// copies can be deleted instead of re-replicated.
	Offloaded Share `json:"offloaded"`
	// Offloadable ledgers are closed, not offloaded, and not their managed
	// ledger's last: the offloader could move them first.
	Offloadable Share `json:"offloadable"`
	// MustCopy is the rest: open ledgers, ledgers of no managed ledger
	// (cursors, schemas, …), offloads in progress.
	MustCopy Share `json:"must_copy"`
	// OpenLedgers have no length yet (not in the byte figures).
	OpenLedgers int `json:"open_ledgers"`
	// Topics with offloadable ledgers on the bookie, by bytes (at most 20).
	Topics []string `json:"topics,omitempty"`
}

// Estimate is a time estimate.
type Estimate struct {
	Seconds float64 `json:"seconds"`
	Bytes   float64 `json:"bytes"`
	Ledgers int     `json:"ledgers"`
	Basis   string  `json:"basis"`
}

// Step is one step of the plan.
type Step struct {
	Title string `json:"title"`
	Why   string `json:"why"`
	// Bookie is the bookie a removal step removes.
	Bookie   string   `json:"bookie,omitempty"`
	Commands []string `json:"commands,omitempty"`
	// Watch says what to watch while the step runs.
	Watch []string `json:"watch,omitempty"`
	// Gate must hold before the next step starts.
	Gate []string `json:"gate,omitempty"`
}

// SegmentIssue is a ledger segment the scale-in would endanger.
type SegmentIssue struct {
	Ledger       int64    `json:"ledger"`
	Segment      int      `json:"segment"`
	FirstEntry   int64    `json:"first_entry"`
	Ensemble     []string `json:"ensemble"`
	WriteQuorum  int      `json:"write_quorum"`
	AckQuorum    int      `json:"ack_quorum"`
	WriteSet     []string `json:"write_set,omitempty"`
	Detail       string   `json:"detail"`
	ManagedState string   `json:"managed_state,omitempty"`
}

// String names the segment.
func (s SegmentIssue) String() string {
	return fmt.Sprintf("ledger %d segment %d (from entry %d, ensemble %s)", s.Ledger, s.Segment, s.FirstEntry, strings.Join(s.Ensemble, ","))
}

// StepRisk is what one removal does to the ledgers until AutoRecovery
// has re-replicated the bookie's fragments.
type StepRisk struct {
	Bookie string `json:"bookie"`
	// Segments are the ledger segments with entries on the bookie.
	Segments int `json:"segments"`
	// MinCopies is the fewest copies any entry keeps meanwhile.
	MinCopies int `json:"min_copies"`
	// BelowAck counts the segments left with fewer copies than their ack
	// quorum meanwhile.
	BelowAck int `json:"below_ack_quorum"`
}

// Plan is a scale-in plan.
type Plan struct {
	// Remove is the bookies in removal order (one at a time).
	Remove []string `json:"remove"`
	// Order says why this order.
	Order    string `json:"order"`
	Feasible bool   `json:"feasible"`
	// Refused lists what could not be read: a plan on a partial view is
	// never feasible.
	Refused []string `json:"refused,omitempty"`
	Checks  []Check  `json:"checks"`
	// Stranded are the segments some of whose entries have every copy on
	// the removed bookies (or on bookies already gone).
	Stranded []SegmentIssue `json:"stranded,omitempty"`
	// Unplaceable are the segments AutoRecovery could not give a
	// replacement outside their ensemble (within their isolation groups,
	// on another rack).
	Unplaceable []SegmentIssue `json:"unplaceable,omitempty"`
	// Risks are per removal step, in order.
	Risks []StepRisk   `json:"step_risks"`
	Data  []BookieData `json:"data"`
	// AsIs copies everything; AfterOffload first deletes the offloaded
	// ledgers' BookKeeper copies and offloads the offloadable ones.
	AsIs         Estimate `json:"estimate_as_is"`
	AfterOffload Estimate `json:"estimate_after_offload"`
	// OffloadFirst: the remaining bookies can take what is copied only
	// once the offloaded ledgers' BookKeeper copies are deleted, so the
	// step that deletes them is required, not optional.
	OffloadFirst bool     `json:"offload_first,omitempty"`
	Steps        []Step   `json:"steps"`
	Rollback     []string `json:"rollback"`
}

// unregisteredNamed counts, per bookie that ledger segments name but that
// is not registered (down, or removed without re-replication), the
// segments naming it; except is left out (a bookie being removed).
func unregisteredNamed(v *View, except string) map[string]int {
	up := map[string]bool{}
	for _, b := range v.Bookies {
		up[b.ID] = true
	}
	down := map[string]int{}
	for _, l := range v.Ledgers {
		for _, s := range l.Segments {
			for _, b := range s.Bookies {
				if b != except && !up[b] {
					down[b]++
				}
			}
		}
	}
	return down
}

// maxIssues bounds the segments listed per kind (all are counted).
const maxIssues = 50

// ordinalOf parses a StatefulSet pod's bookie id,
// "<set>-<ordinal>[.<service>…]:port".
func ordinalOf(id string) (set string, ordinal int, ok bool) {
	h := hostOf(id)
	label, _, _ := strings.Cut(h, ".")
	if net.ParseIP(h) != nil {
		return "", 0, false
	}
	i := strings.LastIndexByte(label, '-')
	if i <= 0 {
		return "", 0, false
	}
	n, err := strconv.Atoi(label[i+1:])
	if err != nil || n < 0 {
		return "", 0, false
	}
	return label[:i], n, true
}

// PlanScaleIn plans removing bookies from the cluster of v, one at a time.
func PlanScaleIn(v *View, o PlanOptions) (*Plan, error) {
	if o.Workers <= 0 {
		o.Workers = max(1, len(v.AutoRecovery))
	}
	if o.PerLedgerSeconds <= 0 {
		o.PerLedgerSeconds = DefaultPerLedgerSeconds
	}
	if o.HTTPPort <= 0 {
		o.HTTPPort = 8000
	}
	if o.ZK == "" {
		o.ZK = "<zk>"
	}
	known := map[string]*Bookie{}
	for i := range v.Bookies {
		known[v.Bookies[i].ID] = &v.Bookies[i]
	}
	remove := slices.Clone(o.Remove)
	switch {
	case len(remove) > 0 && o.RemoveCount > 0:
		return nil, fmt.Errorf("%w: give the bookies to remove or a count, not both", ErrBadRemove)
	case len(remove) == 0 && o.RemoveCount <= 0:
		return nil, fmt.Errorf("%w: give the bookies to remove or a count", ErrBadRemove)
	case o.RemoveCount >= len(v.Bookies) || len(remove) >= len(v.Bookies) && len(remove) > 0:
		return nil, fmt.Errorf("%w: removing %d of %d bookies", ErrBadRemove, max(o.RemoveCount, len(remove)), len(v.Bookies))
	}
	for _, id := range remove {
		if known[id] == nil {
			var ids []string
			for k := range known {
				ids = append(ids, k)
			}
			sort.Strings(ids)
			return nil, fmt.Errorf("%w: %s is not a registered bookie (have %s)", ErrBadRemove, id, strings.Join(ids, ", "))
		}
	}
	seen := map[string]bool{}
	for _, id := range remove {
		if seen[id] {
			return nil, fmt.Errorf("%w: %s named twice", ErrBadRemove, id)
		}
		seen[id] = true
	}
	data := map[string]*BookieData{}
	for _, b := range v.Bookies {
		data[b.ID] = dataOf(v, b.ID)
	}
	toCopy := func(id string) float64 { return data[id].MustCopy.Bytes + data[id].Offloadable.Bytes }

	// StatefulSet ordinals.
	ordinals := map[string]int{}
	setNames := map[string]bool{}
	var notOrdinal []string
	if o.StatefulSet {
		for _, b := range v.Bookies {
			set, n, ok := ordinalOf(b.ID)
			if !ok {
				notOrdinal = append(notOrdinal, b.ID)
				continue
			}
			ordinals[b.ID] = n
			setNames[set] = true
		}
		if len(notOrdinal) > 0 || len(setNames) != 1 {
			return nil, fmt.Errorf("%w: --statefulset needs bookie ids that are one StatefulSet's pod host names (<set>-<ordinal>.<service>…:port, useHostNameAsBookieID=true); not: %s (sets %v)",
				ErrBadRemove, strings.Join(notOrdinal, ", "), slices.Sorted(maps.Keys(setNames)))
		}
	}
	byOrdinalDesc := func(ids []string) {
		sort.Slice(ids, func(i, j int) bool { return ordinals[ids[i]] > ordinals[ids[j]] })
	}
	if o.RemoveCount > 0 {
		ids := make([]string, 0, len(v.Bookies))
		for _, b := range v.Bookies {
			ids = append(ids, b.ID)
		}
		if o.StatefulSet {
			byOrdinalDesc(ids)
		} else {
			sort.Slice(ids, func(i, j int) bool {
				if a, b := toCopy(ids[i]), toCopy(ids[j]); a != b {
					return a < b
				}
				return ids[i] < ids[j]
			})
		}
		remove = ids[:o.RemoveCount]
	}
	gone := func(id string) bool { return slices.Contains(remove, id) }

	// Order: one bookie at a time.
	p := &Plan{Feasible: true}
	voters := map[string]bool{}
	for _, a := range v.AutoRecovery {
		voters[a] = true
	}
	if o.StatefulSet {
		byOrdinalDesc(remove)
		p.Order = "highest StatefulSet ordinal first: a StatefulSet's scale-in always removes its highest ordinals, one replica at a time"
	} else {
		sort.Slice(remove, func(i, j int) bool {
			if voters[remove[i]] != voters[remove[j]] {
				return !voters[remove[i]]
			}
			if a, b := toCopy(remove[i]), toCopy(remove[j]); a != b {
				return a < b
			}
			return remove[i] < remove[j]
		})
		p.Order = "the least data to copy first (the first gate proves the procedure soonest); bookies running an AutoRecovery process last"
	}
	p.Remove = remove
	check := func(name string, ok bool, detail string) {
		p.Checks = append(p.Checks, Check{Name: name, OK: ok, Detail: detail})
		p.Feasible = p.Feasible && ok
	}

	// What could not be read.
	dead := unregisteredNamed(v, "")
	for _, b := range slices.Sorted(maps.Keys(dead)) {
		cookie := "no cookie under <root>/cookies either"
		if slices.Contains(v.Cookies, b) {
			cookie = "its cookie is still there"
		}
		p.Refused = append(p.Refused, fmt.Sprintf("bookie %s is named by %d ledger segments but not registered (%s): it is down, or was removed without re-replication — start it again, or let AutoRecovery restore its ledgers, then plan", b, dead[b], cookie))
	}
	for _, b := range v.Bookies {
		switch {
		case b.Report != nil:
		case b.AgentError != "":
			p.Refused = append(p.Refused, fmt.Sprintf("agent report of %s (room on its ledger disks): %s", b.ID, b.AgentError))
		case !gone(b.ID):
			p.Refused = append(p.Refused, fmt.Sprintf("agent report of %s (room on its ledger disks): no agent for it (give --agents or --agent-url)", b.ID))
		}
	}
	if len(p.Refused) > 0 {
		p.Feasible = false
	}

	// Per segment: copies left, a replacement outside the ensemble, racks.
	racks := map[string]string{}
	groups := map[string][]string{}
	var remaining []string
	for _, b := range v.Bookies {
		racks[b.ID] = b.Rack
		groups[b.ID] = b.Groups
		if b.Writable && !gone(b.ID) {
			remaining = append(remaining, b.ID)
		}
	}
	lost := func(id string) bool { return gone(id) || known[id] == nil }
	stranded, unplaceable := 0, 0
	strandedLedgers := map[int64]bool{}
	risk := make([]StepRisk, len(remove))
	for i, id := range remove {
		risk[i] = StepRisk{Bookie: id, MinCopies: math.MaxInt}
	}
	for _, l := range v.Ledgers {
		for si, s := range l.Segments {
			sets := writeSets(l, si)
			if len(sets) == 0 {
				continue
			}
			issue := func(detail string, ws []string) SegmentIssue {
				return SegmentIssue{Ledger: l.ID, Segment: si, FirstEntry: s.FirstEntryID, Ensemble: s.Bookies,
					WriteQuorum: l.WriteQuorum, AckQuorum: l.AckQuorum, WriteSet: ws, Detail: detail, ManagedState: l.ManagedState}
			}
			// Copies left when every removed bookie is gone.
			for _, ws := range sets {
				left := 0
				for _, b := range ws {
					if !lost(b) {
						left++
					}
				}
				if left == 0 {
					stranded++
					strandedLedgers[l.ID] = true
					if len(p.Stranded) < maxIssues {
						p.Stranded = append(p.Stranded, issue(fmt.Sprintf("entries written to %s have no copy outside the removed bookies", strings.Join(ws, ",")), ws))
					}
					break
				}
			}
			// Copies meanwhile, per removal step.
			for i, id := range remove {
				if !slices.ContainsFunc(sets, func(ws []string) bool { return slices.Contains(ws, id) }) {
					continue
				}
				risk[i].Segments++
				minc := math.MaxInt
				for _, ws := range sets {
					if !slices.Contains(ws, id) {
						continue
					}
					c := 0
					for _, b := range ws {
						if b != id && known[b] != nil {
							c++
						}
					}
					minc = min(minc, c)
				}
				if minc == math.MaxInt {
					continue
				}
				risk[i].MinCopies = min(risk[i].MinCopies, minc)
				if minc < l.AckQuorum {
					risk[i].BelowAck++
				}
			}
			// Replacements: one distinct bookie outside the ensemble for
			// every removed member, within the segment's groups.
			// Removed bookies that store entries of the segment (one in
			// the ensemble but in no write set holds nothing of it, and
			// BookKeeper's decommission skips it too).
			var members []string
			for _, ws := range sets {
				for _, b := range ws {
					if gone(b) && !slices.Contains(members, b) {
						members = append(members, b)
					}
				}
			}
			if len(members) == 0 {
				continue
			}
			allowed, scope := placementScope(l, s.Bookies, remaining, groups)
			var cands []string
			for _, b := range allowed {
				if !slices.Contains(s.Bookies, b) {
					cands = append(cands, b)
				}
			}
			if len(cands) < len(members) {
				unplaceable++
				if len(p.Unplaceable) < maxIssues {
					p.Unplaceable = append(p.Unplaceable, issue(fmt.Sprintf("AutoRecovery needs %d writable bookie(s) outside the ensemble %s to replace %s; %s has %d: %s",
						len(members), scope, strings.Join(members, ","), scope, len(cands), dashList(cands)), nil))
				}
				continue
			}
			if v.Racks {
				if d := rackProblem(sets, members, cands, racks); d != "" {
					unplaceable++
					if len(p.Unplaceable) < maxIssues {
						p.Unplaceable = append(p.Unplaceable, issue(d, nil))
					}
				}
			}
		}
	}
	for i := range risk {
		if risk[i].MinCopies == math.MaxInt {
			risk[i].MinCopies = 0
		}
	}
	p.Risks = risk

	check("no ledger stranded", stranded == 0, func() string {
		if stranded == 0 {
			return "every entry of every ledger keeps a copy on a bookie that stays"
		}
		var names []string
		for i, s := range p.Stranded {
			if i == 10 {
				names = append(names, "…")
				break
			}
			names = append(names, s.String())
		}
		return fmt.Sprintf("%d segments of %d ledgers have entries whose every copy is on the bookies being removed (%s): remove fewer bookies in this plan, or offload or delete those ledgers first",
			stranded, len(strandedLedgers), strings.Join(names, "; "))
	}())
	check("a replacement outside each ensemble", unplaceable == 0, func() string {
		if unplaceable == 0 {
			return "every segment on a removed bookie has enough writable bookies outside its ensemble (within its isolation groups, and on another rack where racks are assigned) for AutoRecovery to copy to"
		}
		var names []string
		for i, s := range p.Unplaceable {
			if i == 5 {
				names = append(names, "…")
				break
			}
			names = append(names, s.String()+": "+s.Detail)
		}
		return fmt.Sprintf("%d segments could not be re-replicated, decommissionbookie would wait forever: %s", unplaceable, strings.Join(names, "; "))
	}())
	check("room for new ledgers", len(remaining) >= v.MaxEnsemble,
		fmt.Sprintf("%d writable bookies remain (%s); the largest ensemble in use is %d (ledger %d): brokers need E writable bookies to create a ledger",
			len(remaining), strings.Join(remaining, ", "), v.MaxEnsemble, v.MaxEnsembleOf))
	if v.Racks {
		all, after := map[string]bool{}, map[string]bool{}
		for _, b := range v.Bookies {
			if b.Writable {
				all[b.Rack] = true
				if !gone(b.ID) {
					after[b.Rack] = true
				}
			}
		}
		check("racks", len(after) >= 2 || v.MaxWrite < 2 || len(all) < 2,
			fmt.Sprintf("racks with writable bookies: %d before, %d after: rack-aware placement (Pulsar's /bookies) spreads a write quorum over two racks", len(all), len(after)))
	}
	check("nothing under-replicated now", len(v.UnderReplicated) == 0,
		fmt.Sprintf("%d ledgers are marked under-replicated (%s); finish their recovery first so every gate starts from zero", len(v.UnderReplicated), urList(v.UnderReplicated)))
	check("AutoRecovery enabled", !v.AutoRecoveryDisabled, "with <ledgers root>/underreplication/disable present AutoRecovery copies nothing (bookkeeper shell autorecovery -enable)")
	if v.Auditor == "" {
		check("auditor elected", false, "no AutoRecovery process votes under <ledgers root>/underreplication/auditorelection, so no auditor marks the bookie's ledgers and nobody copies them (decommissionbookie gives up at once: 'No auditor elected'). Run AutoRecovery (the chart's autorecovery pods, or autoRecoveryDaemonEnabled=true on the bookies)")
	} else {
		var staying []string
		for _, a := range v.AutoRecovery {
			if !gone(a) {
				staying = append(staying, a)
			}
		}
		delay := ""
		if v.LostBookieRecoveryDelay > 0 {
			delay = fmt.Sprintf("; lostBookieRecoveryDelay %d s: the auditor marks a stopped bookie's ledgers that long after it went (decommissionbookie's audit trigger does not wait)", v.LostBookieRecoveryDelay)
		}
		check("auditor elected", true, fmt.Sprintf("auditor %s; %d AutoRecovery processes (%s)%s", v.Auditor, len(v.AutoRecovery), strings.Join(v.AutoRecovery, ", "), delay))
		check("AutoRecovery outlives the removal", len(staying) > 0,
			fmt.Sprintf("AutoRecovery processes not on a removed bookie: %s (one on a bookie that is removed stops with it; the next vote becomes auditor)", dashList(staying)))
	}
	if o.StatefulSet {
		all := make([]string, 0, len(v.Bookies))
		for _, b := range v.Bookies {
			all = append(all, b.ID)
		}
		byOrdinalDesc(all)
		top := all[:len(remove)]
		var wrong []string
		for _, id := range remove {
			if !slices.Contains(top, id) {
				wrong = append(wrong, id)
			}
		}
		check("StatefulSet ordinals", len(wrong) == 0, fmt.Sprintf("a StatefulSet scale-in removes ordinals %s (%s); %s",
			ordinalList(top, ordinals), strings.Join(top, ", "), map[bool]string{true: "the plan removes exactly those, highest first",
				false: "not " + strings.Join(wrong, ", ") + ": scaling the StatefulSet down would stop other bookies than the plan's"}[len(wrong) == 0]))
	}

	// Data on the removed bookies.
	var total, offloaded, offloadable Share
	for _, id := range remove {
		d := data[id]
		p.Data = append(p.Data, *d)
		total.Ledgers += d.Total.Ledgers
		total.Bytes += d.Total.Bytes
		offloaded.Ledgers += d.Offloaded.Ledgers
		offloaded.Bytes += d.Offloaded.Bytes
		offloadable.Ledgers += d.Offloadable.Ledgers
		offloadable.Bytes += d.Offloadable.Bytes
	}

	// Capacity of the remaining bookies (their agents' reports).
	var head float64
	reported := 0
	for _, id := range remaining {
		if b := known[id]; b.Report != nil {
			head += b.Report.LedgerWarnHeadroomBytes
			reported++
		}
	}
	if reported == len(remaining) && reported > 0 {
		detail := fmt.Sprintf("their ledger disks can take %s before diskUsageWarnThreshold; %s would be copied (%s after deleting the offloaded copies)",
			units.HumanBytes(head), units.HumanBytes(total.Bytes), units.HumanBytes(total.Bytes-offloaded.Bytes))
		fits := head >= total.Bytes-offloaded.Bytes
		if fits && head < total.Bytes {
			p.OffloadFirst = true
			detail += ": only without the offloaded ledgers' BookKeeper copies, so deleting them first is required"
		}
		check("room on the remaining bookies", fits, detail)
	} else {
		check("room on the remaining bookies", false,
			fmt.Sprintf("not known: %d of %d remaining bookies have an agent report", reported, len(remaining)))
	}

	// Estimates.
	rate, basis := o.RereplicationRate, "given"
	if rate <= 0 {
		rate, basis = measuredRate(known, remaining, o.Workers)
	}
	est := func(s Share) Estimate {
		byBytes := s.Bytes / rate
		byLedgers := float64(s.Ledgers) * o.PerLedgerSeconds / float64(o.Workers)
		return Estimate{Seconds: math.Max(byBytes, byLedgers), Bytes: s.Bytes, Ledgers: s.Ledgers,
			Basis: fmt.Sprintf("max(%s ÷ %s = %.0f s, %d ledgers × %.2f s ÷ %d workers = %.0f s); rate %s",
				units.HumanBytes(s.Bytes), units.DecimalRate(rate), byBytes, s.Ledgers, o.PerLedgerSeconds, o.Workers, byLedgers, basis)}
	}
	p.AsIs = est(total)
	p.AfterOffload = est(Share{Ledgers: total.Ledgers - offloaded.Ledgers - offloadable.Ledgers, Bytes: total.Bytes - offloaded.Bytes - offloadable.Bytes})
	p.steps(v, known, o, ordinals, data, offloaded, offloadable)
	return p, nil
}

// writeSets returns the distinct write sets (bookie ids) of the entries of
// segment si of l: entry e goes to ensemble positions (e+k) mod E, k < W.
// A segment without entries has none; an open ledger's last segment is
// taken as holding entries.
func writeSets(l Ledger, si int) [][]string {
	s := l.Segments[si]
	e := len(s.Bookies)
	w := min(l.WriteQuorum, e)
	if e == 0 || w <= 0 {
		return nil
	}
	var n int64 = math.MaxInt64
	closed := l.State == metadata.StateClosed.String()
	if si+1 < len(l.Segments) {
		n = l.Segments[si+1].FirstEntryID - s.FirstEntryID
	} else if closed {
		n = l.LastEntryID + 1 - s.FirstEntryID
	}
	if n <= 0 {
		return nil
	}
	var out [][]string
	for k := int64(0); k < min(n, int64(e)); k++ {
		start := (s.FirstEntryID + k) % int64(e)
		ws := make([]string, 0, w)
		for j := 0; j < w; j++ {
			ws = append(ws, s.Bookies[(start+int64(j))%int64(e)])
		}
		out = append(out, ws)
	}
	return out
}

// placementScope returns the remaining writable bookies AutoRecovery may
// place a replacement of the segment on, and how that was decided:
// Pulsar's isolation placement excludes the bookies of every group but
// the ledger's (recorded in its custom metadata; else, when every bookie
// of the ensemble shares groups, those), falling back to the secondary
// groups when the primary ones have fewer bookies than the ensemble.
func placementScope(l Ledger, ensemble, remaining []string, groups map[string][]string) ([]string, string) {
	primary, secondary, how := []string(nil), []string(nil), ""
	if l.Isolation != nil {
		primary, secondary = l.Isolation.Primary, l.Isolation.Secondary
		how = "of the ledger's isolation groups " + strings.Join(primary, ",")
	} else {
		var common []string
		for i, b := range ensemble {
			if i == 0 {
				common = slices.Clone(groups[b])
				continue
			}
			common = slices.DeleteFunc(common, func(g string) bool { return !slices.Contains(groups[b], g) })
		}
		if len(common) == 0 {
			return remaining, "of the cluster"
		}
		primary = common
		how = "of the ensemble's group " + strings.Join(common, ",")
	}
	in := func(b string, gs []string) bool {
		for _, g := range groups[b] {
			if slices.Contains(gs, g) {
				return true
			}
		}
		return false
	}
	pick := func(gs []string) []string {
		var out []string
		for _, b := range remaining {
			if len(groups[b]) == 0 || in(b, gs) {
				out = append(out, b)
			}
		}
		return out
	}
	inPrimary := 0
	for _, b := range remaining {
		if in(b, primary) {
			inPrimary++
		}
	}
	if inPrimary < len(ensemble) && len(secondary) > 0 {
		return pick(append(slices.Clone(primary), secondary...)), how + " (with secondary " + strings.Join(secondary, ",") + ")"
	}
	return pick(primary), how
}

// rackProblem says why no candidate keeps a write set on as many racks
// (up to two) as it spans now, or "".
func rackProblem(sets [][]string, members, cands []string, racks map[string]string) string {
	for _, ws := range sets {
		before := map[string]bool{}
		for _, b := range ws {
			before[racks[b]] = true
		}
		want := min(2, len(before))
		if want < 2 {
			continue
		}
		for _, m := range members {
			if !slices.Contains(ws, m) {
				continue
			}
			ok := false
			for _, c := range cands {
				after := map[string]bool{racks[c]: true}
				for _, b := range ws {
					if b != m {
						after[racks[b]] = true
					}
				}
				if len(after) >= want {
					ok = true
					break
				}
			}
			if !ok {
				return fmt.Sprintf("no candidate outside the ensemble keeps write set %s on two racks once %s is replaced (candidates %s all on the rack of the others)",
					strings.Join(ws, ","), m, strings.Join(cands, ","))
			}
		}
	}
	return ""
}

func dashList(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

func ordinalList(ids []string, ordinals map[string]int) string {
	var out []string
	for _, id := range ids {
		out = append(out, strconv.Itoa(ordinals[id]))
	}
	return strings.Join(out, ", ")
}

// measuredRate is the copy rate from the remaining bookies' agents: a
// share of the slowest sustained ledger-disk rate, per worker.
func measuredRate(known map[string]*Bookie, remaining []string, workers int) (float64, string) {
	slowest := math.Inf(1)
	from := ""
	for _, id := range remaining {
		rec := known[id].Recommendation
		if rec == nil {
			continue
		}
		for _, d := range rec.Disks {
			if d.Role == "ledger" && d.PeakBytesPerSec > 0 && d.PeakBytesPerSec < slowest {
				slowest, from = d.PeakBytesPerSec, id
			}
		}
	}
	if math.IsInf(slowest, 1) {
		return DefaultRereplicationRate, fmt.Sprintf("assumed %s (no agent measurement; give --rereplication-rate)", units.DecimalRate(DefaultRereplicationRate))
	}
	r := slowest * rereplicationDiskShare * float64(workers)
	return r, fmt.Sprintf("%.0f%% of %s's measured sustained ledger-disk rate %s × %d workers", rereplicationDiskShare*100, from, units.DecimalRate(slowest), workers)
}

// dataOf sums a bookie's ledgers by where their data also is.
func dataOf(v *View, id string) *BookieData {
	d := &BookieData{Bookie: id}
	topics := map[string]float64{}
	for _, l := range v.Ledgers {
		b, in, ok := l.BytesOn(id)
		if !in {
			continue
		}
		d.Total.Ledgers++
		d.Total.Bytes += b
		if !ok {
			d.OpenLedgers++
		}
		switch l.ManagedState {
		case "offloaded", "offloaded-bk-deleted":
			d.Offloaded.Ledgers++
			d.Offloaded.Bytes += b
		case "bookkeeper":
			d.Offloadable.Ledgers++
			d.Offloadable.Bytes += b
			topics[l.Topic] += b
		default:
			d.MustCopy.Ledgers++
			d.MustCopy.Bytes += b
		}
	}
	for t := range topics {
		d.Topics = append(d.Topics, t)
	}
	sort.Slice(d.Topics, func(i, j int) bool {
		if topics[d.Topics[i]] != topics[d.Topics[j]] {
			return topics[d.Topics[i]] > topics[d.Topics[j]]
		}
		return d.Topics[i] < d.Topics[j]
	})
	if len(d.Topics) > 20 {
		d.Topics = d.Topics[:20]
	}
	return d
}

func urList(us []UnderReplicated) string {
	var parts []string
	for i, u := range us {
		if i == 10 {
			parts = append(parts, "…")
			break
		}
		parts = append(parts, fmt.Sprintf("%d missing %s", u.Ledger, strings.Join(u.Replicas, "+")))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

func (p *Plan) steps(v *View, known map[string]*Bookie, o PlanOptions, ordinals map[string]int, data map[string]*BookieData, offloaded, offloadable Share) {
	httpOf := func(id string) string {
		if b := known[id]; b != nil && b.HTTP != "" {
			return b.HTTP
		}
		return net.JoinHostPort(hostOf(id), strconv.Itoa(o.HTTPPort))
	}
	var ro, rw []string
	for _, id := range p.Remove {
		note := ""
		if b := known[id]; b == nil || b.HTTP == "" {
			note = "   # its registration publishes no HTTP endpoint: port assumed; the bookie needs httpServerEnabled=true"
		}
		ro = append(ro, fmt.Sprintf("curl -sf -X PUT -H 'Content-Type: application/json' -d '{\"readOnly\":true}' http://%s/api/v1/bookie/state/readonly%s", httpOf(id), note))
		rw = append(rw, fmt.Sprintf("curl -sf -X PUT -H 'Content-Type: application/json' -d '{\"readOnly\":false}' http://%s/api/v1/bookie/state/readonly", httpOf(id)))
	}
	p.Steps = []Step{
		{Title: "Check", Why: "every check above must pass; the plan removes one bookie at a time, in the order given, and runs the next step only once the previous one's gate holds"},
		{Title: "Set every bookie to be removed read-only", Commands: ro,
			Why: "brokers and AutoRecovery then place no new data on them, so no copy lands on a bookie that leaves later; they keep serving reads (needs httpServerEnabled, which the Pulsar chart sets)"},
	}
	set := ""
	for id := range ordinals {
		set, _, _ = ordinalOf(id)
		break
	}
	if o.StatefulSet && set != "" {
		// The scale-down below must keep the PVC (rollback and
		// decommission need the disk) and stop the bookie it names.
		p.Steps[0].Commands = append(p.Steps[0].Commands,
			fmt.Sprintf("kubectl get statefulset %s -o jsonpath='{.spec.persistentVolumeClaimRetentionPolicy.whenScaled} {.spec.ordinals.start}'   # must print Retain (or nothing) and 0 (or nothing): with whenScaled Delete the scale-down deletes the bookie's PVC before decommissionbookie has copied its data, and with another first ordinal --replicas stops other pods", set))
	}
	if offloaded.Ledgers > 0 || offloadable.Ledgers > 0 {
		topics := map[string]bool{}
		for _, id := range p.Remove {
			for _, t := range data[id].Topics {
				topics[t] = true
			}
		}
		for _, l := range v.Ledgers {
			if (l.ManagedState == "offloaded") && l.Topic != "" {
				for _, s := range l.Segments {
					if slices.ContainsFunc(p.Remove, func(id string) bool { return slices.Contains(s.Bookies, id) }) {
						topics[l.Topic] = true
					}
				}
			}
		}
		var cmds []string
		for i, t := range slices.Sorted(maps.Keys(topics)) {
			if i == 20 {
				cmds = append(cmds, fmt.Sprintf("… %d more topics", len(topics)-20))
				break
			}
			cmds = append(cmds, fmt.Sprintf("offloader offload --zk %s --store <store.yaml> --admin-url <broker admin URL> --delete-bookkeeper %s", o.ZK, t))
		}
		title := "Move data out of BookKeeper first (optional)"
		if p.OffloadFirst {
			title = "Move data out of BookKeeper first (required: the remaining bookies cannot take the offloaded ledgers' copies too)"
		}
		p.Steps = append(p.Steps, Step{Title: title, Commands: cmds,
			Why: fmt.Sprintf("%d ledgers (%s) on these bookies are offloaded already and %d more (%s) are closed and could be: offloading them and deleting their BookKeeper copies (--delete-bookkeeper, after the broker has reloaded the topic) leaves %s to re-replicate instead of %s",
				offloaded.Ledgers, units.HumanBytes(offloaded.Bytes), offloadable.Ledgers, units.HumanBytes(offloadable.Bytes),
				units.HumanBytes(p.AfterOffload.Bytes), units.HumanBytes(p.AsIs.Bytes))})
	}
	for k, id := range p.Remove {
		r := p.Risks[k]
		stop := fmt.Sprintf("stop the bookie %s and keep its disk (systemctl stop / kill the bookie process; a pod: delete it without its volume)", id)
		if o.StatefulSet {
			stop = fmt.Sprintf("kubectl scale statefulset %s --replicas=%d   # stops ordinal %d (%s); its PVC stays", set, ordinals[id], ordinals[id], id)
		}
		d := data[id]
		p.Steps = append(p.Steps, Step{
			Title:  fmt.Sprintf("Remove %s (%d of %d)", id, k+1, len(p.Remove)),
			Bookie: id,
			Why: fmt.Sprintf("%d ledgers, %s on it; decommissionbookie refuses a registered bookie, triggers an audit, waits until no ledger's ensemble names it any more (AutoRecovery copies each fragment from the other copies to a bookie outside the ensemble), then deletes its cookie",
				d.Total.Ledgers, units.HumanBytes(d.Total.Bytes)),
			Commands: []string{
				stop,
				"bin/bookkeeper shell decommissionbookie -bookieid " + id,
				fmt.Sprintf("# or from Java: new BookKeeperAdmin(clientConf).decommissionBookie(BookieId.parse(%q)), then delete the cookie <root>/cookies/%s as the shell does", id, id),
			},
			Watch: []string{
				fmt.Sprintf("bytes left: bookieagent cluster --zk %s --gate %s (the ledgers and bytes whose ensembles still name it, from the metadata; it falls as AutoRecovery works)", o.ZK, id),
				fmt.Sprintf("meanwhile %d segments keep at least %d copies; %d of them are below their ack quorum until re-replicated (reads are served from the other copies; an open ledger's writer replaces the bookie itself)", r.Segments, r.MinCopies, r.BelowAck),
				"ZooKeeper load: echo mntr | nc <zk host> 2181 (zk_outstanding_requests, zk_avg_latency): AutoRecovery reads and rewrites the metadata of every ledger it copies",
				"the remaining bookies' load: their agents' tierkeeper_bookieagent_disk_io_time_seconds_total rate and tierkeeper_bookieagent_bookie_ledger_headroom_bytes, and the brokers' add latency",
			},
			Gate: []string{
				fmt.Sprintf("bookieagent cluster --zk %s --gate %s exits 0: no ledger names it, nothing under-replicated, an auditor elected and AutoRecovery running and enabled, the bookie unregistered and its cookie deleted", o.ZK, id),
				"decommissionbookie has returned successfully (the cookie's deletion is its last act)",
				fmt.Sprintf("only then reclaim %s's disk (delete its PVC or wipe it) and go on", id),
			},
		})
	}
	p.Rollback = []string{
		"Before a bookie's decommissionbookie has finished: stop the running decommissionbookie (Ctrl-C, or kill its JVM; it deletes the cookie only at its end), then start the bookie again with its disk" +
			map[bool]string{true: " (kubectl scale the StatefulSet back up by one: the PVC is still there)", false: ""}[o.StatefulSet] +
			": it registers with its cookie and serves its ledgers; AutoRecovery stops copying them. Copies made meanwhile are extra; the bookies' GC removes over-replicated ledgers after gcOverreplicatedLedgerWaitTime (1 day).",
		"Once its cookie is deleted OR its disk is wiped — either suffices — that bookie cannot come back with its data: BookKeeper refuses to start when the directories hold a cookie the metadata store lacks, or the metadata store holds a cookie for empty directories. Its ledgers are re-replicated already; add capacity back as a new bookie (empty disk, no cookie under <ledgers root>/cookies).",
		"Set the bookies not yet removed writable again: " + strings.Join(rw, " ; "),
	}
}
