package blobtest

import (
	"context"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tierkeeper/tierkeeper/offloader/blob"
)

// UntrustedServer checks a provider against addr, a server whose
// certificate the client does not trust: newStore makes the store (with
// the provider's production retry policy) dialling through dial. One Head
// must fail at once, on one connection (a certificate error is not
// retried), and say what failed: the handshake, the server, the reason.
// The error must not show secret.
func UntrustedServer(t *testing.T, addr, secret string, newStore func(dial blob.DialFunc) blob.Store) {
	t.Helper()
	var dials atomic.Int32
	var d net.Dialer
	st := newStore(func(ctx context.Context, network, a string) (net.Conn, error) {
		dials.Add(1)
		return d.DialContext(ctx, network, a)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	_, err := st.Head(ctx, "x")
	if err == nil {
		t.Fatal("Head over TLS to a server signed by an unknown CA succeeded")
	}
	t.Logf("error after %v and %d connections: %v", time.Since(start), dials.Load(), err)
	for _, want := range []string{"TLS handshake with " + addr, "certificate signed by unknown authority"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if secret != "" && strings.Contains(err.Error(), secret) {
		t.Errorf("error %q shows the secret", err)
	}
	// A certificate the client does not trust stays untrusted: retrying
	// only delays the error the operator has to act on.
	if n := dials.Load(); n != 1 {
		t.Errorf("%d connections for one Head: a certificate error was retried", n)
	}
}
