package upload

import (
	"bytes"
	"context"
	"math/rand/v2"
	"testing"

	"github.com/tierkeeper/tierkeeper/offloader/blob/fs"
	"github.com/tierkeeper/tierkeeper/offloader/format"
)

// fsStore is the real fs provider in a temporary directory, for tests that
// need a working store and no fault injection.
func fsStore(t *testing.T) *fs.Store {
	t.Helper()
	store, err := fs.New(fs.Config{Dir: t.TempDir(), NoSync: true}, fs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return store
}

// TestUploadFSProvider runs the pipeline, Verify and the reader against the
// real fs provider (no server needed): metadata, ranged reads and the 5 MiB
// part minimum as a real store implements them.
func TestUploadFSProvider(t *testing.T) {
	store := fsStore(t)
	ctx := context.Background()
	for _, l := range []*ledger{
		newLedger(21, 300, func(r *rand.Rand) int { return r.IntN(64 << 10) }), // multi-block
		newLedger(22, 3, func(r *rand.Rand) int { return 1 + r.IntN(100) }),    // single PUT
	} {
		u := mustNew(t, store, &Options{MaxBlockSize: 5 * mib})
		req := l.request()
		res, err := u.Upload(ctx, req, l.src())
		if err != nil {
			t.Fatal(err)
		}
		if err := Verify(ctx, store, res, &VerifyOptions{BlockHeaders: true}); err != nil {
			t.Fatal(err)
		}
		r, err := format.Open(ctx, store, req.UUID, l.id, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := r.ReadEntries(ctx, 0, r.LastEntryID())
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		for i := range l.payloads {
			if !bytes.Equal(got[i], l.payloads[i]) {
				t.Fatalf("ledger %d entry %d differs", l.id, i)
			}
		}
		t.Logf("ledger %d: %d bytes in %d blocks, multipart %v", l.id, res.DataObjectLength, res.Blocks, res.Multipart)
	}
}
