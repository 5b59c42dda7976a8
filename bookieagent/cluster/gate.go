package cluster

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/tierkeeper/tierkeeper/internal/units"
)

// Gate is the verification between two removal steps: it passes once
// AutoRecovery has re-replicated everything of the removed bookie and
// decommissionbookie has finished.
type Gate struct {
	Bookie string  `json:"bookie"`
	Passed bool    `json:"passed"`
	Checks []Check `json:"checks"`
	// LedgersLeft and BytesLeft are the ledgers whose ensembles still name
	// the bookie, and their bytes on it (open ledgers count no bytes).
	LedgersLeft int     `json:"ledgers_left"`
	BytesLeft   float64 `json:"bytes_left"`
}

// CheckGate verifies, from the metadata in v, that the removal of bookie
// id is complete.
func CheckGate(v *View, id string) *Gate {
	g := &Gate{Bookie: id, Passed: true}
	check := func(name string, ok bool, detail string) {
		g.Checks = append(g.Checks, Check{Name: name, OK: ok, Detail: detail})
		g.Passed = g.Passed && ok
	}
	registered := ""
	for _, b := range v.Bookies {
		if b.ID == id {
			registered = map[bool]string{true: "read-only", false: "writable"}[b.ReadOnly]
		}
	}
	check("bookie stopped", registered == "", map[bool]string{true: "not registered under <ledgers root>/available",
		false: "still registered (" + registered + "): stop it; decommissionbookie refuses a registered bookie"}[registered == ""])
	// The next step stops another bookie: every other bookie the ledgers
	// name must be up, or entries whose other copies are on a down bookie
	// lose their last one (a crash since the plan, with
	// lostBookieRecoveryDelay > 0, marks nothing under-replicated yet).
	down := unregisteredNamed(v, id)
	var downs []string
	for _, b := range slices.Sorted(maps.Keys(down)) {
		downs = append(downs, fmt.Sprintf("%s (named by %d ledger segments)", b, down[b]))
	}
	check("other bookies up", len(down) == 0, map[bool]string{true: "every other bookie the ledgers name is registered",
		false: "not registered: " + strings.Join(downs, ", ") + ": start it, or let AutoRecovery restore its ledgers, before stopping the next bookie"}[len(down) == 0])
	var examples []string
	for _, l := range v.Ledgers {
		// Stored on it: in the write set of some entry (as BookKeeper's
		// decommission counts; an empty segment naming it holds nothing).
		stored := false
		for si := range l.Segments {
			if slices.ContainsFunc(writeSets(l, si), func(ws []string) bool { return slices.Contains(ws, id) }) {
				stored = true
				break
			}
		}
		if !stored {
			continue
		}
		b, _, _ := l.BytesOn(id)
		g.LedgersLeft++
		g.BytesLeft += b
		if len(examples) < 10 {
			examples = append(examples, fmt.Sprint(l.ID))
		}
	}
	check("re-replicated", g.LedgersLeft == 0, fmt.Sprintf("%d ledgers (%s on it) still name it in an ensemble%s",
		g.LedgersLeft, units.HumanBytes(g.BytesLeft), map[bool]string{true: ": " + strings.Join(examples, ", "), false: ""}[len(examples) > 0]))
	var mine []string
	for _, u := range v.UnderReplicated {
		if slices.Contains(u.Replicas, id) {
			mine = append(mine, fmt.Sprint(u.Ledger))
		}
	}
	check("nothing under-replicated", len(v.UnderReplicated) == 0, fmt.Sprintf("%d ledgers marked under-replicated (%d missing this bookie): %s",
		len(v.UnderReplicated), len(mine), urList(v.UnderReplicated)))
	check("auditor elected", v.Auditor != "", map[bool]string{true: fmt.Sprintf("auditor %s; AutoRecovery processes %s", v.Auditor, strings.Join(v.AutoRecovery, ", ")),
		false: "no AutoRecovery process votes under <ledgers root>/underreplication/auditorelection: nothing is re-replicated"}[v.Auditor != ""])
	check("AutoRecovery enabled", !v.AutoRecoveryDisabled, "<ledgers root>/underreplication/disable is absent")
	cookie := slices.Contains(v.Cookies, id)
	check("cookie deleted", !cookie, map[bool]string{true: "<ledgers root>/cookies/" + id + " still exists: decommissionbookie has not finished (it deletes the cookie last)",
		false: "no cookie: decommissionbookie finished"}[cookie])
	return g
}
