package cosfake

// AWS-signed requests against the fake: aws-sdk-go-v2 (an independent
// SigV4 signer) in virtual-host mode through the fake as an HTTP proxy
// (absolute-form requests, as a JVM with -Dhttp.proxyHost sends them), and
// hand-made SigV2 requests checked against AWS's documented example.

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
)

// awsClient is an S3 client addressing buckets as
// <bucket>.cos.<region>.myqcloud.com:<port>, sent through the fake as a proxy.
func awsClient(t *testing.T, f *Fake, secret string, mutate ...func(*s3.Options)) *s3.Client {
	t.Helper()
	proxy, err := url.Parse(f.URL)
	if err != nil {
		t.Fatal(err)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.Proxy = http.ProxyURL(proxy)
	o := s3.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String("http://cos." + f.Region + ".myqcloud.com:" + strconv.Itoa(f.Port)),
		Credentials:  credentials.NewStaticCredentialsProvider(f.SecretID, secret, ""),
		HTTPClient:   &http.Client{Transport: tr},
		Retryer:      aws.NopRetryer{},
		// Plain payload hashes (no trailing checksums).
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
	}
	for _, m := range mutate {
		m(&o)
	}
	return s3.New(o)
}

func apiCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

func TestSigV4VirtualHostThroughProxy(t *testing.T) {
	f := Start(t)
	bucket := f.NewBucket(t)
	c := awsClient(t, f, f.SecretKey)
	ctx := ctxT(t)
	body := rnd(300000)
	_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: aws.String("dir/obj-1"), Body: bytes.NewReader(body),
		Metadata: map[string]string{"s3managedledgeroffloaderformatversion": "1", "role": "index"}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: &bucket, Key: aws.String("dir/obj-1"), Range: aws.String("bytes=1000-1999")})
	if err != nil {
		t.Fatal(err)
	}
	part, _ := io.ReadAll(got.Body)
	got.Body.Close()
	if !bytes.Equal(part, body[1000:2000]) {
		t.Fatalf("ranged GET returned %d bytes, not bytes 1000-1999", len(part))
	}
	// jclouds reads user metadata from x-amz-meta-* (Pulsar's version check).
	if got.Metadata["s3managedledgeroffloaderformatversion"] != "1" || got.Metadata["role"] != "index" {
		t.Fatalf("metadata over the S3 API: %v", got.Metadata)
	}
	// The same object over the COS API has the same metadata as x-cos-meta-*.
	cc := sdkClient(t, f, f.BucketURL(bucket), f.SecretKey)
	resp, err := cc.Object.Head(ctx, "dir/obj-1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Header.Get("x-cos-meta-role") != "index" || resp.Header.Get("x-amz-meta-role") != "" {
		t.Fatalf("COS API HEAD headers: %v", resp.Header)
	}

	// Multipart with query parameters in the signature.
	key := aws.String("mpu")
	mpu, err := c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &bucket, Key: key, Metadata: map[string]string{"role": "data"}})
	if err != nil {
		t.Fatal(err)
	}
	big := rnd(5<<20 + 100)
	var parts []types.CompletedPart
	for i, p := range [][]byte{big[:5<<20], big[5<<20:]} {
		up, err := c.UploadPart(ctx, &s3.UploadPartInput{Bucket: &bucket, Key: key, UploadId: mpu.UploadId, PartNumber: aws.Int32(int32(i + 1)), Body: bytes.NewReader(p)})
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, types.CompletedPart{PartNumber: aws.Int32(int32(i + 1)), ETag: up.ETag})
	}
	if _, err := c.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: &bucket, Key: key, UploadId: mpu.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}}); err != nil {
		t.Fatal(err)
	}
	head, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &bucket, Key: key})
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToInt64(head.ContentLength) != int64(len(big)) || head.Metadata["role"] != "data" {
		t.Fatalf("HEAD after multipart: %d bytes, metadata %v", aws.ToInt64(head.ContentLength), head.Metadata)
	}
	if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &bucket, Key: key}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &bucket, Key: key}); err == nil {
		t.Fatal("deleted object still there")
	}

	// Wrong secret, unknown key id, skewed clock: refused, nothing written.
	bad := awsClient(t, f, f.SecretKey+"x")
	if _, err := bad.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: aws.String("nope"), Body: strings.NewReader("x")}); apiCode(err) != "SignatureDoesNotMatch" {
		t.Fatalf("wrong secret: %v", err)
	}
	unknown := awsClient(t, f, f.SecretKey, func(o *s3.Options) {
		o.Credentials = credentials.NewStaticCredentialsProvider("AKIDnobody", f.SecretKey, "")
	})
	if _, err := unknown.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &bucket, Key: aws.String("dir/obj-1")}); err == nil {
		t.Fatal("unknown access key accepted")
	}
	f.SetClockSkew(time.Hour)
	_, err = c.GetObject(ctx, &s3.GetObjectInput{Bucket: &bucket, Key: aws.String("dir/obj-1")})
	f.SetClockSkew(0)
	if apiCode(err) != "RequestTimeTooSkewed" {
		t.Fatalf("skewed clock: %v", err)
	}
	if _, err := c.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &bucket, Key: aws.String("nope")}); err == nil {
		t.Fatal("object of a refused PUT exists")
	}
}

// A body that does not match its signed SHA-256 is refused.
func TestSigV4PayloadHashChecked(t *testing.T) {
	f := Start(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPut && r.Body != nil {
				b, _ := io.ReadAll(r.Body)
				if len(b) > 0 {
					b[0] ^= 1 // corrupted in transit, after signing
				}
				r.Body = io.NopCloser(bytes.NewReader(b))
			}
			h.ServeHTTP(w, r)
		})
	})
	bucket := f.NewBucket(t)
	c := awsClient(t, f, f.SecretKey)
	ctx := ctxT(t)
	_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: &bucket, Key: aws.String("k"), Body: bytes.NewReader(rnd(1000))})
	if apiCode(err) != "XAmzContentSHA256Mismatch" {
		t.Fatalf("corrupted body: %v", err)
	}
}

// signV2 signs a request as AWS Signature V2 over virtual-host bucket.
func signV2(r *http.Request, bucket, id, secret string) {
	var amz []string
	for k, vs := range r.Header {
		if lk := strings.ToLower(k); strings.HasPrefix(lk, "x-amz-") {
			amz = append(amz, lk+":"+strings.Join(vs, ","))
		}
	}
	sts := r.Method + "\n" + r.Header.Get("Content-MD5") + "\n" + r.Header.Get("Content-Type") + "\n" + r.Header.Get("Date") + "\n"
	for _, h := range amz {
		sts += h + "\n"
	}
	sts += "/" + bucket + r.URL.EscapedPath()
	if r.URL.RawQuery != "" {
		sts += "?" + r.URL.RawQuery
	}
	m := hmac.New(sha1.New, []byte(secret))
	m.Write([]byte(sts))
	r.Header.Set("Authorization", "AWS "+id+":"+base64.StdEncoding.EncodeToString(m.Sum(nil)))
}

// AWS's documented SigV2 example (Object GET, "Signing and authenticating
// REST requests"), recomputed by verifySigV2.
func TestSigV2DocumentedExample(t *testing.T) {
	r, _ := http.NewRequest(http.MethodGet, "http://awsexamplebucket1.s3.us-west-1.amazonaws.com/photos/puppy.jpg", nil)
	r.Header.Set("Date", "Tue, 27 Mar 2007 19:36:42 +0000")
	r.Header.Set("Authorization", "AWS AKIAIOSFODNN7EXAMPLE:qgk2+6Sv9/oM7G3qLEjTH1a1l1g=")
	now, _ := time.Parse(time.RFC1123Z, "Tue, 27 Mar 2007 19:40:00 +0000")
	secrets := map[string]string{"AKIAIOSFODNN7EXAMPLE": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"}
	if err := verifySigV2(r, "awsexamplebucket1", secrets, now, 15*time.Minute); err != nil {
		t.Fatalf("documented example: %v", err)
	}
	r.Header.Set("Authorization", "AWS AKIAIOSFODNN7EXAMPLE:qgk2+6Sv9/oM7G3qLEjTH1a1l1h=")
	if err := verifySigV2(r, "awsexamplebucket1", secrets, now, 15*time.Minute); err == nil {
		t.Fatal("altered signature accepted")
	}
}

func TestSigV2ThroughProxy(t *testing.T) {
	f := Start(t)
	bucket := f.NewBucket(t)
	ctx := ctxT(t)
	proxy, _ := url.Parse(f.URL)
	hc := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(proxy)}, Timeout: 30 * time.Second}
	base := "http://" + bucket + ".cos." + f.Region + ".myqcloud.com:" + strconv.Itoa(f.Port)
	do := func(method, path string, body []byte, hdr map[string]string, secret string) *http.Response {
		t.Helper()
		r, err := http.NewRequestWithContext(ctx, method, base+path, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		r.Header.Set("Date", time.Now().UTC().Format(http.TimeFormat))
		for k, v := range hdr {
			r.Header.Set(k, v)
		}
		signV2(r, bucket, f.SecretID, secret)
		resp, err := hc.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	body := rnd(4096)
	if resp := do(http.MethodPut, "/ledger-1-index", body, map[string]string{"Content-Type": "application/octet-stream",
		"x-amz-meta-s3managedledgeroffloaderformatversion": "1"}, f.SecretKey); resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("SigV2 PUT: %d %s", resp.StatusCode, b)
	}
	resp := do(http.MethodGet, "/ledger-1-index", nil, map[string]string{"Range": "bytes=0-99"}, f.SecretKey)
	got, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 206 || !bytes.Equal(got, body[:100]) || resp.Header.Get("x-amz-meta-s3managedledgeroffloaderformatversion") != "1" {
		t.Fatalf("SigV2 ranged GET: %d, %d bytes, headers %v", resp.StatusCode, len(got), resp.Header)
	}
	if resp := do(http.MethodGet, "/ledger-1-index", nil, nil, "wrong"); resp.StatusCode != 403 {
		t.Fatalf("SigV2 with a wrong secret: %d", resp.StatusCode)
	}
	// Subresources are part of the signed resource.
	resp = do(http.MethodPost, "/mpu?uploads", nil, nil, f.SecretKey)
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("SigV2 initiate: %d %s", resp.StatusCode, b)
	}
}
