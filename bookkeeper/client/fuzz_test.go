package client

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/tierkeeper/tierkeeper/bookkeeper/bookietest"
	"github.com/tierkeeper/tierkeeper/bookkeeper/digest"
)

// corruption turns fuzz bytes into edits of the response frames one
// bookie sends: each 4-byte group (response number, op, position, value)
// edits the frame of that response on the byte stream — flip, insert or
// delete a byte, or cut the frame there and close the connection. The
// length prefix, the protobuf, the entry header and the digest are all in
// reach.
type corruption struct {
	mu    sync.Mutex
	n     int
	edits map[int][][3]byte
}

func newCorruption(plan []byte) *corruption {
	c := &corruption{edits: map[int][][3]byte{}}
	for i := 0; i+4 <= len(plan) && i < 64; i += 4 {
		k := int(plan[i] % 24)
		c.edits[k] = append(c.edits[k], [3]byte{plan[i+1], plan[i+2], plan[i+3]})
	}
	return c
}

func (c *corruption) action(bookietest.Request) bookietest.Action {
	c.mu.Lock()
	k := c.n
	c.n++
	edits := c.edits[k]
	c.mu.Unlock()
	if len(edits) == 0 {
		return bookietest.Action{}
	}
	return bookietest.Action{Mutate: func(frame []byte) ([]byte, bool) {
		out := bytes.Clone(frame)
		for _, e := range edits {
			pos := int(e[1]) * len(out) / 256
			switch e[0] % 5 {
			case 0, 1: // flip bits (the most likely fault)
				if len(out) > 0 {
					out[pos] ^= e[2] | 1
				}
			case 2: // insert a byte
				out = append(out[:pos], append([]byte{e[2]}, out[pos:]...)...)
			case 3: // delete a byte
				if len(out) > 0 {
					out = append(out[:pos], out[pos+1:]...)
				}
			case 4: // cut here and close
				return out[:pos], true
			}
		}
		return out, false
	}}
}

// FuzzReadStream reads a whole ledger (frame → response → digest → entry
// header → cumulative lengths) while one bookie corrupts its responses as
// the fuzzer says. With an honest second replica the read must complete
// with every payload as written; with both replicas corrupting, it may
// fail, but whatever it delivers must be exactly what was written. It never
// hangs (each unanswerable read times out) and never panics.
func FuzzReadStream(f *testing.F) {
	f.Add(uint64(1), []byte{0, 0, 10, 0x40})                                 // flip a byte in the length prefix
	f.Add(uint64(2), []byte{1, 0, 200, 0x01, 2, 2, 100, 7, 3, 3, 250, 0})    // payload flip, insert, delete
	f.Add(uint64(3), []byte{0, 4, 128, 0, 5, 4, 3, 0})                       // cut mid-frame, cut in the prefix
	f.Add(uint64(4), []byte{0, 0, 60, 0x10, 0, 0, 61, 0x10, 0, 0, 62, 0x10}) // header bytes (txn, ids)
	f.Add(uint64(5), []byte{})
	// An unanswerable read costs a timeout. Fuzzing wants many executions;
	// the seed runs of `go test` on a loaded machine want no honest replica
	// mistaken for a slow one.
	readTimeout := 2 * time.Second
	if fl := flag.Lookup("test.fuzz"); fl != nil && fl.Value.String() != "" {
		readTimeout = 400 * time.Millisecond
	}
	f.Fuzz(func(t *testing.T, seed uint64, plan []byte) {
		cl := bookietest.StartCluster(t, 2)
		r := rand.New(rand.NewPCG(seed, 7))
		data := make([][]byte, 6+r.IntN(6))
		for i := range data {
			data[i] = make([]byte, r.IntN(600))
			for j := range data[i] {
				data[i][j] = byte(r.Uint32())
			}
		}
		md, err := cl.Write(bookietest.Ledger{LedgerID: 77, Ensemble: 2, WriteQuorum: 2, Ack: 2, DigestType: digest.CRC32C}, data)
		if err != nil {
			t.Fatal(err)
		}
		read := func(bothBad bool) (int, error) {
			cl.Bookies["bookie-0"].SetFault(newCorruption(plan).action)
			if bothBad {
				cl.Bookies["bookie-1"].SetFault(newCorruption(append(plan[len(plan)/2:], plan[:len(plan)/2]...)).action)
			} else {
				cl.Bookies["bookie-1"].SetFault(nil)
			}
			c, err := New(Options{Resolver: cl, ReadTimeout: readTimeout, FailurePenalty: time.Nanosecond,
				ReconnectDelay: time.Nanosecond, Window: 4})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			l, err := c.Open(md)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			n := 0
			err = l.ReadRange(ctx, 0, -1, StreamOptions{}, func(e Entry) error {
				if e.EntryID != int64(n) || !bytes.Equal(e.Payload, data[n]) {
					t.Fatalf("delivered entry %d (%d bytes) that is not entry %d as written", e.EntryID, len(e.Payload), n)
				}
				n++
				return nil
			})
			if ctx.Err() != nil {
				t.Fatalf("read still running after 60s (%d entries): %v", n, err)
			}
			return n, err
		}
		if n, err := read(false); err != nil || n != len(data) {
			t.Fatalf("one corrupting replica, one honest: %d of %d entries, %v", n, len(data), err)
		}
		if _, err := read(true); err != nil {
			var re *ReadError
			if !errors.As(err, &re) && !errors.Is(err, ErrLengthMismatch) && !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("both replicas corrupting: unclassified error %v", err)
			}
		}
	})
}
