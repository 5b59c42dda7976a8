package blob

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// UntrustedServer tells the failures of TLS verification, which repeat on
// every attempt, from transport errors worth a retry, through the wrapping
// of the transport BodyWrites sets up and of net/http.
func TestUntrustedServer(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {})
	tlsSrv := httptest.NewUnstartedServer(ok)
	tlsSrv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes
	tlsSrv.StartTLS()
	defer tlsSrv.Close()
	plainSrv := httptest.NewServer(ok)
	defer plainSrv.Close()
	trusting := x509.NewCertPool()
	trusting.AddCert(tlsSrv.Certificate())
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := closed.Addr().String()
	closed.Close()
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()

	get := func(roots *x509.CertPool, host, url string) error {
		tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: host}, TLSHandshakeTimeout: 300 * time.Millisecond}
		BodyWrites(tr)
		defer tr.CloseIdleConnections()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := (&http.Client{Transport: tr}).Do(req)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	tlsURL := tlsSrv.URL
	plainAsTLS := "https://" + strings.TrimPrefix(plainSrv.URL, "http://")
	for _, tc := range []struct {
		name  string
		err   func() error
		final bool
	}{
		{"unknown authority", func() error { return get(nil, "", tlsURL) }, true},
		{"another name", func() error { return get(trusting, "store.example", tlsURL) }, true},
		{"an endpoint that does not speak TLS", func() error { return get(trusting, "", plainAsTLS) }, true},
		{"trusted", func() error { return get(trusting, "example.com", tlsURL) }, false},
		{"connection refused", func() error { return get(trusting, "", "https://"+refused) }, false},
		{"no handshake answer", func() error { return get(trusting, "", "https://"+silent.Addr().String()) }, false},
		{"wrapped once more", func() error {
			return fmt.Errorf("put part 3: %w", get(nil, "", tlsURL))
		}, true},
		{"nil", func() error { return nil }, false},
		{"a plain error", func() error { return errors.New("x509: certificate signed by unknown authority") }, false},
	} {
		err := tc.err()
		if got := UntrustedServer(err); got != tc.final {
			t.Errorf("%s: UntrustedServer(%v) = %v, want %v", tc.name, err, got, tc.final)
		}
		if tc.name == "trusted" && err != nil {
			t.Errorf("trusted server: %v", err)
		}
	}
}
