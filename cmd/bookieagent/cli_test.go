package main

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tierkeeper/tierkeeper/bookieagent"
	"github.com/tierkeeper/tierkeeper/internal/cli/clitest"
)

func runCLI(t *testing.T, env map[string]string, args ...string) (string, string, error) {
	t.Helper()
	for k, v := range env {
		t.Setenv(k, v)
	}
	return clitest.Run(context.Background(), newRootCmd(), args...)
}

// TestRecommendFromInputMatchesGolden: `recommend --input` on a recorded
// profile prints exactly the library's golden fragment.
func TestRecommendFromInputMatchesGolden(t *testing.T) {
	for _, f := range []struct{ format, ext string }{{"conf", ".conf"}, {"helm", ".helm.yaml"}, {"rocksdb", ".rocksdb.conf"}, {"json", ".json"}} {
		out, _, err := runCLI(t, nil, "recommend", "--input", "../../bookieagent/testdata/profiles/sata-ssd.json", "--format", f.format)
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile("../../bookieagent/testdata/golden/sata-ssd" + f.ext)
		if err != nil {
			t.Fatal(err)
		}
		if out != string(want) {
			t.Errorf("%s output differs from golden", f.format)
		}
	}
}

// TestBadInput: every bad input is a clear error, with nothing on stdout
// and nothing written into the directories.
func TestBadInput(t *testing.T) {
	root := t.TempDir()
	j, l := filepath.Join(root, "j"), filepath.Join(root, "l")
	os.Mkdir(j, 0o755)
	os.Mkdir(l, 0o755)
	file := filepath.Join(root, "f")
	os.WriteFile(file, nil, 0o644)
	live := filepath.Join(root, "live")
	os.MkdirAll(filepath.Join(live, "current"), 0o755)
	os.WriteFile(filepath.Join(live, "current", "VERSION"), []byte("4\nbookieHost: \"h:3181\"\njournalDir: \"/j\"\nledgerDirs: \"1\\t/l\"\n"), 0o644)
	before := listTree(t, root)
	cases := []struct {
		name string
		env  map[string]string
		args []string
		want string
		is   error
	}{
		{"missing dir", nil, []string{"recommend", "--journal-dir", filepath.Join(root, "nope"), "--ledger-dir", l, "--max-direct-memory", "4g"}, "does not exist", nil},
		{"file not dir", nil, []string{"recommend", "--journal-dir", file, "--ledger-dir", l, "--max-direct-memory", "4g"}, "not a directory", bookieagent.ErrNoDirectory},
		{"tmpfs", nil, []string{"recommend", "--journal-dir", j, "--ledger-dir", "/dev/shm", "--max-direct-memory", "4g"}, "tmpfs", bookieagent.ErrUnsupportedFS},
		{"budget", nil, []string{"recommend", "--journal-dir", j, "--ledger-dir", l, "--max-direct-memory", "4g", "--budget", "3s"}, "budget too small", bookieagent.ErrBudgetTooSmall},
		{"rounds", nil, []string{"recommend", "--journal-dir", j, "--ledger-dir", l, "--rounds", "0"}, "--rounds", nil},
		{"live bookie", nil, []string{"recommend", "--journal-dir", j, "--ledger-dir", live}, "--allow-live-bookie", bookieagent.ErrLiveBookie},
		{"threshold 1", nil, []string{"report", "--ledger-dir", l, "--disk-usage-threshold", "1"}, "must be > 0 and < 1", bookieagent.ErrBadThreshold},
		{"lwm above warn", nil, []string{"serve", "--listen", "127.0.0.1:0", "--ledger-dir", l, "--disk-usage-lwm-threshold", "0.93"}, "lwm ≤ warn ≤ threshold", bookieagent.ErrBadThreshold},
		{"bytes budget", nil, []string{"recommend", "--journal-dir", j, "--ledger-dir", l, "--max-direct-memory", "4g", "--max-bytes", "8MiB"}, "budget too small", bookieagent.ErrBudgetTooSmall},
		{"bad budget", nil, []string{"recommend", "--journal-dir", j, "--ledger-dir", l, "--max-direct-memory", "4g", "--budget", "soon"}, "--budget", nil},
		{"bad size", nil, []string{"recommend", "--journal-dir", j, "--ledger-dir", l, "--max-direct-memory", "four gigs"}, "unparseable size", bookieagent.ErrBadSize},
		{"bad max-bytes", nil, []string{"recommend", "--journal-dir", j, "--ledger-dir", l, "--max-direct-memory", "4g", "--max-bytes", "-3"}, "unparseable size", bookieagent.ErrBadSize},
		// Zero used to mean 2 GiB without a word .
		{"zero max-bytes", nil, []string{"recommend", "--journal-dir", j, "--ledger-dir", l, "--max-direct-memory", "4g", "--max-bytes", "0"}, "--max-bytes 0: unparseable size: must be positive", bookieagent.ErrBadSize},
		{"serve zero max-bytes", nil, []string{"serve", "--listen", "127.0.0.1:0", "--journal-dir", j, "--ledger-dir", l, "--bench-on-start", "--max-direct-memory", "4g", "--max-bytes", "0"}, "must be positive", bookieagent.ErrBadSize},
		{"bad env", map[string]string{"BOOKIE_MEM": "-Xmx2q"}, []string{"recommend", "--journal-dir", j, "--ledger-dir", l}, "BOOKIE_MEM", bookieagent.ErrBadSize},
		{"no ledger dir", nil, []string{"recommend", "--journal-dir", j, "--max-direct-memory", "4g"}, "--ledger-dir", nil},
		// Checked before the benchmark, which would otherwise run for a minute first.
		{"save-input path", nil, []string{"recommend", "--journal-dir", j, "--ledger-dir", l, "--max-direct-memory", "4g", "--save-input", filepath.Join(root, "nope", "in.json")}, "--save-input", os.ErrNotExist},
		{"bad format", nil, []string{"recommend", "--journal-dir", j, "--ledger-dir", l, "--format", "xml"}, "unknown format", nil},
		{"report missing", nil, []string{"report", "--ledger-dir", filepath.Join(root, "nope")}, "no such file", nil},
		{"report output", nil, []string{"report", "--ledger-dir", l, "-o", "yaml"}, "--output", nil},
		{"serve bad listen", nil, []string{"serve", "--listen", "127.0.0.1:notaport", "--ledger-dir", l}, "--listen", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "tmpfs" {
				if _, err := os.Stat("/dev/shm"); err != nil {
					t.Skip("no /dev/shm")
				}
			}
			env := map[string]string{"BOOKIE_MEM": "", "PULSAR_MEM": ""}
			for k, v := range tc.env {
				env[k] = v
			}
			out, _, err := runCLI(t, env, tc.args...)
			if err == nil {
				t.Fatalf("want an error")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not mention %q", err, tc.want)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error %v is not %v", err, tc.is)
			}
			if out != "" {
				t.Errorf("stdout not empty: %q", out)
			}
		})
	}
	if after := listTree(t, root); after != before {
		t.Errorf("bad input changed the tree:\nbefore %s\nafter  %s", before, after)
	}
}

func listTree(t *testing.T, root string) string {
	t.Helper()
	var b strings.Builder
	filepath.WalkDir(root, func(p string, _ os.DirEntry, err error) error {
		b.WriteString(strings.TrimPrefix(p, root) + " ")
		return err
	})
	return b.String()
}

func TestReportTable(t *testing.T) {
	d := t.TempDir()
	out, _, err := runCLI(t, nil, "report", "--journal-dir", d, "--ledger-dir", d)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "MOUNT") || !strings.Contains(out, "journal:"+d) || !strings.Contains(out, "thresholds: lwm 0.95, warn 0.90, full 0.95") {
		t.Errorf("table:\n%s", out)
	}
}

// TestDiffCLI: diff against a saved measurement; unknown and malformed keys
// are errors with nothing on stdout.
func TestDiffCLI(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "bookkeeper.conf")
	os.WriteFile(conf, []byte("journalDirectory=/pulsar/data/bookkeeper/journal\nledgerDirectories=/pulsar/data/bookkeeper/ledgers\nwriteBufferSizeBytes=65536\ngcWaitTime=300000\n"), 0o644)
	rocks := filepath.Join(dir, "entry_location_rocksdb.conf")
	os.WriteFile(rocks, []byte("[CFOptions \"default\"]\n  write_buffer_size=67108864\n  max_write_buffer_number=4\n"), 0o644)
	profile := "../../bookieagent/testdata/profiles/nvme.json"
	out, _, err := runCLI(t, nil, "diff", "--conf", conf, "--rocksdb-conf", rocks, "--input", profile, "--mem", "-Xmx4g -XX:MaxDirectMemorySize=8g", "-q")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Applies on restart:", "gcWaitTime", "300000", "→ 900000", "CHANGE", "New or re-formatted bookies only",
		"write_buffer_size [CFOptions \"default\"]", "ignored by BookKeeper"} {
		if !strings.Contains(out, want) {
			t.Errorf("diff lacks %q:\n%s", want, out)
		}
	}
	out, _, err = runCLI(t, nil, "diff", "--conf", conf, "--input", profile, "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var d bookieagent.DiffReport
	if err := json.Unmarshal([]byte(out), &d); err != nil || len(d.OnRestart) == 0 || len(d.NewBookiesOnly) != 2 {
		t.Errorf("json: %v %+v", err, d)
	}
	typo := filepath.Join(dir, "typo.conf")
	os.WriteFile(typo, []byte("gcWaitTme=1\n"), 0o644)
	out, _, err = runCLI(t, nil, "diff", "--conf", typo, "--input", profile)
	if !errors.Is(err, bookieagent.ErrBadConf) || !strings.Contains(err.Error(), "did you mean gcWaitTime?") || out != "" {
		t.Errorf("unknown key: %v, stdout %q", err, out)
	}
	if _, _, err := runCLI(t, nil, "diff", "--conf", typo, "--input", profile, "--allow-unknown-keys", "-q"); err != nil {
		t.Errorf("--allow-unknown-keys: %v", err)
	}
	bad := filepath.Join(dir, "bad.conf")
	os.WriteFile(bad, []byte("gcWaitTime=soon\n"), 0o644)
	if out, _, err := runCLI(t, nil, "diff", "--conf", bad, "--input", profile, "-q"); !errors.Is(err, bookieagent.ErrBadConf) || out != "" {
		t.Errorf("malformed value: %v, stdout %q", err, out)
	}
	if _, _, err := runCLI(t, nil, "diff", "--input", profile); err == nil || !strings.Contains(err.Error(), "--conf") {
		t.Errorf("no --conf: %v", err)
	}
}

// TestClusterBadInput: a hanging agent and an unreachable ZooKeeper give a
// clear error within their bounds, nothing on stdout.
func TestClusterBadInput(t *testing.T) {
	hang := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(hang)
	start := time.Now()
	out, _, err := runCLI(t, nil, "cluster", "--agents", srv.URL, "--agent-timeout", "1s", "--format", "helm")
	if err == nil || !strings.Contains(err.Error(), "no answer within 1s") || out != "" {
		t.Errorf("hanging agent: %v, stdout %q", err, out)
	}
	if time.Since(start) > 10*time.Second {
		t.Errorf("hanging agent took %v", time.Since(start))
	}
	for _, args := range [][]string{
		{"cluster", "--zk", "127.0.0.1:1", "--zk-connect-timeout", "1s"},
		{"cluster", "--agents", "ftp://x"},
		{"cluster", "--agents", srv.URL, "--remove", "a:1"},
		{"cluster"},
		{"cluster", "--zk", "127.0.0.1:1", "--format", "xml"},
	} {
		start := time.Now()
		out, _, err := runCLI(t, nil, args...)
		if err == nil || out != "" || time.Since(start) > 15*time.Second {
			t.Errorf("%v: %v, stdout %q, %v", args, err, out, time.Since(start))
		}
	}
}

// TestRecommendInputCPUsAndNoMemory: with --input, --cpus overrides the
// recorded count and says so (it used to be ignored without a word); without
// any direct-memory size the recommendation is still given, the cache
// sizes name what they need (recommend used to refuse to run).
func TestRecommendInputCPUsAndNoMemory(t *testing.T) {
	profile := "../../bookieagent/testdata/profiles/vm-virtio-recorded.json"
	out, errOut, err := runCLI(t, map[string]string{"BOOKIE_MEM": "", "PULSAR_MEM": ""}, "recommend", "--input", profile, "--cpus", "16", "--format", "conf")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errOut, "--cpus 16 overrides the 2 CPUs recorded") || !strings.Contains(out, "16 CPUs (--cpus") {
		t.Errorf("--cpus with --input: stderr %q\n%s", errOut, out)
	}
	_, errOut, err = runCLI(t, nil, "recommend", "--input", profile, "--format", "conf")
	if err != nil || !strings.Contains(errOut, "using the 2 CPUs recorded") {
		t.Errorf("without --cpus: %v, stderr %q", err, errOut)
	}
	b, _ := os.ReadFile(profile)
	var in bookieagent.Input
	json.Unmarshal(b, &in)
	in.DirectMemoryBytes, in.DirectMemorySource = 0, ""
	noMem := filepath.Join(t.TempDir(), "nomem.json")
	b, _ = json.Marshal(in)
	os.WriteFile(noMem, b, 0o644)
	out, _, err = runCLI(t, map[string]string{"BOOKIE_MEM": "", "PULSAR_MEM": ""}, "recommend", "--input", noMem, "-q")
	if err != nil || !strings.Contains(out, "# dbStorage_writeCacheMaxSizeMb= (needs") || !strings.Contains(out, "\njournalDirectories=") {
		t.Errorf("no direct memory: %v\n%s", err, out)
	}
}

// TestRecommendMemoryLimitFlag: --memory-limit replaces the recorded limit
// and the direct memory derived from it; a bad value is refused.
func TestRecommendMemoryLimitFlag(t *testing.T) {
	profile := "../../bookieagent/testdata/profiles/vm-2cpu.json"
	out, _, err := runCLI(t, map[string]string{"BOOKIE_MEM": "", "PULSAR_MEM": ""}, "recommend", "--input", profile, "--memory-limit", "8g", "-q")
	if err != nil {
		t.Fatal(err)
	}
	// 8 GiB: heap 1 GiB, direct ≤ 40% = 3 GiB (rounded to 256 MiB), so the caches are 1536 MiB.
	if !strings.Contains(out, "container memory limit 8GiB (--memory-limit 8g)") || !strings.Contains(out, "\ndbStorage_writeCacheMaxSizeMb=768\n") {
		t.Errorf("--memory-limit 8g not applied:\n%s", out)
	}
	if _, _, err := runCLI(t, nil, "recommend", "--input", profile, "--memory-limit", "lots", "-q"); err == nil || !strings.Contains(err.Error(), "--memory-limit") {
		t.Errorf("bad --memory-limit: %v", err)
	}
}
