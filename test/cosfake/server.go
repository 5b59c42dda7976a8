package cosfake

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"hash/crc64"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
)

// Config configures a Server.
type Config struct {
	// S3 is the backing S3 client (path-style). Required.
	S3 *s3.Client
	// Credentials maps SecretID to SecretKey. Required.
	Credentials map[string]string
	// AppID is the account's APPID; bucket names end in "-<AppID>".
	AppID string
	// Region is the served region, e.g. "ap-guangzhou".
	Region string
	// Now is the server clock. Default time.Now.
	Now func() time.Time
	// MaxSkew is how far in the future a signature's start may be.
	// Default 15 minutes.
	MaxSkew time.Duration
	// MaxBody bounds a PUT or part body held in memory. Default 256 MiB.
	MaxBody int64
	// Logger logs each request at debug level. Default: discard.
	Logger *slog.Logger
}

// Server is the COS endpoint (an http.Handler).
type Server struct {
	cfg    Config
	hostRE *regexp.Regexp

	mu  sync.Mutex
	crc map[string]uint64 // bucket/key/etag → CRC64 of multipart objects
}

// Reserved S3 metadata keys the fake keeps for itself.
const (
	metaCRC     = "cosfake-crc64"
	metaSSE     = "cosfake-sse"
	metaSSEKey  = "cosfake-sse-kms-key-id"
	metaPrefix  = "cosfake-"
	cosMeta     = "x-cos-meta-"
	iso8601     = "2006-01-02T15:04:05.000Z"
	ownerID     = "qcs::cam::uin/100000000001:uin/100000000001"
	storageStd  = "STANDARD"
	maxListKeys = 1000
)

// New returns a Server.
func New(cfg Config) (*Server, error) {
	if cfg.S3 == nil || len(cfg.Credentials) == 0 || cfg.AppID == "" || cfg.Region == "" {
		return nil, errors.New("cosfake: S3, Credentials, AppID and Region are required")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.MaxSkew == 0 {
		cfg.MaxSkew = 15 * time.Minute
	}
	if cfg.MaxBody == 0 {
		cfg.MaxBody = 256 << 20
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	re := regexp.MustCompile(`^([a-z0-9][a-z0-9-]*)-([0-9]+)\.cos\.([a-z0-9-]+)\.myqcloud\.com$`)
	return &Server{cfg: cfg, hostRE: re, crc: map[string]uint64{}}, nil
}

var crcTable = crc64.MakeTable(crc64.ECMA)

// crc64Of is CRC-64/XZ (ECMA polynomial, reflected, init and xorout ~0),
// the x-cos-hash-crc64ecma algorithm.
func crc64Of(b []byte) uint64 { return crc64.Checksum(b, crcTable) }

type cosError struct {
	XMLName   xml.Name `xml:"Error"`
	Code      string
	Message   string
	Resource  string
	RequestID string `xml:"RequestId"`
	TraceID   string `xml:"TraceId"`
}

func writeError(w http.ResponseWriter, r *http.Request, status int, code, msg string) {
	if r.Method == http.MethodHead {
		w.WriteHeader(status)
		return
	}
	writeXML(w, status, cosError{Code: code, Message: msg, Resource: r.Host + r.URL.Path,
		RequestID: w.Header().Get("x-cos-request-id"), TraceID: w.Header().Get("x-cos-trace-id")})
}

func writeXML(w http.ResponseWriter, status int, v any) {
	b, err := xml.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), 500)
		return
	}
	w.Header().Set("Content-Type", "application/xml")
	w.Header().Set("Content-Length", strconv.Itoa(len(xml.Header)+len(b)))
	w.WriteHeader(status)
	io.WriteString(w, xml.Header)
	w.Write(b)
}

func newID() string {
	var b [12]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// ServeHTTP checks addressing and the signature, then serves the request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("x-cos-request-id", newID())
	w.Header().Set("x-cos-trace-id", newID())
	host := r.Host
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	m := s.hostRE.FindStringSubmatch(strings.ToLower(host))
	if m == nil {
		writeError(w, r, http.StatusForbidden, "PathStyleDomainForbidden",
			fmt.Sprintf("host %q does not name a bucket: COS only accepts virtual-host requests to <bucket>-<appid>.cos.<region>.myqcloud.com", host))
		return
	}
	bucket := m[1] + "-" + m[2]
	if m[2] != s.cfg.AppID || m[3] != s.cfg.Region {
		writeError(w, r, http.StatusNotFound, "NoSuchBucket", "the specified bucket does not exist (wrong appid or region)")
		return
	}
	flavor, err := s.authenticate(r, bucket)
	if err != nil {
		var se *signError
		errors.As(err, &se)
		s.cfg.Logger.Warn("cosfake: request refused", "method", r.Method, "host", r.Host, "path", r.URL.Path, "auth", flavor.String(), "code", se.code, "msg", se.msg)
		writeError(w, r, http.StatusForbidden, se.code, se.msg)
		return
	}
	r = r.WithContext(context.WithValue(r.Context(), flavorKey{}, flavor))
	s.cfg.Logger.Debug("cosfake request", "method", r.Method, "bucket", bucket, "path", r.URL.Path, "query", r.URL.RawQuery, "auth", flavor.String())
	key := strings.TrimPrefix(r.URL.Path, "/")
	q := r.URL.Query()
	if flavor != flavorCOS {
		q.Del("x-id") // aws-sdk-go-v2 names the operation in the query
	}
	_, hasUploads := q["uploads"]
	uploadID, hasUploadID := q["uploadId"]
	ctx := r.Context()

	if key == "" {
		switch {
		case r.Method == http.MethodGet && hasUploads:
			s.listUploads(ctx, w, r, bucket)
		case r.Method == http.MethodGet:
			s.listObjects(ctx, w, r, bucket)
		case r.Method == http.MethodHead:
			_, err := s.cfg.S3.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: &bucket})
			if err != nil {
				s.s3Error(w, r, err)
				return
			}
			w.WriteHeader(http.StatusOK)
		default:
			writeError(w, r, http.StatusNotImplemented, "NotImplemented", "bucket operation not supported by cosfake")
		}
		return
	}
	switch {
	case r.Method == http.MethodPut && q.Has("partNumber") && hasUploadID:
		s.uploadPart(ctx, w, r, bucket, key, q.Get("partNumber"), uploadID[0])
	case r.Method == http.MethodPut && r.Header.Get("x-cos-copy-source") != "":
		writeError(w, r, http.StatusNotImplemented, "NotImplemented", "copy is not supported by cosfake")
	case r.Method == http.MethodPut && len(q) == 0:
		s.putObject(ctx, w, r, bucket, key)
	case r.Method == http.MethodGet && hasUploadID:
		s.listParts(ctx, w, r, bucket, key, uploadID[0])
	case (r.Method == http.MethodGet || r.Method == http.MethodHead) && !hasUploads:
		s.getObject(ctx, w, r, bucket, key)
	case r.Method == http.MethodDelete && hasUploadID:
		s.abort(ctx, w, r, bucket, key, uploadID[0])
	case r.Method == http.MethodDelete && len(q) == 0:
		if _, err := s.cfg.S3.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &bucket, Key: &key}); err != nil {
			s.s3Error(w, r, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	case r.Method == http.MethodPost && hasUploads:
		s.initiate(ctx, w, r, bucket, key)
	case r.Method == http.MethodPost && hasUploadID:
		s.complete(ctx, w, r, bucket, key, uploadID[0])
	default:
		writeError(w, r, http.StatusNotImplemented, "NotImplemented", "operation not supported by cosfake")
	}
}

type flavorKey struct{}

// flavorOf tells how the request was signed (set by ServeHTTP).
func flavorOf(r *http.Request) authFlavor {
	f, _ := r.Context().Value(flavorKey{}).(authFlavor)
	return f
}

// authenticate verifies the request's signature: COS's own (header or
// query), AWS Signature V4 or AWS Signature V2, as COS's S3-compatible
// endpoint takes them. Presigned AWS URLs are refused.
func (s *Server) authenticate(r *http.Request, bucket string) (authFlavor, error) {
	now := s.cfg.Now()
	authz := r.Header.Get("Authorization")
	switch {
	case strings.HasPrefix(authz, "AWS4-"):
		return flavorSigV4, verifySigV4(r, s.cfg.Credentials, now, s.cfg.MaxSkew)
	case strings.HasPrefix(authz, "AWS "):
		return flavorSigV2, verifySigV2(r, bucket, s.cfg.Credentials, now, s.cfg.MaxSkew)
	case r.URL.Query().Has("X-Amz-Signature") || r.URL.Query().Has("Signature"):
		return flavorSigV4, &signError{"AccessDenied", "presigned AWS URLs are not supported by cosfake"}
	}
	return flavorCOS, verify(r, s.cfg.Credentials, now, s.cfg.MaxSkew)
}

// s3Error answers with the backing server's error code and status.
func (s *Server) s3Error(w http.ResponseWriter, r *http.Request, err error) {
	code, status, msg := "InternalError", http.StatusInternalServerError, err.Error()
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		code, msg = apiErr.ErrorCode(), apiErr.ErrorMessage()
	}
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		status = re.HTTPStatusCode()
	}
	switch code {
	case "NotFound":
		code = "NoSuchKey"
	case "BadDigest":
		code = "InvalidDigest"
	}
	if errors.Is(err, context.Canceled) {
		status, code = 499, "ClientClosedRequest"
	}
	writeError(w, r, status, code, msg)
}

// readBody reads a request body of at most MaxBody bytes.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	if r.ContentLength > s.cfg.MaxBody {
		writeError(w, r, http.StatusBadRequest, "EntityTooLarge", "body larger than cosfake's limit")
		return nil, false
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, s.cfg.MaxBody+1))
	if err != nil {
		// A body that fails its signed hash or chunk signatures.
		var se *signError
		if errors.As(err, &se) {
			status := http.StatusBadRequest
			if se.code == "SignatureDoesNotMatch" {
				status = http.StatusForbidden
			}
			writeError(w, r, status, se.code, se.msg)
			return nil, false
		}
		writeError(w, r, http.StatusBadRequest, "IncompleteBody", "reading the body: "+err.Error())
		return nil, false
	}
	if int64(len(b)) > s.cfg.MaxBody {
		writeError(w, r, http.StatusBadRequest, "EntityTooLarge", "body larger than cosfake's limit")
		return nil, false
	}
	if r.ContentLength >= 0 && int64(len(b)) != r.ContentLength {
		writeError(w, r, http.StatusBadRequest, "IncompleteBody", "body shorter than Content-Length")
		return nil, false
	}
	return b, true
}

// checkMD5 verifies Content-MD5 when present (400 InvalidDigest otherwise)
// and returns the body's MD5.
func checkMD5(w http.ResponseWriter, r *http.Request, body []byte) ([]byte, bool) {
	sum := md5.Sum(body)
	h := r.Header.Get("Content-MD5")
	if h == "" {
		return sum[:], true
	}
	want, err := base64.StdEncoding.DecodeString(h)
	if err != nil || len(want) != md5.Size {
		writeError(w, r, http.StatusBadRequest, "InvalidDigest", "Content-MD5 is not a base64 MD5")
		return nil, false
	}
	if !bytes.Equal(want, sum[:]) {
		writeError(w, r, http.StatusBadRequest, "InvalidDigest", "the Content-MD5 you specified did not match what we received")
		return nil, false
	}
	return sum[:], true
}

// userMeta maps x-cos-meta-* headers to S3 metadata; reserved names are
// refused.
func userMeta(w http.ResponseWriter, r *http.Request) (map[string]string, bool) {
	md := map[string]string{}
	size := 0
	prefix := flavorOf(r).metaPrefix()
	for k, vs := range r.Header {
		lk := strings.ToLower(k)
		if !strings.HasPrefix(lk, prefix) {
			continue
		}
		name := lk[len(prefix):]
		if strings.HasPrefix(name, metaPrefix) {
			writeError(w, r, http.StatusBadRequest, "InvalidArgument", "metadata names starting with cosfake- are reserved")
			return nil, false
		}
		md[name] = strings.Join(vs, ",")
		size += len(name) + len(md[name])
	}
	if size > 2048 {
		writeError(w, r, http.StatusBadRequest, "KeyTooLong", "user metadata larger than 2 KB")
		return nil, false
	}
	if v := r.Header.Get("x-cos-server-side-encryption"); v != "" {
		md[metaSSE] = v
		if id := r.Header.Get("x-cos-server-side-encryption-cos-kms-key-id"); id != "" {
			md[metaSSEKey] = id
		}
	}
	return md, true
}

func (s *Server) putObject(ctx context.Context, w http.ResponseWriter, r *http.Request, bucket, key string) {
	body, ok := s.readBody(w, r)
	if !ok {
		return
	}
	sum, ok := checkMD5(w, r, body)
	if !ok {
		return
	}
	md, ok := userMeta(w, r)
	if !ok {
		return
	}
	crc := crc64Of(body)
	md[metaCRC] = strconv.FormatUint(crc, 10)
	in := &s3.PutObjectInput{Bucket: &bucket, Key: &key, Body: bytes.NewReader(body), ContentLength: aws.Int64(int64(len(body))),
		ContentMD5: aws.String(base64.StdEncoding.EncodeToString(sum)), Metadata: md}
	if ct := r.Header.Get("Content-Type"); ct != "" {
		in.ContentType = &ct
	}
	out, err := s.cfg.S3.PutObject(ctx, in)
	if err != nil {
		s.s3Error(w, r, err)
		return
	}
	w.Header().Set("ETag", aws.ToString(out.ETag))
	w.Header().Set("x-cos-hash-crc64ecma", strconv.FormatUint(crc, 10))
	echoSSE(w, md)
	w.WriteHeader(http.StatusOK)
}

func echoSSE(w http.ResponseWriter, md map[string]string) {
	if v := md[metaSSE]; v != "" {
		w.Header().Set("x-cos-server-side-encryption", v)
	}
	if v := md[metaSSEKey]; v != "" {
		w.Header().Set("x-cos-server-side-encryption-cos-kms-key-id", v)
	}
}

// objectCRC returns the stored CRC64 of a whole object.
func (s *Server) objectCRC(ctx context.Context, bucket, key, etag string, md map[string]string) (uint64, error) {
	if v, ok := md[metaCRC]; ok {
		return strconv.ParseUint(v, 10, 64)
	}
	ck := bucket + "/" + key + "/" + etag
	s.mu.Lock()
	v, ok := s.crc[ck]
	s.mu.Unlock()
	if ok {
		return v, nil
	}
	out, err := s.cfg.S3.GetObject(ctx, &s3.GetObjectInput{Bucket: &bucket, Key: &key, IfMatch: aws.String(etag)})
	if err != nil {
		return 0, err
	}
	defer out.Body.Close()
	h := crc64.New(crcTable)
	if _, err := io.Copy(h, out.Body); err != nil {
		return 0, err
	}
	v = h.Sum64()
	s.rememberCRC(ck, v)
	return v, nil
}

func (s *Server) rememberCRC(ck string, v uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.crc) > 100000 {
		s.crc = map[string]uint64{}
	}
	s.crc[ck] = v
}

func (s *Server) getObject(ctx context.Context, w http.ResponseWriter, r *http.Request, bucket, key string) {
	var (
		size                int64
		etag, ctype, crange string
		mod                 *time.Time
		md                  map[string]string
		body                io.ReadCloser
		ifMatch, ifNone     *string
		rangeHdr            = r.Header.Get("Range")
		status              = http.StatusOK
	)
	if v := r.Header.Get("If-Match"); v != "" {
		ifMatch = &v
	}
	if v := r.Header.Get("If-None-Match"); v != "" {
		ifNone = &v
	}
	if r.Method == http.MethodHead {
		out, err := s.cfg.S3.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &bucket, Key: &key, IfMatch: ifMatch, IfNoneMatch: ifNone})
		if err != nil {
			s.s3Error(w, r, err)
			return
		}
		size, etag, ctype, mod, md = aws.ToInt64(out.ContentLength), aws.ToString(out.ETag), aws.ToString(out.ContentType), out.LastModified, out.Metadata
	} else {
		in := &s3.GetObjectInput{Bucket: &bucket, Key: &key, IfMatch: ifMatch, IfNoneMatch: ifNone}
		if rangeHdr != "" {
			in.Range = &rangeHdr
		}
		out, err := s.cfg.S3.GetObject(ctx, in)
		if err != nil {
			s.s3Error(w, r, err)
			return
		}
		body = out.Body
		defer body.Close()
		size, etag, ctype, mod, md = aws.ToInt64(out.ContentLength), aws.ToString(out.ETag), aws.ToString(out.ContentType), out.LastModified, out.Metadata
		if crange = aws.ToString(out.ContentRange); crange != "" {
			status = http.StatusPartialContent
		}
	}
	crc, err := s.objectCRC(ctx, bucket, key, etag, md)
	if err != nil {
		s.s3Error(w, r, err)
		return
	}
	h := w.Header()
	h.Set("Content-Length", strconv.FormatInt(size, 10))
	h.Set("ETag", etag)
	h.Set("Accept-Ranges", "bytes")
	h.Set("x-cos-hash-crc64ecma", strconv.FormatUint(crc, 10))
	if ctype != "" {
		h.Set("Content-Type", ctype)
	}
	if mod != nil {
		h.Set("Last-Modified", mod.UTC().Format(http.TimeFormat))
	}
	if crange != "" {
		h.Set("Content-Range", crange)
	}
	// User metadata under the request's flavor: x-cos-meta-* for COS
	// signatures, x-amz-meta-* for AWS ones (what jclouds parses).
	prefix := flavorOf(r).metaPrefix()
	for k, v := range md {
		if !strings.HasPrefix(k, metaPrefix) {
			h.Set(prefix+k, v)
		}
	}
	echoSSE(w, md)
	w.WriteHeader(status)
	if body != nil {
		io.Copy(w, body)
	}
}

type listResult struct {
	XMLName        xml.Name       `xml:"ListBucketResult"`
	Name           string         `xml:"Name"`
	Prefix         string         `xml:"Prefix"`
	Marker         string         `xml:"Marker"`
	NextMarker     string         `xml:"NextMarker,omitempty"`
	Delimiter      string         `xml:"Delimiter,omitempty"`
	MaxKeys        int            `xml:"MaxKeys"`
	IsTruncated    bool           `xml:"IsTruncated"`
	EncodingType   string         `xml:"EncodingType,omitempty"`
	Contents       []listObject   `xml:"Contents"`
	CommonPrefixes []commonPrefix `xml:"CommonPrefixes,omitempty"`
}

type commonPrefix struct {
	Prefix string `xml:"Prefix"`
}

type owner struct {
	ID          string `xml:"ID"`
	DisplayName string `xml:"DisplayName"`
}

type listObject struct {
	Key          string `xml:"Key"`
	LastModified string `xml:"LastModified"`
	ETag         string `xml:"ETag"`
	Size         int64  `xml:"Size"`
	StorageClass string `xml:"StorageClass"`
	Owner        owner  `xml:"Owner"`
}

func maxKeys(w http.ResponseWriter, r *http.Request, name string) (int32, bool) {
	n := maxListKeys
	if v := r.URL.Query().Get(name); v != "" {
		var err error
		n, err = strconv.Atoi(v)
		if err != nil || n < 0 {
			writeError(w, r, http.StatusBadRequest, "InvalidArgument", name+" must be a non-negative integer")
			return 0, false
		}
		n = min(n, maxListKeys)
	}
	return int32(n), true
}

// queryValue returns a pointer to the query parameter's value, nil when it
// is absent or empty (an optional S3 input field).
func queryValue(q url.Values, name string) *string {
	if v := q.Get(name); v != "" {
		return &v
	}
	return nil
}

// encoder returns SafeURLEncode for encoding-type "url", else the
// identity.
func encoder(encodingType string) func(string) string {
	if encodingType == "url" {
		return SafeURLEncode
	}
	return func(s string) string { return s }
}

func (s *Server) listObjects(ctx context.Context, w http.ResponseWriter, r *http.Request, bucket string) {
	q := r.URL.Query()
	enc := q.Get("encoding-type")
	if enc != "" && enc != "url" {
		writeError(w, r, http.StatusBadRequest, "InvalidArgument", "encoding-type must be url")
		return
	}
	mk, ok := maxKeys(w, r, "max-keys")
	if !ok {
		return
	}
	in := &s3.ListObjectsInput{Bucket: &bucket, MaxKeys: aws.Int32(mk),
		Prefix: queryValue(q, "prefix"), Delimiter: queryValue(q, "delimiter"), Marker: queryValue(q, "marker")}
	out, err := s.cfg.S3.ListObjects(ctx, in)
	if err != nil {
		s.s3Error(w, r, err)
		return
	}
	e := encoder(enc)
	res := listResult{Name: bucket, Prefix: e(q.Get("prefix")), Marker: e(q.Get("marker")), Delimiter: e(q.Get("delimiter")),
		MaxKeys: int(mk), IsTruncated: aws.ToBool(out.IsTruncated), EncodingType: enc}
	last := ""
	for _, o := range out.Contents {
		res.Contents = append(res.Contents, listObject{Key: e(aws.ToString(o.Key)), LastModified: aws.ToTime(o.LastModified).UTC().Format(iso8601),
			ETag: aws.ToString(o.ETag), Size: aws.ToInt64(o.Size), StorageClass: storageStd, Owner: owner{ownerID, ownerID}})
		last = max(last, aws.ToString(o.Key))
	}
	for _, p := range out.CommonPrefixes {
		res.CommonPrefixes = append(res.CommonPrefixes, commonPrefix{e(aws.ToString(p.Prefix))})
		last = max(last, aws.ToString(p.Prefix))
	}
	if res.IsTruncated {
		next := aws.ToString(out.NextMarker)
		if next == "" {
			next = last
		}
		res.NextMarker = e(next)
	}
	writeXML(w, http.StatusOK, res)
}

// The COS upload ID is the hex of the S3 one.
func toCOSUploadID(s3ID string) string { return hex.EncodeToString([]byte(s3ID)) }

func fromCOSUploadID(w http.ResponseWriter, r *http.Request, id string) (string, bool) {
	b, err := hex.DecodeString(id)
	if err != nil || len(b) == 0 {
		writeError(w, r, http.StatusNotFound, "NoSuchUpload", "the specified upload does not exist")
		return "", false
	}
	return string(b), true
}

type initiateResult struct {
	XMLName  xml.Name `xml:"InitiateMultipartUploadResult"`
	Bucket   string   `xml:"Bucket"`
	Key      string   `xml:"Key"`
	UploadID string   `xml:"UploadId"`
}

func (s *Server) initiate(ctx context.Context, w http.ResponseWriter, r *http.Request, bucket, key string) {
	md, ok := userMeta(w, r)
	if !ok {
		return
	}
	in := &s3.CreateMultipartUploadInput{Bucket: &bucket, Key: &key, Metadata: md}
	if ct := r.Header.Get("Content-Type"); ct != "" {
		in.ContentType = &ct
	}
	out, err := s.cfg.S3.CreateMultipartUpload(ctx, in)
	if err != nil {
		s.s3Error(w, r, err)
		return
	}
	echoSSE(w, md)
	writeXML(w, http.StatusOK, initiateResult{Bucket: bucket, Key: key, UploadID: toCOSUploadID(aws.ToString(out.UploadId))})
}

func (s *Server) uploadPart(ctx context.Context, w http.ResponseWriter, r *http.Request, bucket, key, partNumber, cosID string) {
	n, err := strconv.Atoi(partNumber)
	if err != nil || n < 1 || n > 10000 {
		writeError(w, r, http.StatusBadRequest, "InvalidArgument", "partNumber must be 1..10000")
		return
	}
	id, ok := fromCOSUploadID(w, r, cosID)
	if !ok {
		return
	}
	body, ok := s.readBody(w, r)
	if !ok {
		return
	}
	sum, ok := checkMD5(w, r, body)
	if !ok {
		return
	}
	out, err := s.cfg.S3.UploadPart(ctx, &s3.UploadPartInput{Bucket: &bucket, Key: &key, UploadId: &id, PartNumber: aws.Int32(int32(n)),
		Body: bytes.NewReader(body), ContentLength: aws.Int64(int64(len(body))), ContentMD5: aws.String(base64.StdEncoding.EncodeToString(sum))})
	if err != nil {
		s.s3Error(w, r, err)
		return
	}
	w.Header().Set("ETag", aws.ToString(out.ETag))
	w.Header().Set("x-cos-hash-crc64ecma", strconv.FormatUint(crc64Of(body), 10))
	w.WriteHeader(http.StatusOK)
}

type completeRequest struct {
	XMLName xml.Name `xml:"CompleteMultipartUpload"`
	Parts   []struct {
		PartNumber int32  `xml:"PartNumber"`
		ETag       string `xml:"ETag"`
	} `xml:"Part"`
}

type completeResult struct {
	XMLName  xml.Name `xml:"CompleteMultipartUploadResult"`
	Location string   `xml:"Location"`
	Bucket   string   `xml:"Bucket"`
	Key      string   `xml:"Key"`
	ETag     string   `xml:"ETag"`
}

func (s *Server) complete(ctx context.Context, w http.ResponseWriter, r *http.Request, bucket, key, cosID string) {
	id, ok := fromCOSUploadID(w, r, cosID)
	if !ok {
		return
	}
	body, ok := s.readBody(w, r)
	if !ok {
		return
	}
	if _, ok := checkMD5(w, r, body); !ok {
		return
	}
	var req completeRequest
	if err := xml.Unmarshal(body, &req); err != nil || len(req.Parts) == 0 {
		writeError(w, r, http.StatusBadRequest, "MalformedXML", "the XML you provided was not well-formed or did not validate")
		return
	}
	parts := make([]types.CompletedPart, len(req.Parts))
	for i, p := range req.Parts {
		parts[i] = types.CompletedPart{PartNumber: aws.Int32(p.PartNumber), ETag: aws.String(p.ETag)}
	}
	out, err := s.cfg.S3.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: &bucket, Key: &key, UploadId: &id,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}})
	if err != nil {
		s.s3Error(w, r, err)
		return
	}
	etag := aws.ToString(out.ETag)
	crc, err := s.objectCRC(ctx, bucket, key, etag, nil)
	if err != nil {
		s.s3Error(w, r, err)
		return
	}
	w.Header().Set("x-cos-hash-crc64ecma", strconv.FormatUint(crc, 10))
	writeXML(w, http.StatusOK, completeResult{Location: r.Host + "/" + key, Bucket: bucket, Key: key, ETag: etag})
}

func (s *Server) abort(ctx context.Context, w http.ResponseWriter, r *http.Request, bucket, key, cosID string) {
	id, ok := fromCOSUploadID(w, r, cosID)
	if !ok {
		return
	}
	if _, err := s.cfg.S3.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &bucket, Key: &key, UploadId: &id}); err != nil {
		s.s3Error(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

type uploadsResult struct {
	XMLName            xml.Name      `xml:"ListMultipartUploadsResult"`
	Bucket             string        `xml:"Bucket"`
	EncodingType       string        `xml:"Encoding-Type,omitempty"`
	KeyMarker          string        `xml:"KeyMarker"`
	UploadIDMarker     string        `xml:"UploadIdMarker"`
	NextKeyMarker      string        `xml:"NextKeyMarker"`
	NextUploadIDMarker string        `xml:"NextUploadIdMarker"`
	MaxUploads         int           `xml:"MaxUploads"`
	IsTruncated        bool          `xml:"IsTruncated"`
	Prefix             string        `xml:"Prefix"`
	Uploads            []uploadEntry `xml:"Upload"`
}

type uploadEntry struct {
	Key          string `xml:"Key"`
	UploadID     string `xml:"UploadId"`
	StorageClass string `xml:"StorageClass"`
	Initiator    owner  `xml:"Initiator"`
	Owner        owner  `xml:"Owner"`
	Initiated    string `xml:"Initiated"`
}

func (s *Server) listUploads(ctx context.Context, w http.ResponseWriter, r *http.Request, bucket string) {
	q := r.URL.Query()
	enc := q.Get("encoding-type")
	mu, ok := maxKeys(w, r, "max-uploads")
	if !ok {
		return
	}
	in := &s3.ListMultipartUploadsInput{Bucket: &bucket, MaxUploads: aws.Int32(mu), Prefix: queryValue(q, "prefix")}
	if in.KeyMarker = queryValue(q, "key-marker"); in.KeyMarker != nil {
		if u := q.Get("upload-id-marker"); u != "" {
			id, ok := fromCOSUploadID(w, r, u)
			if !ok {
				return
			}
			in.UploadIdMarker = &id
		}
	}
	out, err := s.cfg.S3.ListMultipartUploads(ctx, in)
	if err != nil {
		s.s3Error(w, r, err)
		return
	}
	e := encoder(enc)
	res := uploadsResult{Bucket: bucket, EncodingType: enc, KeyMarker: e(q.Get("key-marker")), UploadIDMarker: q.Get("upload-id-marker"),
		MaxUploads: int(mu), IsTruncated: aws.ToBool(out.IsTruncated), Prefix: e(q.Get("prefix"))}
	if res.IsTruncated {
		res.NextKeyMarker = e(aws.ToString(out.NextKeyMarker))
		if v := aws.ToString(out.NextUploadIdMarker); v != "" {
			res.NextUploadIDMarker = toCOSUploadID(v)
		}
	}
	ups := out.Uploads
	sort.SliceStable(ups, func(i, j int) bool { return aws.ToString(ups[i].Key) < aws.ToString(ups[j].Key) })
	for _, u := range ups {
		res.Uploads = append(res.Uploads, uploadEntry{e(aws.ToString(u.Key)), toCOSUploadID(aws.ToString(u.UploadId)), storageStd, owner{ownerID, ownerID}, owner{ownerID, ownerID},
			aws.ToTime(u.Initiated).UTC().Format(iso8601)})
	}
	writeXML(w, http.StatusOK, res)
}

type partsResult struct {
	XMLName              xml.Name    `xml:"ListPartsResult"`
	Bucket               string      `xml:"Bucket"`
	Key                  string      `xml:"Key"`
	UploadID             string      `xml:"UploadId"`
	StorageClass         string      `xml:"StorageClass"`
	PartNumberMarker     string      `xml:"PartNumberMarker"`
	NextPartNumberMarker string      `xml:"NextPartNumberMarker,omitempty"`
	MaxParts             int         `xml:"MaxParts"`
	IsTruncated          bool        `xml:"IsTruncated"`
	Parts                []partEntry `xml:"Part"`
}

type partEntry struct {
	PartNumber   int32  `xml:"PartNumber"`
	LastModified string `xml:"LastModified"`
	ETag         string `xml:"ETag"`
	Size         int64  `xml:"Size"`
}

func (s *Server) listParts(ctx context.Context, w http.ResponseWriter, r *http.Request, bucket, key, cosID string) {
	id, ok := fromCOSUploadID(w, r, cosID)
	if !ok {
		return
	}
	mp, ok := maxKeys(w, r, "max-parts")
	if !ok {
		return
	}
	in := &s3.ListPartsInput{Bucket: &bucket, Key: &key, UploadId: &id, MaxParts: aws.Int32(mp),
		PartNumberMarker: queryValue(r.URL.Query(), "part-number-marker")}
	out, err := s.cfg.S3.ListParts(ctx, in)
	if err != nil {
		s.s3Error(w, r, err)
		return
	}
	res := partsResult{Bucket: bucket, Key: key, UploadID: cosID, StorageClass: storageStd, PartNumberMarker: aws.ToString(out.PartNumberMarker),
		MaxParts: int(mp), IsTruncated: aws.ToBool(out.IsTruncated)}
	if res.IsTruncated {
		res.NextPartNumberMarker = aws.ToString(out.NextPartNumberMarker)
	}
	for _, p := range out.Parts {
		res.Parts = append(res.Parts, partEntry{aws.ToInt32(p.PartNumber), aws.ToTime(p.LastModified).UTC().Format(iso8601), aws.ToString(p.ETag), aws.ToInt64(p.Size)})
	}
	writeXML(w, http.StatusOK, res)
}
