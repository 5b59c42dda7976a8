package cosfake

// The real cos-go-sdk-v5 v0.7.70 against the fake: its own helpers
// (Upload with parallel parts and CheckPoint listing, Download, presigned
// GET, chunked PUT) and the failures COS gives (path-style addressing, bad
// signatures, expired or future signatures, Content-MD5 mismatch).

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	cos "github.com/tencentyun/cos-go-sdk-v5"
)

func sdkClient(t *testing.T, f *Fake, bucketURL, secretKey string) *cos.Client {
	t.Helper()
	u, err := url.Parse(bucketURL)
	if err != nil {
		t.Fatal(err)
	}
	c := cos.NewClient(&cos.BaseURL{BucketURL: u}, &http.Client{Transport: &cos.AuthorizationTransport{
		SecretID: f.SecretID, SecretKey: secretKey, Transport: f.Transport(),
	}})
	c.Conf.RetryOpt.Count = 1
	return c
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func rnd(n int) []byte {
	b := make([]byte, n)
	rand.NewChaCha8([32]byte{3}).Read(b)
	return b
}

func cosCode(err error) (int, string) {
	var er *cos.ErrorResponse
	if errors.As(err, &er) {
		return er.Response.StatusCode, er.Code
	}
	return 0, ""
}

func TestSDKHelpersAgainstFake(t *testing.T) {
	f := Start(t)
	bucket := f.NewBucket(t)
	c := sdkClient(t, f, f.BucketURL(bucket), f.SecretKey)
	ctx := ctxT(t)

	// Upload: 3 MB file in 1 MB parts would be below the backing S3's 5 MiB
	// minimum, so use 6 MB parts and 3 threads; the SDK checks the CRC-64
	// of every part and of the completed object.
	data := rnd(13 << 20)
	path := filepath.Join(t.TempDir(), "in")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	res, _, err := c.Object.Upload(ctx, "dir/big", path, &cos.MultiUploadOptions{PartSize: 6, ThreadPoolSize: 3, CheckPoint: true})
	if err != nil {
		t.Fatalf("SDK Upload: %v", err)
	}
	if res.ETag == "" {
		t.Error("empty ETag from Complete")
	}
	out := filepath.Join(t.TempDir(), "out")
	if _, err := c.Object.Download(ctx, "dir/big", out, &cos.MultiDownloadOptions{PartSize: 4, ThreadPoolSize: 2}); err != nil {
		t.Fatalf("SDK Download (checks HEAD's CRC-64): %v", err)
	}
	if got, _ := os.ReadFile(out); !bytes.Equal(got, data) {
		t.Fatal("downloaded file differs")
	}

	// Chunked PUT (a reader of unknown size) and its CRC-64 check.
	if _, err := c.Object.Put(ctx, "chunked", io.MultiReader(strings.NewReader("hello "), strings.NewReader("world")), nil); err != nil {
		t.Fatalf("chunked Put: %v", err)
	}
	resp, err := c.Object.Get(ctx, "chunked", nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "hello world" || resp.Header.Get("x-cos-hash-crc64ecma") != strconv.FormatUint(crc64Of([]byte("hello world")), 10) {
		t.Errorf("chunked object = %q, crc %s", b, resp.Header.Get("x-cos-hash-crc64ecma"))
	}

	// Presigned GET: the signature travels in the query.
	pu, err := c.Object.GetPresignedURL(ctx, http.MethodGet, "chunked", f.SecretID, f.SecretKey, time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Transport: f.Transport()}
	presp, err := hc.Get(pu.String())
	if err != nil {
		t.Fatal(err)
	}
	pb, _ := io.ReadAll(presp.Body)
	presp.Body.Close()
	if presp.StatusCode != 200 || string(pb) != "hello world" {
		t.Errorf("presigned GET: %d %q", presp.StatusCode, pb)
	}
	// Tampering with the presigned URL's key breaks it.
	bad := strings.Replace(pu.String(), "/chunked?", "/dir%2Fbig?", 1)
	if r, err := hc.Get(bad); err != nil || r.StatusCode != 403 {
		t.Errorf("tampered presigned URL: %v %v", r.StatusCode, err)
	} else {
		r.Body.Close()
	}
}

func TestSignatureFailures(t *testing.T) {
	f := Start(t)
	bucket := f.NewBucket(t)
	ctx := ctxT(t)

	_, err := sdkClient(t, f, f.BucketURL(bucket), "wrong-secret").Object.Put(ctx, "k", strings.NewReader("x"), nil)
	if st, code := cosCode(err); st != 403 || code != "SignatureDoesNotMatch" {
		t.Errorf("wrong secret: %d %s (%v)", st, code, err)
	}
	c := sdkClient(t, f, f.BucketURL(bucket), f.SecretKey)
	f.SetClockSkew(2 * time.Hour) // the SDK signs for one hour
	if _, err := c.Object.Head(ctx, "k", nil); err == nil {
		t.Error("expired signature accepted")
	} else if st, _ := cosCode(err); st != 403 {
		t.Errorf("expired signature: %v", err)
	}
	f.SetClockSkew(-time.Hour) // the client looks an hour ahead
	if _, err := c.Object.Put(ctx, "k", strings.NewReader("x"), nil); err == nil {
		t.Error("signature from the future accepted")
	} else if _, code := cosCode(err); code != "RequestTimeTooSkewed" {
		t.Errorf("future signature: %v", err)
	}
	f.SetClockSkew(0)
	if _, err := c.Object.Put(ctx, "k", strings.NewReader("x"), nil); err != nil {
		t.Errorf("after fixing the clock: %v", err)
	}
}

func TestContentMD5Verified(t *testing.T) {
	f := Start(t)
	bucket := f.NewBucket(t)
	c := sdkClient(t, f, f.BucketURL(bucket), f.SecretKey)
	ctx := ctxT(t)
	wrong := md5.Sum([]byte("something else"))
	_, err := c.Object.Put(ctx, "k", strings.NewReader("payload"), &cos.ObjectPutOptions{ObjectPutHeaderOptions: &cos.ObjectPutHeaderOptions{
		ContentMD5: base64.StdEncoding.EncodeToString(wrong[:]),
	}})
	if st, code := cosCode(err); st != 400 || code != "InvalidDigest" {
		t.Errorf("wrong Content-MD5: %d %s (%v)", st, code, err)
	}
	if _, err := c.Object.Head(ctx, "k", nil); !cos.IsNotFoundError(err) {
		t.Errorf("object stored despite a wrong Content-MD5: %v", err)
	}
	init, _, err := c.Object.InitiateMultipartUpload(ctx, "mp", nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Object.UploadPart(ctx, "mp", init.UploadID, 1, strings.NewReader("part"), &cos.ObjectUploadPartOptions{
		ContentMD5: base64.StdEncoding.EncodeToString(wrong[:]),
	})
	if st, code := cosCode(err); st != 400 || code != "InvalidDigest" {
		t.Errorf("part with wrong Content-MD5: %d %s (%v)", st, code, err)
	}
	if ok, _ := regexp.MatchString(`^[a-z0-9]+$`, init.UploadID); !ok {
		t.Errorf("upload ID %q does not match [a-z0-9]+", init.UploadID)
	}
	c.Object.AbortMultipartUpload(ctx, "mp", init.UploadID)
}

// Path-style requests are refused, whichever client sends them: the SDK
// with a service URL, and an S3 client in path-style mode (Pulsar's S3
// driver with an endpoint; apache/pulsar#15893).
func TestPathStyleRejected(t *testing.T) {
	f := Start(t)
	bucket := f.NewBucket(t)
	ctx := ctxT(t)
	// The SDK drops a BucketURL path: the bucket is simply missing.
	c := sdkClient(t, f, "http://cos."+f.Region+".myqcloud.com:"+strconv.Itoa(f.Port)+"/"+bucket, f.SecretKey)
	_, err := c.Object.Put(ctx, "k", strings.NewReader("x"), nil)
	if st, code := cosCode(err); st != 403 || code != "PathStyleDomainForbidden" {
		t.Errorf("SDK path-style: %d %s (%v)", st, code, err)
	}
	for _, host := range []string{"cos." + f.Region + ".myqcloud.com", "127.0.0.1"} {
		s3c := s3.New(s3.Options{
			Region: f.Region, BaseEndpoint: aws.String("http://" + host + ":" + strconv.Itoa(f.Port)), UsePathStyle: true,
			Credentials: credentials.NewStaticCredentialsProvider(f.SecretID, f.SecretKey, ""),
			HTTPClient:  &http.Client{Transport: f.Transport()},
			Retryer:     aws.NopRetryer{},
		})
		_, err := s3c.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &bucket, Key: aws.String("ledger-1")})
		var ae smithy.APIError
		if !errors.As(err, &ae) || ae.ErrorCode() != "PathStyleDomainForbidden" {
			t.Errorf("S3 path-style via %s: %v", host, err)
		}
	}
	// The right host, another region or APPID: no such bucket.
	other := sdkClient(t, f, "http://"+bucket+".cos.ap-beijing.myqcloud.com:"+strconv.Itoa(f.Port), f.SecretKey)
	if _, err := other.Object.Head(ctx, "k", nil); !cos.IsNotFoundError(err) {
		t.Errorf("wrong region: %v", err)
	}
}
