package compat

// What the real S3 server of the suites (versitygw v1.8.0, posix backend)
// accepts, for clients other than tierkeeper's: Pulsar's jclouds offloader
// signs with SigV4 and streams non-repeatable putObject payloads as
// aws-chunked (STREAMING-AWS4-HMAC-SHA256-PAYLOAD, jclouds
// RequestAuthorizeSignatureV4 / Aws4SignerForChunkedUpload); old jclouds
// generic-S3 setups signed with V2. Requests are crafted by hand so each
// wire form is tested on its own, and each test checks both that the good
// form is stored byte for byte and that a damaged one is refused.
// (blob-store engineer)

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/tierkeeper/tierkeeper/test/testenv"
)

const emptySHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

type vgw struct {
	s      *testenv.S3
	bucket string
}

func newVGW(t *testing.T) vgw {
	s := testenv.StartS3(t)
	return vgw{s, s.NewBucket(t)}
}

func (v vgw) url(key string) string { return v.s.Endpoint + "/" + v.bucket + "/" + key }

func (v vgw) creds() aws.Credentials {
	return aws.Credentials{AccessKeyID: v.s.AccessKey, SecretAccessKey: v.s.SecretKey}
}

// signV4 signs r with payloadHash as x-amz-content-sha256.
func (v vgw) signV4(t *testing.T, r *http.Request, payloadHash string, now time.Time) {
	t.Helper()
	r.Header.Set("X-Amz-Content-Sha256", payloadHash)
	if err := v4.NewSigner().SignHTTP(context.Background(), v.creds(), r, payloadHash, "s3", v.s.Region, now); err != nil {
		t.Fatal(err)
	}
}

func do(t *testing.T, r *http.Request) (int, string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// stored returns the object's bytes, or nil if it does not exist.
func (v vgw) stored(t *testing.T, key string) []byte {
	t.Helper()
	out, err := v.s.Client().GetObject(context.Background(), &s3.GetObjectInput{Bucket: &v.bucket, Key: &key})
	if err != nil {
		return nil
	}
	defer out.Body.Close()
	b, _ := io.ReadAll(out.Body)
	return b
}

func errCode(body string) string {
	i := strings.Index(body, "<Code>")
	j := strings.Index(body, "</Code>")
	if i < 0 || j < i {
		return ""
	}
	return body[i+6 : j]
}

func TestVersitygwUnsignedPayload(t *testing.T) {
	v := newVGW(t)
	body := []byte("unsigned payload body")
	r, _ := http.NewRequest("PUT", v.url("unsigned"), bytes.NewReader(body))
	v.signV4(t, r, "UNSIGNED-PAYLOAD", time.Now().UTC())
	if st, b := do(t, r); st != 200 {
		t.Fatalf("UNSIGNED-PAYLOAD PUT: %d %s", st, b)
	}
	if !bytes.Equal(v.stored(t, "unsigned"), body) {
		t.Error("stored object differs")
	}
}

// Content-MD5 is verified: a signed request whose Content-MD5 does not match
// the body is refused and nothing is stored.
func TestVersitygwVerifiesContentMD5(t *testing.T) {
	v := newVGW(t)
	body := []byte("the real body")
	wrong := md5.Sum([]byte("another body"))
	r, _ := http.NewRequest("PUT", v.url("md5"), bytes.NewReader(body))
	r.Header.Set("Content-MD5", base64.StdEncoding.EncodeToString(wrong[:]))
	v.signV4(t, r, "UNSIGNED-PAYLOAD", time.Now().UTC())
	st, b := do(t, r)
	if st != 400 || errCode(b) != "BadDigest" {
		t.Errorf("wrong Content-MD5: %d %s, want 400 BadDigest", st, errCode(b))
	}
	if v.stored(t, "md5") != nil {
		t.Error("object stored despite a wrong Content-MD5")
	}
	// A signed payload hash that does not match is refused as well.
	r, _ = http.NewRequest("PUT", v.url("sha"), bytes.NewReader(body))
	v.signV4(t, r, emptySHA256, time.Now().UTC())
	if st, b := do(t, r); st < 400 || v.stored(t, "sha") != nil {
		t.Errorf("wrong x-amz-content-sha256: %d %s", st, errCode(b))
	}
}

func hmacSHA256(key []byte, s string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(s))
	return m.Sum(nil)
}

func vgwSHA256hex(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// chunkedBody encodes data as aws-chunked with chunk signatures chained
// from seed (the request signature), per the SigV4 streaming spec.
func (v vgw) chunkedBody(data []byte, chunk int, seed string, now time.Time, corrupt bool) []byte {
	date := now.Format("20060102")
	amzDate := now.Format("20060102T150405Z")
	scope := date + "/" + v.s.Region + "/s3/aws4_request"
	key := hmacSHA256(hmacSHA256(hmacSHA256(hmacSHA256([]byte("AWS4"+v.s.SecretKey), date), v.s.Region), "s3"), "aws4_request")
	var out bytes.Buffer
	prev := seed
	for off := 0; ; off += chunk {
		end := min(off+chunk, len(data))
		c := data[off:end]
		sts := strings.Join([]string{"AWS4-HMAC-SHA256-PAYLOAD", amzDate, scope, prev, emptySHA256, vgwSHA256hex(c)}, "\n")
		sig := hex.EncodeToString(hmacSHA256(key, sts))
		fmt.Fprintf(&out, "%x;chunk-signature=%s\r\n", len(c), sig)
		if corrupt && off == 0 && len(c) > 0 {
			c = append([]byte{c[0] ^ 1}, c[1:]...)
		}
		out.Write(c)
		out.WriteString("\r\n")
		prev = sig
		if len(c) == 0 {
			return out.Bytes()
		}
		if end == len(data) {
			off = len(data) - chunk // next round sends the final empty chunk
		}
	}
}

func (v vgw) chunkedPut(t *testing.T, key string, data []byte, corrupt bool) (int, string) {
	t.Helper()
	now := time.Now().UTC()
	// Sign with a placeholder body to get the seed signature, then send the
	// encoded body (its length is known before signing: compute it twice).
	enc := v.chunkedBody(data, 64<<10, strings.Repeat("0", 64), now, false)
	r, _ := http.NewRequest("PUT", v.url(key), nil)
	r.ContentLength = int64(len(enc))
	r.Header.Set("Content-Encoding", "aws-chunked")
	r.Header.Set("X-Amz-Decoded-Content-Length", fmt.Sprint(len(data)))
	r.Header.Set("Content-Length", fmt.Sprint(len(enc)))
	v.signV4(t, r, "STREAMING-AWS4-HMAC-SHA256-PAYLOAD", now)
	auth := r.Header.Get("Authorization")
	seed := auth[strings.LastIndex(auth, "Signature=")+len("Signature="):]
	enc = v.chunkedBody(data, 64<<10, seed, now, corrupt)
	r.Body = io.NopCloser(bytes.NewReader(enc))
	return do(t, r)
}

func TestVersitygwAWSChunkedSigned(t *testing.T) {
	v := newVGW(t)
	data := make([]byte, 200<<10+7) // 4 chunks: 64+64+64+8 KiB-ish, then the final empty chunk
	for i := range data {
		data[i] = byte(i * 7)
	}
	if st, b := v.chunkedPut(t, "chunked", data, false); st != 200 {
		t.Fatalf("aws-chunked PUT: %d %s", st, b)
	}
	if got := v.stored(t, "chunked"); !bytes.Equal(got, data) {
		t.Fatalf("stored %d bytes, want the %d decoded bytes", len(got), len(data))
	}
	st, b := v.chunkedPut(t, "chunked-bad", data, true)
	if st < 400 || v.stored(t, "chunked-bad") != nil {
		t.Errorf("aws-chunked PUT with a corrupted chunk: %d %s; stored %v", st, errCode(b), v.stored(t, "chunked-bad") != nil)
	}
	t.Logf("corrupted chunk refused with %d %s", st, errCode(b))
}

func TestVersitygwAWSChunkedUnsignedTrailer(t *testing.T) {
	v := newVGW(t)
	data := []byte(strings.Repeat("trailer checksum ", 1000))
	put := func(key string, sum uint32) (int, string) {
		var crc [4]byte
		binary.BigEndian.PutUint32(crc[:], sum)
		var enc bytes.Buffer
		fmt.Fprintf(&enc, "%x\r\n", len(data))
		enc.Write(data)
		fmt.Fprintf(&enc, "\r\n0\r\nx-amz-checksum-crc32:%s\r\n\r\n", base64.StdEncoding.EncodeToString(crc[:]))
		r, _ := http.NewRequest("PUT", v.url(key), bytes.NewReader(enc.Bytes()))
		r.Header.Set("Content-Encoding", "aws-chunked")
		r.Header.Set("X-Amz-Decoded-Content-Length", fmt.Sprint(len(data)))
		r.Header.Set("X-Amz-Trailer", "x-amz-checksum-crc32")
		v.signV4(t, r, "STREAMING-UNSIGNED-PAYLOAD-TRAILER", time.Now().UTC())
		return do(t, r)
	}
	if st, b := put("trailer", crc32.ChecksumIEEE(data)); st != 200 {
		t.Fatalf("STREAMING-UNSIGNED-PAYLOAD-TRAILER PUT: %d %s", st, b)
	}
	if !bytes.Equal(v.stored(t, "trailer"), data) {
		t.Error("stored object differs")
	}
	if st, b := put("trailer-bad", crc32.ChecksumIEEE(data)+1); st < 400 || v.stored(t, "trailer-bad") != nil {
		t.Errorf("wrong trailing CRC32: %d %s", st, errCode(b))
	}
}

// Signature V2 ("Authorization: AWS id:sig") is not supported by
// versitygw: a V2 client cannot be tested against it.
func TestVersitygwRefusesSignatureV2(t *testing.T) {
	v := newVGW(t)
	date := time.Now().UTC().Format(http.TimeFormat)
	sts := "PUT\n\napplication/octet-stream\n" + date + "\n/" + v.bucket + "/v2"
	m := hmac.New(sha1.New, []byte(v.s.SecretKey))
	m.Write([]byte(sts))
	r, _ := http.NewRequest("PUT", v.url("v2"), strings.NewReader("v2 body"))
	r.Header.Set("Date", date)
	r.Header.Set("Content-Type", "application/octet-stream")
	r.Header.Set("Authorization", "AWS "+v.s.AccessKey+":"+base64.StdEncoding.EncodeToString(m.Sum(nil)))
	st, b := do(t, r)
	if st < 400 || v.stored(t, "v2") != nil {
		t.Fatalf("V2-signed PUT accepted (%d): update docs/blobstores.md", st)
	}
	t.Logf("V2 signature refused: %d %s", st, errCode(b))
}

// Session tokens (STS credentials) are refused in single-account mode.
func TestVersitygwRefusesSessionToken(t *testing.T) {
	v := newVGW(t)
	r, _ := http.NewRequest("PUT", v.url("tok"), strings.NewReader("x"))
	r.Header.Set("X-Amz-Security-Token", "some-token")
	v.signV4(t, r, "UNSIGNED-PAYLOAD", time.Now().UTC())
	st, b := do(t, r)
	if st < 400 {
		t.Fatalf("request with a session token accepted (%d)", st)
	}
	t.Logf("session token refused: %d %s", st, errCode(b))
}
