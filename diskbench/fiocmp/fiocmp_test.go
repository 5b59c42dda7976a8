package fiocmp

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tierkeeper/tierkeeper/diskbench"
	"github.com/tierkeeper/tierkeeper/test/testenv"
)

func TestParseFioJSONJournal(t *testing.T) {
	b, err := os.ReadFile("testdata/fio-3.33-journal-w2-4k.json")
	if err != nil {
		t.Fatal(err)
	}
	// fio sometimes prints notes before the JSON document.
	b = append([]byte("note: both iodepth >= 1 and synchronous I/O engine are selected\n"), b...)
	m, err := ParseFioJSON(b, diskbench.WorkloadJournal)
	if err != nil {
		t.Fatal(err)
	}
	want := Metrics{BytesPerSec: 19951221, IOPS: 4870.903674, OpP99Ns: 42240, SyncP99Ns: 3981312}
	if m != want {
		t.Errorf("got %+v, want %+v", m, want)
	}
}

func TestParseFioJSONRandRead(t *testing.T) {
	b, err := os.ReadFile("testdata/fio-3.33-randread-d4-4k.json")
	if err != nil {
		t.Fatal(err)
	}
	m, err := ParseFioJSON(b, diskbench.WorkloadRandRead)
	if err != nil {
		t.Fatal(err)
	}
	if m.BytesPerSec != 179921198 || m.OpP99Ns != 378880 || m.SyncP99Ns != 0 {
		t.Errorf("got %+v", m)
	}
}

// A journal case whose 4 MiB file filled during the 100 ms ramp_time
// (fio 3.33 on tmpfs): bandwidth, but no latency sample after the ramp.
// That is an error naming the cause, not a p99 of 0.
func TestParseFioJSONFilledInRamp(t *testing.T) {
	b, err := os.ReadFile("testdata/fio-3.33-journal-filled-in-ramp.json")
	if err != nil {
		t.Fatal(err)
	}
	m, err := ParseFioJSON(b, diskbench.WorkloadJournal)
	if !errors.Is(err, ErrNoLatencySamples) || !strings.Contains(err.Error(), "1024 IOs") {
		t.Errorf("got %+v, %v; want ErrNoLatencySamples after 1024 IOs", m, err)
	}
}

func TestParseFioJSONBad(t *testing.T) {
	for _, in := range []string{"", "{", `{"jobs":[]}`, `{"jobs":[{"error":5}]}`, "fio: error"} {
		if _, err := ParseFioJSON([]byte(in), diskbench.WorkloadJournal); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
}

func FuzzParseFioJSON(f *testing.F) {
	for _, p := range []string{"testdata/fio-3.33-journal-w2-4k.json", "testdata/fio-3.33-randread-d4-4k.json"} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"jobs":[{"read":{"lat_ns":{"percentile":{"99.000000":1e300}}}}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, wl := range []diskbench.Workload{diskbench.WorkloadJournal, diskbench.WorkloadRandRead} {
			_, _ = ParseFioJSON(b, wl)
		}
	})
}

func TestJobFileMatchesDiskbenchSemantics(t *testing.T) {
	cs := DefaultCases(64*diskbench.MiB, 64*diskbench.MiB, 32*diskbench.MiB)
	if len(cs) != 14 {
		t.Fatalf("%d default cases", len(cs))
	}
	// Journal w=2 bs=64KiB, sparse (the BookKeeper pattern) then preallocated.
	for _, c := range []struct {
		c         Case
		fallocate string
		label     string
	}{{cs[3], "truncate", "BookKeeper pattern"}, {cs[9], "native", "preallocated"}} {
		j := JobFile("/d", c.c, 5*time.Second, time.Second)
		for _, want := range []string{"directory=/d\n", "rw=write\n", "bs=65536\n", "numjobs=2\n", "fdatasync=1\n",
			"fallocate=" + c.fallocate + "\n", "ioengine=psync\n", "size=67108864\n", "runtime=5000ms\n", "ramp_time=1000ms\n", c.label} {
			if !strings.Contains(j, want) {
				t.Errorf("journal job lacks %q:\n%s", want, j)
			}
		}
		if strings.Contains(j, "time_based") {
			t.Errorf("write jobs must stop when the file is full, not wrap:\n%s", j)
		}
	}
	if cs[3].Name() != "journal w=2 bs=64KiB sync=1 sparse" || cs[9].Name() != "journal w=2 bs=64KiB sync=1 fallocate" {
		t.Errorf("names %q, %q", cs[3].Name(), cs[9].Name())
	}
	var buf strings.Builder
	rows := []Row{{Case: cs[3], Fio: Metrics{BytesPerSec: 80}, Diskbench: Metrics{BytesPerSec: 80}},
		{Case: cs[9], Fio: Metrics{BytesPerSec: 100}, Diskbench: Metrics{BytesPerSec: 102}}}
	if err := WriteTable(&buf, rows); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"journal sparse: BookKeeper pattern: sparse file, fio fallocate=truncate",
		"journal fallocate: preallocated", "journal w=2 bs=64KiB sparse ÷ preallocated: fio 0.80, diskbench 0.78"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, buf.String())
		}
	}
	el := JobFile("/d", cs[12], time.Second, time.Second)
	for _, want := range []string{"fallocate=none\n", "fdatasync=32\n", "bs=1048576\n"} {
		if !strings.Contains(el, want) {
			t.Errorf("entrylog job lacks %q:\n%s", want, el)
		}
	}
	rr := JobFile("/d", cs[13], time.Second, time.Second)
	for _, want := range []string{"time_based=1\n", "rw=randread\n", "direct=1\n", "ioengine=libaio\n", "iodepth=16\n", "norandommap=1\n"} {
		if !strings.Contains(rr, want) {
			t.Errorf("randread job lacks %q:\n%s", want, rr)
		}
	}
}

// needFio returns fio's path; without fio the test fails under make test
// (TIERKEEPER_REQUIRE_PEERS) and is skipped otherwise.
func needFio(t *testing.T) string {
	t.Helper()
	fio, err := exec.LookPath("fio")
	if err != nil {
		testenv.Unavailable(t, "fio is not installed (make deps installs it): %v", err)
	}
	return fio
}

// TestJobFilesParse has fio itself check every default job file.
func TestJobFilesParse(t *testing.T) {
	fio := needFio(t)
	dir := t.TempDir()
	for _, c := range DefaultCases(diskbench.MiB, diskbench.MiB, diskbench.MiB) {
		p := filepath.Join(dir, "job.fio")
		if err := os.WriteFile(p, []byte(JobFile(dir, c, time.Second, time.Second)), 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(fio, "--parse-only", p).CombinedOutput()
		if err != nil {
			t.Errorf("%s: fio rejects the job: %v\n%s", c.Name(), err, out)
		}
	}
}

// TestRunTiny runs the real comparison on one tiny case when fio exists.
func TestRunTiny(t *testing.T) {
	fio := needFio(t)
	dir := t.TempDir()
	// The file outlasts the 10 ms warm-up by far (4096 writes, each with
	// an fdatasync): fio's ramp_time is no byte share as diskbench's
	// warm-up is, and a file filled during it leaves fio nothing to
	// measure (ErrNoLatencySamples; a 4 MiB file did with a 100 ms one).
	rows, err := Run(context.Background(), Options{Dir: dir, Duration: 300 * time.Millisecond, Warmup: 10 * time.Millisecond,
		Repeat: 1, Fio: fio, AllowAnyFS: true}, []Case{{Workload: diskbench.WorkloadJournal, Writers: 1, BlockSize: 4096, SyncEvery: 1, FileSize: 16 * diskbench.MiB}})
	if err != nil {
		t.Fatal(err)
	}
	r := rows[0]
	if r.Fio.BytesPerSec <= 0 || r.Fio.OpP99Ns <= 0 || r.Fio.SyncP99Ns <= 0 ||
		r.Diskbench.BytesPerSec <= 0 || r.Diskbench.SyncP99Ns <= 0 {
		t.Errorf("row %+v", r)
	}
	var b bytes.Buffer
	if err := WriteTable(&b, rows); err != nil || !strings.Contains(b.String(), "journal w=1 bs=4KiB sync=1") {
		t.Errorf("table %v\n%s", err, b.String())
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("files left: %v", ents)
	}
}

func TestMedian(t *testing.T) {
	runs := []Metrics{
		{BytesPerSec: 30, IOPS: 3, OpP99Ns: 300, SyncP99Ns: 10},
		{BytesPerSec: 10, IOPS: 1, OpP99Ns: 100, SyncP99Ns: 30},
		{BytesPerSec: 20, IOPS: 2, OpP99Ns: 200, SyncP99Ns: 20},
	}
	if got, want := median(runs), (Metrics{BytesPerSec: 20, IOPS: 2, OpP99Ns: 200, SyncP99Ns: 20}); got != want {
		t.Errorf("median of 3 = %+v, want %+v", got, want)
	}
	if got, want := median(runs[:2]), (Metrics{BytesPerSec: 20, IOPS: 2, OpP99Ns: 200, SyncP99Ns: 20}); got != want {
		t.Errorf("median of 2 = %+v, want %+v", got, want)
	}
	if got := median(nil); got != (Metrics{}) {
		t.Errorf("median of none = %+v", got)
	}
	if got := spread(runs); got != "100%" {
		t.Errorf("spread = %q, want (30-10)/20 = 100%%", got)
	}
}

// SelectCases keeps the journal preparations asked for (none: the sparse
// cases appending instead) and the names matching only; OutsideRatio names
// the rows outside the bounds.
func TestSelectCases(t *testing.T) {
	all := SelectCases(1, 2, 3, JournalPreallocs, nil)
	if len(all) != len(DefaultCases(1, 2, 3)) {
		t.Errorf("%d cases with every default preparation, want %d", len(all), len(DefaultCases(1, 2, 3)))
	}
	none := SelectCases(1, 2, 3, []diskbench.Prealloc{diskbench.PreallocNone}, regexp.MustCompile("journal"))
	if len(none) != 6 {
		t.Fatalf("%d journal cases appending, want 6", len(none))
	}
	for _, c := range none {
		if c.Prealloc != diskbench.PreallocNone || c.PreallocName != "none" {
			t.Errorf("case %s prepared %v", c.Name(), c.Prealloc)
		}
	}
	if got := SelectCases(1, 2, 3, nil, regexp.MustCompile("no such case")); len(got) != 0 {
		t.Errorf("no match: %d cases", len(got))
	}
	rows := []Row{{Case: all[0], Ratio: 1.0}, {Case: all[1], Ratio: 0.5}, {Case: all[2], Ratio: 1.3}}
	if bad := OutsideRatio(rows, 0.85, 1.15); len(bad) != 2 || bad[0] != all[1].Name()+" (0.50)" || bad[1] != all[2].Name()+" (1.30)" {
		t.Errorf("outside the bounds: %q", bad)
	}
}
