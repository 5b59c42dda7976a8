package offloader

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	s3api "github.com/aws/aws-sdk-go-v2/service/s3"

	tzk "github.com/tierkeeper/tierkeeper/internal/zk"
	"github.com/tierkeeper/tierkeeper/offloader/blob/s3/s3test"
	"github.com/tierkeeper/tierkeeper/offloader/scheduler"
	"github.com/tierkeeper/tierkeeper/pulsar/mledger"
	"github.com/tierkeeper/tierkeeper/test/testenv"
)

// TestServiceSIGTERMMidCopy: SIGTERM reaches an `offloader run` process
// while it copies a ledger (uploads throttled to 128 KiB/s, ledgers of
// 2.5 MiB, scheduler.stop_timeout 1s; /status shows the copy's progress
// meanwhile). It takes no new work, cancels the
// copy after stop_timeout and exits 0 within the documented bound
// (stop_timeout + the call in progress); the interrupted ledger is left at a
// stored safe point (its attempt abandoned or prepared, never half-switched),
// and a restart resumes from ZooKeeper: every closed ledger offloaded,
// Pulsar's managed-ledger code reads every entry back.
func TestServiceSIGTERMMidCopy(t *testing.T) {
	if testing.Short() {
		t.Skip("starts service processes")
	}
	peers(t)
	bin := testenv.BuiltCommand(t, "offloader")
	const ml = "acme/sigterm/persistent/a"
	written := peer.MLWrite(t, ml, 30, 10, 256<<10) // 2 closed ledgers of 2.5 MiB + the open one
	s3 := testenv.StartS3(t)
	bucket := s3.NewBucket(t)
	dir := t.TempDir()
	const stopTimeout = time.Second
	port := testenv.FreePort(t)
	// The first run uploads at 128 KiB/s: its copy of a 2.5 MiB ledger
	// takes about 20 s, so SIGTERM lands mid-copy even when this test
	// process is starved for seconds on a loaded machine (at 1 MiB/s a
	// 3 s delay let the whole job commit before the signal). The restart
	// uploads unthrottled.
	config := func(name string, limits ...string) string {
		doc := fmt.Sprintf("zookeeper: {servers: %q, session_timeout: 10s, connect_timeout: 10s}\nbookkeeper: {ledgers_root: %q}\n",
			peer.ZK.Addr, peer.BK.LedgersRoot) + s3test.StoreYAML(s3, bucket, "TK_S3_SECRET", limits...) + fmt.Sprintf(`
http: {listen: "127.0.0.1:%d"}
scheduler: {interval: 1s, retry_initial: 1s, retry_max: 5s, stop_timeout: %s, ledgers_in_flight: 1, min_reload_interval: 0s}
policy:
  include: [acme/sigterm]
  default: {after: 0s, deletion_lag: broker}
`, port, stopTimeout)
		path := filepath.Join(dir, name+".yaml")
		if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	throttled := config("throttled", "limits: {upload_bytes_per_second: 131072}")
	unthrottled := config("unthrottled")
	start := func(name, cfgPath string) *testenv.Process {
		cmd := exec.Command(bin, "run", "--config", cfgPath, "--log-level", "info")
		cmd.Env = append(os.Environ(), "TK_S3_SECRET="+s3.SecretKey)
		return testenv.Start(t, name, dir, cmd)
	}
	logHas := func(p *testenv.Process, what string) bool {
		b, err := os.ReadFile(p.LogPath)
		return err == nil && strings.Contains(string(b), what)
	}
	sess := peer.ZK.Session(t, tzk.Options{})
	states := func() []mledger.LedgerState { return ledgerStates(t, sess, ml) }

	p := start("run-1", throttled)
	until(t, "a copy in flight", time.Minute, func() bool { return logHas(p, `msg="copy started"`) })
	// /status shows the copy's progress: payload bytes handed to the upload
	// (here the whole ledger fits one block, so all of it at once, then the
	// throttled upload).
	var copying string
	until(t, "copy progress in /status", 2*time.Second, func() bool {
		var st Status
		getJSON(t, fmt.Sprintf("http://127.0.0.1:%d/status", port), &st)
		for _, l := range st.Ledgers {
			if l.State == scheduler.StateRunning && l.LastStep == "copy" && l.StepBytes > 0 && l.StepTotalBytes == 10*256<<10 {
				copying = fmt.Sprintf("ledger %d: %d of %d bytes", l.LedgerID, l.StepBytes, l.StepTotalBytes)
			}
		}
		return copying != "" && st.Totals.RunningLedgers > 0
	})
	sent := time.Now()
	if err := syscall.Kill(p.Pid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	until(t, "exit after SIGTERM", 30*time.Second, func() bool { done, _ := p.Exited(); return done })
	took := time.Since(sent)
	if _, err := p.Exited(); err != nil {
		t.Errorf("offloader run after SIGTERM: %v, want exit status 0", err)
	}
	// The bound: stop_timeout, then the call in progress (here a throttled
	// part upload and the abort of its multipart upload) — far less than the
	// 30 s store-call bound on a local server.
	if took > stopTimeout+5*time.Second {
		t.Errorf("exited %s after SIGTERM, stop_timeout %s", took, stopTimeout)
	}
	st := states()
	t.Logf("/status during the copy: %s; exited %s after SIGTERM (stop_timeout %s); ledgers %v", copying, took.Round(time.Millisecond), stopTimeout, st)
	// The copy's failure abandons the attempt (its prepare undone when it
	// can be, else left prepared for the next run to replace): brokers
	// still read BookKeeper either way.
	if st[0] != mledger.StateBookKeeper && st[0] != mledger.StateOffloading {
		t.Errorf("first ledger %s after SIGTERM mid-copy, want bookkeeper (attempt abandoned) or offloading (prepared)", st[0])
	}
	if st[1] == mledger.StateOffloaded || st[1] == mledger.StateOffloading {
		t.Errorf("second ledger %s: work was taken after SIGTERM (ledgers_in_flight 1)", st[1])
	}

	p2 := start("run-2", unthrottled)
	until(t, "every closed ledger offloaded after the restart", 2*time.Minute, func() bool {
		s := states()
		return s[0] == mledger.StateOffloaded && s[1] == mledger.StateOffloaded
	})
	p2.Stop()
	peer.PulsarReadsAll(t, s3, bucket, ml, written)
	// Nothing left behind by the interrupted attempt: the two ledgers'
	// data and index objects, no incomplete multipart upload.
	ctx := context.Background()
	objs, err := s3.Client().ListObjectsV2(ctx, &s3api.ListObjectsV2Input{Bucket: &bucket})
	if err != nil {
		t.Fatal(err)
	}
	ups, err := s3.Client().ListMultipartUploads(ctx, &s3api.ListMultipartUploadsInput{Bucket: &bucket})
	if err != nil {
		t.Fatal(err)
	}
	if len(objs.Contents) != 4 || len(ups.Uploads) != 0 {
		t.Errorf("bucket holds %d objects (want 4) and %d incomplete uploads", len(objs.Contents), len(ups.Uploads))
	}
}
