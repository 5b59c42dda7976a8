package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tierkeeper/tierkeeper/diskbench"
	"github.com/tierkeeper/tierkeeper/internal/cli/clitest"
	"github.com/tierkeeper/tierkeeper/internal/units"
)

// The test binary doubles as the diskbench binary for the signal and
// exit-code tests.
func TestMain(m *testing.M) {
	if os.Getenv("DISKBENCH_TEST_AS_MAIN") == "1" {
		os.Args = append([]string{"diskbench"}, strings.Fields(os.Getenv("DISKBENCH_TEST_ARGS"))...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func cleanDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	t.Cleanup(func() {
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), ".diskbench-") {
				t.Errorf("left behind: %s", e.Name())
			}
		}
	})
	return dir
}

func run(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	return clitest.Run(context.Background(), newRootCmd(), args...)
}

var fast = []string{"--duration", "300ms", "--warmup", "50ms", "--max-bytes", "64m", "--allow-any-fs"}

func TestJournalJSON(t *testing.T) {
	dir := cleanDir(t)
	// A 1 s window (the last --duration wins): one fdatasync of a busy
	// shared disk can outlast 300 ms, leaving no sync latency to check.
	out, stderr, err := run(t, append(append([]string{"journal", "--dir", dir, "--writers", "1,2", "--block-size", "4k", "--output", "json"}, fast...), "--duration", "1s")...)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if stderr != "" {
		t.Errorf("json mode should be quiet on stderr, got %q", stderr)
	}
	var rep diskbench.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("stdout is not one JSON document: %v\n%s", err, out)
	}
	if len(rep.Results) != 2 || rep.Results[1].Writers != 2 || rep.Results[0].BlockSize != 4096 {
		t.Fatalf("results %+v", rep.Results)
	}
	r := rep.Results[0]
	if r.Workload != "journal" || r.BytesPerSec <= 0 || r.IOPS <= 0 || r.SyncLatency == nil || r.SyncLatency.P99Ns <= 0 {
		t.Errorf("result %+v", r)
	}
	if rep.BytesWritten <= 0 || rep.BytesWritten > 64<<20 || rep.FSType == "" {
		t.Errorf("report %+v", rep)
	}
}

func TestTableAndSVG(t *testing.T) {
	dir := cleanDir(t)
	svg := filepath.Join(t.TempDir(), "chart.svg")
	out, _, err := run(t, append([]string{"randread", "--dir", dir, "--depth", "1,2", "--block-size", "4k", "--file-size", "4m", "--svg", svg}, fast...)...)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"workload", "randread", "p99", "read"} {
		if !strings.Contains(out, w) {
			t.Errorf("table lacks %q:\n%s", w, out)
		}
	}
	b, err := os.ReadFile(svg)
	if err != nil {
		t.Fatal(err)
	}
	if err := xml.Unmarshal(b, new(struct{})); err != nil {
		t.Errorf("svg not XML: %v", err)
	}
	if !bytes.Contains(b, []byte("depth (reads in flight) (log2 scale)")) {
		t.Errorf("svg lacks the depth axis")
	}
}

func TestEntryLogAndSweep(t *testing.T) {
	dir := cleanDir(t)
	if _, stderr, err := run(t, append([]string{"entrylog", "--dir", dir, "--block-size", "64k", "--flush-every", "256k"}, fast...)...); err != nil {
		t.Fatalf("%v %s", err, stderr)
	}
	// 6 s: each point gets ~0.9 s; with 3 s (~0.44 s a point) a randread
	// point measured no read under make test's parallel load (no window).
	out, stderr, err := run(t, "sweep", "--dir", dir, "--time-budget", "6s", "--max-bytes", "48m", "--allow-any-fs",
		"--workloads", "journal,randread", "--output", "json")
	if err != nil {
		t.Fatalf("%v %s", err, stderr)
	}
	var rep diskbench.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Results {
		if r.Workload == diskbench.WorkloadEntryLog {
			t.Errorf("entrylog ran although not asked for")
		}
	}
	if len(rep.Results) == 0 || rep.TimeBudgetSec != 6 {
		t.Errorf("report %+v", rep)
	}
}

// TestSVGPathCheckedFirst: an --svg path that
// cannot be written fails before the benchmark (which used to run in full
// and then be thrown away), and a chart that fails to write at the end no
// longer costs the table.
func TestSVGPathCheckedFirst(t *testing.T) {
	dir := cleanDir(t)
	// A one-minute point: only an up-front check answers within seconds.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	cmd := newRootCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(io.Discard)
	cmd.SetArgs([]string{"journal", "--dir", dir, "--writers", "1", "--block-size", "4k", "--duration", "1m",
		"--max-bytes", "64m", "--allow-any-fs", "--svg", "/nonexistent/x.svg"})
	err := cmd.ExecuteContext(ctx)
	if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "--svg /nonexistent/x.svg") {
		t.Fatalf("err = %v, want the --svg path refused", err)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("refused after %v: the benchmark ran first", el)
	}
	// The same refusal for sweep, which builds its own plan.
	if _, _, err := run(t, "sweep", "--dir", dir, "--allow-any-fs", "--svg", "/nonexistent/x.svg"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("sweep: %v", err)
	}
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	// /dev/full opens but every write fails: the figures are printed anyway.
	for _, format := range []string{"table", "json"} {
		stdout, _, err := run(t, append([]string{"randread", "--dir", dir, "--depth", "1", "--block-size", "4k", "--file-size", "4m",
			"--svg", "/dev/full", "--output", format}, fast...)...)
		if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "--svg") {
			t.Errorf("%s: err = %v, want the chart's ENOSPC", format, err)
		}
		if !strings.Contains(stdout, "randread") {
			t.Errorf("%s: results not printed when the chart failed:\n%s", format, stdout)
		}
	}
}

func TestCheckCommand(t *testing.T) {
	dir := cleanDir(t)
	out, _, err := run(t, "check", "--dir", dir, "--allow-any-fs", "--max-bytes", "1m")
	if err != nil || !strings.Contains(out, "ok") {
		t.Errorf("%v\n%s", err, out)
	}
}

func TestBadInput(t *testing.T) {
	dir := cleanDir(t)
	file := filepath.Join(dir, "f")
	os.WriteFile(file, nil, 0o600)
	bookie := t.TempDir()
	os.MkdirAll(filepath.Join(bookie, "current"), 0o755)
	os.WriteFile(filepath.Join(bookie, "current", "VERSION"), []byte("4\n"), 0o600)
	for name, c := range map[string]struct {
		args []string
		want error
		msg  string
	}{
		"no dir":        {[]string{"journal"}, diskbench.ErrInvalidOptions, "--dir is required"},
		"missing dir":   {[]string{"journal", "--dir", filepath.Join(dir, "nope")}, os.ErrNotExist, "does not exist"},
		"not a dir":     {[]string{"entrylog", "--dir", file}, diskbench.ErrNotDirectory, "not a directory"},
		"bad size":      {[]string{"journal", "--dir", dir, "--block-size", "4q"}, units.ErrBadSize, `unparseable size "4q"`},
		"bad file size": {[]string{"randread", "--dir", dir, "--file-size", "1.3"}, units.ErrBadSize, "not a whole number"},
		// An explicit zero is refused everywhere, never silently the default.
		"zero max-bytes":       {[]string{"journal", "--dir", dir, "--max-bytes", "0"}, diskbench.ErrInvalidOptions, "--max-bytes 0: must be positive"},
		"check zero max-bytes": {[]string{"check", "--dir", dir, "--allow-any-fs", "--max-bytes", "0"}, diskbench.ErrInvalidOptions, "--max-bytes 0: must be positive"},
		"zero file size":       {[]string{"journal", "--dir", dir, "--model", "plain", "--file-size", "0"}, diskbench.ErrInvalidOptions, "--file-size 0: must be positive"},
		"bad output":           {[]string{"randread", "--dir", dir, "--output", "xml"}, diskbench.ErrInvalidOptions, "--output"},
		"zero writers":         {[]string{"journal", "--dir", dir, "--writers", "0"}, diskbench.ErrInvalidOptions, "writers 0"},
		"sync-every 0":         {[]string{"journal", "--dir", dir, "--model", "plain", "--sync-every", "0"}, diskbench.ErrInvalidOptions, "--sync-every"},
		"bad prealloc":         {[]string{"journal", "--dir", dir, "--model", "plain", "--prealloc", "zero"}, diskbench.ErrInvalidOptions, "--prealloc"},
		"bad model":            {[]string{"journal", "--dir", dir, "--model", "fio"}, diskbench.ErrInvalidOptions, "--model"},
		"plain flag":           {[]string{"journal", "--dir", dir, "--sync-every", "4"}, diskbench.ErrInvalidOptions, "--model plain only"},
		"bk flag":              {[]string{"journal", "--dir", dir, "--model", "plain", "--journalAlignmentSize", "512"}, diskbench.ErrInvalidOptions, "--model bookkeeper only"},
		"bad align":            {[]string{"journal", "--dir", dir, "--allow-any-fs", "--journalAlignmentSize", "1000"}, diskbench.ErrInvalidOptions, "journalAlignmentSize"},
		"bad conf":             {[]string{"journal", "--dir", dir, "--bookie-conf", filepath.Join(dir, "nope.conf")}, os.ErrNotExist, "--bookie-conf"},
		"bookie data":          {[]string{"journal", "--dir", bookie, "--allow-any-fs"}, diskbench.ErrBookieData, "--force"},
		"huge budget":          {[]string{"journal", "--dir", dir, "--allow-any-fs", "--max-bytes", "1000000t"}, diskbench.ErrInsufficientSpace, "free"},
		"bad workloads":        {[]string{"sweep", "--dir", dir, "--workloads", "journal,fsync"}, diskbench.ErrInvalidOptions, "fsync"},
		"sweep no dir":         {[]string{"sweep"}, diskbench.ErrInvalidOptions, "--dir is required"},
		"sweep output":         {[]string{"sweep", "--dir", dir, "--output", "xml"}, diskbench.ErrInvalidOptions, "--output"},
	} {
		t.Run(name, func(t *testing.T) {
			_, _, err := run(t, c.args...)
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.msg) {
				t.Errorf("got %v, want %v mentioning %q", err, c.want, c.msg)
			}
		})
	}
}

// TestJournalBookieConf: --bookie-conf supplies the journal settings a
// flag does not, and they reach the result.
func TestJournalBookieConf(t *testing.T) {
	dir := cleanDir(t)
	conf := filepath.Join(t.TempDir(), "bookkeeper.conf")
	os.WriteFile(conf, []byte("# a bookie's config\njournalMaxGroupWaitMSec=3\njournalAlignmentSize = 512\n"+
		"journalWriteBufferSizeKB=128\nzkServers=localhost:2181\n"), 0o600)
	out, stderr, err := run(t, append([]string{"journal", "--dir", dir, "--writers", "1", "--block-size", "4k", "--output", "json",
		"--bookie-conf", conf, "--journalWriteBufferSizeKB", "32", "--in-flight", "8"}, fast...)...)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	var rep diskbench.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	r := rep.Results[0]
	s := r.JournalSettings
	if r.Model != diskbench.JournalModelBookKeeper || s == nil || s.JournalMaxGroupWaitMSec != 3 || s.JournalAlignmentSize != 512 ||
		s.JournalWriteBufferSizeKB != 32 || s.JournalPreAllocSizeMB != 16 || r.InFlight != 8 || r.AddLatency == nil {
		t.Errorf("model %q in-flight %d settings %+v add %v", r.Model, r.InFlight, s, r.AddLatency)
	}
}

func TestRefusesTmpfs(t *testing.T) {
	var st unix.Statfs_t
	if err := unix.Statfs("/dev/shm", &st); err != nil || st.Type != 0x01021994 {
		t.Skip("/dev/shm is not tmpfs here")
	}
	dir, err := os.MkdirTemp("/dev/shm", "diskbench-cli-")
	if err != nil {
		t.Skip(err)
	}
	defer os.RemoveAll(dir)
	_, _, err = run(t, "journal", "--dir", dir, "--max-bytes", "1m")
	if !errors.Is(err, diskbench.ErrUnsupportedFS) || !strings.Contains(err.Error(), "tmpfs") {
		t.Errorf("got %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("files created: %v", ents)
	}
}

// subprocess runs the test binary as diskbench.
func subprocess(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "DISKBENCH_TEST_AS_MAIN=1", "DISKBENCH_TEST_ARGS="+strings.Join(args, " "))
	return cmd
}

func TestExitCodeOnError(t *testing.T) {
	cmd := subprocess("journal", "--dir", filepath.Join(t.TempDir(), "missing"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(stderr.String(), "does not exist") {
		t.Errorf("exit %v, stderr %q", err, stderr.String())
	}
}

// TestNotADiskSinglePrefix: --dir /proc used to say
// "0B free" (and with a doubled "diskbench: diskbench:" prefix) instead of
// "not a disk".
func TestNotADiskSinglePrefix(t *testing.T) {
	for _, c := range []struct {
		args   []string
		stderr string
	}{
		{[]string{"check", "--dir", "/proc"}, "diskbench: unsupported filesystem: /proc is on proc, a kernel pseudo-filesystem, not a disk\n"},
		{[]string{"journal", "--dir", "/proc", "--allow-any-fs"}, "diskbench: unsupported filesystem: /proc is on proc, a kernel pseudo-filesystem, not a disk\n"},
		{[]string{"journal"}, "diskbench: invalid options: --dir is required\n"},
	} {
		cmd := subprocess(c.args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 || stderr.String() != c.stderr {
			t.Errorf("%v: exit %v, stderr %q; want 1, %q", c.args, err, stderr.String(), c.stderr)
		}
	}
}

func TestSignalRemovesFiles(t *testing.T) {
	for _, c := range []struct {
		name  string
		sig   syscall.Signal
		args  []string
		ready string
	}{
		// A budget the journal cannot spend before the signal: grouped
		// 4 KiB entries run at hundreds of MB/s.
		{"journal SIGINT", syscall.SIGINT, []string{"journal", "--writers", "2", "--block-size", "4k", "--duration", "1m", "--max-bytes", "1g"}, "point start"},
		{"journal SIGTERM", syscall.SIGTERM, []string{"journal", "--writers", "1", "--block-size", "4k", "--duration", "1m", "--max-bytes", "1g"}, "point start"},
		{"plain journal SIGTERM", syscall.SIGTERM, []string{"journal", "--model", "plain", "--writers", "1", "--block-size", "4k", "--duration", "1m", "--max-bytes", "64m"}, "point start"},
		// During the random-read layout the file still has its name.
		{"randread layout SIGINT", syscall.SIGINT, []string{"randread", "--file-size", "1g", "--max-bytes", "1200m", "--duration", "1m"}, "layout start"},
	} {
		t.Run(c.name, func(t *testing.T) {
			sig := c.sig
			dir := cleanDir(t)
			cmd := subprocess(append(append([]string{}, c.args...), "--dir", dir, "--allow-any-fs", "-v")...)
			stderr, err := cmd.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// Wait until the point runs (its debug record), then signal.
			started := make(chan struct{})
			go func() {
				sc := bufio.NewScanner(stderr)
				once := false
				for sc.Scan() {
					if !once && strings.Contains(sc.Text(), c.ready) {
						once = true
						close(started)
					}
				}
				io.Copy(io.Discard, stderr)
			}()
			select {
			case <-started:
			case <-time.After(20 * time.Second):
				cmd.Process.Kill()
				t.Fatal("benchmark never started")
			}
			time.Sleep(100 * time.Millisecond)
			cmd.Process.Signal(sig)
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				var ee *exec.ExitError
				if !errors.As(err, &ee) || ee.ExitCode() != 130 {
					t.Errorf("exit %v, want 130", err)
				}
			case <-time.After(15 * time.Second):
				cmd.Process.Kill()
				t.Fatal("did not stop on signal")
			}
		})
	}
}
