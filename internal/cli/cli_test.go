package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/cobra"
)

func cmd(run func(*cobra.Command) error) *cobra.Command {
	return &cobra.Command{Use: "tool", SilenceUsage: true, SilenceErrors: true,
		RunE: func(c *cobra.Command, _ []string) error { return run(c) }}
}

func TestRunExitCodes(t *testing.T) {
	for _, tc := range []struct {
		name   string
		run    func(*cobra.Command) error
		code   int
		stderr string
	}{
		{"ok", func(*cobra.Command) error { return nil }, ExitOK, ""},
		{"error", func(*cobra.Command) error { return errors.New("boom") }, ExitError, "tool: boom\n"},
		{"wrapped error printed once", func(*cobra.Command) error { return fmt.Errorf("step: %w", errors.New("boom")) }, ExitError, "tool: step: boom\n"},
		{"canceled", func(*cobra.Command) error { return fmt.Errorf("run: %w", context.Canceled) }, ExitInterrupted, "tool: run: context canceled\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			root := cmd(tc.run)
			root.SetArgs(nil)
			if code := Run(context.Background(), root, &stderr); code != tc.code || stderr.String() != tc.stderr {
				t.Errorf("code %d, stderr %q; want %d, %q", code, stderr.String(), tc.code, tc.stderr)
			}
		})
	}
}

// TestRunSignal: SIGINT cancels the command's context; the command's error
// gives exit 130, and a command that returns nil on a signal (a server
// shutting down cleanly) exits 0.
func TestRunSignal(t *testing.T) {
	for _, tc := range []struct {
		name string
		ret  func(ctx context.Context) error
		code int
	}{
		{"error", func(ctx context.Context) error { return ctx.Err() }, ExitInterrupted},
		{"clean stop", func(context.Context) error { return nil }, ExitOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := cmd(func(c *cobra.Command) error {
				if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
					return err
				}
				select {
				case <-c.Context().Done():
					return tc.ret(c.Context())
				case <-time.After(10 * time.Second):
					return errors.New("SIGINT did not cancel the context")
				}
			})
			root.SetArgs(nil)
			var stderr bytes.Buffer
			if code := Run(context.Background(), root, &stderr); code != tc.code {
				t.Errorf("code %d (stderr %q), want %d", code, stderr.String(), tc.code)
			}
		})
	}
}

func TestOutputFile(t *testing.T) {
	dir := t.TempDir()
	// A bad path fails at open, naming the flag.
	if _, err := OpenOutput("--svg", filepath.Join(dir, "missing", "x.svg")); err == nil || !strings.Contains(err.Error(), "--svg") || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing dir: %v", err)
	}
	// A new file is written; a discarded new file is removed.
	p := filepath.Join(dir, "new.svg")
	o, err := OpenOutput("--svg", p)
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Write(func(w io.Writer) error { _, err := io.WriteString(w, "chart"); return err }); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "chart" {
		t.Errorf("content %q", b)
	}
	o.Discard() // after Write: no effect
	if _, err := os.Stat(p); err != nil {
		t.Errorf("written file removed: %v", err)
	}
	q := filepath.Join(dir, "unused.svg")
	o, err = OpenOutput("--svg", q)
	if err != nil {
		t.Fatal(err)
	}
	o.Discard()
	if _, err := os.Stat(q); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("discarded new file left: %v", err)
	}
	// An existing file keeps its content until Write, which replaces it.
	if err := os.WriteFile(p, []byte("a much longer old chart"), 0o644); err != nil {
		t.Fatal(err)
	}
	o, err = OpenOutput("--svg", p)
	if err != nil {
		t.Fatal(err)
	}
	o.Discard()
	if b, _ := os.ReadFile(p); string(b) != "a much longer old chart" {
		t.Errorf("discard touched an existing file: %q", b)
	}
	o, _ = OpenOutput("--svg", p)
	if err := o.Write(func(w io.Writer) error { _, err := io.WriteString(w, "new"); return err }); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "new" {
		t.Errorf("replaced content %q", b)
	}
	// A failing write is reported; a new file is removed again.
	r := filepath.Join(dir, "fail.svg")
	o, _ = OpenOutput("--svg", r)
	if err := o.Write(func(io.Writer) error { return errors.New("disk gone") }); err == nil || !strings.Contains(err.Error(), r) {
		t.Errorf("write error: %v", err)
	}
	if _, err := os.Stat(r); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("failed new file left: %v", err)
	}
	if _, err := os.Stat("/dev/full"); err == nil {
		o, err := OpenOutput("--svg", "/dev/full")
		if err != nil {
			t.Fatal(err)
		}
		if err := o.Write(func(w io.Writer) error { _, err := w.Write([]byte("x")); return err }); !errors.Is(err, syscall.ENOSPC) {
			t.Errorf("/dev/full: %v", err)
		}
	}
}
