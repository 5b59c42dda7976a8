package offloadbench

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/tierkeeper/tierkeeper/internal/proccost"
	"github.com/tierkeeper/tierkeeper/internal/tlsfiles"
	"github.com/tierkeeper/tierkeeper/offloader/blob"
	"github.com/tierkeeper/tierkeeper/test/testenv"
)

// The relay is the floor of the copy's CPU on the machine of the round:
// the least a Go process can do to move the ledger's bytes from one
// loopback socket to another, at the rate the copy moved them. A source
// in the benchmark's process writes the bytes in entry-sized writes, paced
// to the copy's MB/s (as the bookies answer one read per entry); a child
// process reads them into one block-sized buffer at a time (the copy's
// part) and writes every full buffer to a sink that discards it. No
// parsing, no digest, no HTTP: only the two socket copies per byte, the
// loopback TCP path and the Go runtime's waits, whose kernel side is most
// of the copy's CPU. Its CPU is the child's over its loop, measured as
// the copy's step is (proccost: /proc/self/stat).
// The machine is otherwise idle (no bookie and no store run meanwhile),
// so it is a lower bound for a copy that shares the cores with them.
//
// With a CA (the store speaks HTTPS) the relay runs a second time with its
// sink behind TLS: the child writes each buffer through the connection
// the offloader's store client makes for HTTPS (blob.BodyWrites: crypto/tls
// with the TLS records sent 256 KiB per system call), so the floor counts
// the encryption every HTTPS copy pays. Its buffer is reused for every
// block, so the plaintext it encrypts is more often still in cache than a
// copy's part (which waited in memory while its block filled): a floor,
// not the copy's cost.

const relayChildEnv = "TK_OFFLOADBENCH_RELAY"

type relayConfig struct {
	Source, Sink string
	Block        int
	// CAFile, when set, makes the sink a TLS server whose certificate
	// this CA issued for 127.0.0.1: the child encrypts what it writes.
	CAFile string
}

// relay runs the relay over total bytes written in chunk-sized writes at
// rate MB/s with a block-sized buffer in the child and returns its seconds
// and CPU seconds (of its loop, as the copy's are of its step: the
// process's start is left out). With ca the sink speaks TLS (a certificate
// ca issues for 127.0.0.1), and the child's CPU includes the handshake
// and the encryption.
func (be *bench) relay(total int64, chunk, block int, rate float64, ca *testenv.CA) (seconds, cpuSeconds float64) {
	b := be.b
	if chunk <= 0 || rate <= 0 {
		b.Fatalf("relay: chunk %d bytes, rate %.1f MB/s", chunk, rate)
	}
	// Bounded: three times the paced time plus a minute.
	paced := time.Duration(float64(total) / (rate * 1e6) * float64(time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), 3*paced+time.Minute)
	defer cancel()
	src, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer src.Close()
	sink, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer sink.Close()
	cfg := relayConfig{Source: src.Addr().String(), Sink: sink.Addr().String(), Block: block}
	var sinkTLS *tls.Config
	if ca != nil {
		c := ca.Issue(b, "relay-sink", "127.0.0.1")
		kp, err := tls.LoadX509KeyPair(c.CertFile, c.KeyFile)
		if err != nil {
			b.Fatal(err)
		}
		sinkTLS, cfg.CAFile = &tls.Config{Certificates: []tls.Certificate{kp}}, ca.CertFile
	}
	srcErr, sinkErr := make(chan error, 1), make(chan error, 1)
	go func() { srcErr <- pacedSource(ctx, src, total, chunk, rate) }()
	go func() { sinkErr <- discardSink(ctx, sink, total, sinkTLS) }()

	var r struct {
		Bytes      int64   `json:"bytes"`
		Seconds    float64 `json:"seconds"`
		CPUSeconds float64 `json:"cpuSeconds"`
	}
	be.child(ctx, relayChildEnv, cfg, &r)
	if err := <-srcErr; err != nil {
		b.Fatalf("relay source: %v", err)
	}
	if err := <-sinkErr; err != nil {
		b.Fatalf("relay sink: %v", err)
	}
	if r.Bytes != total {
		b.Fatalf("relay child moved %d bytes, want %d", r.Bytes, total)
	}
	return r.Seconds, r.CPUSeconds
}

// pacedSource accepts one connection and writes total bytes to it in
// chunk-sized writes, each not before its share of the time at rate MB/s.
func pacedSource(ctx context.Context, ln net.Listener, total int64, chunk int, rate float64) error {
	c, err := accept(ctx, ln)
	if err != nil {
		return err
	}
	defer c.Close()
	buf := make([]byte, chunk)
	for i := range buf {
		buf[i] = byte(i * 7)
	}
	start := time.Now()
	for sent := int64(0); sent < total; {
		n := int(min(int64(chunk), total-sent))
		if _, err := c.Write(buf[:n]); err != nil {
			return fmt.Errorf("write after %d bytes: %w", sent, err)
		}
		sent += int64(n)
		due := start.Add(time.Duration(float64(sent) / (rate * 1e6) * float64(time.Second)))
		if d := time.Until(due); d > 0 {
			select {
			case <-time.After(d):
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	return nil
}

// discardSink accepts one connection (with cfg: a TLS server's) and reads
// it to its end, which must come after total bytes.
func discardSink(ctx context.Context, ln net.Listener, total int64, cfg *tls.Config) error {
	c, err := accept(ctx, ln)
	if err != nil {
		return err
	}
	defer c.Close()
	if cfg != nil {
		c = tls.Server(c, cfg)
	}
	n, err := io.Copy(io.Discard, c)
	if err != nil {
		return fmt.Errorf("read after %d bytes: %w", n, err)
	}
	if n != total {
		return fmt.Errorf("got %d bytes, want %d", n, total)
	}
	return nil
}

// accept waits for one connection on ln until ctx ends.
func accept(ctx context.Context, ln net.Listener) (net.Conn, error) {
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	c, err := ln.Accept()
	if err != nil {
		return nil, fmt.Errorf("accept on %s: %w", ln.Addr(), errors.Join(err, ctx.Err()))
	}
	// Closing the connection when ctx ends bounds its reads and writes.
	context.AfterFunc(ctx, func() { c.Close() })
	return c, nil
}

// relayChild is the relay's process: it reads the source into a
// block-sized buffer, writes every full (or last) buffer to the sink, and
// prints the bytes and the seconds.
func relayChild() int {
	var c relayConfig
	if err := json.Unmarshal([]byte(os.Getenv(relayChildEnv)), &c); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	d := net.Dialer{Timeout: 10 * time.Second}
	src, err := d.Dial("tcp", c.Source)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	start := proccost.Now()
	dst, err := relayDial(&d, c)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	buf := make([]byte, c.Block)
	var total int64
	for {
		n, rerr := io.ReadFull(src, buf)
		if n > 0 {
			if _, err := dst.Write(buf[:n]); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
			total += int64(n)
		}
		if errors.Is(rerr, io.EOF) || errors.Is(rerr, io.ErrUnexpectedEOF) {
			break
		}
		if rerr != nil {
			fmt.Fprintln(os.Stderr, rerr)
			return 1
		}
	}
	// A TLS connection sends its close_notify: the sink reads a clean end.
	if err := dst.Close(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	cost := proccost.Now().Since(start)
	if cost.CPUErr != nil {
		fmt.Fprintln(os.Stderr, cost.CPUErr)
		return 1
	}
	fmt.Printf(`{"bytes": %d, "seconds": %f, "cpuSeconds": %f}`+"\n", total, cost.Wall.Seconds(), cost.CPU.Seconds())
	return 0
}

// relayDial connects to the sink: plain TCP, or with c.CAFile through
// the offloader's HTTPS connection (blob.BodyWrites), handshake included.
func relayDial(d *net.Dialer, c relayConfig) (net.Conn, error) {
	if c.CAFile == "" {
		return d.Dial("tcp", c.Sink)
	}
	cfg, err := tlsfiles.Files{CAFile: c.CAFile}.Config()
	if err != nil {
		return nil, err
	}
	t := &http.Transport{DialContext: d.DialContext, TLSClientConfig: cfg}
	blob.BodyWrites(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return t.DialTLSContext(ctx, "tcp", c.Sink)
}
