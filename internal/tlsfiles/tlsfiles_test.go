package tlsfiles_test

import (
	"crypto/tls"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tierkeeper/tierkeeper/internal/tlsfiles"
	"github.com/tierkeeper/tierkeeper/test/testenv"
)

// Config names the file that cannot be used; a usable set loads.
func TestConfigErrors(t *testing.T) {
	ca := testenv.NewCA(t, "ca")
	c := ca.Issue(t, "c", "localhost")
	notPEM := filepath.Join(t.TempDir(), "x.pem")
	if err := os.WriteFile(notPEM, []byte("not pem"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		f    tlsfiles.Files
		want string
	}{
		{tlsfiles.Files{CAFile: "/nonexistent/ca.pem"}, "/nonexistent/ca.pem"},
		{tlsfiles.Files{CAFile: notPEM}, "holds no PEM certificate"},
		{tlsfiles.Files{CertFile: c.CertFile}, "both its certificate and its key"},
		{tlsfiles.Files{CertFile: c.CertFile, KeyFile: ca.CertFile}, ca.CertFile},
	} {
		if _, err := tc.f.Config(); !errors.Is(err, tlsfiles.ErrConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want ErrConfig naming %q", tc.f, err, tc.want)
		}
	}
	cfg, err := tlsfiles.Files{CAFile: ca.CertFile, CertFile: c.CertFile, KeyFile: c.KeyFile, SkipHostnameVerification: true}.Config()
	if err != nil || cfg.RootCAs == nil || len(cfg.Certificates) != 1 || cfg.VerifyConnection == nil {
		t.Fatalf("usable files: %v %+v", err, cfg)
	}
	if got := tlsfiles.ForAddr(cfg, "zk-0.zk:2281").ServerName; got != "zk-0.zk" {
		t.Errorf("ServerName %q", got)
	}
}

// Without hostname verification the chain is still verified: a CA that
// did not sign the server fails, with the reason Explain gives; the right
// CA passes whatever name is dialed.
func TestSkipHostnameStillVerifiesChain(t *testing.T) {
	ca := testenv.NewCA(t, "ca")
	srv := ca.Issue(t, "srv", "server.example")
	cert, err := tls.LoadX509KeyPair(srv.CertFile, srv.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.(*tls.Conn).Handshake()
			c.Close()
		}
	}()
	dial := func(caFile string) error {
		cfg, err := tlsfiles.Files{CAFile: caFile, SkipHostnameVerification: true}.Config()
		if err != nil {
			t.Fatal(err)
		}
		c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", ln.Addr().String(), tlsfiles.ForAddr(cfg, ln.Addr().String()))
		if err == nil {
			c.Close()
		}
		return err
	}
	if err := dial(ca.CertFile); err != nil {
		t.Fatalf("right CA, other name: %v", err)
	}
	err = dial(testenv.NewCA(t, "other").CertFile)
	if err == nil || !tlsfiles.Permanent(err) || !strings.Contains(tlsfiles.Explain(err, nil), "not signed by a trusted CA") {
		t.Fatalf("wrong CA: %v (%s)", err, tlsfiles.Explain(err, nil))
	}
}

// A server that requires a client certificate may answer an empty one
// with "bad certificate" (not "certificate required"): whether the client
// sent one tells the two apart.
func TestExplainEmptyClientCertificate(t *testing.T) {
	bad := errors.New("read frame: remote error: tls: bad certificate")
	withCert := &tls.Config{Certificates: []tls.Certificate{{}}}
	if got := tlsfiles.Explain(bad, &tls.Config{}); !strings.Contains(got, "requires a client certificate and none was sent") {
		t.Errorf("no client certificate configured: %q", got)
	}
	if got := tlsfiles.Explain(bad, withCert); !strings.Contains(got, "refused the client certificate") {
		t.Errorf("a client certificate configured: %q", got)
	}
	if got := tlsfiles.Explain(errors.New("remote error: tls: certificate required"), withCert); !strings.Contains(got, "requires a client certificate") {
		t.Errorf("certificate required: %q", got)
	}
}
