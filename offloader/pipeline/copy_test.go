package pipeline

import (
	"testing"

	"github.com/tierkeeper/tierkeeper/offloader/blob"
	"github.com/tierkeeper/tierkeeper/offloader/blob/fs"
	"github.com/tierkeeper/tierkeeper/offloader/blob/memblob"
)

// The copy's write tracker answers for its store whether part CRC-32Cs are
// used, so the encoder computes none for a store that ignores them.
func TestWriteTrackerUsesPartCRC32C(t *testing.T) {
	fst, err := fs.New(fs.Config{Dir: t.TempDir(), NoSync: true}, fs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer fst.Close()
	for _, tc := range []struct {
		s    blob.Store
		want bool
	}{{fst, false}, {memblob.New(), true}} {
		if got := blob.UsesPartCRC32C(&writeTracker{Writer: tc.s}); got != tc.want {
			t.Errorf("%s: UsesPartCRC32C through the write tracker = %v, want %v", tc.s.Name(), got, tc.want)
		}
	}
}
