package testenv

import (
	"fmt"
	"net"
	"sync"
	"testing"
)

// Network faults for tests of timeouts and error messages: an address that
// refuses connections and one that accepts them and never answers. These
// are the only such helpers; use them instead of a listener of your own.

// ClosedAddr returns a 127.0.0.1 address nothing listens on: a connection
// to it is refused at once. The port is one FreePort hands out, so no
// server of the test takes it meanwhile.
func ClosedAddr(t testing.TB) string {
	t.Helper()
	return fmt.Sprintf("127.0.0.1:%d", FreePort(t))
}

// SilentAddr returns the 127.0.0.1 address of a listener that accepts
// every connection and never sends a byte (a hung server, a wrong port
// behind a firewall that accepts): a client waits until its own deadline.
// The listener and the connections it holds are closed when t ends.
func SilentAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("silent listener: %v", err)
	}
	var mu sync.Mutex
	var held []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, c := range held {
			c.Close()
		}
	})
	return ln.Addr().String()
}
