package memblob_test

import (
	"testing"

	"github.com/tierkeeper/tierkeeper/offloader/blob/blobtest"
	"github.com/tierkeeper/tierkeeper/offloader/blob/memblob"
)

// TestAcceptance runs the providers' contract suite on the fake, so the
// format and upload tests that use it see a store that behaves like fs, S3
// and COS (ranges, refusals, multipart rules), faults aside.
func TestAcceptance(t *testing.T) {
	s := memblob.New()
	s.MinPartSize = blobtest.PartSize
	blobtest.AcceptanceTest(t, s)
}
