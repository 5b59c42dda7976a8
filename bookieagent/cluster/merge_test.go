package cluster

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/tierkeeper/tierkeeper/bookieagent"
)

// TestMergeRules: per key the documented rule; directory counts merge as
// counts; a node without a recommendation is skipped and named; the merged
// Helm values carry the merged values.
func TestMergeRules(t *testing.T) {
	nvme, sata, hdd := profileRec(t, "nvme"), profileRec(t, "sata-ssd"), profileRec(t, "hdd")
	m, err := Merge(map[string]*bookieagent.Recommendation{"a": nvme, "b": sata, "c": hdd, "d": nil})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(m.Skipped, ",") != "d" || len(m.Nodes) != 3 {
		t.Errorf("nodes %v skipped %v", m.Nodes, m.Skipped)
	}
	vals := func(key string) (merged float64, per []float64) {
		for _, s := range m.Settings {
			if s.Key == key {
				merged, _ = strconv.ParseFloat(s.Value, 64)
				for _, n := range m.Nodes {
					f, _ := strconv.ParseFloat(s.PerNode[n], 64)
					per = append(per, f)
				}
				return
			}
		}
		t.Fatalf("no merged %s", key)
		return
	}
	for key, how := range map[string]string{"compactionRateByBytes": "min", "dbStorage_writeCacheMaxSizeMb": "min", "journalDirectories": "min",
		"journalMaxGroupWaitMSec": "max", "majorCompactionInterval": "max"} {
		v, per := vals(key)
		want := per[0]
		for _, p := range per {
			if how == "min" {
				want = min(want, p)
			} else {
				want = max(want, p)
			}
		}
		if v != want {
			t.Errorf("%s: merged %v, per node %v, want the %s %v", key, v, per, how, want)
		}
	}
	var b strings.Builder
	if err := bookieagent.Render(&b, m.Recommendation, bookieagent.FormatHelm); err != nil {
		t.Fatal(err)
	}
	rate, _ := vals("compactionRateByBytes")
	if !strings.Contains(b.String(), `PULSAR_PREFIX_compactionRateByBytes: "`+strconv.FormatFloat(rate, 'f', -1, 64)+`"`) || !strings.Contains(b.String(), "merged over 3 nodes") {
		t.Errorf("merged helm values:\n%s", b.String())
	}
	if _, err := Merge(map[string]*bookieagent.Recommendation{"x": nil}); !errors.Is(err, ErrAgent) {
		t.Errorf("no recommendation at all: %v", err)
	}
}
