package cos

import (
	"errors"
	"fmt"
	"regexp"

	"github.com/tierkeeper/tierkeeper/offloader/blob"
)

// Config is the `config:` section of a `type: cos` blob config.
type Config struct {
	// Bucket is the full bucket name "<name>-<appid>", e.g.
	// "examplebucket-1250000000". Required.
	Bucket string `json:"bucket"`
	// Region, e.g. "ap-guangzhou". Required.
	Region string `json:"region"`
	// Endpoint overrides the bucket URL, which is otherwise
	// "https://<bucket>.cos.<region>.myqcloud.com" (e.g. an internal or
	// accelerate domain, or a test endpoint). COS takes the bucket from the
	// host name only: the URL must name the bucket in its host and have no
	// path.
	Endpoint string `json:"endpoint,omitempty"`
	// Credentials selects where keys come from.
	Credentials Credentials `json:"credentials,omitempty"`
	// SSE asks COS to encrypt objects at rest.
	SSE SSE `json:"sse,omitempty"`
	// Retry tunes retries.
	Retry Retry `json:"retry,omitempty"`
	// ResponseHeaderTimeout bounds the wait for a response once the request
	// is sent. Default 60s.
	ResponseHeaderTimeout blob.Duration `json:"response_header_timeout,omitempty"`
	// Checksum is how every UploadPart is checked: "crc64" (the default:
	// COS computes the CRC-64/ECMA-182 of each part it receives and
	// returns it as x-cos-hash-crc64ecma; the SDK compares it with the
	// CRC-64 of the bytes sent and a mismatch resends the part, which
	// replaces the bad one; Complete then checks the whole object's CRC-64)
	// or "md5" (Content-MD5 in addition, so COS itself refuses a corrupted
	// part: one more hash pass over every byte). Single-request Puts
	// always carry Content-MD5, so a bad body is never stored.
	Checksum string `json:"checksum,omitempty"`
}

// Credentials configures the credential source.
type Credentials struct {
	// Source is "static" (secret_id + secret_key [+ session_token]) or
	// "env" (COS_SECRETID / COS_SECRETKEY / COS_SESSIONTOKEN, else
	// TENCENTCLOUD_SECRET_ID / TENCENTCLOUD_SECRET_KEY /
	// TENCENTCLOUD_SESSION_TOKEN). Default "env".
	Source       string      `json:"source,omitempty"`
	SecretID     string      `json:"secret_id,omitempty"`
	SecretKey    blob.Secret `json:"secret_key,omitempty"`
	SessionToken blob.Secret `json:"session_token,omitempty"`
}

// SSE configures server-side encryption headers on Put and CreateMultipart.
type SSE struct {
	// Type is "" (none), "SSE-COS" (AES256, keys managed by COS) or
	// "SSE-KMS" (cos/kms).
	Type string `json:"type,omitempty"`
	// KMSKeyID is the KMS CMK ID (SSE-KMS; empty: the default key).
	KMSKeyID string `json:"kms_key_id,omitempty"`
	// KMSContext is sent as base64 JSON (SSE-KMS).
	KMSContext map[string]string `json:"kms_context,omitempty"`
}

// Retry tunes the retry loop.
type Retry struct {
	// MaxAttempts counts the first try. Default 5.
	MaxAttempts int `json:"max_attempts,omitempty"`
	// InitialBackoff is the first wait. Default 100ms.
	InitialBackoff blob.Duration `json:"initial_backoff,omitempty"`
	// MaxBackoff caps the wait. Default 20s.
	MaxBackoff blob.Duration `json:"max_backoff,omitempty"`
}

// Credential sources and SSE types.
const (
	SourceStatic = "static"
	SourceEnv    = "env"
	SSECOS       = "SSE-COS"
	SSEKMS       = "SSE-KMS"

	ChecksumCRC64 = "crc64"
	ChecksumMD5   = "md5"
)

// DefaultConfig returns the defaults; Bucket and Region are still to be set.
func DefaultConfig() Config {
	return Config{
		Credentials:           Credentials{Source: SourceEnv},
		Retry:                 Retry{MaxAttempts: 5, InitialBackoff: blob.Duration(100e6), MaxBackoff: blob.Duration(20e9)},
		ResponseHeaderTimeout: blob.Duration(60e9),
		Checksum:              ChecksumCRC64,
	}
}

// WithDefaults fills zero fields from DefaultConfig.
func (c Config) WithDefaults() Config {
	d := DefaultConfig()
	if c.Credentials.Source == "" {
		c.Credentials.Source = d.Credentials.Source
	}
	if c.Retry.MaxAttempts == 0 {
		c.Retry.MaxAttempts = d.Retry.MaxAttempts
	}
	if c.Retry.InitialBackoff == 0 {
		c.Retry.InitialBackoff = d.Retry.InitialBackoff
	}
	if c.Retry.MaxBackoff == 0 {
		c.Retry.MaxBackoff = d.Retry.MaxBackoff
	}
	if c.ResponseHeaderTimeout == 0 {
		c.ResponseHeaderTimeout = d.ResponseHeaderTimeout
	}
	if c.Checksum == "" {
		c.Checksum = d.Checksum
	}
	return c
}

var (
	bucketRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*-[0-9]+$`)
	regionRE = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)
)

// BucketURL returns the bucket URL (Endpoint or the default domain).
func (c Config) BucketURL() string {
	if c.Endpoint != "" {
		return c.Endpoint
	}
	return fmt.Sprintf("https://%s.cos.%s.myqcloud.com", c.Bucket, c.Region)
}

// Validate checks the config (after defaults); errors name the key.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf("cos: "+format, a...)) }
	if !bucketRE.MatchString(c.Bucket) {
		bad("config key bucket must be \"<name>-<appid>\" in lower case, e.g. examplebucket-1250000000; got %q", c.Bucket)
	}
	if !regionRE.MatchString(c.Region) {
		bad("config key region must be a COS region such as ap-guangzhou; got %q", c.Region)
	}
	if c.Endpoint != "" {
		if u, err := blob.ParseEndpoint(c.Endpoint); err != nil {
			bad("config key %v", err)
		} else if u.Path != "" && u.Path != "/" {
			bad("config key endpoint %q has a path: COS takes the bucket from the host only (virtual-host style), e.g. https://%s.cos.%s.myqcloud.com", u.String(), c.Bucket, c.Region)
		}
	}
	switch c.Credentials.Source {
	case SourceStatic:
		if c.Credentials.SecretID == "" || c.Credentials.SecretKey == "" {
			bad("credentials.source static needs credentials.secret_id and credentials.secret_key")
		}
	case SourceEnv:
		if c.Credentials.SecretID != "" || c.Credentials.SecretKey != "" || c.Credentials.SessionToken != "" {
			bad("credentials.secret_id/secret_key/session_token need credentials.source static")
		}
	default:
		bad("config key credentials.source must be static or env; got %q", c.Credentials.Source)
	}
	switch c.SSE.Type {
	case "", SSECOS:
		if c.SSE.KMSKeyID != "" || len(c.SSE.KMSContext) > 0 {
			bad("sse.kms_key_id and sse.kms_context need sse.type SSE-KMS")
		}
	case SSEKMS:
	default:
		bad("config key sse.type must be \"\", \"SSE-COS\" or \"SSE-KMS\"; got %q", c.SSE.Type)
	}
	if c.Retry.MaxAttempts < 1 || c.Retry.MaxAttempts > 20 {
		bad("config key retry.max_attempts must be 1..20, got %d", c.Retry.MaxAttempts)
	}
	if c.Retry.InitialBackoff < 0 || c.Retry.MaxBackoff < 0 || c.ResponseHeaderTimeout < 0 {
		bad("config keys retry.initial_backoff, retry.max_backoff and response_header_timeout must not be negative")
	}
	switch c.Checksum {
	case ChecksumCRC64, ChecksumMD5:
	default:
		bad("config key checksum must be %q or %q, got %q", ChecksumCRC64, ChecksumMD5, c.Checksum)
	}
	return errors.Join(errs...)
}
