package cosfake

// AWS request signatures, as S3 clients (a stock Pulsar broker's jclouds
// driver, aws-sdk-go-v2) send them to COS's S3-compatible endpoint:
// Signature Version 4 (AWS4-HMAC-SHA256, with signed, unsigned and
// aws-chunked streaming payloads) and Signature Version 2 ("AWS id:sig",
// jclouds' generic s3 API, i.e. the aliyun-oss driver). The SecretId and
// SecretKey are the COS account's keys.

import (
	"bufio"
	"bytes"
	"crypto/hmac"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Payload hash values of x-amz-content-sha256 that are not a hex digest.
const (
	unsignedPayload  = "UNSIGNED-PAYLOAD"
	streamingPayload = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"
	amzDateFormat    = "20060102T150405Z"
	sigV4Algorithm   = "AWS4-HMAC-SHA256"
	emptySHA256      = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
)

// authFlavor is how a request was signed; AWS-signed requests get AWS
// header names back (x-amz-meta-*).
type authFlavor int

const (
	flavorCOS authFlavor = iota
	flavorSigV4
	flavorSigV2
)

func (f authFlavor) String() string {
	switch f {
	case flavorSigV4:
		return "sigv4"
	case flavorSigV2:
		return "sigv2"
	}
	return "cos"
}

// metaPrefix is the user-metadata header prefix of the flavor.
func (f authFlavor) metaPrefix() string {
	if f == flavorCOS {
		return cosMeta
	}
	return awsMeta
}

const awsMeta = "x-amz-meta-"

// awsEncode percent-encodes s the way SigV4 canonical requests do: every
// byte except A-Z a-z 0-9 - _ . ~ becomes %XX (upper-case hex); with
// keepSlash, '/' stays.
func awsEncode(s string, keepSlash bool) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' || c == '~' || keepSlash && c == '/' {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}

// sigV4 is a parsed Authorization: AWS4-HMAC-SHA256 header.
type sigV4 struct {
	accessKey, date, region, service string
	signedHeaders                    []string
	signature                        string
}

func (a sigV4) scope() string {
	return a.date + "/" + a.region + "/" + a.service + "/aws4_request"
}

// parseSigV4 parses "AWS4-HMAC-SHA256 Credential=AK/DATE/REGION/s3/aws4_request,
// SignedHeaders=a;b, Signature=hex".
func parseSigV4(h string) (sigV4, error) {
	var a sigV4
	rest, ok := strings.CutPrefix(h, sigV4Algorithm+" ")
	if !ok {
		return a, &signError{"AccessDenied", "unsupported AWS signature algorithm"}
	}
	for _, part := range strings.Split(rest, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "Credential":
			f := strings.Split(v, "/")
			if len(f) != 5 || f[4] != "aws4_request" {
				return a, &signError{"AuthorizationHeaderMalformed", "malformed Credential " + strconv.Quote(v)}
			}
			a.accessKey, a.date, a.region, a.service = f[0], f[1], f[2], f[3]
		case "SignedHeaders":
			a.signedHeaders = strings.Split(v, ";")
		case "Signature":
			a.signature = v
		}
	}
	if a.accessKey == "" || len(a.signedHeaders) == 0 || a.signature == "" {
		return a, &signError{"AuthorizationHeaderMalformed", "Credential, SignedHeaders and Signature are required"}
	}
	return a, nil
}

// sigV4Key derives the signing key: HMAC chain over date, region, service.
func sigV4Key(secret, date, region, service string) []byte {
	k := hmacSHA256([]byte("AWS4"+secret), date)
	k = hmacSHA256(k, region)
	k = hmacSHA256(k, service)
	return hmacSHA256(k, "aws4_request")
}

func hmacSHA256(key []byte, s string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(s))
	return m.Sum(nil)
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// canonicalQuery is the SigV4 canonical query string: every parameter,
// names and values encoded, sorted by name then value.
func canonicalQuery(r *http.Request) string {
	var pairs []string
	for k, vs := range r.URL.Query() {
		for _, v := range vs {
			pairs = append(pairs, awsEncode(k, false)+"="+awsEncode(v, false))
		}
	}
	sort.Strings(pairs)
	return strings.Join(pairs, "&")
}

// headerValue is a signed header's value as received: values of a
// repeated header joined by ",", each trimmed with inner runs of spaces
// collapsed.
func headerValue(r *http.Request, name string) (string, bool) {
	vals := requestHeaderValues(r, name)
	if len(vals) == 0 {
		return "", false
	}
	out := make([]string, len(vals))
	for i, v := range vals {
		out[i] = strings.Join(strings.Fields(v), " ")
	}
	return strings.Join(out, ","), true
}

// verifySigV4 checks an AWS4-HMAC-SHA256 request. On success it replaces
// r.Body with a reader that verifies the payload (a signed hash, or
// aws-chunked chunk signatures) and returns the error at EOF.
func verifySigV4(r *http.Request, secrets map[string]string, now time.Time, maxSkew time.Duration) error {
	a, err := parseSigV4(r.Header.Get("Authorization"))
	if err != nil {
		return err
	}
	secret, ok := secrets[a.accessKey]
	if !ok {
		return &signError{"InvalidAccessKeyId", "the access key id you provided does not exist in our records"}
	}
	if a.service != "s3" {
		return &signError{"AuthorizationHeaderMalformed", "credential scope service must be s3, got " + a.service}
	}
	amzDate := r.Header.Get("X-Amz-Date")
	t, err := time.Parse(amzDateFormat, amzDate)
	if err != nil {
		return &signError{"AccessDenied", "AWS authentication requires a valid x-amz-date header"}
	}
	if !strings.HasPrefix(amzDate, a.date) {
		return &signError{"AuthorizationHeaderMalformed", "credential date " + a.date + " does not match x-amz-date " + amzDate}
	}
	if d := now.Sub(t); d > maxSkew || d < -maxSkew {
		return &signError{"RequestTimeTooSkewed", "the difference between the request time and the server's time is too large"}
	}
	signed := map[string]bool{}
	for _, h := range a.signedHeaders {
		signed[h] = true
	}
	if !signed["host"] {
		return &signError{"AccessDenied", "the host header must be signed"}
	}
	for k := range r.Header {
		if lk := strings.ToLower(k); strings.HasPrefix(lk, "x-amz-") && !signed[lk] {
			return &signError{"AccessDenied", "header " + lk + " must be signed"}
		}
	}
	var ch strings.Builder
	for _, h := range a.signedHeaders {
		v, ok := headerValue(r, h)
		if !ok {
			return &signError{"SignatureDoesNotMatch", "signed header " + h + " is missing from the request"}
		}
		ch.WriteString(h + ":" + v + "\n")
	}
	payload := r.Header.Get("X-Amz-Content-Sha256")
	if payload == "" {
		return &signError{"InvalidRequest", "missing required header for this request: x-amz-content-sha256"}
	}
	canonical := strings.Join([]string{
		r.Method,
		awsEncode(r.URL.Path, true),
		canonicalQuery(r),
		ch.String(),
		strings.Join(a.signedHeaders, ";"),
		payload,
	}, "\n")
	key := sigV4Key(secret, a.date, a.region, a.service)
	sts := sigV4Algorithm + "\n" + amzDate + "\n" + a.scope() + "\n" + sha256Hex([]byte(canonical))
	want := hex.EncodeToString(hmacSHA256(key, sts))
	if !hmac.Equal([]byte(want), []byte(a.signature)) {
		return &signError{"SignatureDoesNotMatch", "the request signature we calculated does not match the signature you provided"}
	}
	switch {
	case payload == unsignedPayload:
	case payload == streamingPayload:
		n, err := strconv.ParseInt(r.Header.Get("X-Amz-Decoded-Content-Length"), 10, 64)
		if err != nil || n < 0 {
			return &signError{"MissingContentLength", "aws-chunked upload without a valid x-amz-decoded-content-length"}
		}
		r.Body = &chunkedReader{src: bufio.NewReader(r.Body), closer: r.Body, key: key, amzDate: amzDate, scope: a.scope(),
			prev: a.signature, want: n}
		r.ContentLength = n
	case len(payload) == 64 && isHex(payload):
		r.Body = &hashCheckReader{src: r.Body, want: strings.ToLower(payload), h: sha256.New()}
	default:
		return &signError{"InvalidArgument", "x-amz-content-sha256 " + strconv.Quote(payload) + " is not supported by cosfake"}
	}
	return nil
}

func isHex(s string) bool {
	_, err := hex.DecodeString(s)
	return err == nil
}

// hashCheckReader fails at EOF when the body's SHA-256 is not the signed one.
type hashCheckReader struct {
	src  io.ReadCloser
	want string
	h    interface {
		io.Writer
		Sum([]byte) []byte
	}
}

func (r *hashCheckReader) Read(p []byte) (int, error) {
	n, err := r.src.Read(p)
	r.h.Write(p[:n])
	if errors.Is(err, io.EOF) && hex.EncodeToString(r.h.Sum(nil)) != r.want {
		return n, &signError{"XAmzContentSHA256Mismatch", "the provided x-amz-content-sha256 header does not match what was computed"}
	}
	return n, err
}

func (r *hashCheckReader) Close() error { return r.src.Close() }

// chunkedReader decodes an aws-chunked body ("<hex size>;chunk-signature=<sig>\r\n
// <data>\r\n" ..., ending with a 0-size chunk) and checks every chunk's
// signature, chained from the request's seed signature.
type chunkedReader struct {
	src       *bufio.Reader
	closer    io.Closer
	key       []byte
	amzDate   string
	scope     string
	prev      string
	want, got int64
	chunk     []byte
	done      bool
	err       error
}

const maxChunk = 64 << 20

func (c *chunkedReader) Read(p []byte) (int, error) {
	for len(c.chunk) == 0 {
		if c.err != nil {
			return 0, c.err
		}
		if c.done {
			return 0, io.EOF
		}
		c.err = c.next()
	}
	n := copy(p, c.chunk)
	c.chunk = c.chunk[n:]
	return n, nil
}

func (c *chunkedReader) next() error {
	bad := func(msg string) error { return &signError{"IncompleteBody", "aws-chunked body: " + msg} }
	line, err := c.src.ReadString('\n')
	if err != nil {
		return bad("reading a chunk header: " + err.Error())
	}
	line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
	sizeHex, ext, ok := strings.Cut(line, ";")
	sig, hasSig := strings.CutPrefix(ext, "chunk-signature=")
	if !ok || !hasSig {
		return &signError{"SignatureDoesNotMatch", "aws-chunked chunk without a chunk-signature"}
	}
	size, err := strconv.ParseInt(sizeHex, 16, 64)
	if err != nil || size < 0 || size > maxChunk {
		return bad("bad chunk size " + strconv.Quote(sizeHex))
	}
	if size > c.want-c.got {
		return bad("more data than x-amz-decoded-content-length")
	}
	// Grows with the bytes that arrive: a chunk header alone cannot make
	// the server allocate its announced size.
	var buf bytes.Buffer
	if _, err := io.CopyN(&buf, c.src, size); err != nil {
		return bad("short chunk: " + err.Error())
	}
	data := buf.Bytes()
	crlf := make([]byte, 2)
	if _, err := io.ReadFull(c.src, crlf); err != nil || !bytes.Equal(crlf, []byte("\r\n")) {
		return bad("chunk not followed by CRLF")
	}
	sts := "AWS4-HMAC-SHA256-PAYLOAD\n" + c.amzDate + "\n" + c.scope + "\n" + c.prev + "\n" + emptySHA256 + "\n" + sha256Hex(data)
	want := hex.EncodeToString(hmacSHA256(c.key, sts))
	if !hmac.Equal([]byte(want), []byte(sig)) {
		return &signError{"SignatureDoesNotMatch", "aws-chunked chunk signature does not match"}
	}
	c.prev = sig
	c.got += size
	if size == 0 {
		if c.got != c.want {
			return bad(fmt.Sprintf("%d bytes decoded, x-amz-decoded-content-length says %d", c.got, c.want))
		}
		c.done = true
		return nil
	}
	c.chunk = data
	return nil
}

func (c *chunkedReader) Close() error { return c.closer.Close() }

// v2SubResources are the query parameters SigV2 signs (in the canonical
// resource), as S3 defines them.
var v2SubResources = map[string]bool{
	"acl": true, "cors": true, "delete": true, "lifecycle": true, "location": true, "logging": true, "notification": true,
	"partNumber": true, "policy": true, "requestPayment": true, "tagging": true, "torrent": true, "uploadId": true,
	"uploads": true, "versionId": true, "versioning": true, "versions": true, "website": true,
	"response-cache-control": true, "response-content-disposition": true, "response-content-encoding": true,
	"response-content-language": true, "response-content-type": true, "response-expires": true,
}

// verifySigV2 checks an "Authorization: AWS <id>:<base64 HMAC-SHA1>" request
// to a virtual-host bucket.
func verifySigV2(r *http.Request, bucket string, secrets map[string]string, now time.Time, maxSkew time.Duration) error {
	cred, ok := strings.CutPrefix(r.Header.Get("Authorization"), "AWS ")
	id, sig, ok2 := strings.Cut(cred, ":")
	if !ok || !ok2 || id == "" || sig == "" {
		return &signError{"AuthorizationHeaderMalformed", "want Authorization: AWS <id>:<signature>"}
	}
	secret, known := secrets[id]
	if !known {
		return &signError{"InvalidAccessKeyId", "the access key id you provided does not exist in our records"}
	}
	date := r.Header.Get("Date")
	dateLine := date
	if xd := r.Header.Get("X-Amz-Date"); xd != "" {
		date, dateLine = xd, ""
	}
	t, err := http.ParseTime(date)
	if err != nil {
		if t, err = time.Parse(time.RFC1123Z, date); err != nil {
			return &signError{"AccessDenied", "AWS authentication requires a valid Date or x-amz-date header"}
		}
	}
	if d := now.Sub(t); d > maxSkew || d < -maxSkew {
		return &signError{"RequestTimeTooSkewed", "the difference between the request time and the server's time is too large"}
	}
	// x-amz-* headers, lower-cased, sorted, values joined by ",".
	var amz []string
	for k, vs := range r.Header {
		if lk := strings.ToLower(k); strings.HasPrefix(lk, "x-amz-") {
			trimmed := make([]string, len(vs))
			for i, v := range vs {
				trimmed[i] = strings.TrimSpace(v)
			}
			amz = append(amz, lk+":"+strings.Join(trimmed, ","))
		}
	}
	sort.Strings(amz)
	var amzBlock strings.Builder
	for _, h := range amz {
		amzBlock.WriteString(h + "\n")
	}
	resource := "/" + bucket + r.URL.EscapedPath()
	var subs []string
	for k, vs := range r.URL.Query() {
		if !v2SubResources[k] {
			continue
		}
		for _, v := range vs {
			if v == "" {
				subs = append(subs, k)
			} else {
				subs = append(subs, k+"="+v)
			}
		}
	}
	sort.Strings(subs)
	if len(subs) > 0 {
		resource += "?" + strings.Join(subs, "&")
	}
	sts := r.Method + "\n" + r.Header.Get("Content-MD5") + "\n" + r.Header.Get("Content-Type") + "\n" + dateLine + "\n" + amzBlock.String() + resource
	m := hmac.New(sha1.New, []byte(secret))
	m.Write([]byte(sts))
	want := base64.StdEncoding.EncodeToString(m.Sum(nil))
	if !hmac.Equal([]byte(want), []byte(sig)) {
		return &signError{"SignatureDoesNotMatch", "the request signature we calculated does not match the signature you provided"}
	}
	return nil
}
