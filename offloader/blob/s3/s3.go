package s3

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/credentials/stscreds"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/logging"
	"github.com/aws/smithy-go/middleware"

	"github.com/tierkeeper/tierkeeper/internal/crc32c"
	"github.com/tierkeeper/tierkeeper/offloader/blob"
)

// Options are the non-config dependencies of New.
type Options struct {
	// Logger receives retry notices (debug) and cleanup warnings. Default:
	// discard. Request dumps are never logged (they carry tokens).
	Logger *slog.Logger
	// Limiter paces requests and bytes on the wire (shared per process).
	// Default: none.
	Limiter *blob.Limiter
	// Transport replaces the HTTP transport (tests: fault injection). The
	// Limiter wraps it.
	Transport http.RoundTripper
	// DialContext replaces the dialer of the default transport (tests:
	// virtual-host names dialled at 127.0.0.1).
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)
	// ListPageSize is the page size of listings (1..1000). Default 1000.
	ListPageSize int32
	// Getenv reads the environment (source env, web_identity defaults).
	// Default os.Getenv.
	Getenv func(string) string
}

// Store is an S3 bucket.
type Store struct {
	client   *s3.Client
	http     *http.Client
	bucket   string
	sse      SSE
	log      *slog.Logger
	pageSize int32
	checksum string
	// signing adjusts the SigV4 payload hash of Put and UploadPart
	// (nil: the SDK's choice, signed over http, unsigned over https).
	signing func(*s3.Options)
}

var (
	_ blob.Store           = (*Store)(nil)
	_ blob.MultipartLister = (*Store)(nil)
	_ blob.VectorMultipart = (*multipart)(nil)
	_ blob.PartCRC32CUser  = (*Store)(nil)
)

// New builds a store. Credentials are resolved lazily, at the first request
// (an error then names the source).
func New(ctx context.Context, cfg Config, opts Options) (*Store, error) {
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

	loadOpts := []func(*config.LoadOptions) error{
		config.WithLogger(logging.LoggerFunc(func(c logging.Classification, format string, v ...any) {
			log.Debug("s3 sdk: "+fmt.Sprintf(format, v...), "class", string(c))
		})),
		config.WithClientLogMode(aws.LogRetries),
		config.WithRetryer(func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxAttempts = cfg.Retry.MaxAttempts
				o.MaxBackoff = cfg.Retry.MaxBackoff.D()
				// First: an endpoint that fails TLS verification fails
				// every attempt the same way (the SDK retries every
				// failed send).
				o.Retryables = append([]retry.IsErrorRetryable{untrustedServerIsFinal{}}, o.Retryables...)
				o.Retryables = append(o.Retryables, retry.RetryableErrorCode{Codes: map[string]struct{}{
					"BadDigest": {}, "XAmzContentSHA256Mismatch": {}, "InternalError": {}, "ServiceUnavailable": {},
				}})
			})
		}),
	}
	if cfg.Region != "" {
		loadOpts = append(loadOpts, config.WithRegion(cfg.Region))
	}
	cr := cfg.Credentials
	switch cr.Source {
	case SourceStatic:
		loadOpts = append(loadOpts, config.WithCredentialsProvider(
			credentials.NewStaticCredentialsProvider(cr.AccessKeyID, cr.SecretAccessKey.Reveal(), cr.SessionToken.Reveal())))
	case SourceEnv:
		id := blob.FirstEnv(getenv, "AWS_ACCESS_KEY_ID", "AWS_ACCESS_KEY")
		secret := blob.FirstEnv(getenv, "AWS_SECRET_ACCESS_KEY", "AWS_SECRET_KEY")
		if id == "" || secret == "" {
			return nil, errors.New("s3: credentials.source env: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY must be set")
		}
		loadOpts = append(loadOpts, config.WithCredentialsProvider(
			credentials.NewStaticCredentialsProvider(id, secret, getenv("AWS_SESSION_TOKEN"))))
	case SourceProfile:
		profile := cr.Profile
		if profile == "" {
			profile = "default"
		}
		loadOpts = append(loadOpts, config.WithSharedConfigProfile(profile))
		if cr.SharedCredentialsFile != "" {
			loadOpts = append(loadOpts, config.WithSharedCredentialsFiles([]string{cr.SharedCredentialsFile}))
		}
		if cr.SharedConfigFile != "" {
			loadOpts = append(loadOpts, config.WithSharedConfigFiles([]string{cr.SharedConfigFile}))
		}
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, loadOpts...)
	if err != nil {
		return nil, fmt.Errorf("s3: load AWS config (credentials.source %s): %w", cr.Source, err)
	}
	if awsCfg.Region == "" {
		return nil, errors.New("s3: no region: set config key region (or AWS_REGION)")
	}
	// The SDK's buildable client honours AWS_CA_BUNDLE; take its transport
	// and add our timeouts, dialer and limiter.
	tr := opts.Transport
	if tr == nil {
		bc, ok := awsCfg.HTTPClient.(*awshttp.BuildableClient)
		if !ok {
			bc = awshttp.NewBuildableClient()
		}
		bc = bc.WithTransportOptions(func(t *http.Transport) {
			t.ResponseHeaderTimeout = cfg.ResponseHeaderTimeout.D()
			t.MaxIdleConnsPerHost = 64
			if opts.DialContext != nil {
				t.DialContext = opts.DialContext
			}
			// A part's body goes to the socket without net/http's 32 KiB
			// copies: a gather list in one writev, or over TLS encrypted
			// from its slices and sent 256 KiB of records at a time.
			blob.BodyWrites(t)
		})
		tr = bc.GetTransport()
	}
	httpClient := &http.Client{Transport: opts.Limiter.Transport(tr)}
	awsCfg.HTTPClient = httpClient
	if cr.Source == SourceWebIdentity {
		roleARN := cr.RoleARN
		if roleARN == "" {
			roleARN = getenv("AWS_ROLE_ARN")
		}
		tokenFile := cr.WebIdentityTokenFile
		if tokenFile == "" {
			tokenFile = getenv("AWS_WEB_IDENTITY_TOKEN_FILE")
		}
		if roleARN == "" || tokenFile == "" {
			return nil, errors.New("s3: credentials.source web_identity needs credentials.role_arn and credentials.web_identity_token_file (or AWS_ROLE_ARN and AWS_WEB_IDENTITY_TOKEN_FILE)")
		}
		stsClient := sts.NewFromConfig(awsCfg, func(o *sts.Options) {
			if cr.STSEndpoint != "" {
				o.BaseEndpoint = aws.String(cr.STSEndpoint)
			}
		})
		awsCfg.Credentials = aws.NewCredentialsCache(stscreds.NewWebIdentityRoleProvider(stsClient, roleARN,
			stscreds.IdentityTokenFile(tokenFile), func(o *stscreds.WebIdentityRoleOptions) {
				o.RoleSessionName = cr.RoleSessionName
			}))
	}

	client := s3.NewFromConfig(awsCfg, func(o *s3.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
		o.UsePathStyle = cfg.Addressing == "path"
		// We send the checksums ourselves, as headers (Content-MD5 or
		// x-amz-checksum-crc32c): the SDK's default CRC32 trailers
		// (aws-chunked) are not understood by every S3-compatible server.
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
		o.DisableLogOutputChecksumValidationSkipped = true
	})
	ps := opts.ListPageSize
	if ps <= 0 || ps > 1000 {
		ps = 1000
	}
	return &Store{client: client, http: httpClient, bucket: cfg.Bucket, sse: cfg.SSE, log: log, pageSize: ps,
		checksum: cfg.Checksum, signing: payloadSigning(cfg.PayloadSigning)}, nil
}

// untrustedServerIsFinal stops the retries of a call whose endpoint
// failed TLS verification (blob.UntrustedServer).
type untrustedServerIsFinal struct{}

func (untrustedServerIsFinal) IsErrorRetryable(err error) aws.Ternary {
	if blob.UntrustedServer(err) {
		return aws.FalseTernary
	}
	return aws.UnknownTernary
}

// payloadSigning returns the per-call option that makes the SigV4
// payload hash of a Put or UploadPart follow mode. The SDK's own choice
// for both (mode auto) is to sign the SHA-256 over http and send
// UNSIGNED-PAYLOAD over https.
func payloadSigning(mode string) func(*s3.Options) {
	var m middleware.FinalizeMiddleware
	switch mode {
	case PayloadSigningUnsigned:
		m = &v4.UnsignedPayload{}
	case PayloadSigningSigned:
		m = &v4.ComputePayloadSHA256{}
	default:
		return nil
	}
	return s3.WithAPIOptions(func(st *middleware.Stack) error {
		if _, err := st.Finalize.Swap((&v4.ComputePayloadSHA256{}).ID(), m); err != nil {
			return fmt.Errorf("s3: payload_signing %s: %w", mode, err)
		}
		return nil
	})
}

// callOptions are the per-call options of a Put or UploadPart.
func (s *Store) callOptions() []func(*s3.Options) {
	if s.signing == nil {
		return nil
	}
	return []func(*s3.Options){s.signing}
}

// Name returns "s3://<bucket>".
func (s *Store) Name() string { return "s3://" + s.bucket }

// UsesPartCRC32C is true with checksum crc32c: UploadPart sends the part
// CRC-32C given with blob.WithPartCRC32C as x-amz-checksum-crc32c. With
// Content-MD5 it is ignored.
func (s *Store) UsesPartCRC32C() bool { return s.checksum == ChecksumCRC32C }

// Close releases idle connections; the store stays usable.
func (s *Store) Close() error {
	s.http.CloseIdleConnections()
	return nil
}

// mapErr wraps an SDK error with the operation, key and a blob sentinel.
func mapErr(op, key string, err error) error {
	if err == nil {
		return nil
	}
	var sentinel error
	var apiErr smithy.APIError
	code := ""
	if errors.As(err, &apiErr) {
		code = apiErr.ErrorCode()
	}
	status := 0
	var respErr *awshttp.ResponseError
	if errors.As(err, &respErr) {
		status = respErr.HTTPStatusCode()
	}
	switch {
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
	case code == "NoSuchKey" || code == "NoSuchUpload" || code == "NotFound" || (status == 404 && code != "NoSuchBucket"):
		sentinel = blob.ErrNotFound
	case code == "InvalidRange" || status == 416:
		sentinel = blob.ErrInvalidRange
	case code == "BadDigest" || code == "InvalidDigest" || code == "XAmzContentSHA256Mismatch":
		sentinel = blob.ErrBadDigest
	case code == "EntityTooSmall":
		sentinel = blob.ErrPartTooSmall
	case code == "InvalidPart" || code == "InvalidPartOrder":
		sentinel = blob.ErrMissingPart
	case status == 403 || code == "AccessDenied" || code == "SignatureDoesNotMatch" || code == "InvalidAccessKeyId":
		sentinel = blob.ErrAccessDenied
	}
	if sentinel != nil {
		return fmt.Errorf("s3 %s %q: %w: %w", op, key, sentinel, err)
	}
	return fmt.Errorf("s3 %s %q: %w", op, key, err)
}

func attrsFromHead(key string, size int64, etag *string, mod *time.Time, md map[string]string) blob.Attrs {
	a := blob.Attrs{Key: key, Size: size, ETag: strings.Trim(aws.ToString(etag), `"`)}
	if mod != nil {
		a.LastModified = *mod
	}
	if len(md) > 0 {
		a.Metadata = make(map[string]string, len(md))
		for k, v := range md {
			a.Metadata[strings.ToLower(k)] = v
		}
	}
	return a
}

// Head returns the object's attributes.
func (s *Store) Head(ctx context.Context, key string) (blob.Attrs, error) {
	if err := blob.ValidateKey(key); err != nil {
		return blob.Attrs{}, err
	}
	out, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &s.bucket, Key: &key})
	if err != nil {
		return blob.Attrs{}, mapErr("head", key, err)
	}
	return attrsFromHead(key, aws.ToInt64(out.ContentLength), out.ETag, out.LastModified, out.Metadata), nil
}

// Get streams the whole object.
func (s *Store) Get(ctx context.Context, key string) (io.ReadCloser, blob.Attrs, error) {
	return s.GetRange(ctx, key, 0, -1)
}

// GetRange streams length bytes at off (length < 0: to the end).
func (s *Store) GetRange(ctx context.Context, key string, off, length int64) (io.ReadCloser, blob.Attrs, error) {
	if err := blob.ValidateKey(key); err != nil {
		return nil, blob.Attrs{}, err
	}
	if off < 0 {
		return nil, blob.Attrs{}, fmt.Errorf("s3 get %q: %w: negative offset %d", key, blob.ErrInvalidRange, off)
	}
	if length == 0 {
		return blob.EmptyRange(ctx, s, "s3 get", key, off, length)
	}
	in := &s3.GetObjectInput{Bucket: &s.bucket, Key: &key}
	rng := blob.HTTPRange(off, length)
	if rng != "" {
		in.Range = &rng
	}
	out, err := s.client.GetObject(ctx, in)
	if err != nil {
		err = mapErr("get", key, err)
		if errors.Is(err, blob.ErrInvalidRange) {
			// S3 answers 416 for "bytes=<size>-"; reading from the end
			// is an empty read here.
			return blob.EmptyRange(ctx, s, "s3 get", key, off, length)
		}
		return nil, blob.Attrs{}, err
	}
	got := aws.ToInt64(out.ContentLength)
	size := got
	if rng != "" {
		if size, err = blob.CheckRangeAnswer("s3 get", key, aws.ToString(out.ContentRange), got, off, length); err != nil {
			out.Body.Close()
			return nil, blob.Attrs{}, err
		}
	}
	a := attrsFromHead(key, size, out.ETag, out.LastModified, out.Metadata)
	return &exactBody{rc: out.Body, left: got, key: key}, a, nil
}

// exactBody fails with io.ErrUnexpectedEOF if the body ends early and
// reports an error if it runs long.
type exactBody struct {
	rc   io.ReadCloser
	left int64
	key  string
}

func (b *exactBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		var one [1]byte
		if n, _ := b.rc.Read(one[:]); n > 0 {
			return 0, fmt.Errorf("s3 get %q: body longer than Content-Length", b.key)
		}
		return 0, io.EOF
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	if err == io.EOF && b.left > 0 {
		return n, fmt.Errorf("s3 get %q: body ended %d bytes early: %w", b.key, b.left, io.ErrUnexpectedEOF)
	}
	if err == io.EOF {
		err = nil
		if n == 0 {
			err = io.EOF
		}
	}
	if err != nil && err != io.EOF {
		err = fmt.Errorf("s3 get %q: %w", b.key, err)
	}
	return n, err
}

func (b *exactBody) Close() error { return b.rc.Close() }

// Iter lists keys with prefix in ascending order.
func (s *Store) Iter(ctx context.Context, prefix string, fn func(blob.Attrs) error) error {
	p := s3.NewListObjectsV2Paginator(s.client, &s3.ListObjectsV2Input{
		Bucket: &s.bucket, Prefix: aws.String(prefix), MaxKeys: aws.Int32(s.pageSize),
	})
	last := ""
	first := true
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return mapErr("list", prefix, err)
		}
		for _, o := range page.Contents {
			k := aws.ToString(o.Key)
			if !first && k <= last {
				return fmt.Errorf("s3 list %q: server listed %q after %q (not ascending)", prefix, k, last)
			}
			first, last = false, k
			if !strings.HasPrefix(k, prefix) {
				continue
			}
			if err := fn(attrsFromHead(k, aws.ToInt64(o.Size), o.ETag, o.LastModified, nil)); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *Store) sseKMSContext() (*string, error) {
	if len(s.sse.KMSEncryptionContext) == 0 {
		return nil, nil
	}
	b, err := json.Marshal(s.sse.KMSEncryptionContext)
	if err != nil {
		return nil, err
	}
	return aws.String(base64.StdEncoding.EncodeToString(b)), nil
}

// sseFields returns the SSE request fields.
func (s *Store) sseFields() (t types.ServerSideEncryption, keyID, ctx *string, bucketKey *bool, err error) {
	switch s.sse.Type {
	case SSES3:
		return types.ServerSideEncryptionAes256, nil, nil, nil, nil
	case SSEKMS:
		ctx, err = s.sseKMSContext()
		if s.sse.KMSKeyID != "" {
			keyID = aws.String(s.sse.KMSKeyID)
		}
		if s.sse.BucketKeyEnabled {
			bucketKey = aws.Bool(true)
		}
		return types.ServerSideEncryptionAwsKms, keyID, ctx, bucketKey, err
	}
	return "", nil, nil, nil, nil
}

func contentType(ct string) *string {
	if ct == "" {
		ct = "application/octet-stream"
	}
	return aws.String(ct)
}

// Put stores exactly size bytes of r with Content-MD5.
func (s *Store) Put(ctx context.Context, key string, r io.Reader, size int64, opts blob.PutOptions) (blob.Attrs, error) {
	if err := blob.ValidateKey(key); err != nil {
		return blob.Attrs{}, err
	}
	if size < 0 {
		return blob.Attrs{}, fmt.Errorf("%w: negative size %d", blob.ErrInvalidArgument, size)
	}
	md, err := blob.NormalizeMetadata(opts.Metadata)
	if err != nil {
		return blob.Attrs{}, fmt.Errorf("s3 put %q: %w", key, err)
	}
	if err := ctx.Err(); err != nil {
		return blob.Attrs{}, fmt.Errorf("s3 put %q: %w", key, err)
	}
	pl, err := blob.NewPayload(r, size)
	if err != nil {
		return blob.Attrs{}, fmt.Errorf("s3 put %q: %w", key, err)
	}
	defer pl.Close()
	sseType, kmsKey, kmsCtx, bucketKey, err := s.sseFields()
	if err != nil {
		return blob.Attrs{}, err
	}
	out, err := s.client.PutObject(ctx, &s3.PutObjectInput{
		Bucket: &s.bucket, Key: &key, Body: pl.Reader(), ContentLength: aws.Int64(size),
		ContentMD5: aws.String(base64.StdEncoding.EncodeToString(pl.MD5())), ContentType: contentType(opts.ContentType),
		Metadata: md, ServerSideEncryption: sseType, SSEKMSKeyId: kmsKey, SSEKMSEncryptionContext: kmsCtx, BucketKeyEnabled: bucketKey,
	}, s.callOptions()...)
	if err != nil {
		return blob.Attrs{}, mapErr("put", key, err)
	}
	return blob.Attrs{Key: key, Size: size, ETag: strings.Trim(aws.ToString(out.ETag), `"`), Metadata: md}, nil
}

// Delete removes an object; a missing object is not an error.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := blob.ValidateKey(key); err != nil {
		return err
	}
	_, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &s.bucket, Key: &key})
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
	md, err := blob.NormalizeMetadata(opts.Metadata)
	if err != nil {
		return nil, fmt.Errorf("s3 create multipart %q: %w", key, err)
	}
	sseType, kmsKey, kmsCtx, bucketKey, err := s.sseFields()
	if err != nil {
		return nil, err
	}
	in := &s3.CreateMultipartUploadInput{
		Bucket: &s.bucket, Key: &key, ContentType: contentType(opts.ContentType), Metadata: md,
		ServerSideEncryption: sseType, SSEKMSKeyId: kmsKey, SSEKMSEncryptionContext: kmsCtx, BucketKeyEnabled: bucketKey,
	}
	if s.checksum == ChecksumCRC32C {
		// Parts then must carry a CRC32C, which the server verifies and
		// keeps; the completion lists them.
		in.ChecksumAlgorithm = types.ChecksumAlgorithmCrc32c
	}
	out, err := s.client.CreateMultipartUpload(ctx, in)
	if err != nil {
		return nil, mapErr("create multipart", key, err)
	}
	return &multipart{s: s, key: key, id: aws.ToString(out.UploadId), md: md, parts: map[int]part{}}, nil
}

type part struct {
	etag   string
	size   int64
	crc32c string // base64, as sent (checksum crc32c)
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

// UploadPart sends part n with the store's checksum (x-amz-checksum-crc32c
// or Content-MD5), which the server verifies.
func (m *multipart) UploadPart(ctx context.Context, n int, data []byte) error {
	return m.uploadPart(ctx, n, [][]byte{data}, bytes.NewReader(data), int64(len(data)))
}

// UploadsVectors is true: UploadPartVector sends the slices as they are.
func (m *multipart) UploadsVectors() bool { return true }

// UploadPartVector is UploadPart for a part given as slices: the body
// reads them in place (and with the transport's WholeBodyWrites goes to
// the socket in one writev); a retry seeks it back and sends the same
// bytes.
func (m *multipart) UploadPartVector(ctx context.Context, n int, data [][]byte) error {
	r := blob.NewVectorReader(data)
	return m.uploadPart(ctx, n, data, r, r.Size())
}

func (m *multipart) uploadPart(ctx context.Context, n int, data [][]byte, body io.ReadSeeker, size int64) error {
	if err := blob.CheckPartNumber(n); err != nil {
		return fmt.Errorf("s3 upload part of %q: %w", m.key, err)
	}
	in := &s3.UploadPartInput{
		Bucket: &m.s.bucket, Key: &m.key, UploadId: &m.id, PartNumber: aws.Int32(int32(n)),
		Body: body, ContentLength: aws.Int64(size),
	}
	p := part{size: size}
	if m.s.checksum == ChecksumCRC32C {
		// The caller's CRC when it has one (an offload's block: combined
		// from the bookies' verified entry CRCs, not hashed again); the
		// server checks it against the bytes it receives either way.
		sum, ok := blob.PartCRC32C(ctx)
		if !ok {
			for _, b := range data {
				sum = crc32.Update(sum, crc32c.Table, b)
			}
		}
		p.crc32c = crc32cHeader(sum)
		in.ChecksumCRC32C = aws.String(p.crc32c)
	} else {
		h := md5.New()
		for _, b := range data {
			h.Write(b)
		}
		in.ContentMD5 = aws.String(base64.StdEncoding.EncodeToString(h.Sum(nil)))
	}
	out, err := m.s.client.UploadPart(ctx, in, m.s.callOptions()...)
	if err != nil {
		return mapErr(fmt.Sprintf("upload part %d", n), m.key, err)
	}
	p.etag = aws.ToString(out.ETag)
	m.mu.Lock()
	m.parts[n] = p
	m.mu.Unlock()
	return nil
}

// Complete assembles parts 1..N.
func (m *multipart) Complete(ctx context.Context) (blob.Attrs, error) {
	m.mu.Lock()
	parts, total, err := blob.OrderParts(m.parts, func(p part) int64 { return p.size }, blob.MinPartSize)
	m.mu.Unlock()
	if err != nil {
		return blob.Attrs{}, fmt.Errorf("s3 complete %q: %w", m.key, err)
	}
	list := make([]types.CompletedPart, len(parts))
	for i, p := range parts {
		list[i] = types.CompletedPart{PartNumber: aws.Int32(int32(i + 1)), ETag: aws.String(p.etag)}
		if p.crc32c != "" {
			list[i].ChecksumCRC32C = aws.String(p.crc32c)
		}
	}
	out, err := m.s.client.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{
		Bucket: &m.s.bucket, Key: &m.key, UploadId: &m.id,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: list},
	})
	if err != nil {
		err = mapErr("complete multipart", m.key, err)
		if errors.Is(err, blob.ErrNotFound) {
			// A retried Complete finds no upload when an earlier attempt
			// completed it and its answer was lost. Accept the object
			// only if its size and multipart ETag are those of our parts.
			if a, ok := m.verifyCompleted(ctx, list, total); ok {
				return a, nil
			}
		}
		return blob.Attrs{}, err
	}
	return blob.Attrs{Key: m.key, Size: total, ETag: strings.Trim(aws.ToString(out.ETag), `"`), Metadata: m.md}, nil
}

// crc32cHeader is the x-amz-checksum-crc32c value of a CRC-32C: big-endian,
// base64.
func crc32cHeader(sum uint32) string {
	var be [4]byte
	binary.BigEndian.PutUint32(be[:], sum)
	return base64.StdEncoding.EncodeToString(be[:])
}

// multipartETag is S3's ETag of a completed upload: the hex MD5 of the
// concatenated binary part MD5s, then "-<parts>". ok is false when a part
// ETag is not an MD5 (SSE-KMS).
func multipartETag(parts []types.CompletedPart) (string, bool) {
	h := md5.New()
	for _, p := range parts {
		b, err := hex.DecodeString(strings.Trim(aws.ToString(p.ETag), `"`))
		if err != nil || len(b) != md5.Size {
			return "", false
		}
		h.Write(b)
	}
	return fmt.Sprintf("%x-%d", h.Sum(nil), len(parts)), true
}

func (m *multipart) verifyCompleted(ctx context.Context, parts []types.CompletedPart, size int64) (blob.Attrs, bool) {
	want, ok := multipartETag(parts)
	if !ok {
		return blob.Attrs{}, false
	}
	a, err := m.s.Head(ctx, m.key)
	if err != nil || a.Size != size || a.ETag != want {
		return blob.Attrs{}, false
	}
	m.s.log.Debug("s3: multipart upload found completed by an earlier attempt", "key", m.key, "upload_id", m.id)
	return a, true
}

// Abort discards the upload.
func (m *multipart) Abort(ctx context.Context) error {
	return m.s.AbortMultipart(ctx, m.key, m.id)
}

// ListMultipart lists incomplete uploads with keys starting with prefix.
func (s *Store) ListMultipart(ctx context.Context, prefix string) ([]blob.Upload, error) {
	p := s3.NewListMultipartUploadsPaginator(s.client, &s3.ListMultipartUploadsInput{
		Bucket: &s.bucket, Prefix: aws.String(prefix), MaxUploads: aws.Int32(s.pageSize),
	})
	var out []blob.Upload
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, mapErr("list multipart", prefix, err)
		}
		for _, u := range page.Uploads {
			out = append(out, blob.Upload{Key: aws.ToString(u.Key), UploadID: aws.ToString(u.UploadId), Initiated: aws.ToTime(u.Initiated)})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// AbortMultipart aborts an upload; blob.ErrNotFound if it does not exist.
func (s *Store) AbortMultipart(ctx context.Context, key, uploadID string) error {
	_, err := s.client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &s.bucket, Key: &key, UploadId: &uploadID})
	return mapErr("abort multipart", key, err)
}
