// Package cli holds what every tierkeeper command's main does the same way:
// run a cobra root with SIGINT/SIGTERM cancelling its context, print the
// error once and exit with a code scripts can test; and open output files
// before a long run, so a bad path fails at once instead of discarding the
// results at the end.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

// Exit codes of Run.
const (
	// ExitOK: the command succeeded (also when a signal asked a server to
	// stop and it shut down cleanly).
	ExitOK = 0
	// ExitError: the command failed.
	ExitError = 1
	// ExitInterrupted: SIGINT or SIGTERM stopped the command (128 + SIGINT,
	// as shells report it).
	ExitInterrupted = 130
)

// Main runs root as the program and exits with Run's code. It is the whole
// body of every tierkeeper main(); it gives root --version (SetVersion).
func Main(root *cobra.Command) {
	SetVersion(root, ReadVersion())
	os.Exit(Run(context.Background(), root, os.Stderr))
}

// Run executes root with a context that SIGINT and SIGTERM cancel. After
// the first signal the default handling is restored, so a second Ctrl-C
// kills a command that does not stop. An error is printed to stderr once as
// "<root name>: <error>"; the code is ExitInterrupted when a signal arrived
// or the error is context.Canceled, else ExitError, and ExitOK on success.
func Run(ctx context.Context, root *cobra.Command, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		stop()
	}()
	err := root.ExecuteContext(ctx)
	interrupted := ctx.Err() != nil
	if err == nil {
		return ExitOK
	}
	fmt.Fprintf(stderr, "%s: %v\n", root.Name(), err)
	if interrupted || errors.Is(err, context.Canceled) {
		return ExitInterrupted
	}
	return ExitError
}

// OutputFile is a file a command writes after a long run (a chart, saved
// measurements). OpenOutput opens it before the run, so a missing directory
// or a read-only path is an error before anything is measured.
type OutputFile struct {
	path    string
	f       *os.File
	created bool
}

// OpenOutput opens path for writing without truncating it yet: an existing
// file keeps its content until Write has something to put there. The error
// names the flag.
func OpenOutput(flag, path string) (*OutputFile, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	created := err == nil
	if errors.Is(err, os.ErrExist) {
		f, err = os.OpenFile(path, os.O_WRONLY, 0)
	}
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", flag, path, err)
	}
	return &OutputFile{path: path, f: f, created: created}, nil
}

// Path returns the file's path.
func (o *OutputFile) Path() string { return o.path }

// Write replaces the file's content with what write produces and closes
// it. On a write error a file OpenOutput created is removed again.
func (o *OutputFile) Write(write func(io.Writer) error) error {
	if o.f == nil {
		return fmt.Errorf("%s: already written or discarded", o.path)
	}
	f := o.f
	o.f = nil
	err := func() error {
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
			if err := f.Truncate(0); err != nil {
				return err
			}
		}
		return write(f)
	}()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		if o.created {
			_ = os.Remove(o.path)
		}
		return fmt.Errorf("write %s: %w", o.path, err)
	}
	return nil
}

// Discard closes the file without writing; a file OpenOutput created is
// removed, an existing one keeps its content. It is safe after Write.
func (o *OutputFile) Discard() {
	if o == nil || o.f == nil {
		return
	}
	o.f.Close()
	o.f = nil
	if o.created {
		_ = os.Remove(o.path)
	}
}
