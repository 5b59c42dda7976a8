// Package cosfake is a Tencent COS protocol endpoint for tests: it speaks
// the COS XML API as cos-go-sdk-v5 uses it, checks COS request signatures
// (q-sign-algorithm=sha1 ..., Tencent's "request signature" document) and, for COS's S3-compatible
// access, AWS Signature V4 (signed, UNSIGNED-PAYLOAD and aws-chunked
// payloads with chunk signatures) and V2, all with the account's
// SecretId/SecretKey (awssign.go); AWS-signed requests get x-amz-meta-*
// user metadata back, COS-signed ones x-cos-meta-*. It serves virtual-host
// bucket addressing (<bucket>-<appid>.cos.<region>.myqcloud.com), rejects
// path-style requests (403 PathStyleDomainForbidden, as COS does for buckets
// created after 2024-01-01), verifies Content-MD5, returns
// x-cos-hash-crc64ecma (CRC-64/XZ, decimal) where the SDK checks it, and
// stores everything in a real S3 server (versitygw) by translating each COS
// request into S3 calls. COS bucket "name-appid" is S3 bucket "name-appid".
// Requests may come in proxy absolute form
// ("GET http://<bucket>.cos.<region>.myqcloud.com:<port>/key"): a JVM with -Dhttp.proxyHost/-Dhttp.proxyPort pointing at the fake reaches
// the virtual-host names without DNS (Fake.BrokerOffload, docs/brokers.md).
//
// No COS server can run here; this endpoint exists so the real SDK can be
// exercised end to end. It is not a general COS emulator: bucket
// configuration APIs, ACLs, copy, append, versioning and presigned POST are
// absent (501 NotImplemented). Multipart parts inherit the backing S3
// server's 5 MiB minimum (COS allows 1 MiB).
//
// # Wire mapping
//
//	COS request                              S3 call on the backing server
//	PUT    /<key>                            PutObject (Content-MD5 forwarded)
//	GET    /<key>   (Range)                  GetObject
//	HEAD   /<key>                            HeadObject
//	DELETE /<key>                            DeleteObject
//	GET    /?prefix&marker&max-keys          ListObjects (V1)
//	POST   /<key>?uploads                    CreateMultipartUpload
//	PUT    /<key>?partNumber=N&uploadId=ID   UploadPart
//	POST   /<key>?uploadId=ID                CompleteMultipartUpload
//	DELETE /<key>?uploadId=ID                AbortMultipartUpload
//	GET    /?uploads                         ListMultipartUploads
//	GET    /<key>?uploadId=ID                ListParts
//	HEAD   /                                 HeadBucket
//
// Upload IDs are the hex encoding of the S3 upload IDs (COS IDs match
// [a-z0-9]+, which the SDK relies on). x-cos-meta-* headers become S3 user
// metadata; SSE headers are stored in reserved metadata ("cosfake-*") and
// echoed back.
package cosfake
