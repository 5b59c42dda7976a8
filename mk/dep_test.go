// Package mk holds the test of mk/dep.sh, the one way the Makefile runs an
// install step: one line per dependency, the installer's output in a log.
package mk

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tierkeeper/tierkeeper/test/testenv"
)

// dep runs dep.sh with its cache in a temp dir; it returns stdout, the
// cache dir and the exit code.
func dep(t *testing.T, check, install string) (string, string, int) {
	t.Helper()
	cache := t.TempDir()
	cmd := exec.Command("bash", "dep.sh", "tool", ".cache/bin/tool", check, install)
	cmd.Env = append(os.Environ(), "TIERKEEPER_CACHE="+cache)
	out, err := testenv.RunTool(context.Background(), 30*time.Second, cmd)
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return string(out), cache, code
}

func TestDepCached(t *testing.T) {
	out, cache, code := dep(t, "true", "echo must not run; exit 1")
	if code != 0 || !regexp.MustCompile(`^tool +\.cache/bin/tool +cached\n$`).MatchString(out) {
		t.Errorf("exit %d, stdout %q: want one cached line", code, out)
	}
	if _, err := os.Stat(filepath.Join(cache, "logs", "tool.log")); err == nil {
		t.Error("a cached dependency wrote a log")
	}
}

func TestDepInstalls(t *testing.T) {
	out, cache, code := dep(t, "false", "for i in $(seq 1 500); do echo progress $i; done; echo warning >&2")
	if code != 0 || !regexp.MustCompile(`^tool +\.cache/bin/tool +done \(\d+ s; log .*tool\.log\)\n$`).MatchString(out) {
		t.Errorf("exit %d, stdout %q: want one done line", code, out)
	}
	log, err := os.ReadFile(filepath.Join(cache, "logs", "tool.log"))
	if err != nil || !strings.Contains(string(log), "progress 500\n") || !strings.Contains(string(log), "warning") {
		t.Errorf("log (%v) lacks the installer's stdout and stderr: %.200q", err, log)
	}
}

func TestDepFailureShowsTail(t *testing.T) {
	out, cache, code := dep(t, "", "for i in $(seq 1 100); do echo line $i; done; exit 7")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 7 || !strings.Contains(lines[0], "FAILED (exit 7") {
		t.Fatalf("exit %d, first line %q: want FAILED (exit 7)", code, lines[0])
	}
	if !strings.Contains(out, "line 100\n") || strings.Contains(out, "line 60\n") || !strings.Contains(out, filepath.Join(cache, "logs", "tool.log")) {
		t.Errorf("want the last 40 lines and the log's path:\n%s", out)
	}
}
