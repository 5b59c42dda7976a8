package cluster

import (
	"errors"
	"slices"
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

// liveRec is the recommendation of profile name for a live bookie whose
// cookie fixes journal and ledgers (the bookie's own paths), as the agent
// gives it when it finds the cookie.
func liveRec(t *testing.T, name string, journal, ledgers []string) *bookieagent.Recommendation {
	t.Helper()
	r := profileRec(t, name)
	for i, s := range r.Settings {
		switch s.Key {
		case "journalDirectories":
			r.Settings[i].Current = strings.Join(journal, ",")
		case "ledgerDirectories":
			r.Settings[i].Current = strings.Join(ledgers, ",")
		}
	}
	for i := range r.Layout.Journal {
		r.Layout.Journal[i].Current = journal
	}
	for i := range r.Layout.Ledgers {
		r.Layout.Ledgers[i].Current = ledgers
	}
	return r
}

// TestMergeKeepsLiveLayout: one values file configures every bookie of
// the StatefulSet, and a live bookie refuses to start on directories its
// cookie does not list. So the merged Helm values keep the live bookies'
// layout, whatever the agents recommend for new bookies (shown as the
// count, not applied), also when a new node is among them; live bookies
// whose cookies disagree are named in a warning.
func TestMergeKeepsLiveLayout(t *testing.T) {
	const jdir, ldir = "/pulsar/data/bookkeeper/journal", "/pulsar/data/bookkeeper/ledgers"
	// The profile recommends 4 journal and 4 ledger directories.
	fresh := profileRec(t, "nvme-64core-4x7tb")
	if s, _ := fresh.Setting("journalDirectories"); len(strings.Split(s.Value, ",")) != 4 {
		t.Fatalf("profile's journalDirectories %q, want 4 dirs", s.Value)
	}
	render := func(m *Merged) string {
		t.Helper()
		var b strings.Builder
		if err := bookieagent.Render(&b, m.Recommendation, bookieagent.FormatHelm); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	t.Run("live bookies keep their cookies' directories", func(t *testing.T) {
		m, err := Merge(map[string]*bookieagent.Recommendation{
			"a": liveRec(t, "nvme-64core-4x7tb", []string{jdir}, []string{ldir}),
			"b": liveRec(t, "nvme-64core-4x7tb", []string{jdir}, []string{ldir}),
			"c": profileRec(t, "nvme-64core-4x7tb"), // a new node, no cookie yet
		})
		if err != nil {
			t.Fatal(err)
		}
		out := render(m)
		if strings.Contains(out, "useMultiVolumes: true") || strings.Contains(out, "journal0") || strings.Contains(out, "ledgers0") {
			t.Errorf("the merged values change the live bookies' single directories:\n%s", out)
		}
		for _, key := range []string{"journalDirectories", "ledgerDirectories"} {
			s, _ := m.Recommendation.Setting(key)
			want := jdir
			if key == "ledgerDirectories" {
				want = ldir
			}
			if s.Current != want || s.Effective() != want || !strings.HasPrefix(s.Value, "4 dir(s)") {
				t.Errorf("%s: current %q value %q, want the cookies' %q kept and 4 for new bookies", key, s.Current, s.Value, want)
			}
		}
		if len(m.Recommendation.Warnings) != 0 {
			t.Errorf("warnings %q", m.Recommendation.Warnings)
		}
		if !strings.Contains(out, "This bookie keeps its current layout; for new or re-formatted bookies: 4 dir(s)") {
			t.Errorf("the values do not say what new bookies get:\n%s", out)
		}
		var text strings.Builder
		if err := WriteText(&text, &View{}, m, nil, nil, nil); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(text.String(), "live bookies keep their cookies' 1") {
			t.Errorf("text:\n%s", text.String())
		}

	})
	t.Run("running directory counts against the merged count", func(t *testing.T) {
		m, err := Merge(map[string]*bookieagent.Recommendation{"a": fresh, "b": profileRec(t, "nvme-64core-4x7tb")})
		if err != nil {
			t.Fatal(err)
		}
		v := &View{Bookies: []Bookie{
			{ID: "a", Config: &RunningConfig{Keys: map[string]string{"journalDirectories": "/j0,/j1,/j2,/j3"}}},
			{ID: "b", Config: &RunningConfig{Keys: map[string]string{"journalDirectories": "/j"}}},
		}}
		for _, k := range ComputeDrift(v, m).Keys {
			if k.Key == "journalDirectories" && !slices.Equal(k.OffRecommendation, []string{"b"}) {
				t.Errorf("4 dirs recommended, a runs 4 and b 1: off the recommendation %v", k.OffRecommendation)
			}
		}
	})
	t.Run("live multi-volume bookies keep theirs", func(t *testing.T) {
		j := []string{"/pulsar/data/bookkeeper/journal0", "/pulsar/data/bookkeeper/journal1"}
		l := []string{"/pulsar/data/bookkeeper/ledgers0", "/pulsar/data/bookkeeper/ledgers1", "/pulsar/data/bookkeeper/ledgers2"}
		m, err := Merge(map[string]*bookieagent.Recommendation{
			"a": liveRec(t, "nvme", j, l), "b": liveRec(t, "nvme", j, l), // nvme recommends 1 and 1
		})
		if err != nil {
			t.Fatal(err)
		}
		out := render(m)
		for _, p := range append(append([]string{}, j...), l...) {
			if !strings.Contains(out, "mountPath: "+p) {
				t.Errorf("no volume at %s:\n%s", p, out)
			}
		}
		if strings.Count(out, "useMultiVolumes: true") != 2 {
			t.Errorf("want both roles on multiple volumes:\n%s", out)
		}
	})
	t.Run("cookies that disagree are named", func(t *testing.T) {
		m, err := Merge(map[string]*bookieagent.Recommendation{
			"a": liveRec(t, "nvme", []string{jdir}, []string{ldir}),
			"b": liveRec(t, "nvme", []string{jdir + "0", jdir + "1"}, []string{ldir}),
		})
		if err != nil {
			t.Fatal(err)
		}
		s, _ := m.Recommendation.Setting("journalDirectories")
		w := strings.Join(m.Recommendation.Warnings, "\n")
		if s.Current != jdir || !strings.Contains(w, "journalDirectories") || !strings.Contains(w, "b") || strings.Contains(w, "ledgerDirectories") {
			t.Errorf("current %q, warnings:\n%s", s.Current, w)
		}
		if out := render(m); !strings.Contains(out, "journalDirectories") || !strings.Contains(out, "WARNING") {
			t.Errorf("the rendered values do not carry the warning:\n%s", out)
		}
	})
}
