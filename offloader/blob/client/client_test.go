package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/yaml"

	"github.com/tierkeeper/tierkeeper/internal/allocs"

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
		// The port is blamed, not the scheme, and the password
		// is not printed (checked below for every case).
		"type: s3\nconfig: {bucket: b, endpoint: 'http://u:TOPSECRET@h:bad'}":                                               `port "bad" is not a number`,
		"type: cos\nconfig: {bucket: b-125, region: ap-guangzhou, endpoint: 'ftp://u:TOPSECRET@h:1'}":                       `scheme must be http or https, got "ftp"`,
		"type: cos\nconfig: {bucket: nobucketappid, region: ap-guangzhou}":                                                  "config key bucket",
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

// No rendering of a parsed config prints a secret (the
// provider section used to be kept as raw JSON, so json.Marshal, slog's JSON
// handler and %s printed secret_access_key).
func TestConfigNeverPrintsSecrets(t *testing.T) {
	const secret, token = "CANARYsecret0123456789", "CANARYtoken9876543210"
	docs := map[string]string{
		"s3":  "type: s3\nconfig: {bucket: b, region: r, credentials: {source: static, access_key_id: AKIDPUBLIC, secret_access_key: " + secret + ", session_token: " + token + "}}\nlimits: {requests_per_second: 10}",
		"cos": "type: cos\nconfig: {bucket: b-125, region: ap-guangzhou, credentials: {source: static, secret_id: IDPUBLIC, secret_key: " + secret + ", session_token: " + token + "}}",
	}
	for name, doc := range docs {
		c, err := Parse([]byte(doc))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		p, _ := c.Provider()
		var out []string
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%d"} {
			out = append(out, fmt.Sprintf(verb, c), fmt.Sprintf(verb, &c), fmt.Sprintf(verb, p))
			out = append(out, fmt.Sprintf(verb, struct{ Store Config }{c}))
		}
		out = append(out, c.String(), fmt.Errorf("open store %v: %w", c, errors.New("x")).Error())
		js, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(js))
		js, _ = json.Marshal(struct{ Store *Config }{&c})
		out = append(out, string(js))
		y, err := yaml.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(y))
		var logs bytes.Buffer
		for _, h := range []slog.Handler{slog.NewTextHandler(&logs, nil), slog.NewJSONHandler(&logs, nil)} {
			l := slog.New(h)
			l.Info("store", "cfg", c, "ptr", &c, "provider", p)
			l.Info("store", slog.Any("nested", struct{ C Config }{c}))
		}
		out = append(out, logs.String())
		for _, o := range out {
			if strings.Contains(o, "CANARY") {
				t.Fatalf("%s: a rendering leaks a secret: %s", name, o)
			}
		}
		// The redacted forms still say what the config is.
		if !strings.Contains(string(js), `"secret`) || !strings.Contains(string(js), "redacted") || !strings.Contains(logs.String(), "PUBLIC") {
			t.Errorf("%s: redacted rendering lost the config: %s / %s", name, js, logs.String())
		}
	}
	// Parse errors on documents holding secrets do not print them either.
	for _, bad := range []string{
		"type: s3\nconfig: {bucket: b, credentials: {source: env, secret_access_key: " + secret + "}}",
		"type: s3\nconfig: {bucket: b, credentials: {source: static, secret_access_key: [" + secret + "]}}",
		"type: s3\nconfig: {bucket: b, endpoint: 'http://u:" + secret + "@h:bad', credentials: {source: static, access_key_id: a, secret_access_key: " + secret + "}}",
		"type: cos\nconfig: {bucket: b-125, region: ap-guangzhou, endpoint: 'ftp://u:" + secret + "@h:1'}",
		"type: s3\nconfig: {bucket: b, credentials: {source: static, secret_access_key: " + secret + "\n",
		"type: s3\ntype: s3\nconfig: {bucket: b, credentials: {source: static, secret_access_key: " + secret + "}}",
	} {
		_, err := Parse([]byte(bad))
		if err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		} else if strings.Contains(err.Error(), "CANARY") {
			t.Errorf("Parse error leaks the secret: %v", err)
		}
	}
}

// Parse decodes what it validates: the typed section round trips through
// Provider and the strictness reaches every level.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"type: fs\nconfig: {dir: /x}",
		"type: s3\nconfig: {bucket: b, region: r, endpoint: 'http://127.0.0.1:1', addressing: path}",
		"type: cos\nconfig: {bucket: b-125, region: ap-guangzhou, credentials: {source: static, secret_id: i, secret_key: k}}",
		`{"type":"s3","config":{"bucket":"b"},"limits":{"requests_per_second":5}}`,
		"type: s3\nconfig: null", "{}", "[]", "type: [1]", "&a [*a]",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var c Config
		n := allocs.Bytes(1, func() { c, _ = Parse(data) })
		if bound := 256<<10 + 64*uint64(len(data)); n > bound {
			t.Fatalf("Parse of %d bytes allocated %d bytes, bound %d", len(data), n, bound)
		}
		c, err := Parse(data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "blob config: ") {
				t.Fatalf("error without the blob config prefix: %v", err)
			}
			return
		}
		if c.Validate() != nil {
			t.Fatal("Parse returned a config that does not validate")
		}
		if _, err := c.Provider(); err != nil {
			t.Fatalf("Provider of a parsed config: %v", err)
		}
		js, err := json.Marshal(c)
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		var back Config
		if err := back.UnmarshalJSON(js); err != nil {
			t.Fatalf("the marshalled form %s does not decode: %v", js, err)
		}
		if back.Type != c.Type || back.Limits != c.Limits {
			t.Fatalf("round trip changed type or limits: %s", js)
		}
	})
}
