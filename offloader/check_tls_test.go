package offloader

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/tierkeeper/tierkeeper/test/testenv"
)

// TestCheckSecuredZooKeeper runs --check's ZooKeeper part against a real
// ZooKeeper whose TLS port requires client certificates: the right config
// connects over TLS as the digest user and finds the lease root writable;
// a CA that did not sign the server fails the zookeeper check naming TLS
// and the CA; a wrong password connects (ZooKeeper accepts any digest) but
// fails zookeeper-auth naming the wrong password, and no password appears
// in any result.
func TestCheckSecuredZooKeeper(t *testing.T) {
	z := testenv.StartSecuredZooKeeper(t)
	ca, cli := z.CA, z.Client
	cfg := func(t *testing.T, caFile, digest string) *Config {
		t.Helper()
		doc := fmt.Sprintf(`zookeeper:
  servers: %s
  connect_timeout: 20s
  digest: !env TK_ZK_DIGEST
  tls: {enabled: true, ca_file: %q, cert_file: %q, key_file: %q}
leases: {root: /tierkeeper/leases}
store: {type: fs, config: {dir: %q}}
`, z.TLSAddr, caFile, cli.CertFile, cli.KeyFile, t.TempDir())
		c, err := Parse([]byte(doc), ParseOptions{Getenv: env(map[string]string{"TK_ZK_DIGEST": digest})})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	// The service's first lease creates the root with the digest ACL.
	good := cfg(t, ca.CertFile, "tierkeeper:zk-right-pw")
	sess, err := good.connectZK(ctx, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	l := newZKLeases(sess, good.Leases.Root, "r1", slog.New(slog.DiscardHandler))
	if _, _, err := l.TryAcquire(ctx, "public/default/persistent/t"); err != nil {
		t.Fatal(err)
	}
	l.close()
	sess.Close()

	show := func(res []CheckResult) string {
		var b strings.Builder
		for _, r := range res {
			fmt.Fprintf(&b, "%s [%s] ok=%t: %s\n", r.Name, r.Target, r.OK, r.Detail)
		}
		return b.String()
	}
	res := Check(ctx, good, CheckOptions{})
	m := byName(res)
	if !m["zookeeper"].OK || !strings.Contains(m["zookeeper"].Detail, `TLS, digest user "tierkeeper"`) || !m["zookeeper-auth"].OK {
		t.Fatalf("right config:\n%s", show(res))
	}
	res = Check(ctx, cfg(t, testenv.NewCA(t, "other").CertFile, "tierkeeper:zk-right-pw"), CheckOptions{})
	if r := byName(res)["zookeeper"]; r.OK || !strings.HasPrefix(r.Detail, "TLS: ") || !strings.Contains(r.Detail, "not signed by a trusted CA") {
		t.Fatalf("wrong CA:\n%s", show(res))
	}
	t.Logf("wrong CA:\n%s", show(res))
	res = Check(ctx, cfg(t, ca.CertFile, "tierkeeper:zk-WRONG-pw"), CheckOptions{})
	t.Logf("wrong password:\n%s", show(res))
	if r := byName(res)["zookeeper-auth"]; r.OK || !strings.HasPrefix(r.Detail, "auth: ") || !strings.Contains(r.Detail, "wrong password") ||
		strings.Contains(show(res), "WRONG-pw") {
		t.Fatalf("wrong password:\n%s", show(res))
	}
}
