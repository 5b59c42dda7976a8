package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tierkeeper/tierkeeper/bookieagent"
	"github.com/tierkeeper/tierkeeper/test/testenv"
)

func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		testenv.Unavailable(t, "promtool (make deps installs Debian's prometheus package)")
	}
	return p
}

func get(t *testing.T, url string) (int, []byte) {
	t.Helper()
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// TestServeEndToEnd starts the real binary on 127.0.0.1, scrapes /metrics
// and checks it with promtool, and validates /report against statfs.
func TestServeEndToEnd(t *testing.T) {
	pt := promtool(t)
	bin := testenv.BuiltCommand(t, "bookieagent")
	root := t.TempDir()
	j, l := filepath.Join(root, "journal"), filepath.Join(root, "ledgers")
	os.Mkdir(j, 0o755)
	os.Mkdir(l, 0o755)
	port := testenv.FreePort(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	cmd := exec.Command(bin, "serve", "--listen", addr, "--journal-dir", j, "--ledger-dir", l, "--interval", "200ms", "--window", "1m")
	p := testenv.Start(t, "bookieagent", filepath.Join(root, "logs"), cmd)
	if err := p.WaitTCP(addr, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// Let a few samples accumulate so growth is fitted.
	deadline := time.Now().Add(10 * time.Second)
	var rep bookieagent.Report
	for {
		code, body := get(t, "http://"+addr+"/report")
		if code != 200 {
			t.Fatalf("/report: %d %s", code, body)
		}
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&rep); err != nil {
			t.Fatalf("/report does not decode strictly: %v\n%s", err, body)
		}
		if len(rep.Mounts) == 1 && rep.Mounts[0].Samples >= 3 || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if len(rep.Mounts) != 1 {
		t.Fatalf("journal and ledger dir share a mount; got %d mounts", len(rep.Mounts))
	}
	m := rep.Mounts[0]
	if m.Samples < 3 || len(m.Dirs) != 2 || m.GrowthBytesPerSec == nil || m.SizeBytes == 0 || m.UsedBytes+m.AvailBytes != m.SizeBytes {
		t.Errorf("report mount: %+v", m)
	}
	if rep.Threshold != 0.95 || rep.WarnThreshold != 0.90 {
		t.Errorf("thresholds %v %v", rep.Threshold, rep.WarnThreshold)
	}
	// Usage agrees with our own statfs (BookKeeper's formula) within what a
	// busy shared disk can change in a moment.
	u, err := bookieagent.GopsutilStatfs(ctx, l)
	if err != nil {
		t.Fatal(err)
	}
	if want := 1 - float64(u.Avail)/float64(u.Size); m.Usage < want-0.01 || m.Usage > want+0.01 {
		t.Errorf("usage %v, statfs says %v", m.Usage, want)
	}

	code, metrics := get(t, "http://"+addr+"/metrics")
	if code != 200 {
		t.Fatalf("/metrics: %d", code)
	}
	for _, want := range []string{
		"tierkeeper_bookieagent_mount_usage_ratio{", "tierkeeper_bookieagent_mount_avail_bytes{", "tierkeeper_bookieagent_mount_size_bytes{",
		`tierkeeper_bookieagent_disk_usage_threshold_ratio{level="readonly"} 0.95`, `tierkeeper_bookieagent_disk_usage_threshold_ratio{level="warn"} 0.9`,
		`tierkeeper_bookieagent_dir_info{dir="` + j + `",mountpoint=`, `role="ledger"`, "tierkeeper_bookieagent_samples_total ",
		"tierkeeper_bookieagent_mount_readonly_headroom_bytes{", "tierkeeper_bookieagent_mount_growth_bytes_per_second{",
		"tierkeeper_bookieagent_disk_written_bytes_total{", "# TYPE tierkeeper_bookieagent_disk_written_bytes_total counter",
		"go_goroutines ", "process_cpu_seconds_total ", // Go and process collectors (docs/bookieagent.md)
	} {
		if !bytes.Contains(metrics, []byte(want)) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	check := exec.Command(pt, "check", "metrics")
	check.Stdin = bytes.NewReader(metrics)
	if out, err := check.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}

	if code, body := get(t, "http://"+addr+"/healthz"); code != 200 || !strings.HasPrefix(string(body), "ok") {
		t.Errorf("/healthz: %d %s", code, body)
	}
	code, body := get(t, "http://"+addr+"/recommendation")
	var bs bookieagent.BenchState
	if err := json.Unmarshal(body, &bs); err != nil || code != 404 || bs.Status != "none" {
		t.Errorf("/recommendation without a bench: %d %s", code, body)
	}

	// A second agent on the same port fails with a clear error.
	out, err := exec.Command(bin, "serve", "--listen", addr, "--journal-dir", j).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "address already in use") {
		t.Errorf("port in use: err=%v out=%s", err, out)
	}
	p.Stop()
	if exited, err := p.Exited(); !exited || err != nil {
		t.Errorf("SIGTERM: exited=%v err=%v; want a clean exit", exited, err)
	}
}

// TestServeBenchOnStartSkipsLiveBookie: --bench-on-start must not touch a
// disk that holds a bookie.
func TestServeBenchOnStartSkipsLiveBookie(t *testing.T) {
	bin := testenv.BuiltCommand(t, "bookieagent")
	root := t.TempDir()
	j, l := filepath.Join(root, "journal"), filepath.Join(root, "ledgers")
	os.MkdirAll(filepath.Join(j, "current"), 0o755)
	os.Mkdir(l, 0o755)
	os.WriteFile(filepath.Join(j, "current", "VERSION"), []byte("5\nbookieHost: \"h:3181\"\njournalDir: \""+j+"\"\nledgerDirs: \"1\\t"+l+"\"\n"), 0o644)
	addr := fmt.Sprintf("127.0.0.1:%d", testenv.FreePort(t))
	cmd := exec.Command(bin, "serve", "--listen", addr, "--journal-dir", j, "--ledger-dir", l, "--bench-on-start", "--max-direct-memory", "1g")
	p := testenv.Start(t, "bookieagent-bench", filepath.Join(root, "logs"), cmd)
	if err := p.WaitTCP(addr, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	var bs bookieagent.BenchState
	for i := 0; i < 50; i++ {
		_, body := get(t, "http://"+addr+"/recommendation")
		json.Unmarshal(body, &bs)
		if bs.Status != "none" {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if bs.Status != "skipped" || !strings.Contains(bs.Reason, "live bookie") {
		t.Errorf("bench state %+v; want skipped", bs)
	}
	ents, _ := os.ReadDir(root)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("unexpected %s next to the bookie dirs", e.Name())
		}
	}
}
