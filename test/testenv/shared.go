package testenv

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// SharedTB is a testing.TB whose lifetime is a whole test package rather
// than one test, so expensive servers (ZooKeeper, bookies) can be started
// once, lazily, from whichever test needs them first, and stopped from
// TestMain after m.Run:
//
//	var scope = testenv.NewSharedTB("compat")
//
//	func TestMain(m *testing.M) {
//		code := m.Run()
//		scope.Close()
//		os.Exit(code)
//	}
//
//	var zk *testenv.ZooKeeper
//	err := scope.Do(func(tb testing.TB) { zk = testenv.StartZooKeeper(tb) })
//	testenv.ReportShared(t, "zookeeper", err) // skip/fail the calling test
//
// Fatal/Skip on a SharedTB end the function passed to Do (Do recovers) and
// are reported by Do as an error; Cleanup functions run at Close, last
// registered first. Log output goes to stderr prefixed with the scope name.
// Methods that only make sense on a real test (Setenv, Chdir, Attr,
// ArtifactDir) panic.
type SharedTB struct {
	testing.TB // nil; satisfies the unexported method of testing.TB

	name string

	mu       sync.Mutex
	cleanups []func()
	tempDirs int
	root     string
	failed   bool
	skipped  bool
	msgs     []string
	ctx      context.Context
	cancel   context.CancelFunc
	closed   bool
}

// NewSharedTB returns a package-lifetime TB named name.
func NewSharedTB(name string) *SharedTB {
	ctx, cancel := context.WithCancel(context.Background())
	return &SharedTB{name: name, ctx: ctx, cancel: cancel}
}

// Shared is a value a test package starts once on its SharedTB, lazily,
// by whichever test asks first; every test that asks gets it, or is skipped
// or failed (ReportShared) with the start error:
//
//	var zk testenv.Shared[*testenv.ZooKeeper]
//	z := zk.Get(t, scope, "zookeeper", testenv.StartZooKeeper)
type Shared[T any] struct {
	once sync.Once
	v    T
	err  error
}

// Get returns the value, starting it with start on scope at the first
// call (and logging on stderr how long that took).
func (s *Shared[T]) Get(t testing.TB, scope *SharedTB, what string, start func(tb testing.TB) T) T {
	t.Helper()
	s.once.Do(func() {
		began := time.Now()
		s.err = scope.Do(func(tb testing.TB) { s.v = start(tb) })
		if s.err == nil {
			fmt.Fprintf(os.Stderr, "%s: %s ready after %s\n", scope.name, what, time.Since(began).Round(time.Millisecond))
		}
	})
	ReportShared(t, what, s.err)
	return s.v
}

// SharedStartError is returned by Do when fn called Fatal or Skip.
type SharedStartError struct {
	Skipped bool   // fn called Skip (e.g. through Unavailable)
	Msg     string // the messages logged by Fatal/Skip/Error
}

func (e *SharedStartError) Error() string { return e.Msg }

// ReportShared turns a start error into the matching outcome on a real test: a
// skip (or failure when peers are required) when the peer was unavailable,
// else a fatal failure. Nothing happens when err is nil.
func ReportShared(t testing.TB, what string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	if se, ok := err.(*SharedStartError); ok && se.Skipped {
		Unavailable(t, "%s: %s", what, se.Msg)
		return
	}
	t.Fatalf("%s: %v", what, err)
}

type sharedAbort struct{}

// Do runs fn with s as its TB. It returns a *SharedStartError if fn called
// Fatal, FailNow, Skip or SkipNow (or Error and returned); cleanups that fn
// registered stay registered until Close.
func (s *SharedTB) Do(fn func(tb testing.TB)) (err error) {
	s.mu.Lock()
	s.failed, s.skipped, s.msgs = false, false, nil
	s.mu.Unlock()
	done := make(chan struct{})
	// Fatal/Skip abort fn by panicking with sharedAbort, recovered here.
	go func() {
		defer close(done)
		defer func() {
			if r := recover(); r != nil {
				if _, ok := r.(sharedAbort); !ok {
					s.mu.Lock()
					s.failed = true
					s.msgs = append(s.msgs, fmt.Sprintf("panic: %v", r))
					s.mu.Unlock()
				}
			}
		}()
		fn(s)
	}()
	<-done
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failed || s.skipped {
		return &SharedStartError{Skipped: s.skipped && !s.failed, Msg: strings.Join(s.msgs, "; ")}
	}
	return nil
}

// Close runs the registered cleanups (last first) and removes the temporary
// directories. Safe to call more than once.
func (s *SharedTB) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	cl := s.cleanups
	s.cleanups = nil
	root := s.root
	s.mu.Unlock()
	for i := len(cl) - 1; i >= 0; i-- {
		cl[i]()
	}
	s.cancel()
	if root != "" {
		_ = os.RemoveAll(root)
	}
}

func (s *SharedTB) record(skip bool, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if skip {
		s.skipped = true
	} else {
		s.failed = true
	}
	if len(args) > 0 {
		s.msgs = append(s.msgs, strings.TrimSuffix(fmt.Sprintln(args...), "\n"))
	}
}

func (s *SharedTB) Cleanup(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cleanups = append(s.cleanups, f)
}
func (s *SharedTB) Error(args ...any)                 { s.record(false, args...) }
func (s *SharedTB) Errorf(format string, args ...any) { s.record(false, fmt.Sprintf(format, args...)) }
func (s *SharedTB) Fail()                             { s.record(false) }
func (s *SharedTB) FailNow()                          { s.record(false); panic(sharedAbort{}) }
func (s *SharedTB) Failed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failed
}
func (s *SharedTB) Fatal(args ...any) { s.record(false, args...); panic(sharedAbort{}) }
func (s *SharedTB) Fatalf(format string, args ...any) {
	s.record(false, fmt.Sprintf(format, args...))
	panic(sharedAbort{})
}
func (s *SharedTB) Helper() {}
func (s *SharedTB) Log(args ...any) {
	fmt.Fprintf(os.Stderr, "[%s] %s", s.name, fmt.Sprintln(args...))
}
func (s *SharedTB) Logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[%s] %s\n", s.name, fmt.Sprintf(format, args...))
}
func (s *SharedTB) Name() string                     { return s.name }
func (s *SharedTB) Skip(args ...any)                 { s.record(true, args...); panic(sharedAbort{}) }
func (s *SharedTB) SkipNow()                         { s.record(true); panic(sharedAbort{}) }
func (s *SharedTB) Skipf(format string, args ...any) { s.Skip(fmt.Sprintf(format, args...)) }
func (s *SharedTB) Skipped() bool                    { s.mu.Lock(); defer s.mu.Unlock(); return s.skipped }
func (s *SharedTB) Context() context.Context         { return s.ctx }
func (s *SharedTB) Output() io.Writer                { return os.Stderr }
func (s *SharedTB) Setenv(key, value string)         { panic("testenv.SharedTB: Setenv not supported") }
func (s *SharedTB) Chdir(dir string)                 { panic("testenv.SharedTB: Chdir not supported") }
func (s *SharedTB) Attr(key, value string)           { panic("testenv.SharedTB: Attr not supported") }
func (s *SharedTB) ArtifactDir() string              { panic("testenv.SharedTB: ArtifactDir not supported") }

// TempDir returns a new directory removed at Close.
func (s *SharedTB) TempDir() string {
	d, err := s.newTempDir()
	if err != nil {
		s.Fatalf("TempDir: %v", err)
	}
	return d
}

func (s *SharedTB) newTempDir() (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.root == "" {
		d, err := os.MkdirTemp("", "tierkeeper-"+s.name+"-")
		if err != nil {
			return "", err
		}
		s.root = d
	}
	s.tempDirs++
	d := fmt.Sprintf("%s/%03d", s.root, s.tempDirs)
	return d, os.MkdirAll(d, 0o755)
}
