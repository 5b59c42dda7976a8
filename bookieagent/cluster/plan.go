package cluster

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

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
	// Remove names the bookies to remove; or RemoveCount picks that many,
	// those with the fewest bytes that must be copied.
	Remove      []string
	RemoveCount int
	// RereplicationRate is the copy rate in bytes/s. Zero: measured — a
	// share of the slowest remaining bookie's sustained ledger-disk rate
	// (its agent's recommendation) per worker — else
	// DefaultRereplicationRate.
	RereplicationRate float64
	// Workers is the number of AutoRecovery replication workers
	// (autorecovery pods, or bookies with autoRecoveryDaemonEnabled).
	// Default 1.
	Workers int
	// PerLedgerSeconds is the per-ledger overhead. Default
	// DefaultPerLedgerSeconds.
	PerLedgerSeconds float64
	// HTTPPort is the bookies' HTTP port for the read-only step. Default 8000.
	HTTPPort int
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
	Title    string   `json:"title"`
	Why      string   `json:"why"`
	Commands []string `json:"commands,omitempty"`
}

// Plan is a scale-in plan.
type Plan struct {
	Remove   []string     `json:"remove"`
	Feasible bool         `json:"feasible"`
	Checks   []Check      `json:"checks"`
	Data     []BookieData `json:"data"`
	// AsIs copies everything; AfterOffload first deletes the offloaded
	// ledgers' BookKeeper copies and offloads the offloadable ones.
	AsIs         Estimate `json:"estimate_as_is"`
	AfterOffload Estimate `json:"estimate_after_offload"`
	Steps        []Step   `json:"steps"`
	Rollback     string   `json:"rollback"`
}

// PlanScaleIn plans removing bookies from the cluster of v.
func PlanScaleIn(v *View, o PlanOptions) (*Plan, error) {
	if o.Workers <= 0 {
		o.Workers = 1
	}
	if o.PerLedgerSeconds <= 0 {
		o.PerLedgerSeconds = DefaultPerLedgerSeconds
	}
	if o.HTTPPort <= 0 {
		o.HTTPPort = 8000
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
	case o.RemoveCount >= len(v.Bookies):
		return nil, fmt.Errorf("%w: removing %d of %d bookies", ErrBadRemove, o.RemoveCount, len(v.Bookies))
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
	data := map[string]*BookieData{}
	for _, b := range v.Bookies {
		data[b.ID] = dataOf(v, b.ID)
	}
	if o.RemoveCount > 0 {
		ids := make([]string, 0, len(v.Bookies))
		for _, b := range v.Bookies {
			ids = append(ids, b.ID)
		}
		sort.Slice(ids, func(i, j int) bool {
			a, b := data[ids[i]].MustCopy.Bytes+data[ids[i]].Offloadable.Bytes, data[ids[j]].MustCopy.Bytes+data[ids[j]].Offloadable.Bytes
			if a != b {
				return a < b
			}
			return ids[i] < ids[j]
		})
		remove = ids[:o.RemoveCount]
	}
	sort.Strings(remove)
	p := &Plan{Remove: remove, Feasible: true}
	gone := func(id string) bool { return slices.Contains(remove, id) }

	// Checks.
	var remaining []string
	for _, b := range v.Bookies {
		if b.Writable && !gone(b.ID) {
			remaining = append(remaining, b.ID)
		}
	}
	check := func(name string, ok bool, detail string) {
		p.Checks = append(p.Checks, Check{Name: name, OK: ok, Detail: detail})
		p.Feasible = p.Feasible && ok
	}
	check("quorum", len(remaining) >= v.MaxEnsemble,
		fmt.Sprintf("%d writable bookies remain (%s); the largest ensemble in use is %d (ledger %d), write quorum %d, ack quorum %d: AutoRecovery replaces a removed bookie by one outside the ensemble, so it needs at least E writable bookies (and so do brokers creating ledgers with E=%d)",
			len(remaining), strings.Join(remaining, ", "), v.MaxEnsemble, v.MaxEnsembleOf, v.MaxWrite, v.MaxAck, v.MaxEnsemble))
	if v.Racks {
		racks, after := map[string]int{}, map[string]int{}
		for _, b := range v.Bookies {
			if !b.Writable {
				continue
			}
			racks[b.Rack]++
			if !gone(b.ID) {
				after[b.Rack]++
			}
		}
		var lost []string
		for r := range racks {
			if after[r] == 0 {
				lost = append(lost, r)
			}
		}
		sort.Strings(lost)
		ok := len(after) >= 2 || v.MaxWrite < 2
		d := fmt.Sprintf("racks with writable bookies: %d before, %d after", len(racks), len(after))
		if len(lost) > 0 {
			d += "; no bookie left in " + strings.Join(lost, ", ")
		}
		check("racks", ok, d+": rack-aware placement (Pulsar's /bookies) needs two racks for a write quorum of 2 or more")
	}
	check("nothing under-replicated now", len(v.UnderReplicated) == 0,
		fmt.Sprintf("%d ledgers are marked under-replicated (%s); finish their recovery first so the plan's figures hold", len(v.UnderReplicated), urList(v.UnderReplicated)))
	check("AutoRecovery enabled", !v.AutoRecoveryDisabled, "with <ledgers root>/underreplication/disable present AutoRecovery copies nothing (bookkeeper shell autorecovery -enable)")
	if !v.AuditorElected {
		p.Checks = append(p.Checks, Check{Name: "auditor elected", OK: true, Detail: "no auditor is elected now (no AutoRecovery process running?); decommissionbookie triggers an audit itself, but replication needs AutoRecovery running"})
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
		check("room on the remaining bookies", head >= total.Bytes-offloaded.Bytes,
			fmt.Sprintf("their ledger disks can take %s before diskUsageWarnThreshold; %s would be copied (%s after deleting the offloaded copies)",
				units.HumanBytes(head), units.HumanBytes(total.Bytes), units.HumanBytes(total.Bytes-offloaded.Bytes)))
	} else {
		p.Checks = append(p.Checks, Check{Name: "room on the remaining bookies", OK: true,
			Detail: fmt.Sprintf("not checked: %d of %d remaining bookies have an agent report", reported, len(remaining))})
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
	p.steps(remove, o, total, offloaded, offloadable)
	return p, nil
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

func (p *Plan) steps(remove []string, o PlanOptions, total, offloaded, offloadable Share) {
	var ro, stop, dec []string
	for _, id := range remove {
		ro = append(ro, fmt.Sprintf("curl -X PUT -H 'Content-Type: application/json' -d '{\"readOnly\":true}' http://%s:%d/api/v1/bookie/state/readonly", hostOf(id), o.HTTPPort))
		stop = append(stop, fmt.Sprintf("stop the bookie %s (with the Pulsar chart: kubectl scale statefulset <release>-bookie --replicas=<n-%d> — a StatefulSet removes its highest ordinals, so plan those bookies)", id, len(remove)))
		dec = append(dec, "bin/bookkeeper shell decommissionbookie -bookieid "+id)
	}
	p.Steps = []Step{
		{Title: "Check", Why: "the checks above must pass: enough writable bookies for the largest ensemble, racks, nothing under-replicated, AutoRecovery enabled, room on the remaining disks"},
		{Title: "Set the bookies read-only", Commands: ro,
			Why: "brokers stop placing new ledgers there; existing data stays readable (needs httpServerEnabled, which the chart sets)"},
	}
	if offloaded.Ledgers > 0 || offloadable.Ledgers > 0 {
		p.Steps = append(p.Steps, Step{Title: "Move data out of BookKeeper first",
			Why: fmt.Sprintf("%d ledgers (%s) on these bookies are offloaded already: delete their BookKeeper copies (offloader offload --trim, or the broker's offload deletion lag) instead of re-replicating them; %d more (%s) are closed and could be offloaded first (offloader offload, or a disk-pressure policy for these bookies). Re-replication then copies %s instead of %s",
				offloaded.Ledgers, units.HumanBytes(offloaded.Bytes), offloadable.Ledgers, units.HumanBytes(offloadable.Bytes),
				units.HumanBytes(total.Bytes-offloaded.Bytes-offloadable.Bytes), units.HumanBytes(total.Bytes)),
			Commands: []string{"offloader offload --trim <topics with ledgers on these bookies>"}})
	}
	p.Steps = append(p.Steps,
		Step{Title: "Stop the bookies", Commands: stop,
			Why: "decommissionbookie refuses a bookie that is still registered (writable or read-only)"},
		Step{Title: "Decommission", Commands: dec,
			Why: "triggers an audit, waits until every ledger of the bookie is re-replicated by AutoRecovery, then deletes its cookie (<ledgers root>/cookies/<id>)"},
		Step{Title: "Check AutoRecovery", Commands: []string{"bin/bookkeeper shell listunderreplicated", "bookieagent cluster --zk <zk> (nothing under-replicated)"},
			Why: "no ledger may stay listed under <ledgers root>/underreplication/ledgers with these bookies as missing replicas"},
		Step{Title: "Reclaim the disks", Why: "only after the checks: delete the PVCs (or wipe the disks)"},
	)
	p.Rollback = "Until decommissionbookie has deleted the cookie and the disk is wiped, start the bookie again with its disk: it registers with its cookie, serves its ledgers, and AutoRecovery stops (ledgers already copied are over-replicated; the bookies' GC removes the extra copies after gcOverreplicatedLedgerWaitTime, 1 day). Set it writable with the same HTTP call and {\"readOnly\":false}."
}
