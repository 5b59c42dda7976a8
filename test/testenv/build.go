package testenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// buildTimeout bounds one go build of a command.
const buildTimeout = 5 * time.Minute

// Build compiles the command ./cmd/<name> of this checkout into dir (go
// build, at most 5 minutes) and returns the binary's path. Tests that run
// the real binary build it with Build (once per test binary) or BuildTemp.
func Build(dir, name string) (string, error) {
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

// BuildTemp is Build into t.TempDir(); t fails if the command does not
// build.
func BuildTemp(t testing.TB, name string) string {
	t.Helper()
	bin, err := Build(t.TempDir(), name)
	if err != nil {
		t.Fatal(err)
	}
	return bin
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
