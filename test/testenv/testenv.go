// Package testenv starts the real servers the integration suites need
// (ZooKeeper, BookKeeper bookies, an S3 server, Pulsar's Java tools) as child
// processes on 127.0.0.1, and stops them when the test ends.
//
// # Peers required or optional
//
// `make test` and `make compat` set TIERKEEPER_REQUIRE_PEERS=1 after
// installing every tool; then a missing tool fails the test. A plain `go test`
// without it skips tests whose peer is not installed, with a message naming
// the make target that installs it.
//
// Tools live under the cache directory: $TIERKEEPER_CACHE, else .cache/ at
// the repository root.
package testenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// RequirePeers reports whether missing real peers must fail tests rather
// than skip them (TIERKEEPER_REQUIRE_PEERS=1, set by make test/compat).
func RequirePeers() bool {
	v := os.Getenv("TIERKEEPER_REQUIRE_PEERS")
	return v == "1" || v == "true"
}

// Unavailable fails t when peers are required and skips it otherwise.
func Unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if RequirePeers() {
		t.Fatalf("real peer unavailable: %s", msg)
	}
	t.Skipf("real peer unavailable (run the make target that installs it): %s", msg)
}

// RepoRoot returns the repository root (the directory holding go.mod).
func RepoRoot() string {
	dir, err := os.Getwd()
	if err != nil {
		return "."
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			return dir
		}
	}
}

// CacheDir returns the directory holding downloaded tools and caches.
func CacheDir() string {
	if c := os.Getenv("TIERKEEPER_CACHE"); c != "" {
		return c
	}
	return filepath.Join(RepoRoot(), ".cache")
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	port, err := freePort()
	if err != nil {
		t.Fatalf("free port: %v", err)
	}
	return port
}

// handedOut remembers the ports freePort returned in this process: the
// kernel may give a just-closed port to the next bind(0), and two servers
// configured with the same port (seen: two bookies) fail to start. It is
// process-wide because ports are.
var handedOut = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

// freePort is FreePort for callers without a testing.TB. It never returns a
// port it returned before in this process.
func freePort() (int, error) {
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		handedOut.Lock()
		seen := handedOut.ports[port]
		handedOut.ports[port] = true
		handedOut.Unlock()
		if !seen {
			return port, nil
		}
	}
	return 0, errors.New("free port: 100 tries gave ports already handed out")
}

// generationName names the log of a server's gen-th process: "name" for
// the first, "name-2", "name-3"... for restarts.
func generationName(name string, gen int) string {
	if gen > 1 {
		return fmt.Sprintf("%s-%d", name, gen)
	}
	return name
}

// Process is a child process started by Start. Its combined output goes to
// LogPath; the log tail is printed when the test fails.
type Process struct {
	Name    string
	LogPath string
	cmd     *exec.Cmd
	done    chan struct{}
	mu      sync.Mutex
	exitErr error
	stopped bool
}

// Start runs cmd in its own process group with output to a log file in
// logDir, and registers a cleanup that stops it (SIGTERM, then SIGKILL after
// 10 s) and, if the test failed, prints the last lines of the log.
func Start(t testing.TB, name, logDir string, cmd *exec.Cmd) *Process {
	t.Helper()
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	logPath := filepath.Join(logDir, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		t.Fatalf("start %s: %v", name, err)
	}
	p := &Process{Name: name, LogPath: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		err := cmd.Wait()
		f.Close()
		p.mu.Lock()
		p.exitErr = err
		p.mu.Unlock()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.Stop()
		if t.Failed() {
			t.Logf("--- last lines of %s:\n%s", logPath, Tail(logPath, 40))
		}
	})
	return p
}

// Exited reports whether the process has ended, and its error.
func (p *Process) Exited() (bool, error) {
	select {
	case <-p.done:
		p.mu.Lock()
		defer p.mu.Unlock()
		return true, p.exitErr
	default:
		return false, nil
	}
}

// Pid returns the process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Stop ends the process group: SIGTERM, then SIGKILL after 10 s. Safe to
// call more than once.
func (p *Process) Stop() { p.signalAndWait(syscall.SIGTERM, 10*time.Second) }

// Kill ends the process group at once with SIGKILL (a crash).
func (p *Process) Kill() { p.signalAndWait(syscall.SIGKILL, 10*time.Second) }

func (p *Process) signalAndWait(sig syscall.Signal, grace time.Duration) {
	p.mu.Lock()
	p.stopped = true
	p.mu.Unlock()
	select {
	case <-p.done:
		return
	default:
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, sig)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// WaitTCP waits until addr accepts TCP connections, the process exits, or
// timeout passes.
func (p *Process) WaitTCP(addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if done, err := p.Exited(); done {
			return fmt.Errorf("%s exited before listening on %s: %v; log tail:\n%s", p.Name, addr, err, Tail(p.LogPath, 30))
		}
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("%s: %s not listening after %s; log tail:\n%s", p.Name, addr, timeout, Tail(p.LogPath, 30))
}

// Tail returns the last n lines of a file (for failure messages).
func Tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := bytes.Split(b, []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// RunTool runs a short-lived command with a timeout and returns its stdout;
// the tail of stderr is included in the error, which wraps the
// *exec.ExitError. The command runs in its own process group, all of which
// is killed at the timeout or when the test binary dies.
func RunTool(ctx context.Context, timeout time.Duration, cmd *exec.Cmd) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c := exec.CommandContext(ctx, cmd.Path, cmd.Args[1:]...)
	c.Env, c.Dir = cmd.Env, cmd.Dir
	var stdout, stderr bytes.Buffer
	c.Stdout, c.Stderr = &stdout, &stderr
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	c.Cancel = func() error { return syscall.Kill(-c.Process.Pid, syscall.SIGKILL) }
	c.WaitDelay = 5 * time.Second
	err := c.Run()
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			err = fmt.Errorf("timed out after %s: %w", timeout, err)
		}
		tail := stderr.Bytes()
		if len(tail) > 6000 {
			tail = tail[len(tail)-6000:]
		}
		return stdout.Bytes(), fmt.Errorf("%s: %w\nstderr (tail):\n%s", cmd.Args[0], err, tail)
	}
	return stdout.Bytes(), nil
}

// WaitFor polls cond every interval until it holds; t fails naming what
// once limit has passed. Tests wait for a server's or a service's state
// with it, never with an unbounded loop.
func WaitFor(t testing.TB, what string, limit, interval time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", limit, what)
		}
		time.Sleep(interval)
	}
}
