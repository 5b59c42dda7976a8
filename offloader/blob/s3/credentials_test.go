package s3

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/tierkeeper/tierkeeper/offloader/blob"
	"github.com/tierkeeper/tierkeeper/offloader/blob/internal/faults"
	"github.com/tierkeeper/tierkeeper/test/testenv"
)

func hermeticAWSEnv(t *testing.T) {
	for _, k := range []string{"AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
		"AWS_SESSION_TOKEN", "AWS_ROLE_ARN", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3"} {
		t.Setenv(k, "")
	}
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
}

func put(t *testing.T, s *Store) error {
	_, err := s.Put(context.Background(), "k", strings.NewReader("x"), 1, blob.PutOptions{})
	return err
}

func TestCredentialsFromSharedProfile(t *testing.T) {
	hermeticAWSEnv(t)
	srv := testenv.StartS3(t)
	dir := t.TempDir()
	creds := filepath.Join(dir, "credentials")
	conf := filepath.Join(dir, "config")
	os.WriteFile(creds, []byte(fmt.Sprintf("[default]\naws_access_key_id = wrong\naws_secret_access_key = wrong\n\n[offload]\naws_access_key_id = %s\naws_secret_access_key = %s\n", srv.AccessKey, srv.SecretKey)), 0o600)
	os.WriteFile(conf, []byte("[profile offload]\nregion = "+srv.Region+"\n"), 0o600)
	cfg := Config{Bucket: srv.NewBucket(t), Endpoint: srv.Endpoint, Addressing: "path", // region from the profile
		Credentials: Credentials{Source: SourceProfile, Profile: "offload", SharedCredentialsFile: creds, SharedConfigFile: conf}}
	if err := put(t, newTestStore(t, cfg, Options{})); err != nil {
		t.Fatalf("profile credentials: %v", err)
	}
	cfg.Credentials.Profile = "missing"
	if _, err := New(context.Background(), cfg, Options{}); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("missing profile: %v", err)
	}
}

func TestCredentialsFromEnv(t *testing.T) {
	hermeticAWSEnv(t)
	srv := testenv.StartS3(t)
	cfg := Config{Bucket: srv.NewBucket(t), Region: srv.Region, Endpoint: srv.Endpoint, Addressing: "path", Credentials: Credentials{Source: SourceEnv}}
	env := map[string]string{"AWS_ACCESS_KEY_ID": srv.AccessKey, "AWS_SECRET_ACCESS_KEY": srv.SecretKey}
	if err := put(t, newTestStore(t, cfg, Options{Getenv: func(k string) string { return env[k] }})); err != nil {
		t.Fatal(err)
	}
	_, err := New(context.Background(), cfg, Options{Getenv: func(string) string { return "" }})
	if err == nil || !strings.Contains(err.Error(), "AWS_ACCESS_KEY_ID") {
		t.Errorf("empty env: %v", err)
	}
	// The default chain reads the same variables.
	t.Setenv("AWS_ACCESS_KEY_ID", srv.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", srv.SecretKey)
	cfg.Credentials.Source = SourceDefault
	if err := put(t, newTestStore(t, cfg, Options{})); err != nil {
		t.Errorf("default chain: %v", err)
	}
}

func TestNoRegionIsAClearError(t *testing.T) {
	hermeticAWSEnv(t)
	_, err := New(context.Background(), Config{Bucket: "b", Credentials: Credentials{Source: SourceStatic, AccessKeyID: "a", SecretAccessKey: "s"}}, Options{})
	if err == nil || !strings.Contains(err.Error(), "region") {
		t.Errorf("no region: %v", err)
	}
}

// Web identity (EKS IRSA): the token file is exchanged at STS for
// temporary keys, which sign the S3 requests. No STS can run here, so a
// stub answers AssumeRoleWithWebIdentity (checking what the SDK sends) with
// the S3 server's keys plus a session token; versitygw refuses session
// tokens (InvalidToken), so the test checks the signed S3 request instead.
func TestCredentialsWebIdentity(t *testing.T) {
	hermeticAWSEnv(t)
	srv := testenv.StartS3(t)
	tokenFile := filepath.Join(t.TempDir(), "token")
	os.WriteFile(tokenFile, []byte("eyJ-web-identity-token"), 0o600)
	var mu sync.Mutex
	var stsCalls []string
	sts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		mu.Lock()
		stsCalls = append(stsCalls, r.Form.Encode())
		mu.Unlock()
		if r.Form.Get("Action") != "AssumeRoleWithWebIdentity" || r.Form.Get("WebIdentityToken") != "eyJ-web-identity-token" ||
			r.Form.Get("RoleArn") != "arn:aws:iam::1:role/offloader" || r.Form.Get("RoleSessionName") != "tierkeeper" {
			w.WriteHeader(400)
			fmt.Fprint(w, `<ErrorResponse><Error><Code>InvalidParameterValue</Code><Message>unexpected request</Message></Error></ErrorResponse>`)
			return
		}
		fmt.Fprintf(w, `<AssumeRoleWithWebIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><AssumeRoleWithWebIdentityResult>
<Credentials><AccessKeyId>%s</AccessKeyId><SecretAccessKey>%s</SecretAccessKey><SessionToken>sts-session-token</SessionToken><Expiration>2099-01-01T00:00:00Z</Expiration></Credentials>
<AssumedRoleUser><Arn>arn:aws:sts::1:assumed-role/offloader/tierkeeper</Arn><AssumedRoleId>AROA:tierkeeper</AssumedRoleId></AssumedRoleUser>
</AssumeRoleWithWebIdentityResult><ResponseMetadata><RequestId>1</RequestId></ResponseMetadata></AssumeRoleWithWebIdentityResponse>`, srv.AccessKey, srv.SecretKey)
	}))
	defer sts.Close()
	p, _ := faults.NewReverse(srv.Endpoint)
	s3ts := httptest.NewServer(p)
	defer s3ts.Close()
	env := map[string]string{"AWS_ROLE_ARN": "arn:aws:iam::1:role/offloader", "AWS_WEB_IDENTITY_TOKEN_FILE": tokenFile}
	cfg := Config{Bucket: srv.NewBucket(t), Region: srv.Region, Endpoint: s3ts.URL, Addressing: "path",
		Credentials: Credentials{Source: SourceWebIdentity, STSEndpoint: sts.URL}, Retry: Retry{MaxAttempts: 1}}
	s := newTestStore(t, cfg, Options{Getenv: func(k string) string { return env[k] }})
	err := put(t, s)
	if err == nil || !strings.Contains(err.Error(), "InvalidToken") {
		t.Errorf("Put with STS credentials against versitygw: %v (want versitygw's InvalidToken)", err)
	}
	if len(stsCalls) != 1 {
		t.Fatalf("STS calls: %v", stsCalls)
	}
	reqs := p.Requests()
	if len(reqs) == 0 {
		t.Fatal("no S3 request")
	}
	r := reqs[0]
	if r.Header.Get("X-Amz-Security-Token") != "sts-session-token" || !strings.Contains(r.Header.Get("Authorization"), "Credential="+srv.AccessKey+"/") {
		t.Errorf("S3 request not signed with the STS credentials: token %q auth %q", r.Header.Get("X-Amz-Security-Token"), r.Header.Get("Authorization"))
	}
	// Without a role ARN anywhere: a clear error.
	_, err = New(context.Background(), cfg, Options{Getenv: func(string) string { return "" }})
	if err == nil || !strings.Contains(err.Error(), "role_arn") {
		t.Errorf("web_identity without role: %v", err)
	}
}
