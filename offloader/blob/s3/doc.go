// Package s3 is the blob store for Amazon S3 and S3-compatible servers
// (versitygw, MinIO, Ceph RGW, COS and OSS S3 endpoints), built on
// aws-sdk-go-v2.
//
// # Addressing
//
// Virtual-host addressing (https://<bucket>.<endpoint host>/<key>) is the
// default, as AWS and Tencent COS require it (COS rejects path-style requests
// with PathStyleDomainForbidden or InvalidURI, apache/pulsar#15893). Set
// addressing: path for servers that need http://<endpoint>/<bucket>/<key>.
//
// # Integrity
//
// Every Put carries Content-MD5 and every UploadPart the store's checksum
// (config key checksum: x-amz-checksum-crc32c by default, or Content-MD5),
// which the server verifies: bytes corrupted on the way are rejected
// (blob.ErrBadDigest after the retries) instead of being stored. A part
// CRC-32C the caller gives (blob.WithPartCRC32C: an offload's block CRC,
// combined from the bookies' verified entry CRCs) is sent instead of
// hashing the part; the server verifies it the same way. Over
// http the SigV4 signature also covers the payload SHA-256 unless
// payload_signing is unsigned; over https it does not unless it is signed. Complete refuses a part-number gap
// (blob.ErrMissingPart) before asking the server. Ranged reads check that
// the server returned exactly the bytes asked for.
//
// # Credentials
//
// credentials.source selects static keys, the AWS_* environment variables,
// a shared profile, web identity (EKS IRSA: role ARN + token file, with an
// explicit region so pulsar#9085 "unable to find region" cannot happen), or
// the SDK default chain. Secrets are blob.Secret values: they never appear
// in logs, errors or formatted configs.
//
// # Retries
//
// The SDK's standard retryer retries 5xx, SlowDown and other throttling
// codes, connection errors and checksum mismatches (BadDigest,
// XAmzContentSHA256Mismatch), with capped exponential backoff and jitter
// (retry.max_attempts, retry.max_backoff).
package s3
