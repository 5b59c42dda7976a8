package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tierkeeper/tierkeeper/offloader"
	"github.com/tierkeeper/tierkeeper/offloader/mltest"
	"github.com/tierkeeper/tierkeeper/pulsar/mledger"
)

// TestPlan builds managed ledgers, BookKeeper ledger metadata, a bookie
// under disk pressure (a real bookie agent) and a Pulsar namespace policy
// in a real ZooKeeper, and checks the plan's order, rules and reasons.
func TestPlan(t *testing.T) {
	z, c := mltest.ZooKeeper(t)
	now := time.Now()
	h := time.Hour
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	// orders: ledgers 1..3 closed 30h, 2h, 1h ago (+ open 4); ledger 2 on the full bookie.
	must(c.CreateML("acme/orders/persistent/o1", mltest.Info(
		mltest.Ledger{ID: 1, Entries: 10, Size: 3 << 20, Closed: now.Add(-30 * h)},
		mltest.Ledger{ID: 2, Entries: 10, Size: 2 << 20, Closed: now.Add(-2 * h)},
		mltest.Ledger{ID: 3, Entries: 10, Size: 1 << 20, Closed: now.Add(-1 * h)},
		mltest.Ledger{ID: 4})))
	// audit: never offloaded.
	must(c.CreateML("acme/audit/persistent/a1", mltest.Info(mltest.Closed(10, 2, 1<<20, now.Add(-50*h))...)))
	// pol: Pulsar namespace policy, offload everything above 1 MiB of closed
	// ledgers: the broker offloads the topic itself, tierkeeper refuses it.
	must(c.CreateML("acme/pol/persistent/p1", mltest.Info(mltest.Closed(20, 3, 1<<20, now.Add(-time.Minute))...)))
	must(c.Create("/admin/policies/acme/pol", []byte(`{"offload_threshold":1048576,"offload_threshold_in_seconds":-1,"offload_deletion_lag_ms":null}`)))
	// trim: offloaded 5h ago, default deletion lag 4h.
	must(c.CreateML("acme/old/persistent/t1", mltest.Info(
		mltest.Ledger{ID: 30, Entries: 10, Size: 5 << 20, Closed: now.Add(-40 * h), Offloaded: now.Add(-5 * h)},
		mltest.Ledger{ID: 31})))
	must(c.Create(mledger.Path("acme/old/persistent/broken"), []byte{0xff, 0xfe}))
	for _, id := range []int64{1, 3, 10, 11, 20, 21, 22} {
		must(c.BookKeeperLedger(id, "b1:3181", "b2:3181"))
	}
	must(c.BookKeeperLedger(2, "b2:3181", "full:3181"))
	for _, b := range []string{"b1:3181", "b2:3181", "full:3181"} {
		must(c.Create("/ledgers/available/"+b, nil))
	}
	cfg := writeConfig(t, fmt.Sprintf(`
zookeeper: {servers: %q}
store: {type: fs, config: {dir: %q}}
pressure:
  threshold: 0.9
  min_age: 10m
  agent_urls: {"b1:3181": %q, "b2:3181": %q, "full:3181": %q}
policy:
  include: [acme, typo/ns]
  pulsar_namespace_policies: {enabled: true}
  rules:
    - name: orders
      match: [acme/orders]
      after: 24h
    - name: audit
      match: [acme/audit]
      offload: false
    - name: nothing-here
      match: [other/ns]
      after: 1h
  default:
    after: 24h
    deletion_lag: 4h
`, z.Addr, t.TempDir(), mltest.Agent(t, 0.5), mltest.Agent(t, 0.6), mltest.Agent(t, 0.96)))

	stdout, _, err := run(t, "plan", "--config", cfg, "-o", "json")
	if err != nil {
		t.Fatalf("plan: %v\n%s", err, stdout)
	}
	var doc offloader.PlanReport
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range doc.Candidates {
		got = append(got, fmt.Sprintf("%s:%d:%s:%s:%s", c.Action, c.LedgerID, c.Rule, c.Trigger, c.Topic))
	}
	want := []string{
		"offload:2:orders:pressure:persistent://acme/orders/o1", // on the 96% bookie, first
		"offload:1:orders:age:persistent://acme/orders/o1",      // 30h ≥ 24h
		"trim:30:default:deletion-lag:persistent://acme/old/t1",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("candidates:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if doc.Candidates[0].Reason != "replica on bookie full:3181, ledger disks 96% ≥ 90%" {
		t.Errorf("pressure reason: %q", doc.Candidates[0].Reason)
	}
	if doc.Totals.OffloadBytes != (2+3)<<20 || doc.Totals.TrimBytes != 5<<20 || doc.Totals.OffloadLedgers != 2 || doc.Totals.Refused != 1 {
		t.Errorf("totals: %+v", doc.Totals)
	}
	if len(doc.UnusedRules) != 1 || doc.UnusedRules[0] != "nothing-here" || doc.RuleTopics["audit"] != 1 ||
		doc.RuleTopics["default"] != 2 {
		t.Errorf("rules: unused %v, per rule %v", doc.UnusedRules, doc.RuleTopics)
	}
	for _, tp := range doc.Topics {
		if (tp.Topic == "persistent://acme/pol/p1") != strings.Contains(tp.Refused, "the broker offloads this topic itself: namespace offload policy threshold (bytes) = 1048576") {
			t.Errorf("topic %s refused %q", tp.Topic, tp.Refused)
		}
	}
	if fmt.Sprint(doc.UnusedIncludes) != "[typo/ns]" {
		t.Errorf("unused includes %v", doc.UnusedIncludes)
	}
	if _, ok := doc.ReadErrors["acme/old/persistent/broken"]; !ok || len(doc.ReadErrors) != 1 {
		t.Errorf("read errors: %v", doc.ReadErrors)
	}
	if u := doc.Pressured["full:3181"]; u < 0.959 || u > 0.961 || len(doc.Pressured) != 1 {
		t.Errorf("pressured: %v", doc.Pressured)
	}

	text, _, err := run(t, "plan", "--config", cfg, "--limit", "2")
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"1  offload  persistent://acme/orders/o1  2       2.0 MiB", "1 more (--limit 0 shows all)",
		"next: offload 2 ledgers (5.0 MiB), trim 1 BookKeeper copies (5.0 MiB)", "1 left to the broker's offloader",
		"refused: persistent://acme/pol/p1: the broker offloads this topic itself", `warning: rule "nothing-here" matches no topic`, `warning: policy.include "typo/ns" matches no topic`,
		"bookies under pressure: full:3181 96%", "warning: managed ledger acme/old/persistent/broken not read"} {
		if !strings.Contains(text, w) {
			t.Errorf("text output misses %q:\n%s", w, text)
		}
	}
}
