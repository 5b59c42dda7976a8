package testenv

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"
)

// echoServer echoes every connection until the test ends.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(c, c); c.Close() }()
		}
	}()
	return ln.Addr().String()
}

func readWithin(t *testing.T, c net.Conn, n int, d time.Duration) ([]byte, error) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(d))
	b := make([]byte, n)
	_, err := io.ReadFull(c, b)
	return b, err
}

func TestFaultProxyPartitionHealCut(t *testing.T) {
	p := StartFaultProxy(t, echoServer(t))
	c, err := net.Dial("tcp", p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	if b, err := readWithin(t, c, 4, 5*time.Second); err != nil || string(b) != "ping" {
		t.Fatalf("through the proxy: %q %v", b, err)
	}
	p.Partition()
	if _, err := c.Write([]byte("held")); err != nil {
		t.Fatal(err)
	}
	if b, err := readWithin(t, c, 4, 300*time.Millisecond); err == nil {
		t.Fatalf("partitioned, yet %q came back", b)
	}
	p.Heal()
	if b, err := readWithin(t, c, 4, 5*time.Second); err != nil || string(b) != "held" {
		t.Fatalf("after heal: %q %v (the held bytes must arrive)", b, err)
	}
	p.Cut()
	if _, err := readWithin(t, c, 1, 5*time.Second); err == nil || isTimeout(err) {
		t.Fatalf("cut connection still open: %v", err)
	}
	c2, err := net.Dial("tcp", p.Addr)
	if err == nil {
		_, rerr := readWithin(t, c2, 1, 5*time.Second)
		c2.Close()
		if rerr == nil || isTimeout(rerr) {
			t.Fatalf("a new connection during the cut was not refused: %v", rerr)
		}
	}
	p.Heal()
	c3, err := net.Dial("tcp", p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c3.Close()
	_, _ = c3.Write([]byte("back"))
	if b, err := readWithin(t, c3, 4, 5*time.Second); err != nil || string(b) != "back" {
		t.Fatalf("after the cut healed: %q %v", b, err)
	}
	if open, all := p.Connections(); open != 1 || all < 2 {
		t.Errorf("connections open %d, accepted %d", open, all)
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// zkFrame is a length-prefixed frame; a request carries xid and opcode.
func zkFrame(xid, op int32, body []byte) []byte {
	var b bytes.Buffer
	_ = binary.Write(&b, binary.BigEndian, int32(8+len(body)))
	_ = binary.Write(&b, binary.BigEndian, xid)
	_ = binary.Write(&b, binary.BigEndian, op)
	b.Write(body)
	return b.Bytes()
}

// The partition starts right after the matching request reached the
// server: the server got it whole (echoed here, so the echo is what is
// held), and a later request does not reach it until Heal.
func TestFaultProxyPartitionAfterZKRequest(t *testing.T) {
	// The server side records what arrives.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan []byte, 16)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, 4096)
		for {
			n, err := c.Read(buf)
			if n > 0 {
				got <- append([]byte(nil), buf[:n]...)
			}
			if err != nil {
				return
			}
		}
	}()
	p := StartFaultProxy(t, ln.Addr().String())
	fired := p.PartitionAfterZKRequest(ZKOpSetData)
	c, err := net.Dial("tcp", p.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	connect := []byte{0, 0, 0, 12, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 0} // the connect request: no header
	get := zkFrame(1, 4, []byte("/a"))
	set := zkFrame(2, ZKOpSetData, []byte("/a=payload"))
	later := zkFrame(3, 4, []byte("/b"))
	// One write holding all four, split across a frame boundary.
	stream := bytes.Join([][]byte{connect, get, set, later}, nil)
	if _, err := c.Write(stream[:len(connect)+3]); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if _, err := c.Write(stream[len(connect)+3:]); err != nil {
		t.Fatal(err)
	}
	select {
	case <-fired:
	case <-time.After(5 * time.Second):
		t.Fatal("the setData request did not fire the partition")
	}
	var at []byte
	deadline := time.After(5 * time.Second)
	for len(at) < len(connect)+len(get)+len(set) {
		select {
		case b := <-got:
			at = append(at, b...)
		case <-deadline:
			t.Fatalf("server got %d bytes, want the first three frames (%d)", len(at), len(connect)+len(get)+len(set))
		}
	}
	if !bytes.Equal(at, stream[:len(connect)+len(get)+len(set)]) {
		t.Fatalf("server got %x", at)
	}
	select {
	case b := <-got:
		t.Fatalf("the request after the partition reached the server: %x", b)
	case <-time.After(300 * time.Millisecond):
	}
	if !p.Partitioned() {
		t.Fatal("not partitioned after the trigger")
	}
	p.Heal()
	select {
	case b := <-got:
		if !bytes.Equal(b, later) {
			t.Fatalf("after heal the server got %x, want %x", b, later)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the held request was not delivered by Heal")
	}
}
