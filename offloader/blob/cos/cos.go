package cos

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"hash/crc64"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	cossdk "github.com/tencentyun/cos-go-sdk-v5"

	"github.com/tierkeeper/tierkeeper/internal/retry"
	"github.com/tierkeeper/tierkeeper/offloader/blob"
)

// MinPartSize is COS's smallest part (all parts but the last).
const MinPartSize = 1 << 20

// Options are the non-config dependencies of New.
type Options struct {
	// Logger receives retry notices (debug) and integrity warnings.
	// Default: discard.
	Logger *slog.Logger
	// Limiter paces requests and bytes on the wire (shared per process).
	Limiter *blob.Limiter
	// Transport replaces the HTTP transport under the signer (tests: fault
	// injection). The Limiter wraps it.
	Transport http.RoundTripper
	// DialContext replaces the dialer of the default transport (tests:
	// bucket host names dialled at 127.0.0.1).
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)
	// ListPageSize is the page size of listings (1..1000). Default 1000.
	ListPageSize int
	// Getenv reads the environment (source env). Default os.Getenv.
	Getenv func(string) string
}

// Store is a COS bucket.
type Store struct {
	c        *cossdk.Client
	bucket   string
	sse      SSE
	log      *slog.Logger
	attempts int
	backoff  retry.Backoff
	pageSize int
	checksum string
}

var (
	_ blob.Store           = (*Store)(nil)
	_ blob.MultipartLister = (*Store)(nil)
	_ blob.VectorMultipart = (*multipart)(nil)
	_ blob.PartCRC32CUser  = (*Store)(nil)
)

// New builds a store.
func New(cfg Config, opts Options) (*Store, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	getenv := opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	id, key, token := cfg.Credentials.SecretID, cfg.Credentials.SecretKey.Reveal(), cfg.Credentials.SessionToken.Reveal()
	if cfg.Credentials.Source == SourceEnv {
		id = blob.FirstEnv(getenv, "COS_SECRETID", "TENCENTCLOUD_SECRET_ID")
		key = blob.FirstEnv(getenv, "COS_SECRETKEY", "TENCENTCLOUD_SECRET_KEY")
		token = blob.FirstEnv(getenv, "COS_SESSIONTOKEN", "TENCENTCLOUD_SESSION_TOKEN")
		if id == "" || key == "" {
			return nil, errors.New("cos: credentials.source env: set COS_SECRETID and COS_SECRETKEY (or TENCENTCLOUD_SECRET_ID and TENCENTCLOUD_SECRET_KEY)")
		}
	}
	u, err := url.Parse(cfg.BucketURL())
	if err != nil {
		return nil, fmt.Errorf("cos: bucket URL: %w", err)
	}
	tr := opts.Transport
	if tr == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.ResponseHeaderTimeout = cfg.ResponseHeaderTimeout.D()
		t.MaxIdleConnsPerHost = 64
		if opts.DialContext != nil {
			t.DialContext = opts.DialContext
		}
		// A part's body goes to the socket without net/http's 32 KiB
		// copies where the SDK passes it through unwrapped, over TLS
		// too.
		blob.BodyWrites(t)
		tr = t
	}
	client := cossdk.NewClient(&cossdk.BaseURL{BucketURL: u}, &http.Client{Transport: &cossdk.AuthorizationTransport{
		SecretID: id, SecretKey: key, SessionToken: token, Transport: opts.Limiter.Transport(tr),
	}})
	// One try per SDK call: our loop retries with backoff (the SDK's
	// retries have none). CRC checks of uploads stay on.
	client.Conf.RetryOpt.Count = 1
	client.Conf.EnableCRC = true
	ps := opts.ListPageSize
	if ps <= 0 || ps > 1000 {
		ps = 1000
	}
	return &Store{
		c: client, bucket: cfg.Bucket, sse: cfg.SSE, log: log, attempts: cfg.Retry.MaxAttempts,
		backoff:  retry.Backoff{Initial: cfg.Retry.InitialBackoff.D(), Max: cfg.Retry.MaxBackoff.D()},
		pageSize: ps, checksum: cfg.Checksum,
	}, nil
}

// Name returns "cos://<bucket>".
func (s *Store) Name() string { return "cos://" + s.bucket }

// UsesPartCRC32C is false: COS checks parts by their CRC-64
// (x-cos-hash-crc64ecma), not a CRC-32C.
func (s *Store) UsesPartCRC32C() bool { return false }

// Close releases nothing.
func (s *Store) Close() error { return nil }

// do runs one SDK call with retries.
func (s *Store) do(ctx context.Context, op, key string, call func(ctx context.Context) error) error {
	p := retry.Policy{Attempts: s.attempts, Backoff: s.backoff, Retryable: retryable, OnRetry: func(n int, wait time.Duration, err error) {
		s.log.Debug("cos: retrying", "op", op, "key", key, "attempt", n, "wait", wait, "err", err)
	}}
	return retry.Run(ctx, p, call)
}

// retryable: 5xx, 429, SlowDown, RequestTimeout, checksum mismatches and
// transport errors; not 4xx, not cancellation, not an endpoint that fails
// TLS verification (blob.UntrustedServer).
func retryable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var re *cossdk.RetryError
	if errors.As(err, &re) && len(re.Errs) > 0 {
		return retryable(re.Errs[len(re.Errs)-1])
	}
	var er *cossdk.ErrorResponse
	if errors.As(err, &er) {
		st := 0
		if er.Response != nil {
			st = er.Response.StatusCode
		}
		switch er.Code {
		case "SlowDown", "RequestTimeout", "InvalidDigest", "BadDigest":
			return true
		}
		return st >= 500 || st == http.StatusTooManyRequests
	}
	if strings.Contains(err.Error(), "invalid bucket format") || blob.UntrustedServer(err) {
		return false
	}
	return true // transport errors, CRC "verification failed", truncated bodies
}

// cosError unwraps an *ErrorResponse (also from a RetryError).
func cosError(err error) (*cossdk.ErrorResponse, int) {
	var re *cossdk.RetryError
	if errors.As(err, &re) && len(re.Errs) > 0 {
		err = re.Errs[len(re.Errs)-1]
	}
	var er *cossdk.ErrorResponse
	if errors.As(err, &er) && er.Response != nil {
		return er, er.Response.StatusCode
	}
	return nil, 0
}

// mapErr wraps an SDK error with the operation, key and a blob sentinel.
func mapErr(op, key string, err error) error {
	if err == nil {
		return nil
	}
	var sentinel error
	er, status := cosError(err)
	code := ""
	if er != nil {
		code = er.Code
	}
	switch {
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
	case code == "NoSuchKey" || code == "NoSuchUpload" || (status == 404 && code != "NoSuchBucket"):
		sentinel = blob.ErrNotFound
	case code == "InvalidRange" || status == 416:
		sentinel = blob.ErrInvalidRange
	case code == "InvalidDigest" || code == "BadDigest" || strings.Contains(err.Error(), "verification failed"):
		sentinel = blob.ErrBadDigest
	case code == "EntityTooSmall":
		sentinel = blob.ErrPartTooSmall
	case code == "InvalidPart" || code == "InvalidPartOrder":
		sentinel = blob.ErrMissingPart
	case status == 403:
		sentinel = blob.ErrAccessDenied
	}
	if sentinel != nil {
		return fmt.Errorf("cos %s %q: %w: %w", op, key, sentinel, err)
	}
	return fmt.Errorf("cos %s %q: %w", op, key, err)
}

const metaPrefix = "x-cos-meta-"

// attrsFromHeader reads an object's attributes from a COS response:
// ETag, Last-Modified and the x-cos-meta-* user metadata (lower-case keys,
// prefix removed; an empty name is skipped).
func attrsFromHeader(key string, h http.Header, size int64) blob.Attrs {
	a := blob.Attrs{Key: key, Size: size, ETag: strings.Trim(h.Get("ETag"), `"`)}
	if t, err := http.ParseTime(h.Get("Last-Modified")); err == nil {
		a.LastModified = t
	}
	for k, vs := range h {
		lk := strings.ToLower(k)
		if name, ok := strings.CutPrefix(lk, metaPrefix); ok && name != "" && len(vs) > 0 {
			if a.Metadata == nil {
				a.Metadata = map[string]string{}
			}
			a.Metadata[name] = vs[0]
		}
	}
	return a
}

// contentLength reads a response's Content-Length: decimal digits only
// (no sign), as RFC 9110 spells it.
func contentLength(op, key string, h http.Header) (int64, error) {
	v := h.Get("Content-Length")
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 || v == "" || v[0] < '0' || v[0] > '9' {
		return 0, fmt.Errorf("cos %s %q: bad Content-Length %q", op, key, blob.Clip(v))
	}
	return n, nil
}

// headAnswer reads the attributes from a HEAD response.
func headAnswer(key string, h http.Header) (blob.Attrs, error) {
	size, err := contentLength("head", key, h)
	if err != nil {
		return blob.Attrs{}, err
	}
	return attrsFromHeader(key, h, size), nil
}

// getAnswer checks the headers of a GET sent for GetRange(off, length)
// (ranged tells whether a Range header was sent) and returns the object's
// attributes, the body length to expect and, for a whole object, the
// CRC-64 COS stored for it (ok false when absent or unreadable).
func getAnswer(key string, h http.Header, ranged bool, off, length int64) (a blob.Attrs, body int64, crc uint64, crcOK bool, err error) {
	body, err = contentLength("get", key, h)
	if err != nil {
		return blob.Attrs{}, 0, 0, false, err
	}
	size := body
	if ranged {
		if size, err = blob.CheckRangeAnswer("cos get", key, h.Get("Content-Range"), body, off, length); err != nil {
			return blob.Attrs{}, 0, 0, false, err
		}
	} else if v, perr := strconv.ParseUint(h.Get("x-cos-hash-crc64ecma"), 10, 64); perr == nil {
		crc, crcOK = v, true
	}
	return attrsFromHeader(key, h, size), body, crc, crcOK, nil
}

// Head returns the object's attributes.
func (s *Store) Head(ctx context.Context, key string) (blob.Attrs, error) {
	if err := blob.ValidateKey(key); err != nil {
		return blob.Attrs{}, err
	}
	var resp *cossdk.Response
	err := s.do(ctx, "head", key, func(ctx context.Context) (err error) {
		resp, err = s.c.Object.Head(ctx, key, nil)
		return err
	})
	if err != nil {
		return blob.Attrs{}, mapErr("head", key, err)
	}
	return headAnswer(key, resp.Header)
}

// Get streams the whole object, checked against its CRC-64.
func (s *Store) Get(ctx context.Context, key string) (io.ReadCloser, blob.Attrs, error) {
	return s.GetRange(ctx, key, 0, -1)
}

// GetRange streams length bytes at off (length < 0: to the end).
func (s *Store) GetRange(ctx context.Context, key string, off, length int64) (io.ReadCloser, blob.Attrs, error) {
	if err := blob.ValidateKey(key); err != nil {
		return nil, blob.Attrs{}, err
	}
	if off < 0 {
		return nil, blob.Attrs{}, fmt.Errorf("cos get %q: %w: negative offset %d", key, blob.ErrInvalidRange, off)
	}
	if length == 0 {
		return blob.EmptyRange(ctx, s, "cos get", key, off, length)
	}
	opt := &cossdk.ObjectGetOptions{Range: blob.HTTPRange(off, length)}
	ranged := opt.Range != ""
	var resp *cossdk.Response
	err := s.do(ctx, "get", key, func(ctx context.Context) (err error) {
		resp, err = s.c.Object.Get(ctx, key, opt)
		return err
	})
	if err != nil {
		err = mapErr("get", key, err)
		if errors.Is(err, blob.ErrInvalidRange) {
			return blob.EmptyRange(ctx, s, "cos get", key, off, length)
		}
		return nil, blob.Attrs{}, err
	}
	a, got, crc, crcOK, err := getAnswer(key, resp.Header, ranged, off, length)
	if err != nil {
		resp.Body.Close()
		return nil, blob.Attrs{}, err
	}
	b := &checkedBody{rc: resp.Body, left: got, key: key}
	if crcOK {
		b.crc, b.want = crc64.New(crcTable), crc
	}
	return b, a, nil
}

// checkedBody fails with io.ErrUnexpectedEOF if the body ends early and,
// for whole objects, with blob.ErrBadDigest if the CRC-64 differs.
type checkedBody struct {
	rc   io.ReadCloser
	left int64
	key  string
	crc  hash.Hash64
	want uint64
}

func (b *checkedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		if b.crc != nil && b.crc.Sum64() != b.want {
			return 0, fmt.Errorf("cos get %q: %w: body CRC-64 %d, object's x-cos-hash-crc64ecma %d", b.key, blob.ErrBadDigest, b.crc.Sum64(), b.want)
		}
		return 0, io.EOF
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	if b.crc != nil {
		b.crc.Write(p[:n])
	}
	switch {
	case err == io.EOF && b.left > 0:
		return n, fmt.Errorf("cos get %q: body ended %d bytes early: %w", b.key, b.left, io.ErrUnexpectedEOF)
	case err == io.EOF:
		err = nil
	case err != nil:
		err = fmt.Errorf("cos get %q: %w", b.key, err)
	}
	return n, err
}

func (b *checkedBody) Close() error { return b.rc.Close() }

// Iter lists keys with prefix in ascending order.
func (s *Store) Iter(ctx context.Context, prefix string, fn func(blob.Attrs) error) error {
	marker := ""
	last, first := "", true
	for page := 0; ; page++ {
		var res *cossdk.BucketGetResult
		err := s.do(ctx, "list", prefix, func(ctx context.Context) (err error) {
			res, _, err = s.c.Bucket.Get(ctx, &cossdk.BucketGetOptions{Prefix: prefix, Marker: marker, MaxKeys: s.pageSize, EncodingType: "url"})
			return err
		})
		if err != nil {
			return mapErr("list", prefix, err)
		}
		dec := decoder(res.EncodingType)
		for _, o := range res.Contents {
			k, err := dec(o.Key)
			if err != nil {
				return fmt.Errorf("cos list %q: undecodable key %q: %w", prefix, o.Key, err)
			}
			if !first && k <= last {
				return fmt.Errorf("cos list %q: server listed %q after %q (not ascending)", prefix, k, last)
			}
			first, last = false, k
			if !strings.HasPrefix(k, prefix) {
				continue
			}
			a := blob.Attrs{Key: k, Size: o.Size, ETag: strings.Trim(o.ETag, `"`)}
			if t, err := time.Parse(time.RFC3339, o.LastModified); err == nil {
				a.LastModified = t
			}
			if err := fn(a); err != nil {
				return err
			}
		}
		if !res.IsTruncated {
			return nil
		}
		next, err := dec(res.NextMarker)
		if err != nil || next == "" {
			next = last
		}
		if next == marker {
			return fmt.Errorf("cos list %q: listing does not advance past %q", prefix, marker)
		}
		marker = next
	}
}

func decoder(encodingType string) func(string) (string, error) {
	if encodingType == "url" {
		return url.PathUnescape
	}
	return func(s string) (string, error) { return s, nil }
}

// sseHeaders returns the SSE request headers.
func (s *Store) sseHeaders() (*http.Header, error) {
	h := http.Header{}
	switch s.sse.Type {
	case SSECOS:
		h.Set("x-cos-server-side-encryption", "AES256")
	case SSEKMS:
		h.Set("x-cos-server-side-encryption", "cos/kms")
		if s.sse.KMSKeyID != "" {
			h.Set("x-cos-server-side-encryption-cos-kms-key-id", s.sse.KMSKeyID)
		}
		if len(s.sse.KMSContext) > 0 {
			b, err := json.Marshal(s.sse.KMSContext)
			if err != nil {
				return nil, err
			}
			h.Set("x-cos-server-side-encryption-context", base64.StdEncoding.EncodeToString(b))
		}
	default:
		return nil, nil
	}
	return &h, nil
}

func (s *Store) headerOptions(opts blob.PutOptions) (*cossdk.ObjectPutHeaderOptions, map[string]string, error) {
	md, err := blob.NormalizeMetadata(opts.Metadata)
	if err != nil {
		return nil, nil, err
	}
	ho := &cossdk.ObjectPutHeaderOptions{ContentType: opts.ContentType}
	if ho.ContentType == "" {
		ho.ContentType = "application/octet-stream"
	}
	if len(md) > 0 {
		h := http.Header{}
		for k, v := range md {
			h.Set(metaPrefix+k, v)
		}
		ho.XCosMetaXXX = &h
	}
	if ho.XOptionHeader, err = s.sseHeaders(); err != nil {
		return nil, nil, err
	}
	return ho, md, nil
}

// Put stores exactly size bytes of r with Content-MD5.
func (s *Store) Put(ctx context.Context, key string, r io.Reader, size int64, opts blob.PutOptions) (blob.Attrs, error) {
	if err := blob.ValidateKey(key); err != nil {
		return blob.Attrs{}, err
	}
	ho, md, err := s.headerOptions(opts)
	if err != nil {
		return blob.Attrs{}, fmt.Errorf("cos put %q: %w", key, err)
	}
	if err := ctx.Err(); err != nil {
		return blob.Attrs{}, fmt.Errorf("cos put %q: %w", key, err)
	}
	pl, err := blob.NewPayload(r, size)
	if err != nil {
		return blob.Attrs{}, fmt.Errorf("cos put %q: %w", key, err)
	}
	defer pl.Close()
	ho.ContentLength = size
	ho.ContentMD5 = base64.StdEncoding.EncodeToString(pl.MD5())
	var resp *cossdk.Response
	err = s.do(ctx, "put", key, func(ctx context.Context) (err error) {
		var body io.Reader = pl.Reader()
		if size == 0 {
			body = bytes.NewReader(nil) // the SDK sends http.NoBody
		}
		resp, err = s.c.Object.Put(ctx, key, body, &cossdk.ObjectPutOptions{ObjectPutHeaderOptions: ho})
		return err
	})
	if err != nil {
		return blob.Attrs{}, mapErr("put", key, err)
	}
	return blob.Attrs{Key: key, Size: size, ETag: strings.Trim(resp.Header.Get("ETag"), `"`), Metadata: md}, nil
}

// Delete removes an object; a missing object is not an error.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := blob.ValidateKey(key); err != nil {
		return err
	}
	err := s.do(ctx, "delete", key, func(ctx context.Context) error {
		_, err := s.c.Object.Delete(ctx, key)
		return err
	})
	if err = mapErr("delete", key, err); errors.Is(err, blob.ErrNotFound) {
		return nil
	}
	return err
}

// CreateMultipart starts a multipart upload.
func (s *Store) CreateMultipart(ctx context.Context, key string, opts blob.PutOptions) (blob.Multipart, error) {
	if err := blob.ValidateKey(key); err != nil {
		return nil, err
	}
	ho, md, err := s.headerOptions(opts)
	if err != nil {
		return nil, fmt.Errorf("cos create multipart %q: %w", key, err)
	}
	var res *cossdk.InitiateMultipartUploadResult
	err = s.do(ctx, "create multipart", key, func(ctx context.Context) (err error) {
		res, _, err = s.c.Object.InitiateMultipartUpload(ctx, key, &cossdk.InitiateMultipartUploadOptions{ObjectPutHeaderOptions: ho})
		return err
	})
	if err != nil {
		return nil, mapErr("create multipart", key, err)
	}
	if res.UploadID == "" {
		return nil, fmt.Errorf("cos create multipart %q: empty upload ID", key)
	}
	return &multipart{s: s, key: key, id: res.UploadID, md: md, parts: map[int]part{}}, nil
}

type part struct {
	etag string
	size int64
	crc  uint64
}

type multipart struct {
	s   *Store
	key string
	id  string
	md  map[string]string

	mu    sync.Mutex
	parts map[int]part
}

func (m *multipart) UploadID() string { return m.id }

// UploadPart sends part n; the SDK checks the CRC-64 COS returns against
// the bytes sent, and with checksum md5 COS checks Content-MD5 too.
func (m *multipart) UploadPart(ctx context.Context, n int, data []byte) error {
	return m.uploadPart(ctx, n, [][]byte{data})
}

// UploadsVectors is true: UploadPartVector sends the slices as they are.
func (m *multipart) UploadsVectors() bool { return true }

// UploadPartVector is UploadPart for a part given as slices, read in
// place by every attempt's body.
func (m *multipart) UploadPartVector(ctx context.Context, n int, data [][]byte) error {
	return m.uploadPart(ctx, n, data)
}

func (m *multipart) uploadPart(ctx context.Context, n int, data [][]byte) error {
	if err := blob.CheckPartNumber(n); err != nil {
		return fmt.Errorf("cos upload part of %q: %w", m.key, err)
	}
	size := blob.VectorLen(data)
	opt := &cossdk.ObjectUploadPartOptions{ContentLength: size}
	if m.s.checksum == ChecksumMD5 {
		h := md5.New()
		for _, b := range data {
			h.Write(b)
		}
		opt.ContentMD5 = base64.StdEncoding.EncodeToString(h.Sum(nil))
	}
	var resp *cossdk.Response
	op := fmt.Sprintf("upload part %d", n)
	err := m.s.do(ctx, op, m.key, func(ctx context.Context) (err error) {
		var body io.Reader = blob.NewVectorReader(data)
		if len(data) == 1 {
			body = bytes.NewReader(data[0])
		}
		resp, err = m.s.c.Object.UploadPart(ctx, m.key, m.id, n, body, opt)
		return err
	})
	if err != nil {
		return mapErr(op, m.key, err)
	}
	// The SDK compared the CRC-64 COS answered with the one of the bytes
	// it sent (client.Conf.EnableCRC), so the answer is the part's CRC-64;
	// compute it only when COS gave none.
	crc, perr := strconv.ParseUint(resp.Header.Get("x-cos-hash-crc64ecma"), 10, 64)
	if perr != nil {
		h := crc64.New(crcTable)
		for _, b := range data {
			h.Write(b)
		}
		crc = h.Sum64()
	}
	m.mu.Lock()
	m.parts[n] = part{etag: resp.Header.Get("ETag"), size: size, crc: crc}
	m.mu.Unlock()
	return nil
}

// Complete assembles parts 1..N and checks the object's CRC-64.
func (m *multipart) Complete(ctx context.Context) (blob.Attrs, error) {
	m.mu.Lock()
	parts, total, err := blob.OrderParts(m.parts, func(p part) int64 { return p.size }, MinPartSize)
	m.mu.Unlock()
	if err != nil {
		return blob.Attrs{}, fmt.Errorf("cos complete %q: %w", m.key, err)
	}
	list := make([]cossdk.Object, len(parts))
	var crc uint64
	for i, p := range parts {
		list[i] = cossdk.Object{PartNumber: i + 1, ETag: p.etag}
		crc = crc64Combine(crc, p.crc, p.size)
	}
	var (
		res  *cossdk.CompleteMultipartUploadResult
		resp *cossdk.Response
	)
	err = m.s.do(ctx, "complete multipart", m.key, func(ctx context.Context) (err error) {
		res, resp, err = m.s.c.Object.CompleteMultipartUpload(ctx, m.key, m.id, &cossdk.CompleteMultipartUploadOptions{Parts: list})
		return err
	})
	err = mapErr("complete multipart", m.key, err)
	if errors.Is(err, blob.ErrNotFound) {
		// An earlier attempt may have completed the upload and lost its
		// answer. Accept the object only if its CRC-64 and size are ours.
		if a, ok := m.s.verifyCompleted(ctx, m.key, total, crc); ok {
			a.Metadata = m.md
			return a, nil
		}
	}
	if err != nil {
		return blob.Attrs{}, err
	}
	if v := resp.Header.Get("x-cos-hash-crc64ecma"); v != "" {
		got, perr := strconv.ParseUint(v, 10, 64)
		if perr != nil || got != crc {
			// The assembled object is not what we sent: do not leave it.
			derr := m.s.Delete(context.WithoutCancel(ctx), m.key)
			m.s.log.Warn("cos: completed object has the wrong CRC-64; deleted", "key", m.key, "want", crc, "got", v, "delete_err", derr)
			return blob.Attrs{}, fmt.Errorf("cos complete %q: %w: object CRC-64 %s, parts combine to %d (object deleted: %v)", m.key, blob.ErrBadDigest, v, crc, derr)
		}
	}
	return blob.Attrs{Key: m.key, Size: total, ETag: strings.Trim(res.ETag, `"`), Metadata: m.md}, nil
}

// verifyCompleted checks that key holds an object of size bytes whose
// stored CRC-64 is crc.
func (s *Store) verifyCompleted(ctx context.Context, key string, size int64, crc uint64) (blob.Attrs, bool) {
	var resp *cossdk.Response
	err := s.do(ctx, "head", key, func(ctx context.Context) (err error) {
		resp, err = s.c.Object.Head(ctx, key, nil)
		return err
	})
	if err != nil {
		return blob.Attrs{}, false
	}
	got, err := strconv.ParseUint(resp.Header.Get("x-cos-hash-crc64ecma"), 10, 64)
	a, err2 := headAnswer(key, resp.Header)
	if err != nil || err2 != nil || got != crc || a.Size != size {
		return blob.Attrs{}, false
	}
	return a, true
}

// Abort discards the upload.
func (m *multipart) Abort(ctx context.Context) error {
	return m.s.AbortMultipart(ctx, m.key, m.id)
}

// ListMultipart lists incomplete uploads with keys starting with prefix.
func (s *Store) ListMultipart(ctx context.Context, prefix string) ([]blob.Upload, error) {
	var out []blob.Upload
	keyMarker, idMarker := "", ""
	for page := 0; ; page++ {
		var res *cossdk.ListMultipartUploadsResult
		err := s.do(ctx, "list multipart", prefix, func(ctx context.Context) (err error) {
			res, _, err = s.c.Bucket.ListMultipartUploads(ctx, &cossdk.ListMultipartUploadsOptions{
				Prefix: prefix, EncodingType: "url", KeyMarker: keyMarker, UploadIDMarker: idMarker, MaxUploads: s.pageSize,
			})
			return err
		})
		if err != nil {
			return nil, mapErr("list multipart", prefix, err)
		}
		dec := decoder(res.EncodingType)
		for _, u := range res.Uploads {
			k, err := dec(u.Key)
			if err != nil {
				return nil, fmt.Errorf("cos list multipart %q: undecodable key %q: %w", prefix, u.Key, err)
			}
			if !strings.HasPrefix(k, prefix) {
				continue
			}
			up := blob.Upload{Key: k, UploadID: u.UploadID}
			if t, err := time.Parse(time.RFC3339, u.Initiated); err == nil {
				up.Initiated = t
			}
			out = append(out, up)
		}
		if !res.IsTruncated {
			break
		}
		nk, err := dec(res.NextKeyMarker)
		if err != nil || (nk == keyMarker && res.NextUploadIDMarker == idMarker) {
			return nil, fmt.Errorf("cos list multipart %q: listing does not advance", prefix)
		}
		keyMarker, idMarker = nk, res.NextUploadIDMarker
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// AbortMultipart aborts an upload; blob.ErrNotFound if it does not exist.
func (s *Store) AbortMultipart(ctx context.Context, key, uploadID string) error {
	err := s.do(ctx, "abort multipart", key, func(ctx context.Context) error {
		_, err := s.c.Object.AbortMultipartUpload(ctx, key, uploadID)
		return err
	})
	return mapErr("abort multipart", key, err)
}
