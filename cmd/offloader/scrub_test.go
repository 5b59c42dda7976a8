package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	tkzk "github.com/tierkeeper/tierkeeper/internal/zk"
	"github.com/tierkeeper/tierkeeper/offloader/mltest"
	"github.com/tierkeeper/tierkeeper/offloader/scrub"
)

// offloader scrub on a real ZooKeeper: bad arguments are refused before
// anything is read; a ledger committed to another bucket is reported
// foreign (not a failure) in text and JSON; a dry run writes nothing.
func TestScrubCommand(t *testing.T) {
	z, c := mltest.ZooKeeper(t)
	now := time.Now()
	// mltest records ledger 5 offloaded to bucket "b".
	if err := c.CreateML("t/ns/persistent/a", mltest.Info(mltest.Ledger{ID: 5, Entries: 1, Size: 1, Closed: now, Offloaded: now}, mltest.Ledger{ID: 6})); err != nil {
		t.Fatal(err)
	}
	if err := c.Create("/ledgers", nil); err != nil {
		t.Fatal(err)
	}
	cfg := writeConfig(t, fmt.Sprintf("zookeeper: {servers: %q}\nstore: {type: fs, config: {dir: %q}}\n", z.Addr, t.TempDir()))
	for _, args := range [][]string{{"scrub", "--config", cfg}, {"scrub", "--config", cfg, "--all", "t/ns/persistent/a"},
		{"scrub", "--config", cfg, "--all", "--ledgers-per-second", "-1"}} {
		if _, _, err := run(t, args...); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
	before, _, err := z.Session(t, tkzk.Options{}).Conn.Get("/managed-ledgers/t/ns/persistent/a")
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := run(t, "scrub", "--config", cfg, "--all", "--dry-run")
	if err != nil || !strings.Contains(out, "foreign") || !strings.Contains(out, `objects recorded in bucket "b"`) || !strings.Contains(out, "(dry run)") {
		t.Fatalf("scrub --all: %v\n%s", err, out)
	}
	out, _, err = run(t, "scrub", "--config", cfg, "persistent://t/ns/a", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var rep scrub.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if rep.Ledgers != 1 || rep.Verdicts[scrub.VerdictForeign] != 1 || len(rep.Findings) != 1 || rep.Findings[0].LedgerID != 5 {
		t.Fatalf("report %+v", rep)
	}
	after, _, _ := z.Session(t, tkzk.Options{}).Conn.Get("/managed-ledgers/t/ns/persistent/a")
	if string(after) != string(before) {
		t.Fatal("scrub wrote the managed ledger")
	}
}
