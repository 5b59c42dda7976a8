package compat

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tierkeeper/tierkeeper/bookkeeper/client"
	"github.com/tierkeeper/tierkeeper/internal/tlsfiles"
	"github.com/tierkeeper/tierkeeper/offloader"
	"github.com/tierkeeper/tierkeeper/test/testenv"
)

// TestBookieTLS reads a ledger written by BookKeeper's Java client from a
// real bookie with TLS on and client certificates required
// (tlsClientAuthentication=true), over START_TLS and the handshake: with
// the right CA and client certificate every entry matches what Java wrote
// (with and without hostname verification); without a client certificate
// and with a CA that did not sign the bookie, the read fails within the
// connect or read timeout with ErrTLS and a reason naming the problem.
func TestBookieTLS(t *testing.T) {
	ca := testenv.NewCA(t, "bk-ca")
	srv := ca.Issue(t, "bookie", "127.0.0.1")
	cli := ca.Issue(t, "bk-client", "tierkeeper")
	z := testenv.StartZooKeeper(t)
	c := testenv.StartBookiesWith(t, z, 1, testenv.BookieOptions{Extra: testenv.BookieTLS(ca, srv, true)})
	m := testenv.Java(t).WriteLedgers(t, c, testenv.WriteLedgersOptions{Digests: []string{"CRC32C"}, Entries: 6,
		Extra: []string{"--ensemble", "1", "--write-quorum", "1", "--ack-quorum", "1"}})
	w := m.Ledgers[0]
	s := bkStore(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	md, err := s.ReadLedger(ctx, w.LedgerID)
	if err != nil {
		t.Fatal(err)
	}
	open := func(t *testing.T, f tlsfiles.Files) *client.Client {
		t.Helper()
		tc, err := f.Config()
		if err != nil {
			t.Fatal(err)
		}
		bc, err := client.New(client.Options{Resolver: s, TLS: tc, ConnectTimeout: 3 * time.Second, ReadTimeout: 3 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { bc.Close() })
		return bc
	}
	good := tlsfiles.Files{CAFile: ca.CertFile, CertFile: cli.CertFile, KeyFile: cli.KeyFile}
	start := time.Now()
	readAndCompare(t, open(t, good), md, w)
	t.Logf("TLS read of %d entries with a client certificate: %s (dial, START_TLS, handshake and reads)", len(w.Entries), time.Since(start).Round(time.Millisecond))
	noHost := good
	noHost.SkipHostnameVerification = true
	readAndCompare(t, open(t, noHost), md, w)
	// Handshake cost on a warm bookie: a new connection and one read,
	// plain and with TLS (a figure in the log, not an assertion).
	bookie := md.Segments[0].Bookies[0]
	plain, err := client.New(client.Options{Resolver: s})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	for _, p := range []struct {
		name string
		c    *client.Client
	}{{"plain", plain}, {"TLS", open(t, good)}} {
		start := time.Now()
		if _, err := p.c.Probe(ctx, bookie); err != nil {
			t.Fatalf("%s probe: %v", p.name, err)
		}
		t.Logf("new %s connection + one read: %s", p.name, time.Since(start).Round(10*time.Microsecond))
	}

	for _, tc := range []struct {
		name  string
		files tlsfiles.Files
		want  string
	}{
		{"no client certificate", tlsfiles.Files{CAFile: ca.CertFile}, "client certificate"},
		{"wrong CA", tlsfiles.Files{CAFile: testenv.NewCA(t, "other-ca").CertFile, CertFile: cli.CertFile, KeyFile: cli.KeyFile},
			"not signed by a trusted CA"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := open(t, tc.files).Open(md)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			_, err = l.ReadEntry(ctx, 0)
			t.Logf("%s (%s): %v", tc.name, time.Since(start).Round(time.Millisecond), err)
			if !errors.Is(err, client.ErrTLS) || !strings.Contains(err.Error(), tc.want) || time.Since(start) > 10*time.Second {
				t.Fatalf("read: %v; want ErrTLS naming %q within the timeouts", err, tc.want)
			}
		})
	}

	// --check reads from every bookie with the bookkeeper.tls section and
	// names what failed.
	check := func(t *testing.T, tlsYAML string) offloader.CheckResult {
		t.Helper()
		doc := fmt.Sprintf("zookeeper: {servers: %q, connect_timeout: 10s}\nbookkeeper:\n  tls: %s\nstore: {type: fs, config: {dir: %q}}\n",
			z.Addr, tlsYAML, t.TempDir())
		cfg, err := offloader.Parse([]byte(doc), offloader.ParseOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range offloader.Check(ctx, cfg, offloader.CheckOptions{}) {
			if r.Name == "bookies" {
				t.Logf("--check bookies [%s] ok=%t: %s", r.Target, r.OK, r.Detail)
				return r
			}
		}
		t.Fatal("no bookies check")
		return offloader.CheckResult{}
	}
	if r := check(t, fmt.Sprintf("{enabled: true, client_authentication: true, certificate_file: %q, key_file: %q, trust_certs_file: %q}",
		cli.CertFile, cli.KeyFile, ca.CertFile)); !r.OK {
		t.Fatalf("check with the right certificates: %+v", r)
	}
	if r := check(t, fmt.Sprintf("{enabled: true, trust_certs_file: %q}", ca.CertFile)); r.OK || !strings.Contains(r.Detail, "TLS: ") ||
		!strings.Contains(r.Detail, "requires a client certificate") || !strings.Contains(r.Detail, md.Segments[0].Bookies[0]) {
		t.Fatalf("check without a client certificate: %+v", r)
	}
}
