package cosfake

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"fmt"
	"io"
	"strings"
	"testing"
)

// FuzzParseSigV4 feeds arbitrary Authorization headers to the SigV4 parser:
// no panic, and a parsed header has every part.
func FuzzParseSigV4(f *testing.F) {
	f.Add("AWS4-HMAC-SHA256 Credential=AK/20250101/us-east-1/s3/aws4_request, SignedHeaders=host;x-amz-date, Signature=00ff")
	f.Add("AWS4-HMAC-SHA256 Credential=/a/b/c/aws4_request,SignedHeaders=,Signature=")
	f.Add("AWS AKID:sig")
	f.Fuzz(func(t *testing.T, h string) {
		a, err := parseSigV4(h)
		if err == nil && (a.accessKey == "" || a.signature == "" || len(a.signedHeaders) == 0) {
			t.Fatalf("accepted %q as %+v", h, a)
		}
	})
}

// FuzzChunkedReader decodes arbitrary aws-chunked bodies: no panic, never
// more than the declared length, and memory bounded by the input (a chunk
// header cannot make it allocate its announced size).
func FuzzChunkedReader(f *testing.F) {
	key := sigV4Key("secret", "20250101", "us-east-1", "s3")
	f.Add([]byte("5;chunk-signature=00\r\nhello\r\n0;chunk-signature=00\r\n\r\n"), int64(5))
	f.Add([]byte("3ffffff;chunk-signature=ab\r\n"), int64(1<<30))
	f.Add([]byte("zz;chunk-signature=\r\n"), int64(0))
	f.Fuzz(func(t *testing.T, body []byte, want int64) {
		if want < 0 {
			want = -want
		}
		c := &chunkedReader{src: bufio.NewReader(bytes.NewReader(body)), closer: io.NopCloser(nil), key: key,
			amzDate: "20250101T000000Z", scope: "20250101/us-east-1/s3/aws4_request", prev: strings.Repeat("0", 64), want: want}
		n, _ := io.Copy(io.Discard, io.LimitReader(c, 1<<30))
		if n > want || n > int64(len(body)) {
			t.Fatalf("decoded %d bytes from %d input bytes, declared %d", n, len(body), want)
		}
	})
}

// A valid two-chunk body signed with the chain decodes; a changed chunk
// signature or data is refused.
func TestChunkedReaderSignatures(t *testing.T) {
	key := sigV4Key("secret", "20250101", "us-east-1", "s3")
	const date, scope, seed = "20250101T000000Z", "20250101/us-east-1/s3/aws4_request", "seedsig"
	sign := func(prev string, data []byte) string {
		sts := "AWS4-HMAC-SHA256-PAYLOAD\n" + date + "\n" + scope + "\n" + prev + "\n" + emptySHA256 + "\n" + sha256Hex(data)
		return hex.EncodeToString(hmacSHA256(key, sts))
	}
	chunks := [][]byte{[]byte("hello "), []byte("world"), nil}
	var body bytes.Buffer
	prev := seed
	for _, c := range chunks {
		sig := sign(prev, c)
		fmt.Fprintf(&body, "%x;chunk-signature=%s\r\n", len(c), sig)
		body.Write(c)
		body.WriteString("\r\n")
		prev = sig
	}
	read := func(b []byte) ([]byte, error) {
		c := &chunkedReader{src: bufio.NewReader(bytes.NewReader(b)), closer: io.NopCloser(nil), key: key, amzDate: date, scope: scope, prev: seed, want: 11}
		return io.ReadAll(c)
	}
	got, err := read(body.Bytes())
	if err != nil || string(got) != "hello world" {
		t.Fatalf("valid body: %q, %v", got, err)
	}
	bad := bytes.Replace(body.Bytes(), []byte("world"), []byte("wOrld"), 1)
	if _, err := read(bad); err == nil {
		t.Fatal("changed chunk data accepted")
	}
}
