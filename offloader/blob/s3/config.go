package s3

import (
	"errors"
	"fmt"
	"strings"

	"github.com/tierkeeper/tierkeeper/offloader/blob"
)

// Config is the `config:` section of a `type: s3` blob config.
type Config struct {
	// Bucket is the bucket name. Required.
	Bucket string `json:"bucket"`
	// Region, e.g. "us-east-1". Default: AWS_REGION / the shared profile's
	// region; an error if none is found.
	Region string `json:"region,omitempty"`
	// Endpoint is the service URL for S3-compatible servers, e.g.
	// "http://127.0.0.1:7070" or "https://cos.ap-guangzhou.myqcloud.com".
	// Default: AWS.
	Endpoint string `json:"endpoint,omitempty"`
	// Addressing is "virtual" (default: <bucket>.<host>) or "path"
	// (<host>/<bucket>).
	Addressing string `json:"addressing,omitempty"`
	// Credentials selects where keys come from.
	Credentials Credentials `json:"credentials,omitempty"`
	// SSE asks the server to encrypt objects at rest.
	SSE SSE `json:"sse,omitempty"`
	// Retry tunes the SDK's standard retryer.
	Retry Retry `json:"retry,omitempty"`
	// ResponseHeaderTimeout bounds the wait for a response once the request
	// is sent. Default 60s.
	ResponseHeaderTimeout blob.Duration `json:"response_header_timeout,omitempty"`
	// Checksum is what every UploadPart carries for the server to verify:
	// "crc32c" (x-amz-checksum-crc32c, the upload created with checksum
	// algorithm CRC32C, the part checksums listed in the completion; the
	// default: AWS S3, versitygw, MinIO and recent Ceph RGW verify it) or
	// "md5" (Content-MD5, for servers that do not verify flexible
	// checksums). A mismatch is refused by the server (BadDigest) and the
	// part is resent. Single-request Puts always carry Content-MD5.
	Checksum string `json:"checksum,omitempty"`
	// PayloadSigning is whether SigV4 signs the payload's SHA-256 on Put
	// and UploadPart: "auto" (the default: signed over http://,
	// UNSIGNED-PAYLOAD over https://, where TLS protects the bytes),
	// "unsigned" (UNSIGNED-PAYLOAD over http:// too: accidental corruption
	// is still refused through the checksum, but anyone on the path can
	// rewrite a body and its CRC; for trusted networks only) or "signed"
	// (the SHA-256 also over https://, a hash pass over every byte).
	PayloadSigning string `json:"payload_signing,omitempty"`
}

// Part checksums and payload signing modes.
const (
	ChecksumCRC32C = "crc32c"
	ChecksumMD5    = "md5"

	PayloadSigningAuto     = "auto"
	PayloadSigningUnsigned = "unsigned"
	PayloadSigningSigned   = "signed"
)

// Credentials configures the credential source.
type Credentials struct {
	// Source is one of:
	//   "default"      the SDK default chain (env, web identity env, shared
	//                  profile, container/instance roles). The default.
	//   "static"       access_key_id + secret_access_key (+ session_token).
	//   "env"          AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN.
	//   "profile"      a profile of the shared config/credentials files.
	//   "web_identity" AssumeRoleWithWebIdentity with role_arn and
	//                  web_identity_token_file (default AWS_ROLE_ARN and
	//                  AWS_WEB_IDENTITY_TOKEN_FILE, as EKS IRSA sets them).
	Source          string      `json:"source,omitempty"`
	AccessKeyID     string      `json:"access_key_id,omitempty"`
	SecretAccessKey blob.Secret `json:"secret_access_key,omitempty"`
	SessionToken    blob.Secret `json:"session_token,omitempty"`
	// Profile names the shared profile (source profile). Default "default".
	Profile string `json:"profile,omitempty"`
	// SharedCredentialsFile and SharedConfigFile override ~/.aws/credentials
	// and ~/.aws/config (source profile).
	SharedCredentialsFile string `json:"shared_credentials_file,omitempty"`
	SharedConfigFile      string `json:"shared_config_file,omitempty"`
	// RoleARN, WebIdentityTokenFile and RoleSessionName configure
	// web_identity. RoleSessionName defaults to "tierkeeper".
	RoleARN              string `json:"role_arn,omitempty"`
	WebIdentityTokenFile string `json:"web_identity_token_file,omitempty"`
	RoleSessionName      string `json:"role_session_name,omitempty"`
	// STSEndpoint overrides the STS endpoint (private or regional STS).
	STSEndpoint string `json:"sts_endpoint,omitempty"`
}

// SSE configures server-side encryption headers sent on Put and
// CreateMultipart.
type SSE struct {
	// Type is "" (none), "SSE-S3" (AES256, keys managed by S3) or "SSE-KMS".
	Type string `json:"type,omitempty"`
	// KMSKeyID is the KMS key ID or ARN (SSE-KMS; empty: the AWS managed key).
	KMSKeyID string `json:"kms_key_id,omitempty"`
	// KMSEncryptionContext is sent base64-encoded JSON (SSE-KMS).
	KMSEncryptionContext map[string]string `json:"kms_encryption_context,omitempty"`
	// BucketKeyEnabled asks for an S3 Bucket Key (SSE-KMS).
	BucketKeyEnabled bool `json:"bucket_key_enabled,omitempty"`
}

// Retry tunes retries.
type Retry struct {
	// MaxAttempts counts the first try. Default 5.
	MaxAttempts int `json:"max_attempts,omitempty"`
	// MaxBackoff caps the delay between attempts. Default 20s.
	MaxBackoff blob.Duration `json:"max_backoff,omitempty"`
}

// Credential sources.
const (
	SourceDefault     = "default"
	SourceStatic      = "static"
	SourceEnv         = "env"
	SourceProfile     = "profile"
	SourceWebIdentity = "web_identity"
)

// SSE types.
const (
	SSES3  = "SSE-S3"
	SSEKMS = "SSE-KMS"
)

// DefaultConfig returns the defaults; Bucket is still to be set.
func DefaultConfig() Config {
	return Config{
		Addressing:            "virtual",
		Credentials:           Credentials{Source: SourceDefault, RoleSessionName: "tierkeeper"},
		Retry:                 Retry{MaxAttempts: 5, MaxBackoff: blob.Duration(20e9)},
		ResponseHeaderTimeout: blob.Duration(60e9),
		Checksum:              ChecksumCRC32C,
		PayloadSigning:        PayloadSigningAuto,
	}
}

// WithDefaults fills zero fields from DefaultConfig.
func (c Config) WithDefaults() Config {
	d := DefaultConfig()
	if c.Addressing == "" {
		c.Addressing = d.Addressing
	}
	if c.Credentials.Source == "" {
		c.Credentials.Source = d.Credentials.Source
	}
	if c.Credentials.RoleSessionName == "" {
		c.Credentials.RoleSessionName = d.Credentials.RoleSessionName
	}
	if c.Retry.MaxAttempts == 0 {
		c.Retry.MaxAttempts = d.Retry.MaxAttempts
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
	if c.PayloadSigning == "" {
		c.PayloadSigning = d.PayloadSigning
	}
	return c
}

// Validate checks the config (after defaults); errors name the key.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf("s3: "+format, a...)) }
	if c.Bucket == "" {
		bad("config key bucket is required")
	} else if strings.ContainsAny(c.Bucket, "/ ") {
		bad("config key bucket %q must be a bare bucket name", c.Bucket)
	}
	if c.Endpoint != "" {
		if _, err := blob.ParseEndpoint(c.Endpoint); err != nil {
			bad("config key %v", err)
		}
	}
	switch c.Addressing {
	case "virtual", "path":
	default:
		bad("config key addressing must be \"virtual\" or \"path\", got %q", c.Addressing)
	}
	cr := c.Credentials
	switch cr.Source {
	case SourceDefault, SourceEnv:
	case SourceStatic:
		if cr.AccessKeyID == "" || cr.SecretAccessKey == "" {
			bad("credentials.source static needs credentials.access_key_id and credentials.secret_access_key")
		}
	case SourceProfile:
	case SourceWebIdentity:
	default:
		bad("config key credentials.source must be one of default, static, env, profile, web_identity; got %q", cr.Source)
	}
	if cr.Source != SourceStatic && (cr.AccessKeyID != "" || cr.SecretAccessKey != "" || cr.SessionToken != "") {
		bad("credentials.access_key_id/secret_access_key/session_token need credentials.source static (source is %q)", cr.Source)
	}
	if cr.Source != SourceProfile && (cr.Profile != "" || cr.SharedConfigFile != "" || cr.SharedCredentialsFile != "") {
		bad("credentials.profile/shared_config_file/shared_credentials_file need credentials.source profile (source is %q)", cr.Source)
	}
	if cr.Source != SourceWebIdentity && (cr.RoleARN != "" || cr.WebIdentityTokenFile != "") {
		bad("credentials.role_arn/web_identity_token_file need credentials.source web_identity (source is %q)", cr.Source)
	}
	switch c.SSE.Type {
	case "":
		if c.SSE.KMSKeyID != "" || len(c.SSE.KMSEncryptionContext) > 0 || c.SSE.BucketKeyEnabled {
			bad("sse.kms_key_id/kms_encryption_context/bucket_key_enabled need sse.type SSE-KMS")
		}
	case SSES3:
		if c.SSE.KMSKeyID != "" || len(c.SSE.KMSEncryptionContext) > 0 {
			bad("sse.kms_key_id and sse.kms_encryption_context need sse.type SSE-KMS, not SSE-S3")
		}
	case SSEKMS:
	default:
		bad("config key sse.type must be \"\", \"SSE-S3\" or \"SSE-KMS\"; got %q", c.SSE.Type)
	}
	if c.Retry.MaxAttempts < 1 || c.Retry.MaxAttempts > 20 {
		bad("config key retry.max_attempts must be 1..20, got %d", c.Retry.MaxAttempts)
	}
	if c.Retry.MaxBackoff < 0 {
		bad("config key retry.max_backoff must not be negative")
	}
	if c.ResponseHeaderTimeout < 0 {
		bad("config key response_header_timeout must not be negative")
	}
	switch c.Checksum {
	case ChecksumCRC32C, ChecksumMD5:
	default:
		bad("config key checksum must be %q or %q, got %q", ChecksumCRC32C, ChecksumMD5, c.Checksum)
	}
	switch c.PayloadSigning {
	case PayloadSigningAuto, PayloadSigningUnsigned, PayloadSigningSigned:
	default:
		bad("config key payload_signing must be %q, %q or %q, got %q", PayloadSigningAuto, PayloadSigningUnsigned, PayloadSigningSigned, c.PayloadSigning)
	}
	return errors.Join(errs...)
}
