package cos

import (
	"testing"

	"github.com/tierkeeper/tierkeeper/offloader/blob"
	"github.com/tierkeeper/tierkeeper/offloader/blob/blobtest"
	"github.com/tierkeeper/tierkeeper/test/cosfake"
)

func fakeConfig(f *cosfake.Fake, bucket string) Config {
	return Config{
		Bucket: bucket, Region: f.Region, Endpoint: f.BucketURL(bucket),
		Credentials: Credentials{Source: SourceStatic, SecretID: f.SecretID, SecretKey: blob.Secret(f.SecretKey)},
		Retry:       Retry{MaxAttempts: 3, InitialBackoff: blob.Duration(1e6), MaxBackoff: blob.Duration(10e6)},
	}
}

func newFakeStore(t *testing.T, f *cosfake.Fake, opts Options) *Store {
	t.Helper()
	if opts.DialContext == nil && opts.Transport == nil {
		opts.DialContext = f.DialContext
	}
	s, err := New(fakeConfig(f, f.NewBucket(t)), opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestAcceptance(t *testing.T) {
	f := cosfake.Start(t)
	blobtest.AcceptanceTest(t, newFakeStore(t, f, Options{ListPageSize: 3}))
}
