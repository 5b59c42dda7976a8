// Package s3test points the s3 blob store at a test S3 server
// (testenv.StartS3): the one store configuration the tests and benchmarks
// of other packages share.
package s3test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/tierkeeper/tierkeeper/offloader/blob"
	"github.com/tierkeeper/tierkeeper/offloader/blob/s3"
	"github.com/tierkeeper/tierkeeper/test/testenv"
)

// Config is s3.DefaultConfig pointed at bucket on srv: its endpoint with
// path addressing, its region and its root keys (static credentials).
func Config(srv *testenv.S3, bucket string) s3.Config {
	return Static(bucket, srv.Region, srv.Endpoint, srv.AccessKey, srv.SecretKey)
}

// Static is Config from the server's figures themselves, for a benchmark's
// child process that is handed them rather than the *testenv.S3.
func Static(bucket, region, endpoint, accessKey, secretKey string) s3.Config {
	cfg := s3.DefaultConfig()
	cfg.Bucket, cfg.Region, cfg.Endpoint, cfg.Addressing = bucket, region, endpoint, "path"
	cfg.Credentials.Source = s3.SourceStatic
	cfg.Credentials.AccessKeyID, cfg.Credentials.SecretAccessKey = accessKey, blob.Secret(secretKey)
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

// StoreFile writes the store configuration file (package blob/client's
// format: the s3 provider with Config's settings) for bucket on srv into a
// temporary directory of t and returns its path; mode 0600, it holds the
// keys. Commands under test take it as --store.
func StoreFile(t testing.TB, srv *testenv.S3, bucket string) string {
	t.Helper()
	cfg := map[string]any{"type": "s3", "config": map[string]any{
		"bucket": bucket, "region": srv.Region, "endpoint": srv.Endpoint, "addressing": "path",
		"credentials": map[string]any{"source": "static", "access_key_id": srv.AccessKey, "secret_access_key": srv.SecretKey},
	}}
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "store.json")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// StoreYAML is the store section of an offloader configuration for bucket
// on srv, its secret key read from the environment variable secretEnv
// (!env), with extra lines (indented two spaces: retry, limits ...)
// appended.
func StoreYAML(srv *testenv.S3, bucket, secretEnv string, extra ...string) string {
	doc := fmt.Sprintf(`store:
  type: s3
  config:
    bucket: %s
    region: %s
    endpoint: %s
    addressing: path
    credentials: {source: static, access_key_id: %s, secret_access_key: !env %s}
`, bucket, srv.Region, srv.Endpoint, srv.AccessKey, secretEnv)
	for _, e := range extra {
		doc += "  " + e + "\n"
	}
	return doc
}
