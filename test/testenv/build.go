package testenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// buildTimeout bounds one go build of a command.
const buildTimeout = 5 * time.Minute

// builds holds the commands built by this test binary, each once, in one
// ownedTempDir.
var builds struct {
	mu   sync.Mutex
	dir  string
	cmds map[string]*builtCommand
}

type builtCommand struct {
	once sync.Once
	bin  string
	err  error
}

// BuiltCommand returns the path of the command ./cmd/<name> of this
// checkout, built once per test binary (go build, at most 5 minutes) into a
// directory that goes when the binary has exited (ownedTempDir); t fails if
// it does not build. Tests that run the real binary get it here.
func BuiltCommand(t testing.TB, name string) string {
	t.Helper()
	builds.mu.Lock()
	if builds.cmds == nil {
		builds.cmds = map[string]*builtCommand{}
	}
	c := builds.cmds[name]
	if c == nil {
		c = &builtCommand{}
		builds.cmds[name] = c
	}
	builds.mu.Unlock()
	c.once.Do(func() {
		builds.mu.Lock()
		if builds.dir == "" {
			builds.dir, c.err = ownedTempDir("tierkeeper-bin-")
		}
		dir := builds.dir
		builds.mu.Unlock()
		if c.err == nil {
			c.bin, c.err = build(dir, name)
		}
	})
	if c.err != nil {
		t.Fatal(c.err)
	}
	return c.bin
}

// build compiles ./cmd/<name> into dir and returns the binary's path.
func build(dir, name string) (string, error) {
	bin := filepath.Join(dir, name)
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/"+name)
	cmd.Dir = RepoRoot()
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/%s: %w\n%s", name, err, out)
	}
	return bin, nil
}

// EnvInt returns the positive integer in the environment variable name
// (a benchmark's knob), or def when it is unset or empty; t fails on any
// other value, naming the variable.
func EnvInt(t testing.TB, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

// EnvBool returns the switch in the environment variable name (a
// benchmark's on/off knob: 1/0, true/false, as strconv.ParseBool reads
// them), or def when it is unset or empty; t fails on any other value,
// naming the variable.
func EnvBool(t testing.TB, name string, def bool) bool {
	t.Helper()
	v := strings.TrimSpace(os.Getenv(name))
	if v == "" {
		return def
	}
	on, err := strconv.ParseBool(v)
	if err != nil {
		t.Fatalf("%s=%q: want 1 or 0 (true or false)", name, v)
	}
	return on
}

// EnvInts returns the comma-separated positive integers in the
// environment variable name (a benchmark's list knob, "1024,2048"), or
// def when it is unset or empty; t fails on any other value, naming the
// variable.
func EnvInts(t testing.TB, name string, def []int) []int {
	t.Helper()
	v := os.Getenv(name)
	if strings.TrimSpace(v) == "" {
		return def
	}
	var out []int
	for _, s := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			t.Fatalf("%s=%q: want comma-separated positive integers", name, v)
		}
		out = append(out, n)
	}
	return out
}
