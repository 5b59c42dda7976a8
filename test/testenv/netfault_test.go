package testenv

import (
	"errors"
	"net"
	"os"
	"syscall"
	"testing"
	"time"
)

func TestNetworkFaults(t *testing.T) {
	if _, err := net.DialTimeout("tcp", ClosedAddr(t), 2*time.Second); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("closed address: %v, want connection refused", err)
	}
	c, err := net.DialTimeout("tcp", SilentAddr(t), 2*time.Second)
	if err != nil {
		t.Fatalf("silent address refuses: %v", err)
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	if n, err := c.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("silent address answered: %d bytes, %v", n, err)
	}
}
