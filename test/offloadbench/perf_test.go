package offloadbench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"
)

// TK_BENCH_PERF=1 records the warm-up copy with Linux perf, kernel stacks
// included, which Go's profile shows as one frame per system call: every
// CPU sampled (perf record -a -g), then the offloader's samples split by
// what their stacks were doing (perfSplit).

// perfRecording is a perf record running over the whole machine.
type perfRecording struct {
	bin     string // perf
	hz      int    // samples per second and CPU
	cmd     *exec.Cmd
	file    string
	stderr  bytes.Buffer
	stopped bool
}

// kill ends a recording that stop did not (a benchmark that failed
// meanwhile), so that no perf outlives it.
func (p *perfRecording) kill() {
	if p.stopped {
		return
	}
	p.stopped = true
	_ = p.cmd.Process.Kill()
	_ = p.cmd.Wait()
}

// startPerf starts perf record -a -g at hz samples per second into dir,
// and returns once perf is sampling (its output file exists), within 10 s.
// The caller ends it with stop, or kill if it fails before.
func startPerf(ctx context.Context, dir string, hz int) (*perfRecording, error) {
	bin, err := exec.LookPath("perf")
	if err != nil {
		return nil, fmt.Errorf("TK_BENCH_PERF needs perf on PATH (Debian: apt-get install linux-perf; make bench-offload BENCH_OFFLOAD_PERF=1 installs it): %w", err)
	}
	p := &perfRecording{bin: bin, hz: hz, file: filepath.Join(dir, "copy.perf.data")}
	// Not CommandContext: perf must end on SIGINT to write its data; stop
	// sends it and bounds the wait.
	p.cmd = exec.Command(bin, "record", "-a", "-g", "-F", fmt.Sprint(hz), "-o", p.file)
	p.cmd.Stdout, p.cmd.Stderr = io.Discard, &p.stderr
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("perf record: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		if st, err := os.Stat(p.file); err == nil && st.Size() > 0 {
			return p, nil
		}
		select {
		case <-ctx.Done():
			_ = p.cmd.Process.Kill()
			_ = p.cmd.Wait()
			return nil, fmt.Errorf("perf record: no %s after 10 s (perf_event_paranoid must allow -a for this user): %s", p.file, strings.TrimSpace(p.stderr.String()))
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// stop ends the recording (SIGINT, at most 60 s for perf to write its
// data to p.file).
func (p *perfRecording) stop() error {
	p.stopped = true
	if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
		return fmt.Errorf("perf record: interrupt: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		// perf exits non-zero on SIGINT on some versions: its data is there.
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			return fmt.Errorf("perf record: %w", err)
		}
	case <-time.After(60 * time.Second):
		_ = p.cmd.Process.Kill()
		<-done
		return fmt.Errorf("perf record: did not end within 60 s of SIGINT: %s", strings.TrimSpace(p.stderr.String()))
	}
	return nil
}

// perfSample is one sample's stack: frames[0] is where the CPU was.
type perfSample struct {
	pid    string
	frames []perfFrame
}

type perfFrame struct {
	sym    string
	kernel bool
}

// parsePerfScript reads perf script -F pid,tid,time,ip,sym,dso output:
// a header line per sample ("PID/TID TIME:", the PID right-aligned), then
// a line per frame after a tab ("ADDR SYM (DSO)"), then a blank line.
func parsePerfScript(r io.Reader) ([]perfSample, error) {
	var out []perfSample
	var cur *perfSample
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.TrimSpace(line) == "":
			if cur != nil {
				out = append(out, *cur)
				cur = nil
			}
		case line[0] != '\t':
			pid, _, ok := strings.Cut(strings.TrimSpace(line), "/")
			if !ok {
				return nil, fmt.Errorf("perf script: not a sample header: %q", line)
			}
			cur = &perfSample{pid: pid}
		case cur != nil:
			f := strings.TrimSpace(line)
			_, rest, ok := strings.Cut(f, " ")
			if !ok {
				continue
			}
			sym, dso := rest, ""
			if i := strings.LastIndex(rest, " ("); i >= 0 {
				sym, dso = rest[:i], strings.TrimSuffix(rest[i+2:], ")")
			}
			cur.frames = append(cur.frames, perfFrame{sym: sym, kernel: strings.Contains(dso, "kernel.kallsyms")})
		}
	}
	if cur != nil {
		out = append(out, *cur)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("perf script: %w", err)
	}
	return out, nil
}

// perfClasses are the rows of perfSplit, in order: a sample counts in
// the first whose test matches.
var perfClasses = []struct {
	name string
	test func(s perfSample) bool
}{
	{"user: AES-GCM sealing (gcmAesEnc)", userLeaf("gcmAesEnc")},
	{"user: memmove (crypto/tls's copy of each TLS 1.3 record's plaintext, the record batcher)", userLeaf("runtime.memmove")},
	{"user: CRC-32C", userLeaf("crc32", "castagnoli", "Castagnoli")},
	{"user: the rest (HTTP, scheduler, GC, the pipeline)", func(s perfSample) bool { return len(s.frames) > 0 && !s.frames[0].kernel }},
	{"kernel: loopback receive in softirq (the peer's TCP receive, run on this process's CPU)", kernelIn("handle_softirqs", "__do_softirq", "net_rx_action", "process_backlog", "do_softirq")},
	{"kernel: page faults", kernelIn("asm_exc_page_fault")},
	{"kernel: socket writes (tcp_sendmsg)", kernelIn("tcp_sendmsg", "tcp_sendmsg_locked")},
	{"kernel: socket reads (tcp_recvmsg)", kernelIn("tcp_recvmsg", "tcp_recvmsg_locked")},
	{"kernel: scheduler, futex, epoll", kernelIn("schedule", "__schedule", "do_epoll_wait", "futex_wait", "__futex_wait", "futex_wake")},
	{"kernel: the rest", func(s perfSample) bool { return len(s.frames) > 0 }},
}

// userLeaf matches a sample whose CPU was in user code, in a function
// whose name contains one of parts.
func userLeaf(parts ...string) func(perfSample) bool {
	return func(s perfSample) bool {
		if len(s.frames) == 0 || s.frames[0].kernel {
			return false
		}
		for _, p := range parts {
			if strings.Contains(s.frames[0].sym, p) {
				return true
			}
		}
		return false
	}
}

// kernelIn matches a sample in the kernel with one of syms on its stack.
func kernelIn(syms ...string) func(perfSample) bool {
	return func(s perfSample) bool {
		if len(s.frames) == 0 || !s.frames[0].kernel {
			return false
		}
		for _, f := range s.frames {
			for _, want := range syms {
				if f.sym == want {
					return true
				}
			}
		}
		return false
	}
}

// perfRow is a class's share of a process's samples.
type perfRow struct {
	Class string
	Share float64
}

// perfSplit takes the process with the most samples and splits them by
// perfClasses; it returns that process's sample count and the rows (a
// sample with no stack is counted in none).
func perfSplit(samples []perfSample) (pid string, n int, rows []perfRow) {
	by := map[string][]perfSample{}
	for _, s := range samples {
		by[s.pid] = append(by[s.pid], s)
	}
	pids := make([]string, 0, len(by))
	for p := range by {
		pids = append(pids, p)
	}
	if len(pids) == 0 {
		return "", 0, nil
	}
	sort.Slice(pids, func(i, j int) bool { return len(by[pids[i]]) > len(by[pids[j]]) })
	pid = pids[0]
	ss := by[pid]
	counts := make([]int, len(perfClasses))
	for _, s := range ss {
		for i, c := range perfClasses {
			if c.test(s) {
				counts[i]++
				break
			}
		}
	}
	for i, c := range perfClasses {
		rows = append(rows, perfRow{Class: c.name, Share: float64(counts[i]) / float64(len(ss))})
	}
	return pid, len(ss), rows
}

// summarizePerf logs the split of the offloader's samples in rec's data
// (after stop).
func (be *bench) summarizePerf(ctx context.Context, rec *perfRecording) {
	file, hz := rec.file, rec.hz
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, rec.bin, "script", "-i", file, "--comm", "offloader", "-F", "pid,tid,time,ip,sym,dso").Output()
	if err != nil {
		be.b.Fatalf("perf script %s (limit 5 min): %v", file, err)
	}
	samples, err := parsePerfScript(bytes.NewReader(out))
	if err != nil {
		be.b.Fatal(err)
	}
	pid, n, rows := perfSplit(samples)
	if n == 0 {
		be.b.Fatalf("perf: no sample of the offloader in %s", file)
	}
	be.b.Logf("warm-up copy under perf (every CPU at %d Hz, kernel stacks included; pid %s, %d samples, %.2f CPU-s; each sample in the first row it matches; data %s):", hz, pid, n, float64(n)/float64(hz), file)
	for _, r := range rows {
		be.b.Logf("  %5.1f%%  %s", 100*r.Share, r.Class)
	}
}
