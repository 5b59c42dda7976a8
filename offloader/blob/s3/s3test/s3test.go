// Package s3test points the s3 blob store at a test S3 server
// (testenv.StartS3): the one store configuration the tests and benchmarks
// of other packages share.
package s3test

import (
	"context"
	"testing"

	"github.com/tierkeeper/tierkeeper/offloader/blob"
	"github.com/tierkeeper/tierkeeper/offloader/blob/s3"
	"github.com/tierkeeper/tierkeeper/test/testenv"
)

// Config is s3.DefaultConfig pointed at bucket on srv: its endpoint with
// path addressing, its region and its root keys (static credentials).
func Config(srv *testenv.S3, bucket string) s3.Config {
	cfg := s3.DefaultConfig()
	cfg.Bucket, cfg.Region, cfg.Endpoint, cfg.Addressing = bucket, srv.Region, srv.Endpoint, "path"
	cfg.Credentials.Source = s3.SourceStatic
	cfg.Credentials.AccessKeyID, cfg.Credentials.SecretAccessKey = srv.AccessKey, blob.Secret(srv.SecretKey)
	return cfg
}

// Open opens a store with cfg, closed when t ends; t fails if it cannot.
func Open(t testing.TB, cfg s3.Config) *s3.Store {
	t.Helper()
	st, err := s3.New(context.Background(), cfg, s3.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}
