// Package cos is the blob store for Tencent Cloud Object Storage, built on
// github.com/tencentyun/cos-go-sdk-v5 (v0.7.70): COS request signing
// (q-sign-algorithm=sha1), virtual-host bucket addressing
// (https://<name>-<appid>.cos.<region>.myqcloud.com — COS rejects path-style
// requests, which is why Pulsar's S3 driver fails on COS, apache/pulsar#15893),
// and multipart uploads whose parts may be sent concurrently.
//
// # Integrity
//
// Put sends Content-MD5, which COS verifies; so does UploadPart with config
// key checksum md5. The SDK checks the x-cos-hash-crc64ecma COS returns for
// every Put and part against the bytes sent (the only part check with the
// default checksum crc64: a mismatch resends the part, replacing it).
// Complete combines the parts' CRC-64s and compares them with the CRC of
// the assembled object COS reports; on a mismatch the object is deleted and
// Complete fails, so no object that lies survives. A whole-object Get
// checks the body against the stored CRC-64.
//
// # Retries
//
// The SDK's own retries are turned off (it retries without backoff); each
// request is retried by the shared retry loop with capped exponential
// backoff and jitter on 5xx, 429, SlowDown, connection errors and checksum
// mismatches. 4xx answers are returned at once.
package cos
