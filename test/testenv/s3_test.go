package testenv

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

func TestBucketName(t *testing.T) {
	for _, tc := range []string{"TestX", "Test/Sub_test/ÜBER long name " + strings.Repeat("x", 80), "__"} {
		n := BucketName(tc, "-12-abcdef")
		if len(n) < 3 || len(n) > 63 || strings.Contains(n, "--") || strings.ToLower(n) != n {
			t.Errorf("BucketName(%q) = %q: not a valid bucket name", tc, n)
		}
	}
}

func TestStartS3PathAndVirtualHost(t *testing.T) {
	s := StartS3(t)
	bucket := s.NewBucket(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := s.Client().PutObject(ctx, &s3.PutObjectInput{
		Bucket: aws.String(bucket), Key: aws.String("a/b"), Body: strings.NewReader("hello"),
	}); err != nil {
		t.Fatalf("put: %v", err)
	}
	// Virtual-host addressing through the pinned dialer.
	vc := s3.New(s3.Options{
		Region:       s.Region,
		BaseEndpoint: aws.String(s.VirtualEndpoint),
		Credentials:  credentials.NewStaticCredentialsProvider(s.AccessKey, s.SecretKey, ""),
		HTTPClient:   &http.Client{Transport: &http.Transport{DialContext: s.DialContext}},
	})
	out, err := vc.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String("a/b")})
	if err != nil {
		t.Fatalf("virtual-host get: %v", err)
	}
	b, _ := io.ReadAll(out.Body)
	out.Body.Close()
	if string(b) != "hello" {
		t.Fatalf("got %q", b)
	}
	if s2 := StartS3(t); s2 != s {
		t.Fatal("StartS3 did not share the server")
	}
	if b2 := s.NewBucket(t); b2 == bucket {
		t.Fatal("NewBucket reused a name")
	}
}

func TestStartPrivateS3Stop(t *testing.T) {
	s := StartPrivateS3(t)
	bucket := s.NewBucket(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := s.Client().HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatalf("head bucket: %v", err)
	}
	if shared := StartS3(t); shared.Addr == s.Addr {
		t.Fatal("private server is the shared one")
	}
	s.Stop()
	if _, err := s.Client().HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(bucket)}); err == nil {
		t.Fatal("stopped server still answers")
	}
}
