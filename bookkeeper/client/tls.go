package client

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"time"

	"github.com/tierkeeper/tierkeeper/bookkeeper/wire"
	"github.com/tierkeeper/tierkeeper/internal/bkproto"
	"github.com/tierkeeper/tierkeeper/internal/tlsfiles"
)

// startTLS upgrades nc as BookKeeper's PerChannelBookieClient does: a v3
// START_TLS request (txnId 0, before any other request), the bookie's
// plain-text answer, then the TLS handshake, all bounded by ctx. The bookie
// starts its TLS handler before answering, so nothing but the handshake
// follows the answer. On failure nc is closed.
func startTLS(ctx context.Context, nc net.Conn, addr string, cfg *tls.Config, maxFrame int) (net.Conn, error) {
	if dl, ok := ctx.Deadline(); ok {
		_ = nc.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { _ = nc.SetDeadline(time.Now()) })
	defer stop()
	fail := func(format string, a ...any) (net.Conn, error) {
		nc.Close()
		err := fmt.Errorf(format, a...)
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w: %w (waited %s)", ErrTLS, err, "the connect timeout")
		}
		return nil, fmt.Errorf("%w: %w", ErrTLS, err)
	}
	if _, err := nc.Write(wire.AppendStartTLSRequest(nil, 0)); err != nil {
		return fail("send START_TLS: %w", err)
	}
	// Byte by byte: the bookie's handshake bytes after the answer must
	// stay in the socket for the TLS client.
	frame, err := wire.ReadFrame(oneByteReader{nc}, maxFrame, nil)
	if err != nil {
		return fail("no answer to START_TLS: %w", err)
	}
	resp, err := wire.DecodeResponse(frame)
	if err != nil {
		return fail("answer to START_TLS: %w", err)
	}
	if resp.Operation != wire.OpStartTLS {
		return fail("bookie answered operation %d to START_TLS", resp.Operation)
	}
	if resp.Status != bkproto.StatusCode_EOK {
		hint := ""
		if resp.Status == bkproto.StatusCode_EBADREQ {
			hint = " (the bookie has no TLS configured: tlsProviderFactoryClass unset)"
		}
		return fail("bookie refused START_TLS with %v%s", resp.Status, hint)
	}
	tc := tls.Client(nc, tlsfiles.ForAddr(cfg, addr))
	if err := tc.HandshakeContext(ctx); err != nil {
		if why := tlsfiles.Explain(err, cfg); why != "" {
			return fail("TLS handshake: %w (%s)", err, why)
		}
		return fail("TLS handshake: %w", err)
	}
	_ = nc.SetDeadline(time.Time{})
	return tc, nil
}

// oneByteReader reads one byte at a time, so that nothing past the frame
// asked for is read.
type oneByteReader struct{ c net.Conn }

func (r oneByteReader) Read(p []byte) (int, error) {
	if len(p) > 1 {
		p = p[:1]
	}
	return r.c.Read(p)
}
