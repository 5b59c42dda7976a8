package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/tierkeeper/tierkeeper/bookkeeper/digest"
	"github.com/tierkeeper/tierkeeper/bookkeeper/metadata"
	tkzk "github.com/tierkeeper/tierkeeper/internal/zk"
	"github.com/tierkeeper/tierkeeper/test/testenv"
)

// runBounded runs the command with no deadline of its own, as a user
// would, and fails the test if it has not returned within limit.
func runBounded(t *testing.T, limit time.Duration, out io.Writer, args ...string) (time.Duration, error) {
	t.Helper()
	cmd := newRootCmd()
	var errb bytes.Buffer
	if out == nil {
		out = io.Discard
	}
	cmd.SetArgs(args)
	cmd.SetOut(out)
	cmd.SetErr(&errb)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- cmd.ExecuteContext(ctx) }()
	select {
	case err := <-done:
		return time.Since(start), err
	case <-time.After(limit):
		cancel()
		t.Fatalf("offloader %s still running after %s", strings.Join(args, " "), limit)
		return 0, nil
	}
}

// Every command that talks to ZooKeeper gives up after
// --zk-connect-timeout with a message naming the servers, the timeout and
// why (they used to hang until Ctrl-C).
func TestUnreachableZooKeeper(t *testing.T) {
	refused, silent := testenv.ClosedAddr(t), testenv.SilentAddr(t)
	cmds := [][]string{
		{"topics"},
		{"topics", "--namespace", "public/default", "-o", "json"},
		{"ledger", "list"},
		{"ledger", "list", "--details"},
		{"ledger", "info", "--ledger", "1"},
		{"ledger", "read", "--ledger", "1"},
	}
	for _, c := range cmds {
		srvs := []struct{ addr, why string }{{refused, "connection refused"}}
		if c[0] == "topics" && len(c) == 1 || c[1] == "read" {
			srvs = append(srvs, struct{ addr, why string }{silent, "established no session"})
		}
		for _, srv := range srvs {
			args := append(clone(c), "--zk", srv.addr, "--zk-connect-timeout", "500ms")
			t.Run(strings.Join(args, " "), func(t *testing.T) {
				t.Parallel()
				took, err := runBounded(t, 20*time.Second, nil, args...)
				t.Logf("%s: %v", took.Round(time.Millisecond), err)
				if err == nil || !errors.Is(err, tkzk.ErrConnectTimeout) {
					t.Fatalf("want a connect timeout, got %v", err)
				}
				for _, want := range []string{srv.addr, "connect timeout (500ms)", srv.why} {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q does not say %q", err, want)
					}
				}
				if took > 5*time.Second {
					t.Errorf("took %s with a 500ms connect timeout", took)
				}
			})
		}
	}
	// The default timeout bounds it too, and the flags are checked.
	if _, err := runBounded(t, 5*time.Second, nil, "topics", "--zk", refused, "--zk-connect-timeout", "0s"); err == nil ||
		!strings.Contains(err.Error(), "must be positive") {
		t.Errorf("zero timeout: %v", err)
	}
	if _, err := runBounded(t, 5*time.Second, nil, "topics", "--zk", "127.0.0.1:21B1"); !errors.Is(err, tkzk.ErrBadAddress) {
		t.Errorf("bad port: %v", err)
	}
}

func clone(s []string) []string { return append([]string(nil), s...) }

// The binary itself exits 1 with the message on stderr and nothing on
// stdout (run as a child process: main() calls os.Exit).
func TestUnreachableZooKeeperExitCode(t *testing.T) {
	addr := testenv.ClosedAddr(t)
	cmd := exec.Command(os.Args[0], "topics", "--zk", addr, "--zk-connect-timeout", "1s")
	cmd.Env = append(os.Environ(), runMainEnv+"=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatal("offloader topics against an unreachable ZooKeeper still running after 30s")
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("exit: %v, want status 1 (stderr %q)", err, stderr.String())
	}
	want := fmt.Sprintf("offloader: zookeeper %s: no session within the connect timeout (1s): last attempt: dial tcp %s: connect: connection refused\n", addr, addr)
	if stderr.String() != want || stdout.Len() != 0 {
		t.Errorf("stderr %q, stdout %q; want stderr %q", stderr.String(), stdout.String(), want)
	}
}

// killWriter kills ZooKeeper at the first write of the command's output.
type killWriter struct {
	bytes.Buffer
	once   sync.Once
	z      *testenv.ZooKeeper
	killed time.Time
}

func (w *killWriter) Write(p []byte) (int, error) {
	w.once.Do(func() { w.killed = time.Now(); go w.z.Kill() })
	return w.Buffer.Write(p)
}

// ZooKeeper dies during `ledger list --details`: the command stops at once
// with an error naming the servers, instead of failing every remaining
// ledger after go-zookeeper's 1 s reconnect pause.
func TestLedgerListDetailsZooKeeperKilled(t *testing.T) {
	z := testenv.StartZooKeeper(t) // its own: this test kills it
	c := z.Session(t, tkzk.Options{})
	root := "/kill/ledgers"
	testenv.CreatePath(t, c.Conn, root+"/LAYOUT", []byte("2\norg.apache.bookkeeper.meta.HierarchicalLedgerManagerFactory:1"))
	const n = 400
	var ops []any
	for id := int64(0); id < n; id++ {
		md := &metadata.LedgerMetadata{LedgerID: id, FormatVersion: 3, EnsembleSize: 1, WriteQuorum: 1, AckQuorum: 1,
			State: metadata.StateClosed, LastEntryID: 9, Length: 100, Segments: []metadata.Segment{{FirstEntryID: 0, Bookies: []string{"127.0.0.1:3181"}}},
			HasPassword: true, DigestType: digest.CRC32C, Password: []byte("p"), Version: -1}
		data, err := metadata.Marshal(md, 3)
		if err != nil {
			t.Fatal(err)
		}
		p, _ := metadata.Hierarchical.LedgerPath(root, id)
		if id%10000 == 0 {
			testenv.CreatePath(t, c.Conn, p, data)
			continue
		}
		ops = append(ops, &zk.CreateRequest{Path: p, Data: data, Acl: zk.WorldACL(zk.PermAll)})
	}
	if _, err := c.Multi(ops...); err != nil {
		t.Fatal(err)
	}
	var healthy bytes.Buffer
	if _, err := runBounded(t, 60*time.Second, &healthy, "ledger", "list", "--details", "--zk", z.Addr+root); err != nil {
		t.Fatalf("healthy listing: %v", err)
	}
	if lines := strings.Count(healthy.String(), "\n"); lines != n {
		t.Fatalf("%d lines, want %d", lines, n)
	}
	out := &killWriter{z: z}
	_, err := runBounded(t, 60*time.Second, out, "ledger", "list", "--details", "--zk", z.Addr+root)
	took := time.Since(out.killed)
	t.Logf("ledger list --details returned %s after the kill: %v", took.Round(time.Millisecond), err)
	if err == nil || !tkzk.Unavailable(err) || !strings.Contains(err.Error(), "zookeeper "+z.Addr) ||
		!strings.Contains(err.Error(), "ledger list stopped after") {
		t.Fatalf("want the listing stopped with a ZooKeeper error, got %v", err)
	}
	if took > 5*time.Second {
		t.Errorf("returned %s after the kill, want < 5s", took)
	}
}
