package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tierkeeper/tierkeeper/bookieagent"
)

func runCLI(t *testing.T, env map[string]string, args ...string) (string, string, error) {
	t.Helper()
	for k, v := range env {
		t.Setenv(k, v)
	}
	cmd := newRootCmd()
	var out, errb bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errb)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(context.Background())
	return out.String(), errb.String(), err
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
	noMem := map[string]string{"BOOKIE_MEM": "", "PULSAR_MEM": ""}
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
		{"bytes budget", nil, []string{"recommend", "--journal-dir", j, "--ledger-dir", l, "--max-direct-memory", "4g", "--max-bytes", "8MiB"}, "budget too small", bookieagent.ErrBudgetTooSmall},
		{"bad budget", nil, []string{"recommend", "--journal-dir", j, "--ledger-dir", l, "--max-direct-memory", "4g", "--budget", "soon"}, "--budget", nil},
		{"bad size", nil, []string{"recommend", "--journal-dir", j, "--ledger-dir", l, "--max-direct-memory", "four gigs"}, "unparseable size", bookieagent.ErrBadSize},
		{"bad max-bytes", nil, []string{"recommend", "--journal-dir", j, "--ledger-dir", l, "--max-direct-memory", "4g", "--max-bytes", "-3"}, "unparseable size", bookieagent.ErrBadSize},
		// Zero used to mean 2 GiB without a word (issue 11, bug 8).
		{"zero max-bytes", nil, []string{"recommend", "--journal-dir", j, "--ledger-dir", l, "--max-direct-memory", "4g", "--max-bytes", "0"}, "--max-bytes 0: unparseable size: must be positive", bookieagent.ErrBadSize},
		{"serve zero max-bytes", nil, []string{"serve", "--listen", "127.0.0.1:0", "--journal-dir", j, "--ledger-dir", l, "--bench-on-start", "--max-direct-memory", "4g", "--max-bytes", "0"}, "must be positive", bookieagent.ErrBadSize},
		{"bad env", map[string]string{"BOOKIE_MEM": "-Xmx2q"}, []string{"recommend", "--journal-dir", j, "--ledger-dir", l}, "BOOKIE_MEM", bookieagent.ErrBadSize},
		{"no memory", noMem, []string{"recommend", "--journal-dir", j, "--ledger-dir", l}, "--max-direct-memory", bookieagent.ErrNoDirectMemory},
		{"no ledger dir", nil, []string{"recommend", "--journal-dir", j, "--max-direct-memory", "4g"}, "--ledger-dir", nil},
		// Checked before the benchmark, which would otherwise run for a minute first.
		{"save-input path", nil, []string{"recommend", "--journal-dir", j, "--ledger-dir", l, "--max-direct-memory", "4g", "--save-input", filepath.Join(root, "nope", "in.json")}, "--save-input", os.ErrNotExist},
		{"bad format", nil, []string{"recommend", "--journal-dir", j, "--ledger-dir", l, "--format", "xml"}, "unknown format", nil},
		{"report missing", nil, []string{"report", "--ledger-dir", filepath.Join(root, "nope")}, "no such file", nil},
		{"report output", nil, []string{"report", "--ledger-dir", l, "-o", "yaml"}, "--output", nil},
		{"serve bad listen", nil, []string{"serve", "--listen", "127.0.0.1:notaport", "--ledger-dir", l}, "--listen", nil},
		{"serve bench no memory", noMem, []string{"serve", "--listen", "127.0.0.1:0", "--journal-dir", j, "--ledger-dir", l, "--bench-on-start"}, "--bench-on-start", bookieagent.ErrNoDirectMemory},
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
	for _, d := range []string{j, l} {
		if ents, _ := os.ReadDir(d); len(ents) != 0 {
			t.Errorf("%s: bad input left %v", d, ents)
		}
	}
	if ents, _ := os.ReadDir(root); len(ents) != 3 {
		t.Errorf("root has %d entries, want j, l, f", len(ents))
	}
}

func TestReportTable(t *testing.T) {
	d := t.TempDir()
	out, _, err := runCLI(t, nil, "report", "--journal-dir", d, "--ledger-dir", d)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "MOUNT") || !strings.Contains(out, "journal:"+d) || !strings.Contains(out, "thresholds: warn 0.90, read-only 0.95") {
		t.Errorf("table:\n%s", out)
	}
}
