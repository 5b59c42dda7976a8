package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"

	"github.com/tierkeeper/tierkeeper/internal/cli/clitest"
	tkzk "github.com/tierkeeper/tierkeeper/internal/zk"
	"github.com/tierkeeper/tierkeeper/test/testenv"
)

// TestClusterSecuredZooKeeper runs `bookieagent cluster` against a real
// ZooKeeper's TLS port (client certificates required) whose ledgers root
// only a digest user may read: with the --zk-tls-* files and
// --zk-digest-file it lists the registered bookie and never prints the
// password; a CA that did not sign the server fails at once, well before
// the connect timeout, naming the reason and the CA flag's file.
func TestClusterSecuredZooKeeper(t *testing.T) {
	z := testenv.StartSecuredZooKeeper(t)
	const secret = "zk-Secret-pw"
	s := z.Session(t, tkzk.Options{Digest: "tk:" + secret})
	only := gozk.DigestACL(gozk.PermAll, "tk", secret)
	for _, p := range []string{"/ledgers", "/ledgers/available", "/ledgers/available/bk-7.bookies:3181"} {
		if _, err := tkzk.Do(t.Context(), func() (string, error) { return s.Create(p, nil, 0, only) }); err != nil {
			t.Fatal(err)
		}
	}
	digest := filepath.Join(t.TempDir(), "digest")
	if err := os.WriteFile(digest, []byte("tk:"+secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	args := func(caFile string) []string {
		return []string{"cluster", "--zk", z.TLSAddr + "/ledgers", "--zk-connect-timeout", "30s", "--no-managed-ledgers", "--no-running-config",
			"-o", "json", "--zk-tls-ca", caFile, "--zk-tls-cert", z.Client.CertFile, "--zk-tls-key", z.Client.KeyFile, "--zk-digest-file", digest}
	}
	out, stderr, err := runCLI(t, nil, args(z.CA.CertFile)...)
	if err != nil || !strings.Contains(out, "bk-7.bookies:3181") || strings.Contains(out+stderr, secret) {
		t.Fatalf("TLS + digest: %v\nstdout: %s\nstderr: %s", err, out, stderr)
	}
	other := testenv.NewCA(t, "other").CertFile
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	_, _, err = clitest.Run(ctx, newRootCmd(), args(other)...) // ctx bounds it: a hang fails the checks below
	t.Logf("wrong CA after %s: %v", time.Since(start).Round(time.Millisecond), err)
	if !errors.Is(err, tkzk.ErrTLS) || !strings.Contains(err.Error(), "not signed by a trusted CA") ||
		!strings.Contains(err.Error(), "--zk-tls-ca "+other) || strings.Contains(err.Error(), secret) {
		t.Fatalf("wrong CA: %v", err)
	}
}
