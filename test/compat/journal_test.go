package compat

// TestJournalPatternMatchesBookKeeper keeps diskbench's BookKeeper journal
// model from drifting from BookKeeper's own: it runs BookKeeper 4.17.2's
// Journal (the compat tool's journal-bench) and `diskbench journal` with
// the same settings under strace and compares the system calls each
// makes on its journal files. It is a structural check, not a timing one.
//
//   - One entry in flight: every group is one entry, so both tools' calls
//     are deterministic and must be the same, call by call: the header
//     write and fsync, the pre-allocation zero blocks (offset and size),
//     each group's writes (offset and size: buffer-sized pieces, alignment
//     padding included), fdatasync, posix_fadvise (offset and length), the
//     roll to a new file past journalMaxSizeMB. BookKeeper's kept files are
//     also checked on disk against those writes: size and first hole
//     (SEEK_HOLE), the zero block at the window's end (SEEK_DATA).
//   - Many entries in flight: groups depend on timing, so each tool's
//     calls are checked against the model's invariants instead: sequential
//     writes, each the whole write buffer or ending a group on an
//     alignment boundary, zero blocks only at window ends, an fdatasync per
//     force, fadvise trailing by 8 MiB.

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tierkeeper/tierkeeper/test/testenv"
)

// The settings both tools run with: small windows and files so a short
// run pre-allocates several windows and rolls; a 16 KiB buffer and 3000-byte
// entries so records straddle buffers and need padding.
var journalTestSettings = []string{
	"--journalPreAllocSizeMB", "1", "--journalMaxSizeMB", "1", "--journalWriteBufferSizeKB", "16",
	"--journalAlignmentSize", "4096", "--journalFormatVersionToWrite", "5", "--journalMaxGroupWaitMSec", "1",
	"--journalBufferedWritesThreshold", "131072",
}

const (
	jtEntry  = 3000
	jtAlign  = 4096
	jtWindow = 1 << 20
	jtBuffer = 16 << 10
	jtMax    = 1 << 20
)

// sysEvent is one system call on a journal file.
type sysEvent struct {
	op     string // write, fsync, fdatasync, fadvise
	off, n int64
}

func (e sysEvent) String() string { return fmt.Sprintf("%s(%d, %d)", e.op, e.off, e.n) }

// traceFiles parses strace -f -y -s 0 output into the calls made on the
// files whose path matches keep, per file in order of first appearance.
func traceFiles(t *testing.T, path string, keep *regexp.Regexp) ([]string, map[string][]sysEvent) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	line := regexp.MustCompile(`^\d+\s+(write|pwrite64|writev|pwritev|pwritev2|fsync|fdatasync|fadvise64)\((\d+)<([^>]*)>(.*)$`)
	num := regexp.MustCompile(`-?\d+`)
	var order []string
	ev := map[string][]sysEvent{}
	pos := map[string]int64{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		m := line.FindStringSubmatch(sc.Text())
		if m == nil || !keep.MatchString(m[3]) {
			continue
		}
		name, file, rest := m[1], m[3], m[4]
		// Arguments after the descriptor, up to the closing parenthesis or
		// "<unfinished ...>"; the buffer prints as ""... (-s 0).
		if i := strings.Index(rest, ") ="); i >= 0 {
			rest = rest[:i]
		} else if i := strings.Index(rest, "<unfinished"); i >= 0 {
			rest = rest[:i]
		}
		rest = strings.ReplaceAll(rest, `""...`, "")
		args := num.FindAllString(rest, -1)
		argInt := func(i int) int64 {
			if i >= len(args) {
				t.Fatalf("strace line %q: too few arguments", sc.Text())
			}
			v, _ := strconv.ParseInt(args[i], 10, 64)
			return v
		}
		if _, ok := ev[file]; !ok {
			order = append(order, file)
		}
		var e sysEvent
		switch name {
		case "write":
			e = sysEvent{"write", pos[file], argInt(0)}
			pos[file] += e.n
		case "pwrite64":
			e = sysEvent{"write", argInt(1), argInt(0)}
		case "fsync", "fdatasync":
			e = sysEvent{op: name}
		case "fadvise64":
			e = sysEvent{"fadvise", argInt(0), argInt(1)}
		default:
			t.Fatalf("unexpected %s on %s: the model has no vectored writes", name, file)
		}
		ev[file] = append(ev[file], e)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return order, ev
}

// straceCmd wraps cmd in strace writing to out.
func straceCmd(cmd *exec.Cmd, out string) *exec.Cmd {
	args := []string{"-f", "-qq", "--seccomp-bpf", "-s", "0", "-y",
		"-e", "trace=write,pwrite64,writev,pwritev,pwritev2,fsync,fdatasync,fadvise64", "-o", out, cmd.Path}
	s := exec.Command("strace", append(args, cmd.Args[1:]...)...)
	s.Dir, s.Env = cmd.Dir, cmd.Env
	return s
}

func requireStrace(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("strace"); err != nil {
		testenv.Unavailable(t, "strace not installed (make deps installs it): %v", err)
	}
	if out, err := exec.Command("strace", "-qq", "-o", "/dev/null", "true").CombinedOutput(); err != nil {
		testenv.Unavailable(t, "strace cannot trace here (ptrace refused?): %v %s", err, out)
	}
}

// journalRuns runs both tools under strace in a fresh directory and returns
// their traces' per-file events and Java's kept files.
func journalRuns(t *testing.T, inFlight int, javaEntries int, dbBytes string) (jFiles []string, jEv map[string][]sysEvent, dFiles []string, dEv map[string][]sysEvent) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	java := testenv.Java(t)
	// Two directories on the same filesystem: BookKeeper's kept files
	// (lastMark, *.txn) make its directory bookie data, which diskbench
	// refuses to write into.
	jdir, ddir := t.TempDir(), t.TempDir()
	traces := t.TempDir()

	inf := []string{}
	if inFlight > 0 {
		inf = []string{"--in-flight", fmt.Sprint(inFlight)}
	}
	jargs := append([]string{"--dir", jdir, "--journals", "1", "--entry-size", fmt.Sprint(jtEntry),
		"--entries", fmt.Sprint(javaEntries), "--warmup-ms", "0", "--duration-ms", "120000", "--keep-files"}, inf...)
	jargs = append(jargs, journalTestSettings...)
	jTrace := filepath.Join(traces, "java.strace")
	if out, err := testenv.RunTool(ctx, 3*time.Minute, straceCmd(java.Command("journal-bench", jargs...), jTrace)); err != nil {
		t.Fatalf("journal-bench under strace: %v\n%.500s", err, out)
	}
	jOrder, jEv := traceFiles(t, jTrace, regexp.MustCompile(`/\.tk-bkjournal-\d+-0/[0-9a-f]+\.txn$`))

	bin := testenv.BuiltCommand(t, "diskbench")
	dargs := append([]string{"journal", "--dir", ddir, "--writers", "1", "--block-size", fmt.Sprint(jtEntry),
		"--warmup", "-1s", "--duration", "2m", "--max-bytes", dbBytes, "--output", "json"}, inf...)
	dargs = append(dargs, journalTestSettings...)
	dTrace := filepath.Join(traces, "diskbench.strace")
	if out, err := testenv.RunTool(ctx, 3*time.Minute, straceCmd(exec.Command(bin, dargs...), dTrace)); err != nil {
		t.Fatalf("diskbench under strace: %v\n%.500s", err, out)
	}
	dOrder, dEv := traceFiles(t, dTrace, regexp.MustCompile(`/\.diskbench-\d+-[0-9a-z]+-journal-0-\d+\.dat$`))
	if len(jOrder) < 2 || len(dOrder) < 2 {
		t.Fatalf("journal files: BookKeeper %d, diskbench %d; both runs must roll (journalMaxSizeMB=1)", len(jOrder), len(dOrder))
	}
	// diskbench removed its files; BookKeeper's are kept for the on-disk check.
	for _, p := range dOrder {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("diskbench left %s behind", p)
		}
	}
	return jOrder, jEv, dOrder, dEv
}

func TestJournalPatternMatchesBookKeeper(t *testing.T) {
	requireStrace(t)
	t.Run("one in flight: call by call", func(t *testing.T) {
		// 420 groups of 4 KiB ≈ 1.7 MiB: the first file rolls, the second
		// is cut by the end of each run.
		jFiles, jEv, dFiles, dEv := journalRuns(t, 1, 420, "1700k")
		for i := 0; i < 2; i++ {
			je, de := jEv[jFiles[i]], dEv[dFiles[i]]
			n := min(len(je), len(de))
			if i == 0 && len(je) != len(de) {
				t.Errorf("first (rolled) file: BookKeeper made %d calls, diskbench %d", len(je), len(de))
			}
			if n < 50 {
				t.Fatalf("file %d: only %d calls to compare", i, n)
			}
			for k := 0; k < n; k++ {
				if je[k] != de[k] {
					lo := max(0, k-3)
					t.Fatalf("file %d call %d differs: BookKeeper %v, diskbench %v\n  BookKeeper %v\n  diskbench  %v",
						i, k, je[k], de[k], je[lo:min(len(je), k+3)], de[lo:min(len(de), k+3)])
				}
			}
			t.Logf("file %d: %d calls identical (BookKeeper %d, diskbench %d)", i, n, len(je), len(de))
			checkInvariants(t, "BookKeeper", jFiles[i], je, i == 0)
			checkInvariants(t, "diskbench", dFiles[i], de, i == 0)
		}
		checkOnDisk(t, jFiles[0], dEv[dFiles[0]])
	})
	t.Run("many in flight: invariants", func(t *testing.T) {
		jFiles, jEv, dFiles, dEv := journalRuns(t, 0, 1200, "3400k")
		for _, side := range []struct {
			name  string
			files []string
			ev    map[string][]sysEvent
		}{{"BookKeeper", jFiles, jEv}, {"diskbench", dFiles, dEv}} {
			var groups, full int
			for i, f := range side.files {
				g, fb := checkInvariants(t, side.name, f, side.ev[f], i < len(side.files)-1)
				groups, full = groups+g, full+fb
			}
			// 3000-byte entries, 128 KiB threshold: groups of many entries,
			// most bytes in whole-buffer writes.
			if full == 0 || groups == 0 {
				t.Errorf("%s: %d full-buffer writes, %d groups: entries were not grouped", side.name, full, groups)
			}
			t.Logf("%s: %d files, %d fdatasyncs, %d full-buffer writes", side.name, len(side.files), groups, full)
		}
	})
}

// checkInvariants checks one file's calls against the model and returns
// its fdatasync and full-buffer write counts. complete is true for a file
// that rolled (its last group ends past journalMaxSizeMB).
func checkInvariants(t *testing.T, who, file string, ev []sysEvent, complete bool) (syncs, full int) {
	t.Helper()
	fail := func(k int, format string, a ...any) {
		t.Helper()
		t.Fatalf("%s %s call %d %v: %s", who, filepath.Base(file), k, ev[k], fmt.Sprintf(format, a...))
	}
	if len(ev) < 4 || ev[0] != (sysEvent{"write", 0, 512}) || ev[1].op != "fsync" || ev[2] != (sysEvent{"write", jtWindow - jtAlign, jtAlign}) {
		t.Fatalf("%s %s: starts %v, want the header write, fsync, the first window's zero block", who, filepath.Base(file), ev[:min(3, len(ev))])
	}
	next := int64(512)          // where the next record write goes
	prealloc := int64(jtWindow) // the pre-allocated window's end
	lastDrop := int64(512) - 8<<20
	var synced int64 // data end at the last fdatasync
	for k := 3; k < len(ev); k++ {
		e := ev[k]
		switch e.op {
		case "write":
			if e.off != next {
				if e.n == jtAlign && e.off == prealloc+jtWindow-jtAlign {
					prealloc += jtWindow // the next window's zero block
					continue
				}
				fail(k, "not at %d (sequential) nor the next window's zero block at %d", next, prealloc+jtWindow-jtAlign)
			}
			next += e.n
			if e.n == jtBuffer {
				full++
			} else if next%jtAlign != 0 {
				fail(k, "neither the whole %d-byte buffer nor ending a group on a %d boundary", jtBuffer, jtAlign)
			}
			if next > prealloc {
				fail(k, "past the pre-allocated window ending at %d", prealloc)
			}
		case "fdatasync":
			syncs++
			synced = next
		case "fadvise":
			// From the last drop position to 8 MiB behind the synced data
			// (the data end when the force began: at most what was synced).
			if e.off != lastDrop || e.off+e.n > synced-8<<20 || e.n <= 0 {
				fail(k, "want offset %d and an end ≤ %d", lastDrop, synced-8<<20)
			}
			lastDrop = e.off + e.n
		default:
			fail(k, "unexpected")
		}
	}
	if next%jtAlign != 0 && complete {
		t.Errorf("%s %s: records end at %d, not on a group boundary", who, filepath.Base(file), next)
	}
	if complete && next <= jtMax {
		t.Errorf("%s %s: rolled at %d, before journalMaxSizeMB (%d)", who, filepath.Base(file), next, jtMax)
	}
	if complete && ev[len(ev)-1].op != "fadvise" && ev[len(ev)-1].op != "fdatasync" {
		t.Errorf("%s %s: a rolled file must end with its last force, ends with %v", who, filepath.Base(file), ev[len(ev)-1])
	}
	return syncs, full
}

// checkOnDisk compares BookKeeper's kept file with what diskbench's calls
// predict: the size, the data up to the records' end, then a hole, then the
// window's zero block.
func checkOnDisk(t *testing.T, path string, ev []sysEvent) {
	t.Helper()
	var size, recEnd int64
	var ranges [][2]int64
	for _, e := range ev {
		if e.op == "write" {
			size = max(size, e.off+e.n)
			ranges = append(ranges, [2]int64{e.off, e.off + e.n})
		}
	}
	sort.Slice(ranges, func(i, j int) bool { return ranges[i][0] < ranges[j][0] })
	for _, r := range ranges {
		if r[0] > recEnd {
			break
		}
		recEnd = max(recEnd, r[1])
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("BookKeeper's journal file: %v", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	hole, err := unix.Seek(int(f.Fd()), 0, unix.SEEK_HOLE)
	if err != nil {
		t.Fatal(err)
	}
	data, err := unix.Seek(int(f.Fd()), hole, unix.SEEK_DATA)
	if err != nil && size > recEnd {
		t.Fatal(err)
	}
	if st.Size() != size || hole != recEnd || (size > recEnd && data != size-jtAlign) {
		t.Errorf("BookKeeper's %s: size %d, first hole %d, next data %d; diskbench's writes predict size %d, hole %d, zero block at %d",
			filepath.Base(path), st.Size(), hole, data, size, recEnd, size-jtAlign)
	}
	t.Logf("on disk: %s is %d bytes, data [0, %d), hole, zero block at %d — as diskbench wrote", filepath.Base(path), st.Size(), hole, data)
}
