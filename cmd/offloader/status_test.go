package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/tierkeeper/tierkeeper/internal/cli"
	"github.com/tierkeeper/tierkeeper/offloader"
	"github.com/tierkeeper/tierkeeper/offloader/scheduler"
	"github.com/tierkeeper/tierkeeper/offloader/scrub"
	"github.com/tierkeeper/tierkeeper/pulsar/mledger"
	"github.com/tierkeeper/tierkeeper/test/testenv"
)

func TestStatusCommand(t *testing.T) {
	// A real service's handler, before it has a ZooKeeper session.
	cfg, err := offloader.Parse([]byte(fmt.Sprintf("zookeeper: {servers: \"127.0.0.1:1\"}\nstore: {type: fs, config: {dir: %q}}\nleases: {id: r1}\n", t.TempDir())), offloader.ParseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := offloader.New(context.Background(), cfg, offloader.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(svc.Handler())
	defer hs.Close()
	out, _, err := run(t, "status", "--service", hs.URL)
	if err != nil || !strings.Contains(out, "replica r1: NOT READY") {
		t.Errorf("status of a fresh service: %v\n%s", err, out)
	}
	resp, err := http.Get(hs.URL + "/readyz")
	if err != nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("readyz before a session: %v %v", resp.Status, err)
	}

	// A populated document renders totals, topics, parked ledgers and warnings.
	st := offloader.Status{Replica: "r2", Ready: true, StartedAt: time.Now().Add(-time.Hour), EvaluatedAt: time.Now(),
		Totals: offloader.Totals{Topics: 2, BKBytes: 3 << 30, OffloadedBytes: 5 << 30, LagBytes: 1 << 30, LagLedgers: 4, LagSeconds: 7200, ParkedLedgers: 1},
		Topics: []offloader.TopicStatus{
			{Topic: "persistent://t/ns/a", Rule: "default", LagBytes: 1 << 30, LagSeconds: 7200, NextAction: "offload ledger 7 (default: age)",
				LastError: "ledger 9 parked until 2026-01-01T00:00:00Z after 5 failures: bookie unreachable"},
			{Topic: "persistent://t/ns/quiet", Rule: "default"},
		},
		Ledgers: []offloader.LedgerStatus{
			{LedgerState: scheduler.LedgerState{LedgerRef: mledger.LedgerRef{ML: "t/ns/persistent/a", LedgerID: 9}, State: scheduler.StateParked, Failures: 5, LastErr: "bookie unreachable", LastStep: "copy"}},
			{LedgerState: scheduler.LedgerState{LedgerRef: mledger.LedgerRef{ML: "t/ns/persistent/a", LedgerID: 10}, State: scheduler.StateRunning, LastStep: "copy"}, StepBytes: 3 << 28, StepTotalBytes: 1 << 30},
			{LedgerState: scheduler.LedgerState{LedgerRef: mledger.LedgerRef{ML: "t/ns/persistent/a", LedgerID: 11}, State: scheduler.StateRunning}}},
		Warnings: []string{`rule "x" matches no topic`},
		Scrub: &offloader.ScrubStatus{Pass: &scrub.Report{Ledgers: 12, Topics: 2, Verdicts: map[scrub.Verdict]int{scrub.VerdictOK: 11, scrub.VerdictLost: 1}},
			Lost: []scrub.Finding{{ML: "t/ns/persistent/a", LedgerID: 3, Verdict: scrub.VerdictLost, Detail: "index missing; the BookKeeper ledger is gone"}}},
	}
	doc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _ = json.NewEncoder(w).Encode(st) }))
	defer doc.Close()
	out, _, err = run(t, "status", "--service", doc.URL)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"replica r2: ready", "2 topics; on BookKeeper 3.0 GiB, offloaded 5.0 GiB; lag 1.0 GiB in 4 ledgers (oldest 2h0m0s)",
		"1 parked", "persistent://t/ns/a", "offload ledger 7 (default: age)", "t/ns/persistent/a  9       parked", "10      running  copy, 75% of 1.0 GiB read", "11      running  waiting (its job is on another ledger)", `warning: rule "x" matches no topic`,
		"12 ledgers in 2 topics, 1 lost, 11 ok; 1 lost, 0 pending", "lost          t/ns/persistent/a ledger 3"} {
		if !strings.Contains(out, w) {
			t.Errorf("output misses %q:\n%s", w, out)
		}
	}
	if strings.Contains(out, "persistent://t/ns/quiet") {
		t.Errorf("a topic without lag or error is listed without --all:\n%s", out)
	}
	if out, _, _ = run(t, "status", "--service", doc.URL, "--all"); !strings.Contains(out, "persistent://t/ns/quiet") {
		t.Errorf("--all misses a topic:\n%s", out)
	}
	if _, _, err := run(t, "status", "--service", "http://"+testenv.ClosedAddr(t), "--timeout", "1s"); err == nil {
		t.Error("unreachable service: no error")
	}
}

// --watch re-reads until interrupted: each rendering after a separator
// (not a terminal), one JSON document per line with -o json; a read that
// fails is shown and the watch goes on.
func TestStatusWatch(t *testing.T) {
	var mu sync.Mutex
	n := 0
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		n++
		i := n
		mu.Unlock()
		if i == 2 {
			http.Error(w, "restarting", http.StatusServiceUnavailable)
			return
		}
		_ = json.NewEncoder(w).Encode(offloader.Status{Replica: fmt.Sprintf("r%d", i), Ready: true,
			Totals: offloader.Totals{OffloadedBytes: int64(i) << 20, LagBytes: int64(max(4-i, 0)) << 20},
			Done:   offloader.Done{OffloadedLedgers: i, OffloadedBytes: int64(i) << 20, CopiedBytes: 10 << 20, CopySeconds: 0.5}})
	}))
	defer hs.Close()
	watch := func(args ...string) string {
		cmd := newRootCmd()
		var out, errb bytes.Buffer
		cmd.SetArgs(append([]string{"status", "--service", hs.URL, "--watch", "200ms"}, args...))
		cmd.SetOut(&out)
		cmd.SetErr(&errb)
		ctx, cancel := context.WithTimeout(context.Background(), 900*time.Millisecond)
		defer cancel()
		if err := cmd.ExecuteContext(ctx); err != nil {
			t.Fatalf("watch %v: %v (%s)", args, err, errb.String())
		}
		return out.String()
	}
	out := watch()
	if c := strings.Count(out, "--- "); c < 3 {
		t.Fatalf("%d renderings in 900ms at 200ms:\n%s", c, out)
	}
	for _, w := range []string{"replica r1: ready", "503 Service Unavailable", "replica r3: ready",
		"done since start: 3 ledgers offloaded (3.0 MiB; copy 21.0 MB/s)",
		"offloaded [================] 100%  lag 0 B", // r4: caught up
		"offloaded [============    ]  75%  lag 1.0 MiB"} {
		if !strings.Contains(out, w) {
			t.Errorf("watch output misses %q:\n%s", w, out)
		}
	}
	lines := strings.Split(strings.TrimSpace(watch("-o", "json")), "\n")
	if len(lines) < 3 {
		t.Fatalf("%d JSON lines", len(lines))
	}
	for _, l := range lines {
		var v map[string]any
		if err := json.Unmarshal([]byte(l), &v); err != nil || (v["replica"] == nil && v["error"] == nil) {
			t.Errorf("JSON line %q: %v", l, err)
		}
	}
	if _, _, err := run(t, "status", "--service", hs.URL, "--watch", "-1s"); err == nil {
		t.Error("negative --watch accepted")
	}
}

// On an 80-column terminal the watch's rendering fits: no line wraps (so
// the redraw moves back over exactly what it drew), and long topic names
// are shortened so that the table's columns stay on the screen.
func TestWatchFitsEightyColumns(t *testing.T) {
	long := "persistent://tenant-with-long-name/namespace-with-long-name/very-long-topic-name-partition-11"
	st := &offloader.Status{Replica: "offloader-7d9f8c6b5-x2x4q", Ready: true, StartedAt: time.Now(), EvaluatedAt: time.Now(),
		Totals: offloader.Totals{Topics: 1, OffloadedBytes: 1 << 30, LagBytes: 3 << 30, LagLedgers: 4, LagSeconds: 7200},
		Topics: []offloader.TopicStatus{{Topic: long, Rule: "default", LagBytes: 3 << 30, NextAction: "offload ledger 7 (default: age over 1h0m0s)"}}}
	var b bytes.Buffer
	fmt.Fprintln(&b, watchProgress(st, 123<<20, 30*time.Second))
	if err := printServiceStatus(&b, st, false, 80/3); err != nil {
		t.Fatal(err)
	}
	var screen bytes.Buffer
	s := cli.NewSizedScreen(&screen, func() (int, int) { return 80, 45 })
	s.Draw(b.String())
	first := screen.String()
	for _, l := range strings.Split(first, "\n") {
		if n := utf8.RuneCountInString(l); n > 79 {
			t.Errorf("line of %d characters on 80 columns: %q", n, l)
		}
	}
	for _, w := range []string{"ETA 25s", "TOPIC", "RULE", "LAG", "name-partition-11  default"} {
		if !strings.Contains(first, w) {
			t.Errorf("80-column rendering misses %q:\n%s", w, first)
		}
	}
	screen.Reset()
	s.Draw(b.String())
	if up := fmt.Sprintf("\033[%dA\033[J", strings.Count(first, "\n")); !strings.HasPrefix(screen.String(), up) {
		t.Errorf("redraw does not move back over the %d lines drawn: %q", strings.Count(first, "\n"), screen.String()[:min(20, screen.Len())])
	}
}
