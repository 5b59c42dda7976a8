package zk_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"

	"github.com/tierkeeper/tierkeeper/internal/tlsfiles"
	"github.com/tierkeeper/tierkeeper/internal/zk"
	"github.com/tierkeeper/tierkeeper/test/testenv"
)

// TestTLSAndDigest runs against a real ZooKeeper with a TLS client port
// that requires client certificates: the right CA, certificate and
// credentials give a session whose created znodes only its identity may
// write (and that keeps its credentials across a reconnect to a restarted
// server); a wrong CA, a name the server's certificate does not hold and a
// missing client certificate each fail Connect at once with ErrTLS and a
// reason; TLS to the plain port fails within the connect timeout asking
// whether it is the secure port; a wrong password connects (ZooKeeper accepts any digest)
// but cannot write, and CheckWritable says the password is wrong, never
// printing it.
func TestTLSAndDigest(t *testing.T) {
	ca := testenv.NewCA(t, "zk-ca")
	srv := ca.Issue(t, "zk-server", "localhost")
	cli := ca.Issue(t, "zk-client", "tierkeeper")
	z := testenv.StartZooKeeperWith(t, testenv.ZooKeeperOptions{
		TLS: &testenv.ZooKeeperTLS{CA: ca, Cert: srv, ClientAuth: "need"}, SuperDigest: "super:super-pw"})
	_, port, _ := strings.Cut(z.SecureAddr, ":")
	byName := "localhost:" + port
	tlsConf := func(t *testing.T, f tlsfiles.Files) zk.Options {
		t.Helper()
		c, err := f.Config()
		if err != nil {
			t.Fatal(err)
		}
		return zk.Options{TLS: c, ConnectTimeout: 5 * time.Second, SessionTimeout: 20 * time.Second}
	}
	good := tlsfiles.Files{CAFile: ca.CertFile, CertFile: cli.CertFile, KeyFile: cli.KeyFile}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	o := tlsConf(t, good)
	o.Digest = "tierkeeper:right-pw"
	o.ConnectTimeout = 30 * time.Second // the server's first handshake loads its TLS stack
	s, err := zk.Connect(ctx, []string{byName}, o)
	if err != nil {
		t.Fatalf("TLS + digest: %v", err)
	}
	defer s.Close()
	if _, err := zk.Do(ctx, func() (string, error) { return s.Create("/owned", []byte("a"), 0, s.ACL()) }); err != nil {
		t.Fatal(err)
	}
	if err := zk.CheckWritable(ctx, s, "/owned", o.Digest); err != nil {
		t.Fatalf("own node: %v", err)
	}

	// The server restarts: the session reconnects and go-zookeeper
	// re-submits the credentials before the next request.
	z.Restart(t)
	var werr error
	for try := 0; try < 20; try++ { // until the client has reconnected
		if _, werr = zk.Set(ctx, s, "/owned", []byte("b"), -1); !errors.Is(werr, gozk.ErrConnectionClosed) && !errors.Is(werr, gozk.ErrNoServer) {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	if werr != nil || s.Err() != nil {
		t.Fatalf("write after reconnect (credentials re-sent?): %v (session: %v)", werr, s.Err())
	}

	// A wrong password: a session, reads (world-readable), no writes.
	wo := tlsConf(t, good)
	wo.Digest = "tierkeeper:WRONG-pw"
	w, err := zk.Connect(ctx, []string{byName}, wo)
	if err != nil {
		t.Fatalf("wrong password should still connect: %v", err)
	}
	defer w.Close()
	if _, _, err := zk.Get(ctx, w, "/owned"); err != nil {
		t.Fatalf("read with a wrong password: %v", err)
	}
	if _, err := zk.Set(ctx, w, "/owned", []byte("x"), -1); !errors.Is(err, gozk.ErrNoAuth) {
		t.Fatalf("write with a wrong password: %v, want zk.ErrNoAuth", err)
	}
	err = zk.CheckWritable(ctx, w, "/owned", wo.Digest)
	t.Logf("wrong password: %v", err)
	if !errors.Is(err, zk.ErrNoAccess) || !strings.Contains(err.Error(), "wrong password") || strings.Contains(err.Error(), "WRONG-pw") {
		t.Fatalf("CheckWritable with a wrong password: %v", err)
	}
	// The super user passes every ACL: the ACL is ZooKeeper's, not ours.
	so := tlsConf(t, good)
	so.Digest = "super:super-pw"
	su, err := zk.Connect(ctx, []string{byName}, so)
	if err != nil {
		t.Fatal(err)
	}
	defer su.Close()
	if _, err := zk.Set(ctx, su, "/owned", []byte("c"), -1); err != nil {
		t.Fatalf("super user: %v", err)
	}

	for _, tc := range []struct {
		name, addr string
		files      tlsfiles.Files
		want       string
	}{
		{"wrong CA", byName, tlsfiles.Files{CAFile: testenv.NewCA(t, "other-ca").CertFile, CertFile: cli.CertFile, KeyFile: cli.KeyFile},
			"not signed by a trusted CA"},
		{"hostname mismatch", z.SecureAddr, good, "not for the name dialed"},
		{"no client certificate", byName, tlsfiles.Files{CAFile: ca.CertFile}, "client certificate"},
		{"plain port", z.Addr, good, "secureClientPort"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			s, err := zk.Connect(ctx, []string{tc.addr}, tlsConf(t, tc.files))
			took := time.Since(start)
			t.Logf("%s (%s): %v", tc.name, took.Round(time.Millisecond), err)
			if err == nil {
				s.Close()
				t.Fatal("connected")
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.addr) || took > 6*time.Second {
				t.Fatalf("error %q after %s: want one naming %s and %q within the connect timeout", err, took, tc.addr, tc.want)
			}
		})
	}
	// Hostname verification off: the chain is still checked, the name not.
	f := good
	f.SkipHostnameVerification = true
	ns, err := zk.Connect(ctx, []string{z.SecureAddr}, tlsConf(t, f))
	if err != nil {
		t.Fatalf("without hostname verification: %v", err)
	}
	ns.Close()
}
