package client

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tierkeeper/tierkeeper/offloader/blob"
	"github.com/tierkeeper/tierkeeper/offloader/blob/cos"
	"github.com/tierkeeper/tierkeeper/offloader/blob/s3"
	"github.com/tierkeeper/tierkeeper/test/cosfake"
	"github.com/tierkeeper/tierkeeper/test/testenv"
)

// Every example in configs/ parses and validates.
func TestExampleConfigs(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(testenv.RepoRoot(), "configs", "blob-*.yaml"))
	if err != nil || len(files) < 4 {
		t.Fatalf("example configs: %v %v", files, err)
	}
	types := map[string]bool{}
	for _, f := range files {
		c, err := Load(f)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		types[c.Type] = true
	}
	for _, ty := range []string{TypeFS, TypeS3, TypeCOS} {
		if !types[ty] {
			t.Errorf("no example for type %s", ty)
		}
	}
}

func TestParseErrorsNameKeys(t *testing.T) {
	for in, want := range map[string]string{
		"type: s3\nconfig: {bucket: b, region: r, addresing: path}":         `unknown field "addresing"`,
		"type: s3\nconfig: {bucket: b}\nlimts: {}":                          `unknown field "limts"`,
		"type: gcs\nconfig: {bucket: b}":                                    "key type must be fs, s3 or cos",
		"config: {bucket: b}":                                               "key type is required",
		"type: s3":                                                          "key config is required",
		"type: s3\nconfig: {region: r}":                                     "config key bucket is required",
		"type: s3\nconfig: {bucket: b, addressing: sideways}":               "config key addressing",
		"type: s3\nconfig: {bucket: b, credentials: {source: static}}":      "credentials.access_key_id",
		"type: s3\nconfig: {bucket: b, sse: {type: SSE-S3, kms_key_id: k}}": "sse.kms_key_id",
		"type: s3\nconfig: {bucket: b, retry: {max_backoff: 5}}":            "duration",
		"type: s3\nconfig: {bucket: b, endpoint: 'ftp://x'}":                "config key endpoint",
		"type: cos\nconfig: {bucket: nobucketappid, region: ap-guangzhou}":  "config key bucket",
		"type: cos\nconfig: {bucket: b-125, region: ap-guangzhou, endpoint: 'https://cos.ap-guangzhou.myqcloud.com/b-125'}": "virtual-host",
		"type: fs\nconfig: {}": "config key dir is required",
		"type: fs\nconfig: {dir: /x}\nlimits: {requests_per_second: -1}":                                                                          "limits",
		"type: cos\nconfig: {bucket: b-125, region: ap-guangzhou, credentials: {source: static, secret_id: id, secret_key: TOPSECRET, extra: 1}}": `unknown field "extra"`,
	} {
		_, err := Parse([]byte(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v, want an error containing %q", in, err, want)
		}
		if err != nil && strings.Contains(err.Error(), "TOPSECRET") {
			t.Errorf("error leaks the secret: %v", err)
		}
	}
}

func TestDefaultsApplied(t *testing.T) {
	c, err := Parse([]byte(`{"type":"s3","config":{"bucket":"b","region":"r"}}`)) // JSON works too
	if err != nil {
		t.Fatal(err)
	}
	p, _ := c.Provider()
	s := p.(*s3.Config)
	if s.Addressing != "virtual" || s.Retry.MaxAttempts != 5 || s.Credentials.Source != s3.SourceDefault {
		t.Errorf("defaults not applied: %+v", s)
	}
	c, _ = Parse([]byte("type: cos\nconfig: {bucket: b-125, region: ap-guangzhou}"))
	p, _ = c.Provider()
	if cc := p.(*cos.Config); cc.Credentials.Source != cos.SourceEnv || cc.Retry.MaxAttempts != 5 {
		t.Errorf("cos defaults not applied: %+v", cc)
	}
}

func roundTrip(t *testing.T, st blob.Store) {
	t.Helper()
	ctx := context.Background()
	if _, err := st.Put(ctx, "k", strings.NewReader("hello"), 5, blob.PutOptions{Metadata: map[string]string{"Role": "data"}}); err != nil {
		t.Fatal(err)
	}
	rc, a, err := st.Get(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(rc)
	rc.Close()
	if string(b) != "hello" || a.Metadata["role"] != "data" {
		t.Errorf("round trip: %q %v", b, a.Metadata)
	}
	if _, ok := st.(blob.MultipartLister); !ok {
		t.Errorf("%s: MultipartLister lost by the wrapping", st.Name())
	}
}

func TestNewEveryProvider(t *testing.T) {
	ctx := context.Background()
	reg := prometheus.NewRegistry()
	st, err := New(ctx, mustParse(t, "type: fs\nconfig: {dir: '"+t.TempDir()+"'}\nlimits: {upload_bytes_per_second: 1e9}"),
		Options{Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	roundTrip(t, st)
	if mfs, _ := reg.Gather(); len(mfs) == 0 {
		t.Error("no metrics registered")
	}

	srv := testenv.StartS3(t)
	bucket := srv.NewBucket(t)
	env := map[string]string{"AWS_ACCESS_KEY_ID": srv.AccessKey, "AWS_SECRET_ACCESS_KEY": srv.SecretKey}
	st, err = New(ctx, mustParse(t, "type: s3\nconfig: {bucket: "+bucket+", region: us-east-1, endpoint: '"+srv.Endpoint+"', addressing: path, credentials: {source: env}}"),
		Options{Getenv: func(k string) string { return env[k] }})
	if err != nil {
		t.Fatal(err)
	}
	roundTrip(t, st)

	f := cosfake.Start(t)
	cb := f.NewBucket(t)
	cenv := map[string]string{"COS_SECRETID": f.SecretID, "COS_SECRETKEY": f.SecretKey}
	st, err = New(ctx, mustParse(t, "type: cos\nconfig: {bucket: "+cb+", region: "+f.Region+", endpoint: '"+f.BucketURL(cb)+"'}"),
		Options{DialContext: f.DialContext, Getenv: func(k string) string { return cenv[k] }})
	if err != nil {
		t.Fatal(err)
	}
	roundTrip(t, st)

	// A missing environment is a clear error naming the variables.
	_, err = New(ctx, mustParse(t, "type: cos\nconfig: {bucket: b-125, region: ap-guangzhou}"), Options{Getenv: func(string) string { return "" }})
	if err == nil || !strings.Contains(err.Error(), "COS_SECRETID") {
		t.Errorf("missing COS env: %v", err)
	}
}

func mustParse(t *testing.T, s string) Config {
	t.Helper()
	c, err := Parse([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return c
}
