package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"
	"google.golang.org/protobuf/proto"

	"github.com/tierkeeper/tierkeeper/bookkeeper/client"
	"github.com/tierkeeper/tierkeeper/internal/connflags"
	"github.com/tierkeeper/tierkeeper/internal/mlproto"
	tkzk "github.com/tierkeeper/tierkeeper/internal/zk"
	"github.com/tierkeeper/tierkeeper/pulsar/mledger"
	"github.com/tierkeeper/tierkeeper/test/testenv"
)

// writeFile writes content to a new file under t's temporary directory.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestSecuredZooKeeperFlags runs `offloader topics` against a real
// ZooKeeper's TLS port (client certificates required) whose managed
// ledgers only a digest user may read: the --zk-tls-* files and
// --zk-digest-file list the topic, and the password never appears in the
// output (debug logs included); without the digest file ZooKeeper refuses
// the read; a CA that did not sign the server fails at once (well before
// the connect timeout) naming the reason and the CA flag's file.
func TestSecuredZooKeeperFlags(t *testing.T) {
	t.Parallel()
	z := testenv.StartSecuredZooKeeper(t)
	const secret = "zk-Secret-pw"
	s := z.Session(t, tkzk.Options{Digest: "tk:" + secret})
	only := gozk.DigestACL(gozk.PermAll, "tk", secret)
	info, err := mledger.Encode(&mlproto.ManagedLedgerInfo{LedgerInfo: []*mlproto.ManagedLedgerInfo_LedgerInfo{{LedgerId: proto.Int64(7), Timestamp: proto.Int64(0)}}}, mledger.EncodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p := ""
	for _, n := range []string{"managed-ledgers", "public", "default", "persistent", "orders"} {
		p += "/" + n
		var data []byte
		if n == "orders" {
			data = info
		}
		if _, err := tkzk.Do(t.Context(), func() (string, error) { return s.Create(p, data, 0, only) }); err != nil {
			t.Fatal(err)
		}
	}
	digest := writeFile(t, "digest", "tk:"+secret+"\n")
	zk := []string{"--zk", z.TLSAddr, "--zk-connect-timeout", "30s", "--zk-tls-cert", z.Client.CertFile, "--zk-tls-key", z.Client.KeyFile}

	out, stderr, err := run(t, append([]string{"topics", "-o", "json", "--log-level", "debug", "--zk-tls-ca", z.CA.CertFile, "--zk-digest-file", digest}, zk...)...)
	if err != nil || !strings.Contains(out, "persistent://public/default/orders") {
		t.Fatalf("TLS + digest: %v\nstdout: %s\nstderr: %s", err, out, stderr)
	}
	if strings.Contains(out+stderr, secret) {
		t.Fatalf("the password is in the output:\n%s\n%s", out, stderr)
	}
	if _, _, err := run(t, append([]string{"topics", "--zk-tls-ca", z.CA.CertFile}, zk...)...); !errors.Is(err, gozk.ErrNoAuth) {
		t.Fatalf("TLS without the digest: %v, want ZooKeeper's NoAuth", err)
	}
	other := testenv.NewCA(t, "other").CertFile
	took, err := runBounded(t, 20*time.Second, nil, append([]string{"topics", "--zk-tls-ca", other, "--zk-digest-file", digest}, zk...)...)
	t.Logf("wrong CA after %s: %v", took.Round(time.Millisecond), err)
	if !errors.Is(err, tkzk.ErrTLS) || !strings.Contains(err.Error(), "not signed by a trusted CA") ||
		!strings.Contains(err.Error(), "--zk-tls-ca "+other) || strings.Contains(err.Error(), secret) {
		t.Fatalf("wrong CA: %v", err)
	}
}

// TestSecurityFlagErrors: unusable --zk-tls-*, --zk-digest-file and
// --bk-tls-* values fail before any connection, naming the flag and the
// file, never the file's content.
func TestSecurityFlagErrors(t *testing.T) {
	t.Parallel()
	ca := testenv.NewCA(t, "ca")
	c := ca.Issue(t, "c", "localhost")
	noColon := writeFile(t, "digest", "justApassword\n")
	zk := []string{"--zk", testenv.ClosedAddr(t), "--zk-connect-timeout", "1s"}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"topics", "--zk-digest-file", "/nonexistent/digest"}, []string{"--zk-digest-file", "/nonexistent/digest"}},
		{[]string{"ledger", "list", "--zk-digest-file", noColon}, []string{"--zk-digest-file " + noColon, "user:password"}},
		{[]string{"topics", "--zk-tls-ca", "/nonexistent/ca.pem"}, []string{"--zk-tls-ca /nonexistent/ca.pem"}},
		{[]string{"topics", "--zk-tls-cert", c.CertFile}, []string{"--zk-tls-cert and --zk-tls-key"}},
		{[]string{"topics", "--zk-tls-cert", c.CertFile, "--zk-tls-key", ca.CertFile}, []string{"--zk-tls-cert " + c.CertFile, ca.CertFile}},
		{[]string{"topics", "--zk-tls-no-hostname-verification"}, []string{"needs --zk-tls"}},
		{[]string{"ledger", "read", "--ledger", "1", "--bk-tls-ca", "/nonexistent/bk.pem"}, []string{"--bk-tls-ca /nonexistent/bk.pem"}},
		{[]string{"verify", "--store", writeFile(t, "s.yaml", "type: fs\nconfig: {dir: /tmp}\n"), "--bk-tls-key", c.KeyFile, "t"}, []string{"--bk-tls-cert and --bk-tls-key"}},
	} {
		_, _, err := run(t, append(tc.args, zk...)...)
		if !errors.Is(err, connflags.ErrFlags) {
			t.Errorf("%v: %v, want connflags.ErrFlags", tc.args, err)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v: %q does not say %q", tc.args, err, w)
			}
		}
		if strings.Contains(err.Error(), "justApassword") {
			t.Errorf("%v: the digest file's content is in %q", tc.args, err)
		}
	}
}

// TestLedgerReadBookieTLSFlags: --bk-tls-ca reaches the bookie client:
// bookies that do not speak TLS fail the read with the client's ErrTLS
// within the read timeout, where the same read without the flag succeeds
// (TestLedgerReadJSON). Reads over real TLS bookies are
// test/compat's TestBookieTLS.
func TestLedgerReadBookieTLSFlags(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "/cli-bktls/ledgers", 4343)
	ca := testenv.NewCA(t, "bk-ca")
	args := []string{"ledger", "read", "--zk", f.zkAddr, "--ledgers-root", f.root, "--ledger", "4343", "--verify-only", "--read-timeout", "2s"}
	if _, _, err := run(t, args...); err != nil {
		t.Fatalf("plain: %v", err)
	}
	took, err := runBounded(t, 30*time.Second, nil, append(args, "--bk-tls-ca", ca.CertFile)...)
	t.Logf("TLS to plain bookies after %s: %v", took.Round(time.Millisecond), err)
	if !errors.Is(err, client.ErrTLS) {
		t.Fatalf("--bk-tls-ca to bookies without TLS: %v, want client.ErrTLS", err)
	}
}
