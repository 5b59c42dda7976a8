package offloader

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/tierkeeper/tierkeeper/offloader/scheduler"
	"github.com/tierkeeper/tierkeeper/pulsar/mledger"
)

// TestLedgerStatusJSON pins the /status ledger entry's keys and values
// (dashboards and `offloader status` read them): the scheduler's state with
// the ledger's identity flattened in, then the step's progress.
func TestLedgerStatusJSON(t *testing.T) {
	l := LedgerStatus{LedgerState: scheduler.LedgerState{LedgerRef: mledger.LedgerRef{ML: "t/ns/persistent/a", LedgerID: 7},
		State: scheduler.StateParked, Failures: 5, LastErr: "trim pending: x", LastStep: "trim", NextTry: time.Unix(60, 0).UTC()},
		StepBytes: 3, StepTotalBytes: 9}
	b, err := json.Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"managedLedger":"t/ns/persistent/a","ledgerId":7,"state":"parked","failures":5,"lastError":"trim pending: x",` +
		`"lastStep":"trim","nextTry":"1970-01-01T00:01:00Z","stepBytes":3,"stepTotalBytes":9}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
	var back LedgerStatus
	if err := json.Unmarshal(b, &back); err != nil || back != l {
		t.Errorf("round trip: %#v, %v", back, err)
	}
	for _, s := range []scheduler.State{scheduler.StateRunning, scheduler.StateBackoff, scheduler.StateParked} {
		if b, _ := json.Marshal(s); string(b) != `"`+s.String()+`"` {
			t.Errorf("state %s encodes as %s", s, b)
		}
	}
}
