package cluster

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/tierkeeper/tierkeeper/bookieagent"
	"github.com/tierkeeper/tierkeeper/internal/units"
)

// WriteText writes the view, the merged configuration (when m is not nil),
// the plan (p), the fleet's running configuration (d) and a gate (g), each
// when not nil, for a person to read.
func WriteText(w io.Writer, v *View, m *Merged, p *Plan, d *Drift, g *Gate) error {
	var out strings.Builder
	ew := printer{&out}
	if v.LedgerCount > 0 || len(v.Bookies) > 0 {
		writable, ro := 0, 0
		for _, b := range v.Bookies {
			if b.Writable {
				writable++
			} else {
				ro++
			}
		}
		ml := "not read"
		if v.ManagedLedgers >= 0 {
			ml = fmt.Sprintf("%d", v.ManagedLedgers)
		}
		ew.printf("cluster: %d bookies (%d writable, %d read-only), %d ledgers, largest ensemble/write/ack quorum %d/%d/%d (ledger %d), %s managed ledgers\n",
			len(v.Bookies), writable, ro, v.LedgerCount, v.MaxEnsemble, v.MaxWrite, v.MaxAck, v.MaxEnsembleOf, ml)
		auditor := "none elected"
		if v.Auditor != "" {
			auditor = fmt.Sprintf("%s (%d processes: %s)", v.Auditor, len(v.AutoRecovery), strings.Join(v.AutoRecovery, ", "))
		}
		ew.printf("AutoRecovery: %d ledgers under-replicated, disabled %v, auditor %s; racks assigned: %v\n",
			len(v.UnderReplicated), v.AutoRecoveryDisabled, auditor, v.Racks)
		var b strings.Builder
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "BOOKIE\tSTATE\tRACK\tGROUPS\tLEDGERS\tBYTES\tOFFLOADED\tOFFLOADABLE\tMUST COPY\tAGENT")
		for _, bk := range v.Bookies {
			st := "writable"
			if bk.ReadOnly {
				st = "read-only"
			}
			d := dataOf(v, bk.ID)
			agent := "-"
			switch {
			case bk.AgentError != "":
				agent = "error"
			case bk.Agent != "":
				agent = bk.Agent
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", bk.ID, st, dash(bk.Rack), dash(strings.Join(bk.Groups, ",")), d.Total.Ledgers, units.HumanBytes(d.Total.Bytes),
				units.HumanBytes(d.Offloaded.Bytes), units.HumanBytes(d.Offloadable.Bytes), units.HumanBytes(d.MustCopy.Bytes), agent)
		}
		tw.Flush()
		ew.printf("%s", b.String())
	}
	for _, e := range v.Errors {
		ew.printf("error: %s\n", e)
	}
	if m != nil {
		ew.printf("\nmerged configuration over %d nodes (%s)", len(m.Nodes), strings.Join(m.Nodes, ", "))
		if len(m.Skipped) > 0 {
			ew.printf("; no recommendation from %s", strings.Join(m.Skipped, ", "))
		}
		ew.printf(":\n")
		var b strings.Builder
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		for _, s := range m.Settings {
			d := ""
			if len(s.Differs) > 0 {
				d = "differs on " + strings.Join(s.Differs, ",")
			}
			if s.Live != "" {
				d = strings.TrimPrefix(d+"; ", "; ") + fmt.Sprintf("new bookies only: live bookies keep their cookies' %d", bookieagent.DirCount(s.Live))
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", s.Key, dash(s.Value), s.How, d)
		}
		tw.Flush()
		ew.printf("%s", b.String())
	}
	if p != nil {
		verdict := "FEASIBLE"
		switch {
		case len(p.Refused) > 0:
			verdict = "REFUSED: the cluster could not be read completely"
		case !p.Feasible:
			verdict = "NOT FEASIBLE"
		}
		ew.printf("\nscale-in of %s, one at a time in this order: %s\n  order: %s\n", strings.Join(p.Remove, ", "), verdict, p.Order)
		for _, r := range p.Refused {
			ew.printf("  MISSING %s\n", r)
		}
		ew.checks(p.Checks)
		for _, s := range p.Stranded {
			owner := ""
			if s.ManagedState != "" && s.ManagedState != "none" {
				owner = " (managed ledger state " + s.ManagedState + ")"
			}
			ew.printf("  stranded: %s, W=%d A=%d, %s%s\n", s, s.WriteQuorum, s.AckQuorum, s.Detail, owner)
		}
		for _, s := range p.Unplaceable {
			ew.printf("  no replacement: %s: %s\n", s, s.Detail)
		}
		for _, d := range p.Data {
			ew.printf("  %s holds %d ledgers, %s: offloaded %d (%s, BK copies can be deleted), offloadable %d (%s), must copy %d (%s), %d open (size unknown)\n",
				d.Bookie, d.Total.Ledgers, units.HumanBytes(d.Total.Bytes), d.Offloaded.Ledgers, units.HumanBytes(d.Offloaded.Bytes),
				d.Offloadable.Ledgers, units.HumanBytes(d.Offloadable.Bytes), d.MustCopy.Ledgers, units.HumanBytes(d.MustCopy.Bytes), d.OpenLedgers)
			if len(d.Topics) > 0 {
				ew.printf("    topics to offload first: %s\n", strings.Join(d.Topics, ", "))
			}
		}
		ew.printf("  estimate as is: %s (%s)\n", dur(p.AsIs.Seconds), p.AsIs.Basis)
		ew.printf("  estimate after offloading first: %s (%s)\n", dur(p.AfterOffload.Seconds), p.AfterOffload.Basis)
		for i, s := range p.Steps {
			ew.printf("  %d. %s — %s\n", i+1, s.Title, s.Why)
			for _, c := range s.Commands {
				ew.printf("       %s\n", c)
			}
			for _, c := range s.Watch {
				ew.printf("     watch: %s\n", c)
			}
			for _, c := range s.Gate {
				ew.printf("     gate: %s\n", c)
			}
		}
		ew.printf("  rollback:\n")
		for _, r := range p.Rollback {
			ew.printf("    - %s\n", r)
		}
	}
	if d != nil {
		ew.printf("\nrunning configuration of %d bookies (%s)", len(d.Bookies), strings.Join(d.Bookies, ", "))
		if len(d.FromAgent) > 0 {
			ew.printf("; from the agent's conf: %s", strings.Join(d.FromAgent, ", "))
		}
		ew.printf("\n")
		for _, id := range slices.Sorted(maps.Keys(d.Unread)) {
			ew.printf("  not read: %s: %s\n", id, d.Unread[id])
		}
		diff := d.Differing()
		if len(diff) == 0 {
			ew.printf("  every compared key (%d) is the same on every bookie and as recommended\n", len(d.Keys))
		}
		var b strings.Builder
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		for _, k := range diff {
			var parts []string
			if k.Recommended != "" && len(k.OffRecommendation) > 0 {
				parts = append(parts, fmt.Sprintf("not the recommended %s on %s", k.Recommended, strings.Join(k.OffRecommendation, ",")))
			}
			if len(k.Values) > 0 {
				var vs []string
				for _, val := range slices.Sorted(maps.Keys(k.Values)) {
					ids := k.Values[val]
					shown := k.Bookies[ids[0]].Value
					if isDirKey(k.Key) {
						shown = val
					}
					src := k.Bookies[ids[0]].Source
					vs = append(vs, fmt.Sprintf("%s (%s) on %s", shown, src, strings.Join(ids, ",")))
				}
				parts = append(parts, "bookies differ: "+strings.Join(vs, "; "))
			}
			fmt.Fprintf(tw, "  %s\t%s\n", k.Key, strings.Join(parts, "; "))
		}
		tw.Flush()
		ew.printf("%s", b.String())
	}
	if g != nil {
		verdict := "PASSED"
		if !g.Passed {
			verdict = "NOT YET"
		}
		ew.printf("\ngate after removing %s: %s (%d ledgers, %s left on it)\n", g.Bookie, verdict, g.LedgersLeft, units.HumanBytes(g.BytesLeft))
		ew.checks(g.Checks)
	}
	_, err := io.WriteString(w, out.String())
	return err
}

// printer formats into a builder, which cannot fail.
type printer struct{ b *strings.Builder }

func (p printer) printf(format string, a ...any) { fmt.Fprintf(p.b, format, a...) }

// checks prints one line per check, marked ok or FAIL.
func (p printer) checks(cs []Check) {
	for _, c := range cs {
		mark := "ok  "
		if !c.OK {
			mark = "FAIL"
		}
		p.printf("  %s %s: %s\n", mark, c.Name, c.Detail)
	}
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func dur(sec float64) string {
	return time.Duration(sec * float64(time.Second)).Round(time.Second).String()
}
