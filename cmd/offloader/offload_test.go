package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tkzk "github.com/tierkeeper/tierkeeper/internal/zk"
	"github.com/tierkeeper/tierkeeper/offloader"
	"github.com/tierkeeper/tierkeeper/offloader/mltest"
	"github.com/tierkeeper/tierkeeper/offloader/pipeline"
	"github.com/tierkeeper/tierkeeper/pulsar/mledger"
	"github.com/tierkeeper/tierkeeper/test/testenv"
)

// offload --dry-run plans from the stored state and writes nothing;
// status renders every ledger's state; the last ledger is refused with an
// error naming it. (The real copy, with bookies, a store and a stock
// broker, is tested in test/compat.)
func TestOffloadDryRunAndStatus(t *testing.T) {
	z, cr := mltest.ZooKeeper(t)
	now := time.Now()
	ml := "public/default/persistent/dry-run"
	info := mltest.Info(
		mltest.Ledger{ID: 1, Entries: 10, Size: 1000, Closed: now.Add(-3 * time.Hour), Offloaded: now.Add(-2 * time.Hour)},
		mltest.Ledger{ID: 2, Entries: 10, Size: 1000, Closed: now.Add(-2 * time.Hour)},
		mltest.Ledger{ID: 3, Entries: 10, Size: 1000, Closed: now.Add(-time.Hour)},
		mltest.Ledger{ID: 4},
	)
	if err := cr.CreateML(ml, info); err != nil {
		t.Fatal(err)
	}
	store := offloadFixture(t, cr, "127.0.0.1:3181", 2, 3)
	before, st, err := cr.Conn.Get("/managed-ledgers/" + ml)
	if err != nil {
		t.Fatal(err)
	}
	common := []string{"offload", "--zk", z.Addr, "--store", store, "--driver", "aws-s3"}
	out, _, err := run(t, append(common, "--dry-run", "--delete-bookkeeper", "--trim-without-reload", "--deletion-lag", "3h", "dry-run")...)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"dry run: nothing was written", "2       bookkeeper  10", "offload", "trim-pending"} {
		if !strings.Contains(out, want) {
			t.Errorf("dry run output lacks %q:\n%s", want, out)
		}
	}
	out, _, err = run(t, append(common, "--dry-run", "-o", "json", "dry-run")...)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		DryRun         bool `json:"dryRun"`
		ManagedLedgers []struct {
			Plan []struct {
				LedgerID int64  `json:"ledgerId"`
				Action   string `json:"action"`
			} `json:"plan"`
		} `json:"managedLedgers"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || !doc.DryRun || len(doc.ManagedLedgers) != 1 {
		t.Fatalf("dry run JSON: %v\n%s", err, out)
	}
	if p := doc.ManagedLedgers[0].Plan; len(p) != 2 || p[0].LedgerID != 2 || p[0].Action != "offload" || p[1].LedgerID != 3 {
		t.Fatalf("plan %+v", p)
	}
	if _, _, err := run(t, append(common, "--ledger", "4", "dry-run")...); err == nil || !strings.Contains(err.Error(), "current ledger") {
		t.Fatalf("offload of the last ledger: %v", err)
	}
	if _, _, err := run(t, append(common, "--ledger", "2", "--until-ledger", "3", "dry-run")...); err == nil {
		t.Fatal("--ledger with --until-ledger accepted")
	}
	if _, _, err := run(t, append(common, "--delete-bookkeeper", "dry-run")...); err == nil || !strings.Contains(err.Error(), "--admin-url") {
		t.Fatalf("--delete-bookkeeper without an admin URL: %v", err)
	}
	after, st2, _ := cr.Conn.Get("/managed-ledgers/" + ml)
	if string(after) != string(before) || st2.Version != st.Version {
		t.Fatal("a dry run or a refused run changed the metadata")
	}

	out, _, err = run(t, "status", "--zk", z.Addr, "-o", "json", "dry-run")
	if err != nil {
		t.Fatal(err)
	}
	var sd struct {
		ManagedLedgers []struct {
			Ledgers []struct {
				LedgerID   int64  `json:"ledgerId"`
				State      string `json:"state"`
				ReadsFrom  string `json:"readsFrom"`
				BookKeeper string `json:"bookkeeper"`
			} `json:"ledgers"`
		} `json:"managedLedgers"`
	}
	if err := json.Unmarshal([]byte(out), &sd); err != nil || len(sd.ManagedLedgers) != 1 || len(sd.ManagedLedgers[0].Ledgers) != 4 {
		t.Fatalf("status JSON: %v\n%s", err, out)
	}
	ls := sd.ManagedLedgers[0].Ledgers
	if ls[0].State != "offloaded" || ls[0].ReadsFrom != "object store (bucket b)" || ls[0].BookKeeper != "deleted" ||
		ls[1].State != "bookkeeper" || ls[1].ReadsFrom != "bookkeeper" || ls[1].BookKeeper != "present" || ls[3].State != "open" {
		t.Fatalf("status %+v", ls)
	}
	out, _, err = run(t, "status", "--zk", z.Addr, "dry-run")
	if err != nil || !strings.Contains(out, "READS FROM") || !strings.Contains(out, "object store (bucket b)") {
		t.Fatalf("status text: %v\n%s", err, out)
	}
}

// offloadFixture creates the BookKeeper layout and the ledgers ids (on
// bookie) and returns an fs store config file.
func offloadFixture(t *testing.T, cr *mltest.Creator, bookie string, ids ...int64) string {
	t.Helper()
	if err := cr.Create("/ledgers/LAYOUT", []byte("2\norg.apache.bookkeeper.meta.HierarchicalLedgerManagerFactory:1")); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if err := cr.BookKeeperLedger(id, bookie); err != nil {
			t.Fatal(err)
		}
	}
	store := filepath.Join(t.TempDir(), "store.yaml")
	if err := os.WriteFile(store, []byte(fmt.Sprintf("type: fs\nconfig: {dir: %q}\n", t.TempDir())), 0o600); err != nil {
		t.Fatal(err)
	}
	return store
}

// offload takes the service's per-topic lease: a topic a service replica
// holds is refused with the holder named and nothing written; once it is
// free, the run writes under its own lease (its prepare lands on stores
// that refuse unfenced writes; the copy then fails, the bookie being
// absent, and the prepare is undone) and releases the lease. Before, the
// command took no lease and wrote the replica's topic.
func TestOffloadTakesTheTopicLease(t *testing.T) {
	z, cr := mltest.ZooKeeper(t)
	now := time.Now()
	ml := "public/default/persistent/contested"
	info := mltest.Info(mltest.Ledger{ID: 2, Entries: 10, Size: 1000, Closed: now.Add(-time.Hour)}, mltest.Ledger{ID: 3})
	if err := cr.CreateML(ml, info); err != nil {
		t.Fatal(err)
	}
	store := offloadFixture(t, cr, testenv.ClosedAddr(t), 2)
	before, st, err := cr.Conn.Get("/managed-ledgers/" + ml)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	replica := offloader.NewTopicLeases(z.Session(t, tkzk.Options{}), offloader.DefaultLeaseRoot, "replica-7", slog.New(slog.DiscardHandler))
	defer replica.Close()
	g, _, err := replica.TryAcquire(ctx, ml)
	if err != nil || g == nil {
		t.Fatalf("replica lease: %v", err)
	}
	args := []string{"offload", "--zk", z.Addr, "--store", store, "--driver", "aws-s3", "--ledger", "2", "contested"}
	_, _, err = run(t, args...)
	if err == nil || !strings.Contains(err.Error(), "leased by replica-7") {
		t.Fatalf("offload of a leased topic: %v, want a refusal naming replica-7", err)
	}
	if after, st2, _ := cr.Conn.Get("/managed-ledgers/" + ml); string(after) != string(before) || st2.Version != st.Version {
		t.Fatal("offload of a leased topic wrote its metadata")
	}
	g.Release(ctx)
	_, _, err = run(t, args...)
	if err == nil || strings.Contains(err.Error(), "leased") || strings.Contains(err.Error(), "fence") {
		t.Fatalf("offload after the release: %v, want the copy's failure (no bookie), not a lease or fence error", err)
	}
	if _, st2, _ := cr.Conn.Get("/managed-ledgers/" + ml); st2.Version != st.Version+2 {
		t.Fatalf("metadata version %d after a prepare and its undo, want %d", st2.Version, st.Version+2)
	}
	if ok, _, _ := cr.Conn.Exists(offloader.DefaultLeaseRoot + "/" + mledger.EncodeName(ml)); ok {
		t.Fatal("the command's lease was not released")
	}
}

// SIGINT while the batch is in its select step stops the run with every
// ledger failed by the interruption and exit status 130: the ledger
// selected before the signal was done no more than the others (it used to
// come back with no outcome, counted as offloaded). Ledger 2 is selected,
// ledger 3 waits at its failpoint when the signal comes, ledger 4 is not
// read. Nothing is written.
func TestOffloadInterruptedWhileSelecting(t *testing.T) {
	z, cr := mltest.ZooKeeper(t)
	ml := "public/default/persistent/interrupted"
	if err := cr.CreateML(ml, mltest.Info(mltest.Closed(2, 3, 1000, time.Now().Add(-time.Hour))...)); err != nil {
		t.Fatal(err)
	}
	store := offloadFixture(t, cr, testenv.ClosedAddr(t), 2, 3, 4)
	_, before, err := cr.Conn.Get(mledger.Path(ml))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "offload", "--zk", z.Addr, "--store", store, "--driver", "aws-s3", "-o", "json", "interrupted")
	cmd.Env = append(os.Environ(), runMainEnv+"=1", pipeline.FailpointEnv+"="+pipeline.FPAfterSelect+"@2=sleep:1m")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer cmd.Process.Kill()
	// The lease is taken right before the select; the two ledger reads
	// after it take milliseconds, the failpoint a minute.
	lease := offloader.DefaultLeaseRoot + "/" + mledger.EncodeName(ml)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if ok, _, _ := cr.Conn.Exists(lease); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no lease after 30s; stderr %s", stderr.String())
		}
	}
	time.Sleep(2 * time.Second)
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("offload still running 30s after SIGINT")
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("exit: %v, want status 130 (stderr %q)", err, stderr.String())
	}
	var rep offloader.OffloadReport
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil || len(rep.ManagedLedgers) != 1 {
		t.Fatalf("report: %v\n%s", err, stdout.String())
	}
	ls := rep.ManagedLedgers[0].Ledgers
	if len(ls) != 3 || ls[0].Steps["select"] == 0 {
		t.Fatalf("ledgers %+v: want 3, ledger 2 selected before the signal", ls)
	}
	for _, l := range ls {
		if l.Outcome != "failed" || !strings.Contains(l.Error, "context canceled") {
			t.Errorf("ledger %d: outcome %q, error %q; want failed with context canceled", l.LedgerID, l.Outcome, l.Error)
		}
	}
	if tt := rep.Totals; tt.Failed != 3 || tt.Offloaded != 0 || tt.Bytes != 0 {
		t.Errorf("totals %+v: want 3 failed, none offloaded", tt)
	}
	if _, after, err := cr.Conn.Get(mledger.Path(ml)); err != nil || after.Version != before.Version {
		t.Fatalf("managed ledger version %d -> %d (%v): an interrupted select wrote", before.Version, after.Version, err)
	}
}
