package policy

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tierkeeper/tierkeeper/pulsar/mledger"
)

// BenchmarkEvaluate evaluates 100 000 topics of 10 ledgers (9 closed two
// hours ago, all selected by a one-hour age rule: 900 000 candidates), the
// size make bench-scan BENCH_SCAN_MLS=100000 BENCH_SCAN_LEDGERS=1000000
// evaluates against a real ZooKeeper (in the sorted order discovery hands
// them over).
func BenchmarkEvaluate(b *testing.B) {
	const topics, per = 100000, 10
	now := time.Now()
	snap := Snapshot{Topics: make([]Topic, topics)}
	for i := range snap.Topics {
		ml := fmt.Sprintf("tenant-%d/ns-%d/persistent/topic-%d", i%10, (i/10)%10, i)
		tn, err := mledger.ParseMLName(ml)
		if err != nil {
			b.Fatal(err)
		}
		t := Topic{ML: ml, Topic: tn, Ledgers: make([]Ledger, per)}
		for j := range t.Ledgers {
			t.Ledgers[j] = Ledger{ID: int64(i*per + j + 1), Entries: 100, Size: 64 << 20, State: mledger.StateBookKeeper,
				ClosedAt: now.Add(-2*time.Hour + time.Duration(j)*time.Second)}
		}
		t.Ledgers[per-1].ClosedAt = time.Time{}
		snap.Topics[i] = t
	}
	// Discovery hands the policy its topics sorted by name.
	slices.SortFunc(snap.Topics, func(a, b Topic) int { return strings.Compare(a.ML, b.ML) })
	rules := Rules{Default: Rule{Name: "default", Offload: true, After: time.Hour, KeepBytes: -1, KeepLedgers: -1}}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res := Evaluate(snap, now, rules)
		if res.Candidates.Len() != topics*(per-1) {
			b.Fatalf("%d candidates", res.Candidates.Len())
		}
	}
}
