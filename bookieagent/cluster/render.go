package cluster

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/tierkeeper/tierkeeper/internal/units"
)

// WriteText writes the view, the merged configuration (when m is not nil)
// and the plan (when p is not nil) for a person to read.
func WriteText(w io.Writer, v *View, m *Merged, p *Plan) error {
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
		ew.printf("AutoRecovery: %d ledgers under-replicated, disabled %v, auditor elected %v; racks assigned: %v\n",
			len(v.UnderReplicated), v.AutoRecoveryDisabled, v.AuditorElected, v.Racks)
		var b strings.Builder
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "BOOKIE\tSTATE\tRACK\tLEDGERS\tBYTES\tOFFLOADED\tOFFLOADABLE\tMUST COPY\tAGENT")
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
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", bk.ID, st, dash(bk.Rack), d.Total.Ledgers, units.HumanBytes(d.Total.Bytes),
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
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", s.Key, dash(s.Value), s.How, d)
		}
		tw.Flush()
		ew.printf("%s", b.String())
	}
	if p != nil {
		verdict := "FEASIBLE"
		if !p.Feasible {
			verdict = "NOT FEASIBLE"
		}
		ew.printf("\nscale-in of %s: %s\n", strings.Join(p.Remove, ", "), verdict)
		for _, c := range p.Checks {
			mark := "ok  "
			if !c.OK {
				mark = "FAIL"
			}
			ew.printf("  %s %s: %s\n", mark, c.Name, c.Detail)
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
		}
		ew.printf("  rollback: %s\n", p.Rollback)
	}
	_, err := io.WriteString(w, out.String())
	return err
}

// printer formats into a builder, which cannot fail.
type printer struct{ b *strings.Builder }

func (p printer) printf(format string, a ...any) { fmt.Fprintf(p.b, format, a...) }

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func dur(sec float64) string {
	return time.Duration(sec * float64(time.Second)).Round(time.Second).String()
}
