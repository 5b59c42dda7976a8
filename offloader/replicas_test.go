package offloader

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"testing"
	"time"

	tzk "github.com/tierkeeper/tierkeeper/internal/zk"
	"github.com/tierkeeper/tierkeeper/offloader/blob/s3/s3test"
	"github.com/tierkeeper/tierkeeper/offloader/mltest"
	"github.com/tierkeeper/tierkeeper/pulsar/mledger"
	"github.com/tierkeeper/tierkeeper/test/testenv"
)

type interval struct {
	replica    string
	start, end time.Time
	ended      bool
}

var logLine = regexp.MustCompile(`^time=(\S+) level=INFO msg="copy (started|ended)" (?:component=\S+ )?ml=(\S+) ledger=(\d+)`)

// copies parses a replica log into per-ledger copy intervals; a copy still
// open when the process was killed ends at killedAt.
func copies(t *testing.T, path, replica string, killedAt time.Time, into map[string][]interval) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	open := map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		m := logLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		at, err := time.Parse(time.RFC3339Nano, m[1])
		if err != nil {
			t.Fatalf("%s: time %q: %v", path, m[1], err)
		}
		k := m[3] + "/" + m[4]
		if m[2] == "started" {
			into[k] = append(into[k], interval{replica: replica, start: at})
			open[k] = len(into[k]) - 1
			continue
		}
		if i, ok := open[k]; ok {
			into[k][i].end, into[k][i].ended = at, true
			delete(open, k)
		}
	}
	for k, i := range open {
		into[k][i].end = killedAt
	}
}

// TestReplicasKillLoop runs three `offloader run` processes sharing the
// work through per-topic leases while a loop SIGKILLs and restarts them.
// Every closed ledger ends up offloaded and readable by Pulsar's own code,
// no ledger is ever copied by two replicas at once, and more than one
// replica did the work.
func TestReplicasKillLoop(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three service processes")
	}
	peers(t)
	bin := testenv.BuiltCommand(t, "offloader")
	const topics = 4
	var mls []string
	written := map[string]mltest.Written{}
	for i := 0; i < topics; i++ {
		ml := fmt.Sprintf("acme/replicas/persistent/t%d", i)
		written[ml] = peer.MLWrite(t, ml, 60, 10, 256<<10) // 5 closed ledgers of 2.5 MiB + the open one
		mls = append(mls, ml)
	}
	s3 := testenv.StartS3(t)
	bucket := s3.NewBucket(t)
	dir := t.TempDir()
	type replica struct {
		name    string
		cfgPath string
		proc    *testenv.Process
		gen     int
		logs    []string
		killed  []time.Time
	}
	var reps []*replica
	for i := 1; i <= 3; i++ {
		r := &replica{name: fmt.Sprintf("r%d", i)}
		// Upload limit 1 MiB/s: copies last seconds, so kills land mid-copy.
		doc := fmt.Sprintf("zookeeper: {servers: %q, session_timeout: 4s, connect_timeout: 10s}\nbookkeeper: {ledgers_root: %q}\n",
			peer.ZK.Addr, peer.BK.LedgersRoot) + s3test.StoreYAML(s3, bucket, "TK_S3_SECRET", "limits: {upload_bytes_per_second: 1048576}") + fmt.Sprintf(`
http: {listen: "127.0.0.1:%d"}
leases: {id: %s}
scheduler: {interval: 1s, retry_initial: 1s, retry_max: 5s, stop_timeout: 10s, ledgers_in_flight: 1, min_reload_interval: 0s}
discovery: {rescan_interval: 10s}
policy:
  include: [acme/replicas]
  default: {after: 0s, deletion_lag: broker}
`, testenv.FreePort(t), r.name)
		r.cfgPath = filepath.Join(dir, r.name+".yaml")
		if err := os.WriteFile(r.cfgPath, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		reps = append(reps, r)
	}
	start := func(r *replica) {
		r.gen++
		name := fmt.Sprintf("%s-%d", r.name, r.gen)
		cmd := exec.Command(bin, "run", "--config", r.cfgPath, "--log-level", "info")
		cmd.Env = append(os.Environ(), "TK_S3_SECRET="+s3.SecretKey)
		r.proc = testenv.Start(t, name, dir, cmd)
		r.logs = append(r.logs, r.proc.LogPath)
		r.killed = append(r.killed, time.Time{})
	}
	for _, r := range reps {
		start(r)
	}
	sess := peer.ZK.Session(t, tzk.Options{})
	store := mledger.New(sess, nil)
	pending := func() int {
		n := 0
		for _, ml := range mls {
			snap, err := store.Get(context.Background(), ml)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range mledger.States(snap.Info) {
				if s == mledger.StateBookKeeper || s == mledger.StateOffloading {
					n++
				}
			}
		}
		return n
	}
	// Kill loop: every 0.5-1.5 s one replica is SIGKILLed and restarted
	// 0.5 s later, at most 12 times or until the work is done.
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 9))
	deadline := time.Now().Add(4 * time.Minute)
	kills := 0
	for pending() > 0 && time.Now().Before(deadline) {
		time.Sleep(time.Duration(500+rng.IntN(1000)) * time.Millisecond)
		if kills >= 12 {
			continue
		}
		r := reps[rng.IntN(len(reps))]
		r.proc.Kill()
		r.killed[len(r.killed)-1] = time.Now()
		kills++
		time.Sleep(500 * time.Millisecond)
		start(r)
	}
	if n := pending(); n > 0 {
		t.Fatalf("%d ledgers still not offloaded after the kill loop (%d kills)", n, kills)
	}
	for _, r := range reps {
		r.proc.Stop()
	}
	// No ledger copied by two replicas at once.
	byLedger := map[string][]interval{}
	for _, r := range reps {
		for i, p := range r.logs {
			killedAt := r.killed[i]
			if killedAt.IsZero() {
				killedAt = time.Now()
			}
			copies(t, p, r.name, killedAt, byLedger)
		}
	}
	workers := map[string]bool{}
	keys := make([]string, 0, len(byLedger))
	for k := range byLedger {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		iv := byLedger[k]
		for i := range iv {
			if iv[i].ended {
				workers[iv[i].replica] = true
			}
			for j := i + 1; j < len(iv); j++ {
				a, b := iv[i], iv[j]
				if a.replica != b.replica && a.start.Before(b.end) && b.start.Before(a.end) {
					t.Errorf("ledger %s copied by %s (%s–%s) and %s (%s–%s) at once", k, a.replica, a.start.Format(time.RFC3339Nano),
						a.end.Format(time.RFC3339Nano), b.replica, b.start.Format(time.RFC3339Nano), b.end.Format(time.RFC3339Nano))
				}
			}
		}
	}
	if len(keys) < topics*5 {
		t.Errorf("copies seen for %d ledgers, want %d", len(keys), topics*5)
	}
	if len(workers) < 2 {
		t.Errorf("only %v finished copies: the work did not move", workers)
	}
	interrupted := 0
	for _, iv := range byLedger {
		for _, x := range iv {
			if !x.ended {
				interrupted++
			}
		}
	}
	if kills >= 3 && interrupted == 0 {
		t.Errorf("%d kills but none interrupted a copy", kills)
	}
	t.Logf("%d kills, %d copies interrupted by a kill; replicas that finished copies: %v", kills, interrupted, workers)
	// Nothing lost: Pulsar's own managed-ledger code reads every entry,
	// offloaded ones through the jcloud offloader, each entry as written.
	for _, ml := range mls {
		peer.PulsarReadsAll(t, s3, bucket, ml, written[ml])
	}
}
