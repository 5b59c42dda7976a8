package sim

import (
	"strings"
	"testing"
	"time"
)

// TestSimExploreBug2 explores the two-CLI shape of the abandon bug (an undo that restored a replaced attempt; a topic with
// one closed ledger, no replica, no broker offload) for
// -sim.interleavings decisions and reports the first violation.
func TestSimExploreBug2(t *testing.T) {
	if *simInterleavings == 0 {
		t.Skip("set -sim.interleavings")
	}
	n := 0
	start := time.Now()
	for seed := uint64(1); n < *simInterleavings; seed++ {
		cfg := Config{Seed: seed, Steps: 400, Ledgers: 1, CLI: true, BrokerLag: -1, Faults: DefaultFaults}
		res := runSim(t, cfg)
		n += res.Steps
		if res.Violation != nil {
			t.Logf("seed %d after %d decisions: %v [%s]\n%s", seed, n, res.Violation, knownBug(res.Violation), strings.Join(res.Trace, "\n"))
			return
		}
	}
	t.Logf("none in %d decisions (%s)", n, time.Since(start))
}
